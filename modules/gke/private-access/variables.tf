variable "project_id" {
  description = "Project of the router, NAT and firewall rule."
  type        = string
}

variable "region" {
  description = "Region of the Cloud Router and NAT (the cluster's region)."
  type        = string
}

variable "network" {
  description = "VPC network of the cluster (name or self link)."
  type        = string
}

variable "cluster" {
  description = "Name of the cluster (for descriptions)."
  type        = string
}

variable "router_name" {
  description = "Cloud Router name; null: no router."
  type        = string
  default     = null
}

variable "nat_name" {
  description = "Cloud NAT gateway name; null: no NAT (the network already has one)."
  type        = string
  default     = null
}

variable "firewall_name" {
  description = "Name of the firewall rule opening webhook_ports from the control plane; null: no rule."
  type        = string
  default     = null
}

variable "webhook_ports" {
  description = "TCP ports of the in-cluster admission webhooks' pods."
  type        = list(number)
  default     = []

  validation {
    condition     = alltrue([for p in var.webhook_ports : p >= 1 && p <= 65535 && floor(p) == p])
    error_message = "webhook_ports must be TCP port numbers (1-65535)."
  }
}

variable "control_plane_cidr" {
  description = "Source range of the control plane (the cluster module's control_plane_cidr output)."
  type        = string
  default     = null
}

variable "node_service_account" {
  description = "Email of the nodes' service account: the firewall rule's target."
  type        = string
  default     = null
}
