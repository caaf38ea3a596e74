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

output "endpoint" {
  description = "IP address of the cluster's Kubernetes API endpoint."
  value       = google_container_cluster.this.endpoint
  sensitive   = true
}

output "ca_certificate" {
  description = "Base64-encoded public certificate of the cluster CA (master_auth[0].cluster_ca_certificate)."
  value       = google_container_cluster.this.master_auth[0].cluster_ca_certificate
  sensitive   = true
}
