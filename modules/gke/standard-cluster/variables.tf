variable "project_id" {
  description = "ID of the project in which the cluster is created."
  type        = string
}

variable "name" {
  description = "Cluster name: 2-40 characters, lowercase letter first, [a-z0-9-], no trailing hyphen."
  type        = string

  validation {
    condition     = length(var.name) <= 40 && can(regex("^[a-z][-a-z0-9]*[a-z0-9]$", var.name))
    error_message = "name must be 2-40 characters: a lowercase letter first, then lowercase letters, digits or hyphens, ending in a letter or digit."
  }
}

variable "region" {
  description = "Region of the regional cluster, e.g. us-central1."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must be a region such as \"us-central1\", not a zone."
  }
}

variable "release_channel" {
  description = "GKE release channel."
  type        = string

  validation {
    condition     = contains(["RAPID", "REGULAR", "STABLE", "EXTENDED"], var.release_channel)
    error_message = "release_channel must be one of RAPID, REGULAR, STABLE, EXTENDED."
  }
}

variable "min_master_version" {
  description = "Minimum control-plane version, e.g. 1.35.0-gke.3065000; null lets the release channel pick."
  type        = string
  default     = null
}

variable "deletion_protection" {
  description = "While true, terraform destroy/replace of the cluster fails."
  type        = bool
  default     = true
}

variable "enable_managed_ml_diagnostics" {
  description = "Turn on the GKE-managed ML Diagnostics add-on (connection operator and injection webhook)."
  type        = bool
}

variable "enable_gcs_fuse_csi_driver" {
  description = "Turn on the Cloud Storage FUSE CSI driver add-on (GcsFuseCsiDriver) for workloads that mount buckets."
  type        = bool
  default     = false
}

variable "network" {
  description = "VPC network name or self link."
  type        = string
  default     = "default"
}

variable "subnetwork" {
  description = "Subnetwork name or self link; null for the network's default in the region."
  type        = string
  default     = null
}

variable "labels" {
  description = "Labels applied to the cluster and node resources."
  type        = map(string)
  default     = {}
}

variable "system_pool_machine_type" {
  description = "Machine type of the non-TPU system node pool."
  type        = string
  default     = "e2-standard-4"
}

variable "system_pool_node_count" {
  description = "Nodes per zone in the system node pool."
  type        = number
  default     = 1

  validation {
    condition     = var.system_pool_node_count >= 1
    error_message = "A Standard cluster with TPU node pools needs at least one non-TPU node."
  }
}

variable "node_service_account_id" {
  description = "Account id of the dedicated node service account this module creates (6-30 characters); null when node_service_account_email names an existing one."
  type        = string
  default     = null

  validation {
    condition     = var.node_service_account_id == null || can(regex("^[a-z](?:[-a-z0-9]{4,28}[a-z0-9])$", var.node_service_account_id))
    error_message = "node_service_account_id must be 6-30 characters: lowercase letter first, then lowercase letters, digits or hyphens."
  }
}

variable "node_service_account_email" {
  description = "Email of an existing service account the nodes run as (instead of creating one); never the Compute Engine default service account."
  type        = string
  default     = null

  # https://cloud.google.com/compute/docs/access/service-accounts#default_service_account
  validation {
    condition     = var.node_service_account_email == null || !can(regex("-compute@developer\\.gserviceaccount\\.com$", var.node_service_account_email))
    error_message = "node_service_account_email must not be the Compute Engine default service account (PROJECT_NUMBER-compute@developer.gserviceaccount.com): nodes get a dedicated least-privilege account."
  }
}

variable "node_service_account_roles" {
  description = "Project roles for the node service account (roles/container.defaultNodeServiceAccount, https://cloud.google.com/kubernetes-engine/security/configure-node-service-accounts)."
  type        = list(string)
}

variable "private_nodes" {
  description = "Private nodes: internal IP addresses only (https://cloud.google.com/kubernetes-engine/docs/how-to/private-clusters)."
  type        = bool
  default     = false
}

variable "private_endpoint" {
  description = "Private endpoint only: the control plane answers inside the VPC and from authorized networks."
  type        = bool
  default     = false
}

variable "master_ipv4_cidr_block" {
  description = "The control plane's /28 (clusters with VPC Network Peering); null lets GKE pick (Private Service Connect clusters, GKE 1.29+)."
  type        = string
  default     = null

  validation {
    condition     = var.master_ipv4_cidr_block == null || can(regex("^[0-9.]+/28$", var.master_ipv4_cidr_block))
    error_message = "master_ipv4_cidr_block must be a /28 range such as 172.16.0.32/28."
  }
}

variable "authorized_networks" {
  description = "CIDR blocks allowed to reach the control plane; null: no master authorized networks block."
  type = list(object({
    cidr_block   = string
    display_name = optional(string)
  }))
  default = null
}

variable "maintenance_window" {
  description = "Recurring maintenance window (RFC 3339 UTC start/end of the first occurrence, RFC 5545 recurrence); null: GKE's default."
  type = object({
    start_time = string
    end_time   = string
    recurrence = string
  })
  default = null
}

variable "maintenance_exclusions" {
  description = "Maintenance exclusions: name, RFC 3339 start/end and scope (NO_UPGRADES, NO_MINOR_UPGRADES, NO_MINOR_OR_NODE_UPGRADES)."
  type = list(object({
    name       = string
    start_time = string
    end_time   = string
    scope      = string
  }))
  default = []

  # MaintenanceExclusionOptions.Scope: https://cloud.google.com/python/docs/reference/container/latest/google.cloud.container_v1.types.MaintenanceExclusionOptions
  validation {
    condition     = alltrue([for e in var.maintenance_exclusions : contains(["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"], e.scope)])
    error_message = "Each maintenance exclusion's scope must be NO_UPGRADES, NO_MINOR_UPGRADES or NO_MINOR_OR_NODE_UPGRADES."
  }
}

variable "enable_multi_networking" {
  description = "Multi-networking with GKE Dataplane V2, for GPUDirect node pools whose pods attach extra NICs."
  type        = bool
  default     = false
}
