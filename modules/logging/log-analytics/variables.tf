variable "project_id" {
  description = "ID of the project whose _Default log bucket gets Log Analytics."
  type        = string

  # Project ID rules: https://cloud.google.com/resource-manager/docs/creating-managing-projects#before_you_begin
  validation {
    condition     = can(regex("^([a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 characters: a lowercase letter first, then lowercase letters, digits or hyphens, no trailing hyphen (optionally prefixed by \"domain:\")."
  }
}

variable "retention_days" {
  description = "Retention of the _Default log bucket in days. Required, with no default: set it to the bucket's CURRENT retention (gcloud logging buckets describe _Default --location=global --format='value(retentionDays)') unless you mean to change it."
  type        = number

  # Why no default: google_logging_project_bucket_config declares retention_days Optional with
  # Default 30, and its Create "acquires" the existing _Default bucket and PATCHes it
  # (resourceLoggingProjectBucketConfigAcquireOrCreate in the provider source,
  # google/services/logging/resource_logging_project_bucket_config.go). Omitting the value would
  # silently reset a custom _Default retention to 30 days on the first apply.
  # Range: https://cloud.google.com/logging/docs/buckets#custom-retention (1 to 3650 days).
  validation {
    condition     = var.retention_days >= 1 && var.retention_days <= 3650 && floor(var.retention_days) == var.retention_days
    error_message = "retention_days must be a whole number of days from 1 to 3650."
  }
}
