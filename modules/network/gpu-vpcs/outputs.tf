output "networks" {
  description = "Network name -> self link."
  value       = { for k, n in google_compute_network.this : k => n.self_link }
}

output "subnetworks" {
  description = "Subnetwork name -> self link (the node pools' additional networks wait on these)."
  value       = { for k, s in google_compute_subnetwork.this : k => s.self_link }
}
