variable "project_id" {
  description = "Project of the cluster."
  type        = string
}

variable "cluster" {
  description = "Name of the GKE Standard cluster."
  type        = string
}

variable "region" {
  description = "Region of the cluster (and of the TPU7x workload policy)."
  type        = string
}

variable "zone" {
  description = "Zone of the TPU VMs; a slice lives in one zone."
  type        = string
}

variable "name" {
  description = "Node pool name: at most 40 characters, lowercase letter first, [a-z0-9-]."
  type        = string

  validation {
    condition     = length(var.name) <= 40 && can(regex("^[a-z][-a-z0-9]*[a-z0-9]$", var.name))
    error_message = "name must be at most 40 characters: a lowercase letter first, then lowercase letters, digits or hyphens."
  }
}

variable "machine_type" {
  description = "TPU or GPU machine type, e.g. ct5p-hightpu-4t or a3-ultragpu-8g (from the mldiag-provision catalog)."
  type        = string
}

variable "node_count" {
  description = "VMs of the slice (TPU: chips / chips per VM; GPU: nodes); never 0."
  type        = number

  validation {
    condition     = var.node_count >= 1
    error_message = "node_count is the number of VMs of the slice and must be at least 1."
  }
}

variable "tpu_topology" {
  description = "Slice topology, e.g. 2x2x4; required for multi-host slices."
  type        = string
  default     = null
}

variable "multi_host" {
  description = "Whether the slice spans more than one VM (placement policy needed)."
  type        = bool
}

variable "workload_policy" {
  description = "Place the slice with a HIGH_THROUGHPUT workload policy (TPU7x multi-host) instead of COMPACT."
  type        = bool
  default     = false
}

variable "policy_name" {
  description = "Name of the workload policy (workload_policy = true): a regional resource policy, unique in the project and region, so it names the cluster too (mldiag-provision: <cluster>-<pool>-workload; stacks rendered before had <pool>-workload and keep it)."
  type        = string
  default     = null

  # Compute Engine names: https://cloud.google.com/compute/docs/naming-resources
  validation {
    condition     = var.policy_name == null || can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.policy_name))
    error_message = "policy_name must be 1-63 characters: a lowercase letter first, then lowercase letters, digits or hyphens, no trailing hyphen."
  }
}

variable "capacity" {
  description = "on-demand, spot, reservation, flex-start or queued (flex-start with queued provisioning: nodes only through a ProvisioningRequest)."
  type        = string

  validation {
    condition     = contains(["on-demand", "spot", "reservation", "flex-start", "queued"], var.capacity)
    error_message = "capacity must be on-demand, spot, reservation, flex-start or queued."
  }
}

variable "reservation" {
  description = "Reservation name (capacity = reservation)."
  type        = string
  default     = null
}

variable "reservation_project" {
  description = "Project owning a shared reservation; null for the cluster's project."
  type        = string
  default     = null
}

variable "service_account" {
  description = "Node service account email."
  type        = string
}

variable "node_labels" {
  description = "Kubernetes labels on the nodes."
  type        = map(string)
  default     = {}
}

variable "labels" {
  description = "Google Cloud labels on the node VMs."
  type        = map(string)
  default     = {}
}

variable "gpu_type" {
  description = "GPU accelerator type (GKE label value, e.g. nvidia-h200-141gb) for a GPU pool; null for TPU."
  type        = string
  default     = null
}

variable "gpu_count" {
  description = "GPUs per VM of the machine type (GPU pools)."
  type        = number
  default     = null
}

variable "additional_node_networks" {
  description = "GPUDirect pools: the extra NICs in order, each {network, subnetwork} (names); empty for none. Turns on gVNIC."
  type = list(object({
    network    = string
    subnetwork = string
  }))
  default = []
}
