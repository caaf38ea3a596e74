variable "project_id" {
  description = "ID of the project that owns (or, on reuse, holds) the profiles bucket."
  type        = string

  # Project ID rules: https://cloud.google.com/resource-manager/docs/creating-managing-projects#before_you_begin
  validation {
    condition     = can(regex("^([a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 characters: a lowercase letter first, then lowercase letters, digits or hyphens, no trailing hyphen (optionally prefixed by \"domain:\")."
  }
}

variable "name" {
  description = "Name of the Cloud Storage bucket that receives ML Diagnostics profiles (the SDK's gcs_path is gs://NAME/...)."
  type        = string

  # Bucket naming rules: https://cloud.google.com/storage/docs/buckets#naming
  validation {
    condition = (
      length(var.name) >= 3 && length(var.name) <= 222 &&
      can(regex("^[a-z0-9][a-z0-9._-]*[a-z0-9]$", var.name)) &&
      alltrue([for part in split(".", var.name) : length(part) >= 1 && length(part) <= 63]) &&
      (length(var.name) <= 63 || strcontains(var.name, "."))
    )
    error_message = "name must be 3-63 characters (up to 222 with dots, each dot-separated part at most 63) of lowercase letters, digits, -, _ or ., starting and ending with a letter or digit."
  }
  validation {
    condition     = !startswith(var.name, "goog") && !strcontains(var.name, "google") && !can(regex("^[0-9]+(\\.[0-9]+){3}$", var.name))
    error_message = "name must not start with \"goog\", contain \"google\", or be an IP address (https://cloud.google.com/storage/docs/buckets#naming)."
  }
}

variable "location" {
  description = "Bucket location: a region (e.g. us-central1; same region as the cluster avoids egress), dual-region or multi-region (https://cloud.google.com/storage/docs/locations)."
  type        = string

  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9-]*[a-zA-Z0-9]$", var.location))
    error_message = "location must be a Cloud Storage location such as \"us-central1\" or \"US\"."
  }
}

variable "create" {
  description = "true: create the bucket; false: reuse an existing bucket with this name (looked up with data.google_storage_bucket)."
  type        = bool
}

variable "force_destroy" {
  description = "Allow terraform destroy to delete the bucket even when it holds objects. Default false: a destroy must never delete profile data unless the user asked for it."
  type        = bool
  default     = false
}

variable "labels" {
  description = "Labels applied to every resource of this module that supports labels."
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

variable "soft_delete_retention_seconds" {
  description = "Soft-delete retention of deleted objects in seconds: 0 disables soft delete, otherwise 604800 (7 days, the Cloud Storage default) to 7776000 (90 days). https://cloud.google.com/storage/docs/soft-delete"
  type        = number
  default     = 604800

  validation {
    condition     = var.soft_delete_retention_seconds == 0 || (var.soft_delete_retention_seconds >= 604800 && var.soft_delete_retention_seconds <= 7776000)
    error_message = "soft_delete_retention_seconds must be 0 or between 604800 (7 days) and 7776000 (90 days)."
  }
}
