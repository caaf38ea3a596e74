# A Cluster Director managed Slurm cluster (Vertex AI Training clusters): network, storage
# (Filestore, Managed Lustre, Cloud Storage), compute resources, login nodes, node sets and
# partitions, with the ML Diagnostics SDK installed on every compute node at boot.
#
# Sources:
# - Fields and limits: google-cloud-hypercomputecluster 0.4.2, hypercomputecluster_v1 types
#   (https://cloud.google.com/cluster-director/docs/reference/rpc/google.cloud.hypercomputecluster.v1);
#   Terraform schema hashicorp/google 8.7.0 google_hypercomputecluster_cluster (counts and
#   sizes are strings there).
# - ML Diagnostics on Slurm: google-cloud-mldiagnostics 1.0.10 (run id from SLURM_CLUSTER_NAME,
#   SLURM_JOB_ID and SLURM_JOB_START_TIME; RUN_WORKLOAD_ID in its generic mode).
# - The API has no field for the nodes' service account or for a Slurm TaskProlog, so the
#   SDK's job environment is a file job scripts source (templates/nodeset-startup.sh.tftpl).

locals {
  # Every value reaches the startup script base64-encoded and is decoded there: no recipe
  # value can break the script's quoting (templatefile does not escape for bash).
  startup_scripts = {
    for ns in var.node_sets : ns.id => templatefile("${path.module}/templates/nodeset-startup.sh.tftpl", {
      install_sdk       = var.mldiag.enabled
      sdk_package       = base64encode(var.mldiag.sdk_package)
      pip_index_url     = base64encode(var.mldiag.pip_index_url == null ? "" : var.mldiag.pip_index_url)
      profiles_gcs_path = base64encode(var.mldiag.profiles_gcs_path)
      mlrun_region      = base64encode(var.mldiag.mlrun_region)
      has_user_script   = ns.startup_script != null
      user_script       = base64encode(ns.startup_script == null ? "" : ns.startup_script)
    })
  }

  node_set_ids   = [for ns in var.node_sets : ns.id]
  compute_ids    = [for c in var.compute : c.id]
  storage_ids    = [for s in var.storage : s.id]
  partition_ids  = [for p in var.partitions : p.id]
  partition_refs = flatten([for p in var.partitions : p.node_set_ids])
  storage_refs = concat([for m in var.login_nodes.storage : m.id],
  flatten([for ns in var.node_sets : [for m in ns.storage : m.id]]))
}

resource "google_hypercomputecluster_cluster" "this" {
  project         = var.project_id
  location        = var.region
  cluster_id      = var.cluster_id
  description     = var.description
  labels          = var.labels
  deletion_policy = var.deletion_protection ? "PREVENT" : "DELETE"

  network_resources {
    id = var.network.id

    config {
      dynamic "new_network" {
        for_each = var.network.create ? [var.network] : []
        content {
          network     = new_network.value.network
          description = "Network of Slurm cluster ${var.cluster_id}"
        }
      }
      dynamic "existing_network" {
        for_each = var.network.create ? [] : [var.network]
        content {
          network    = existing_network.value.network
          subnetwork = existing_network.value.subnetwork
        }
      }
    }
  }

  dynamic "storage_resources" {
    for_each = var.storage
    content {
      id = storage_resources.value.id

      config {
        dynamic "new_filestore" {
          for_each = storage_resources.value.kind == "filestore" && storage_resources.value.create ? [storage_resources.value] : []
          content {
            filestore = new_filestore.value.name
            tier      = new_filestore.value.filestore.tier
            protocol  = new_filestore.value.filestore.protocol
            file_shares {
              capacity_gb = tostring(new_filestore.value.filestore.capacity_gb)
              file_share  = new_filestore.value.filestore.file_share
            }
          }
        }
        dynamic "existing_filestore" {
          for_each = storage_resources.value.kind == "filestore" && !storage_resources.value.create ? [storage_resources.value] : []
          content {
            filestore = existing_filestore.value.name
          }
        }
        dynamic "new_lustre" {
          for_each = storage_resources.value.kind == "lustre" && storage_resources.value.create ? [storage_resources.value] : []
          content {
            lustre                      = new_lustre.value.name
            filesystem                  = new_lustre.value.lustre.filesystem
            capacity_gb                 = tostring(new_lustre.value.lustre.capacity_gb)
            per_unit_storage_throughput = new_lustre.value.lustre.throughput == null ? null : tostring(new_lustre.value.lustre.throughput)
          }
        }
        dynamic "existing_lustre" {
          for_each = storage_resources.value.kind == "lustre" && !storage_resources.value.create ? [storage_resources.value] : []
          content {
            lustre = existing_lustre.value.name
          }
        }
        dynamic "new_bucket" {
          for_each = storage_resources.value.kind == "bucket" && storage_resources.value.create ? [storage_resources.value] : []
          content {
            bucket        = new_bucket.value.name
            storage_class = try(new_bucket.value.bucket.storage_class, null)
          }
        }
        dynamic "existing_bucket" {
          for_each = storage_resources.value.kind == "bucket" && !storage_resources.value.create ? [storage_resources.value] : []
          content {
            bucket = existing_bucket.value.name
          }
        }
      }
    }
  }

  dynamic "compute_resources" {
    for_each = var.compute
    content {
      id = compute_resources.value.id

      config {
        dynamic "new_on_demand_instances" {
          for_each = compute_resources.value.capacity == "on-demand" ? [compute_resources.value] : []
          content {
            machine_type = new_on_demand_instances.value.machine_type
            zone         = new_on_demand_instances.value.zone
          }
        }
        dynamic "new_spot_instances" {
          for_each = compute_resources.value.capacity == "spot" ? [compute_resources.value] : []
          content {
            machine_type       = new_spot_instances.value.machine_type
            zone               = new_spot_instances.value.zone
            termination_action = new_spot_instances.value.termination_action
          }
        }
        dynamic "new_reserved_instances" {
          for_each = compute_resources.value.capacity == "reservation" ? [compute_resources.value] : []
          content {
            reservation = new_reserved_instances.value.reservation
          }
        }
        dynamic "new_flex_start_instances" {
          for_each = compute_resources.value.capacity == "flex-start" ? [compute_resources.value] : []
          content {
            machine_type = new_flex_start_instances.value.machine_type
            zone         = new_flex_start_instances.value.zone
            max_duration = new_flex_start_instances.value.max_duration
          }
        }
      }
    }
  }

  orchestrator {
    slurm {
      default_partition = var.default_partition

      login_nodes {
        count             = tostring(var.login_nodes.count)
        machine_type      = var.login_nodes.machine_type
        zone              = var.login_nodes.zone
        enable_os_login   = var.login_nodes.enable_os_login
        enable_public_ips = var.login_nodes.enable_public_ips
        startup_script    = var.login_nodes.startup_script
        labels            = var.login_nodes.labels

        dynamic "boot_disk" {
          for_each = var.login_nodes.boot_disk == null ? [] : [var.login_nodes.boot_disk]
          content {
            type    = boot_disk.value.type
            size_gb = tostring(boot_disk.value.size_gb)
          }
        }
        dynamic "storage_configs" {
          for_each = var.login_nodes.storage
          content {
            id          = storage_configs.value.id
            local_mount = storage_configs.value.local_mount
          }
        }
      }

      dynamic "node_sets" {
        for_each = var.node_sets
        content {
          id                     = node_sets.value.id
          compute_id             = node_sets.value.compute_id
          static_node_count      = tostring(node_sets.value.static_node_count)
          max_dynamic_node_count = node_sets.value.max_dynamic_node_count == null ? null : tostring(node_sets.value.max_dynamic_node_count)

          compute_instance {
            startup_script = local.startup_scripts[node_sets.value.id]
            labels         = node_sets.value.labels

            dynamic "boot_disk" {
              for_each = node_sets.value.boot_disk == null ? [] : [node_sets.value.boot_disk]
              content {
                type    = boot_disk.value.type
                size_gb = tostring(boot_disk.value.size_gb)
              }
            }
          }
          dynamic "storage_configs" {
            for_each = node_sets.value.storage
            content {
              id          = storage_configs.value.id
              local_mount = storage_configs.value.local_mount
            }
          }
        }
      }

      dynamic "partitions" {
        for_each = var.partitions
        content {
          id           = partitions.value.id
          node_set_ids = partitions.value.node_set_ids
        }
      }
    }
  }

  lifecycle {
    # Cross-variable rules (variable validation may reference other variables only from
    # Terraform 1.9 on; this module supports >= 1.5). Sources: hypercomputecluster v1 API.
    precondition {
      condition     = alltrue([for ref in local.partition_refs : contains(local.node_set_ids, ref)])
      error_message = "Every partition's node_set_ids must name node sets of node_sets."
    }
    precondition {
      condition     = alltrue([for ns in var.node_sets : contains(local.compute_ids, ns.compute_id)])
      error_message = "Every node set's compute_id must name a compute resource of compute."
    }
    precondition {
      condition     = alltrue([for ref in local.storage_refs : contains(local.storage_ids, ref)])
      error_message = "Every storage mount must name a storage resource of storage."
    }
    precondition {
      condition     = length(var.partitions) > 1 ? contains(local.partition_ids, coalesce(var.default_partition, "-")) : var.default_partition == null || contains(local.partition_ids, coalesce(var.default_partition, "-"))
      error_message = "default_partition is required when there is more than one partition, and must name one of them."
    }
    precondition {
      condition     = length(distinct(local.node_set_ids)) == length(local.node_set_ids) && length(distinct(local.partition_ids)) == length(local.partition_ids)
      error_message = "Node set ids and partition ids must be unique."
    }
    precondition {
      condition     = alltrue([for c in var.compute : c.zone == var.zone]) && var.login_nodes.zone == var.zone
      error_message = "Login nodes and compute resources must all be in var.zone (the API requires one zone)."
    }
  }
}
