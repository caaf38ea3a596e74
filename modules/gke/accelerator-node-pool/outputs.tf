output "name" {
  description = "Node pool name."
  value       = google_container_node_pool.this.name
}

output "workload_policy" {
  description = "Name of the TPU7x workload policy, or null."
  value       = var.workload_policy ? google_compute_resource_policy.workload[0].name : null
}
