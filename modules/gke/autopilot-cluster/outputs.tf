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

# Read from the cluster, not rebuilt from the project id: Google creates the pool with the
# project's first Workload Identity cluster, and setting IAM on serviceAccount:POOL[NS/KSA]
# before that fails with "Identity Pool does not exist (PROJECT.svc.id.goog)"
# (terraform-google-modules/terraform-google-kubernetes-engine#916, google/kctf#193). This
# attribute reference makes every binding that uses it wait for the cluster.
output "workload_identity_pool" {
  description = "Workload Identity pool, PROJECT_ID.svc.id.goog, read from the cluster (anything that uses it is created after the cluster)."
  value       = google_container_cluster.this.workload_identity_config[0].workload_pool
}

output "managed_ml_diagnostics_enabled" {
  description = "Whether GKE-managed ML Diagnostics is configured on the cluster."
  value       = try(google_container_cluster.this.managed_machine_learning_diagnostics_config[0].enabled, false) == true
}

output "node_service_account" {
  description = "Email of the service account the nodes run as."
  value       = local.node_service_account
}

output "control_plane_cidr" {
  description = "Source range of the control plane's connections to the nodes: the /28 of a VPC-peering private cluster, else the private endpoint's address (/32); null for a public cluster. The /32 case (Private Service Connect clusters) is unverified."
  value       = length(google_container_cluster.this.private_cluster_config) == 0 ? null : (coalesce(google_container_cluster.this.private_cluster_config[0].master_ipv4_cidr_block, "-") != "-" ? google_container_cluster.this.private_cluster_config[0].master_ipv4_cidr_block : "${google_container_cluster.this.private_cluster_config[0].private_endpoint}/32")
}
