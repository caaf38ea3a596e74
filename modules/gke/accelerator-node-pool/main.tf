# One accelerator slice as a GKE Standard node pool: a TPU slice (machine type and node count
# from the catalog, the slice's topology) or a group of GPU VMs (guest accelerators with the
# GKE-installed driver), on the capacity it runs on (on-demand, spot, a named reservation,
# flex-start, or flex-start with queued provisioning).
#
# Sources:
# - TPU slice node pools, placement_policy.tpu_topology for multi-host slices:
#   https://cloud.google.com/kubernetes-engine/docs/concepts/tpus
# - TPU7x: a HIGH_THROUGHPUT workload policy (google_compute_resource_policy.workload, named
#   var.policy_name: unique in the project and region) named in placement_policy.policy_name
#   replaces COMPACT + --tpu-topology:
#   https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood
# - GKE stores no placement type for TPU7x pools; the provider requires `type` and the block is
#   ForceNew, so a non-empty type would replace the pool on every apply. An empty type matches
#   what GKE stores (vllm-project/ci-infra PR #547).
# - Reservation affinity: https://registry.terraform.io/providers/hashicorp/google/latest/docs/resources/container_node_pool#reservation_affinity
# - Flex-start: https://cloud.google.com/kubernetes-engine/docs/concepts/flex-start-vms
# - Queued provisioning (capacity = "queued"): the pool gets VMs only through a
#   ProvisioningRequest (Kueue's admission check); GKE creates it with
#   --enable-queued-provisioning --flex-start --enable-autoscaling --num-nodes=0
#   --location-policy=ANY --reservation-affinity=none --no-enable-autorepair:
#   https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest
# - GPUs: guest_accelerator with gpu_driver_installation_config lets GKE install the NVIDIA
#   driver: https://cloud.google.com/kubernetes-engine/docs/how-to/gpus
# - GPUDirect (A3 Mega TCPXO, A3 Ultra / A4 RDMA): one additional_node_network_configs entry per
#   extra NIC, in NIC order, and gVNIC on the node pool:
#   https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx,
#   Cluster Toolkit examples/gke-a3-ultragpu (additional_networks of the node pool)

locals {
  queued      = var.capacity == "queued"
  flex_start  = var.capacity == "flex-start" || local.queued
  reservation = var.capacity == "reservation"
  reservation_value = local.reservation ? (
    var.reservation_project == null ? var.reservation : "projects/${var.reservation_project}/reservations/${var.reservation}"
  ) : null
}

resource "google_compute_resource_policy" "workload" {
  count = var.workload_policy ? 1 : 0

  project = var.project_id
  name    = var.policy_name
  region  = var.region

  workload_policy {
    type                 = "HIGH_THROUGHPUT"
    accelerator_topology = var.tpu_topology
  }

  lifecycle {
    precondition {
      condition     = var.policy_name != null
      error_message = "workload_policy = true needs policy_name (unique in the project and region)."
    }
  }
}

resource "google_container_node_pool" "this" {
  # Waivers of checkov checks (`mldiag-provision policy` prints them with their reasons):
  #checkov:skip=CKV_GCP_68:secure boot on TPU VM machine types is unverified, and changing shielded_instance_config re-creates the pool, giving back its reserved or spot TPU/GPU capacity
  #checkov:skip=CKV_GCP_9:auto_repair is on except for flex-start and queued pools, which GKE does not auto-repair (see README); checkov cannot evaluate the expression
  project        = var.project_id
  name           = var.name
  cluster        = var.cluster
  location       = var.region
  node_locations = [var.zone]

  # Fixed size = VMs of the slice; flex-start and queued pools scale from 0 to the slice
  # instead.
  node_count = local.flex_start ? null : var.node_count

  # Per-zone limits, not total_*_node_count: GKE checks a multi-host TPU slice against the
  # per-zone maximum, which is 0 when only the totals are set ("Maximum node count 0 is not a
  # valid size of TPU pod slice with topology 2x2x2", vllm-project/ci-infra PR #545). The pool
  # lives in one zone (node_locations), so per zone = the whole pool. xpk creates flex-start
  # pools the same way: --enable-autoscaling --location-policy=ANY --max-nodes=N
  # (AI-Hypercomputer/xpk src/xpk/core/capacity.py); ANY because a balanced spread cannot
  # assemble a slice.
  dynamic "autoscaling" {
    for_each = local.flex_start ? [true] : []
    content {
      min_node_count  = 0
      max_node_count  = var.node_count
      location_policy = "ANY"
    }
  }

  # Nodes only through a ProvisioningRequest for the whole workload (queued provisioning).
  dynamic "queued_provisioning" {
    for_each = local.queued ? [true] : []
    content {
      enabled = true
    }
  }

  dynamic "placement_policy" {
    for_each = var.multi_host ? [true] : []
    content {
      type         = var.workload_policy ? "" : "COMPACT"
      tpu_topology = var.tpu_topology
      policy_name  = var.workload_policy ? google_compute_resource_policy.workload[0].name : null
    }
  }

  dynamic "network_config" {
    for_each = length(var.additional_node_networks) > 0 ? [true] : []
    content {
      dynamic "additional_node_network_configs" {
        for_each = var.additional_node_networks
        content {
          network    = additional_node_network_configs.value.network
          subnetwork = additional_node_network_configs.value.subnetwork
        }
      }
    }
  }

  node_config {
    machine_type    = var.machine_type
    spot            = var.capacity == "spot"
    flex_start      = local.flex_start ? true : null
    service_account = var.service_account
    oauth_scopes    = ["https://www.googleapis.com/auth/cloud-platform"]
    labels          = var.node_labels
    resource_labels = var.labels

    workload_metadata_config {
      mode = "GKE_METADATA"
    }

    dynamic "gvnic" {
      for_each = length(var.additional_node_networks) > 0 ? [true] : []
      content {
        enabled = true
      }
    }

    dynamic "guest_accelerator" {
      for_each = var.gpu_type == null ? [] : [true]
      content {
        type  = var.gpu_type
        count = var.gpu_count

        gpu_driver_installation_config {
          gpu_driver_version = "DEFAULT"
        }
      }
    }

    dynamic "reservation_affinity" {
      for_each = local.reservation || local.flex_start ? [true] : []
      content {
        consume_reservation_type = local.reservation ? "SPECIFIC_RESERVATION" : "NO_RESERVATION"
        key                      = local.reservation ? "compute.googleapis.com/reservation-name" : null
        values                   = local.reservation ? [local.reservation_value] : null
      }
    }
  }

  management {
    auto_repair  = !local.flex_start
    auto_upgrade = true
  }

  lifecycle {
    precondition {
      condition     = !var.multi_host || var.tpu_topology != null
      error_message = "A multi-host TPU slice node pool needs tpu_topology."
    }
    precondition {
      condition     = var.gpu_type == null || (var.gpu_count != null && !var.multi_host)
      error_message = "A GPU node pool needs gpu_count and takes no TPU placement (multi_host = false)."
    }
    precondition {
      condition     = !local.reservation || var.reservation != null
      error_message = "capacity = \"reservation\" needs the reservation name."
    }
  }
}
