output "id" {
  description = "Cluster resource id, projects/P/locations/L/clusters/ID."
  value       = google_hypercomputecluster_cluster.this.id
}

output "name" {
  description = "Relative resource name of the cluster."
  value       = google_hypercomputecluster_cluster.this.name
}

output "cluster_id" {
  description = "Cluster id (the last part of the name)."
  value       = google_hypercomputecluster_cluster.this.cluster_id
}

output "login_instances" {
  description = "Login node VMs, projects/P/zones/Z/instances/NAME (known after apply)."
  value       = try([for i in google_hypercomputecluster_cluster.this.orchestrator[0].slurm[0].login_nodes[0].instances : i.instance], [])
}

output "node_set_startup_scripts" {
  description = "The startup script of each node set, as sent to the API (for review)."
  value       = local.startup_scripts
}
