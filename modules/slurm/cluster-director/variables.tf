variable "project_id" {
  description = "Project of the cluster."
  type        = string
}

variable "region" {
  description = "Region of the cluster (its location)."
  type        = string
}

variable "zone" {
  description = "The one zone of login nodes, compute resources, Filestore and Lustre (the API requires them to match)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+-[a-z0-9]+$", var.zone))
    error_message = "zone must look like us-central1-a."
  }
}

variable "cluster_id" {
  description = "Cluster id: RFC 1034, lower-case letters, digits and hyphens, at most 63 characters."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.cluster_id))
    error_message = "cluster_id must be an RFC 1034 label: a lowercase letter first, then lowercase letters, digits or hyphens, at most 63 characters."
  }
}

variable "description" {
  description = "Description of the cluster."
  type        = string
  default     = null
}

variable "labels" {
  description = "Labels on the cluster and on every login and compute VM."
  type        = map(string)
  default     = {}
}

variable "deletion_protection" {
  description = "true: deletion_policy PREVENT (a destroy fails until it is set to false and applied)."
  type        = bool
  default     = true
}

variable "network" {
  description = "The cluster's network: create = true makes a new one named by network (projects/P/global/networks/N); false imports network and subnetwork."
  type = object({
    id         = string
    create     = bool
    network    = string
    subnetwork = optional(string)
  })

  validation {
    condition     = var.network.create || var.network.subnetwork != null
    error_message = "An existing network (create = false) needs its subnetwork."
  }
}

variable "storage" {
  description = "Storage resources: kind filestore | lustre | bucket; create = false imports an existing one by name (instances as projects/P/locations/L/instances/I)."
  type = list(object({
    id     = string
    kind   = string
    create = bool
    name   = string
    mount  = string
    filestore = optional(object({
      tier        = string
      capacity_gb = number
      file_share  = string
      protocol    = optional(string)
    }))
    lustre = optional(object({
      capacity_gb = optional(number)
      filesystem  = string
      throughput  = optional(number)
    }))
    bucket = optional(object({
      storage_class = optional(string)
    }))
  }))
  default = []

  validation {
    condition     = alltrue([for s in var.storage : contains(["filestore", "lustre", "bucket"], s.kind)])
    error_message = "Every storage kind must be filestore, lustre or bucket."
  }

  # Cluster Director FileShareConfig.capacity_gb: 1024 to 102400 (google-cloud-hypercomputecluster v1).
  validation {
    condition     = alltrue([for s in var.storage : s.kind != "filestore" || !s.create || try(s.filestore.capacity_gb >= 1024 && s.filestore.capacity_gb <= 102400, false)])
    error_message = "A new Filestore instance needs filestore.capacity_gb between 1024 and 102400."
  }

  # NewLustreConfig.capacity_gb: 18000 to 7632000; filesystem: at most 8 letters and digits.
  validation {
    condition     = alltrue([for s in var.storage : s.kind != "lustre" || !s.create || try(s.lustre.capacity_gb >= 18000 && s.lustre.capacity_gb <= 7632000 && can(regex("^[A-Za-z0-9]{1,8}$", s.lustre.filesystem)), false)])
    error_message = "A new Managed Lustre instance needs lustre.capacity_gb between 18000 and 7632000 and a filesystem name of 1-8 letters and digits."
  }
}

variable "compute" {
  description = "Compute resources (one per node set): capacity on-demand | spot | reservation | flex-start; a reservation (projects/P/zones/Z/reservations/R) fixes machine type and zone; flex-start needs max_duration (e.g. \"259200s\")."
  type = list(object({
    id                 = string
    capacity           = string
    machine_type       = optional(string)
    zone               = string
    reservation        = optional(string)
    max_duration       = optional(string)
    termination_action = optional(string)
  }))

  validation {
    condition     = alltrue([for c in var.compute : contains(["on-demand", "spot", "reservation", "flex-start"], c.capacity)])
    error_message = "Every compute capacity must be on-demand, spot, reservation or flex-start."
  }

  validation {
    condition     = alltrue([for c in var.compute : c.capacity != "reservation" || c.reservation != null])
    error_message = "capacity = \"reservation\" needs reservation (projects/P/zones/Z/reservations/R)."
  }

  validation {
    condition     = alltrue([for c in var.compute : c.capacity != "flex-start" || can(regex("^[0-9]+s$", c.max_duration))])
    error_message = "capacity = \"flex-start\" needs max_duration in seconds, e.g. \"259200s\"."
  }

  validation {
    condition     = alltrue([for c in var.compute : c.capacity == "reservation" || c.machine_type != null])
    error_message = "Every compute resource but a reservation needs machine_type."
  }
}

variable "login_nodes" {
  description = "Login nodes: N2 standard machine types of at most 32 vCPUs; startup_script must finish within 5 minutes."
  type = object({
    count             = number
    machine_type      = string
    zone              = string
    enable_os_login   = bool
    enable_public_ips = bool
    startup_script    = optional(string)
    storage           = list(object({ id = string, local_mount = string }))
    boot_disk         = optional(object({ type = string, size_gb = number }))
    labels            = optional(map(string), {})
  })

  validation {
    condition     = var.login_nodes.count >= 1 && floor(var.login_nodes.count) == var.login_nodes.count
    error_message = "login_nodes.count must be a whole number of at least 1."
  }
}

variable "node_sets" {
  description = "Slurm node sets: each runs on the compute resource compute_id; startup_script is your own script, run after the ML Diagnostics SDK install."
  type = list(object({
    id                     = string
    compute_id             = string
    static_node_count      = number
    max_dynamic_node_count = optional(number)
    storage                = list(object({ id = string, local_mount = string }))
    startup_script         = optional(string)
    boot_disk              = optional(object({ type = string, size_gb = number }))
    labels                 = optional(map(string), {})
  }))

  validation {
    condition     = length(var.node_sets) > 0
    error_message = "A Slurm cluster needs at least one node set."
  }
}

variable "partitions" {
  description = "Slurm partitions: ids of the node sets in each."
  type = list(object({
    id           = string
    node_set_ids = list(string)
  }))

  validation {
    condition     = length(var.partitions) > 0
    error_message = "A Slurm cluster needs at least one partition (jobs are submitted to partitions)."
  }
}

variable "default_partition" {
  description = "Partition for jobs that name none; required (and only allowed) with more than one partition."
  type        = string
  default     = null
}

variable "mldiag" {
  description = "ML Diagnostics on the nodes: pip requirement of the SDK (and an optional index URL), and what job scripts pass to machinelearning_run(region=, gcs_path=)."
  type = object({
    enabled           = bool
    sdk_package       = string
    pip_index_url     = optional(string)
    profiles_gcs_path = string
    mlrun_region      = string
  })
}
