# Regional GKE Standard cluster for TPU slice node pools, with Workload Identity, a node
# service account holding only the logging/monitoring roles nodes need, one small non-TPU
# system node pool, and optionally GKE-managed ML Diagnostics.
#
# Sources:
# - "Each Standard cluster must have at least one non-TPU slice node pool":
#   https://cloud.google.com/kubernetes-engine/docs/concepts/tpus
# - Node service account roles: https://cloud.google.com/kubernetes-engine/docs/how-to/hardening-your-cluster#use_least_privilege_sa
# - GKE_METADATA for Workload Identity: https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity
# - managed_machine_learning_diagnostics_config exists only in google-beta 8.7.0 (see
#   ../autopilot-cluster/main.tf), so the cluster is managed through google-beta.

resource "google_service_account" "nodes" {
  project      = var.project_id
  account_id   = var.node_service_account_id
  display_name = "GKE nodes of ${var.name}"
  description  = "Node service account of GKE cluster ${var.name}. Managed by mldiag-provision."
}

resource "google_project_iam_member" "nodes" {
  for_each = toset(var.node_service_account_roles)

  project = var.project_id
  role    = each.value
  member  = "serviceAccount:${google_service_account.nodes.email}"
}

resource "google_container_cluster" "this" {
  provider = google-beta

  project             = var.project_id
  name                = var.name
  location            = var.region
  min_master_version  = var.min_master_version
  deletion_protection = var.deletion_protection
  network             = var.network
  subnetwork          = var.subnetwork
  resource_labels     = var.labels

  # Node pools are separate resources; the default pool is removed right after creation.
  remove_default_node_pool = true
  initial_node_count       = 1

  release_channel {
    channel = var.release_channel
  }

  # Google creates the PROJECT.svc.id.goog pool with the project's first cluster that enables
  # Workload Identity; the workload_identity_pool output reads it from here (see outputs.tf).
  workload_identity_config {
    workload_pool = "${var.project_id}.svc.id.goog"
  }

  dynamic "managed_machine_learning_diagnostics_config" {
    for_each = var.enable_managed_ml_diagnostics ? [true] : []
    content {
      enabled = true
    }
  }

  lifecycle {
    precondition {
      condition     = !var.enable_managed_ml_diagnostics || (var.min_master_version != null && var.min_master_version != "")
      error_message = "enable_managed_ml_diagnostics = true needs min_master_version set to a GKE version that supports managed ML Diagnostics."
    }
  }
}

# The non-TPU pool for system pods and controllers (JobSet, webhooks).
resource "google_container_node_pool" "system" {
  project    = var.project_id
  name       = "system"
  cluster    = google_container_cluster.this.name
  location   = var.region
  node_count = var.system_pool_node_count

  node_config {
    machine_type    = var.system_pool_machine_type
    service_account = google_service_account.nodes.email
    oauth_scopes    = ["https://www.googleapis.com/auth/cloud-platform"]
    resource_labels = var.labels

    workload_metadata_config {
      mode = "GKE_METADATA"
    }
  }

  management {
    auto_repair  = true
    auto_upgrade = true
  }

  depends_on = [google_project_iam_member.nodes]
}
