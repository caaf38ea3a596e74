variable "project_id" {
  description = "ID of the project in which the cluster is created."
  type        = string

  # Project ID rules: https://cloud.google.com/resource-manager/docs/creating-managing-projects#before_you_begin
  validation {
    condition     = can(regex("^([a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 characters: a lowercase letter first, then lowercase letters, digits or hyphens, no trailing hyphen (optionally prefixed by \"domain:\")."
  }
}

variable "name" {
  description = "Cluster name."
  type        = string

  # Same rules as the provider's ValidateFunc on google_container_cluster.name
  # (resource_container_cluster.go): at most 40 chars, [a-z0-9-], letter first, no trailing hyphen.
  validation {
    condition     = length(var.name) <= 40 && can(regex("^[a-z][-a-z0-9]*[a-z0-9]$", var.name))
    error_message = "name must be 2-40 characters: a lowercase letter first, then lowercase letters, digits or hyphens, ending in a letter or digit."
  }
}

variable "region" {
  description = "Region of the regional Autopilot cluster, e.g. us-central1. A region (not a zone) gives a regional control plane, which ML Diagnostics recommends (https://cloud.google.com/tpu/docs/ml-diagnostics/gke)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must be a region such as \"us-central1\", not a zone."
  }
}

variable "release_channel" {
  description = "GKE release channel (https://cloud.google.com/kubernetes-engine/docs/concepts/release-channels)."
  type        = string

  validation {
    condition     = contains(["RAPID", "REGULAR", "STABLE", "EXTENDED"], var.release_channel)
    error_message = "release_channel must be one of RAPID, REGULAR, STABLE, EXTENDED."
  }
}

variable "min_master_version" {
  description = "Minimum control-plane version, e.g. 1.35.0-gke.3065000; null lets the release channel pick. Required when enable_managed_ml_diagnostics is true (the exact minimum is checked by mldiag-provision's preflight from catalog/versions.yaml)."
  type        = string
  default     = null

  validation {
    condition     = var.min_master_version == null || can(regex("^(latest|[0-9]+\\.[0-9]+(\\.[0-9]+(-gke\\.[0-9]+)?)?)$", var.min_master_version))
    error_message = "min_master_version must be null, \"latest\", or a GKE version such as \"1.35\" or \"1.35.0-gke.3065000\"."
  }
}

variable "deletion_protection" {
  description = "Provider-side deletion protection: while true, terraform destroy/replace of the cluster fails."
  type        = bool
  default     = true
}

variable "enable_managed_ml_diagnostics" {
  description = "Enable GKE-managed ML Diagnostics (managed_machine_learning_diagnostics_config, google-beta provider). Needs GKE >= 1.35.0-gke.3065000; never combine with the manual Helm install of the webhook and operator (https://cloud.google.com/tpu/docs/ml-diagnostics/gke)."
  type        = bool
}

variable "network" {
  description = "VPC network name or self link."
  type        = string
  default     = "default"

  validation {
    condition     = length(var.network) > 0
    error_message = "network must not be empty."
  }
}

variable "subnetwork" {
  description = "Subnetwork name or self link; null uses the network's subnetwork in the region (auto-mode networks)."
  type        = string
  default     = null
}

variable "labels" {
  description = "Labels applied to every resource of this module that supports labels (the cluster's resource_labels)."
  type        = map(string)
  default     = {}

  # Label rules: https://cloud.google.com/resource-manager/docs/labels-overview#requirements
  validation {
    condition = alltrue([
      for k, v in var.labels :
      can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))
    ])
    error_message = "Label keys must be 1-63 chars (lowercase letter first, then lowercase letters, digits, _ or -); values at most 63 chars of lowercase letters, digits, _ or -."
  }
}
