variable "project_id" {
  description = "Project of the networks."
  type        = string
}

variable "region" {
  description = "Region of the subnets (the cluster's region; an RDMA VPC's zone must be in it)."
  type        = string
}

variable "networks" {
  description = "The extra VPCs: name, MTU, RDMA network profile (e.g. us-east5-a-vpc-roce) or null, internal range the firewall admits (null: no rule) and the subnets (name, IPv4 range)."
  type = list(object({
    name            = string
    mtu             = number
    network_profile = optional(string)
    firewall_cidr   = optional(string)
    subnets = list(object({
      name = string
      cidr = string
    }))
  }))

  validation {
    condition     = alltrue([for n in var.networks : length(n.name) <= 63 && alltrue([for s in n.subnets : length(s.name) <= 63])])
    error_message = "Compute Engine network and subnetwork names are at most 63 characters."
  }
}
