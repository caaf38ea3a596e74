output "name" {
  description = "Cluster name."
  value       = google_container_cluster.this.name
}

output "location" {
  description = "Cluster location (the region)."
  value       = google_container_cluster.this.location
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

output "workload_identity_pool" {
  description = "Workload Identity pool, PROJECT_ID.svc.id.goog (known at plan time)."
  value       = local.workload_identity_pool
}

output "managed_ml_diagnostics_enabled" {
  description = "Whether GKE-managed ML Diagnostics is configured on the cluster."
  value       = try(google_container_cluster.this.managed_machine_learning_diagnostics_config[0].enabled, false) == true
}
