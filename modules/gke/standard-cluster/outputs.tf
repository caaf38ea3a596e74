output "name" {
  description = "Cluster name."
  value       = google_container_cluster.this.name
}

output "location" {
  description = "Cluster region."
  value       = google_container_cluster.this.location
}

output "workload_identity_pool" {
  description = "Workload Identity pool, PROJECT.svc.id.goog."
  value       = local.workload_identity_pool
}

output "node_service_account" {
  description = "Email of the node service account."
  value       = google_service_account.nodes.email
}

output "managed_ml_diagnostics_enabled" {
  description = "Whether the GKE-managed ML Diagnostics add-on is on."
  value       = var.enable_managed_ml_diagnostics
}
