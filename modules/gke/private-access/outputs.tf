output "nat" {
  description = "Name of the Cloud NAT gateway, or null."
  value       = one(google_compute_router_nat.this[*].name)
}

output "firewall" {
  description = "Name of the webhook firewall rule, or null."
  value       = one(google_compute_firewall.webhooks[*].name)
}
