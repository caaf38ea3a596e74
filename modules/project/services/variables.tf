variable "project_id" {
  description = "ID of the project in which the APIs are enabled."
  type        = string

  # Project ID rules: https://cloud.google.com/resource-manager/docs/creating-managing-projects#before_you_begin
  validation {
    condition     = can(regex("^([a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 characters: a lowercase letter first, then lowercase letters, digits or hyphens, no trailing hyphen (optionally prefixed by \"domain:\")."
  }
}

variable "services" {
  description = "Service names to enable, e.g. hypercomputecluster.googleapis.com (the Cluster Director API used by ML Diagnostics), container.googleapis.com, logging.googleapis.com."
  type        = set(string)

  validation {
    condition     = alltrue([for s in var.services : can(regex("^[a-z][a-z0-9-]*(\\.[a-z0-9-]+)+$", s))])
    error_message = "Every entry in services must be a service name such as \"container.googleapis.com\"."
  }

  # There is no clusterdirector.googleapis.com; the Cluster Director / ML Diagnostics API is
  # hypercomputecluster.googleapis.com. Source: google-cloud-mldiagnostics 1.0.10 README
  # ("Enable Cluster Director API") and the SDK endpoint
  # https://hypercomputecluster.googleapis.com/v1alpha (google_cloud_mldiagnostics/clients/control_plane_client.py).
  validation {
    condition     = !contains(var.services, "clusterdirector.googleapis.com")
    error_message = "clusterdirector.googleapis.com does not exist; use hypercomputecluster.googleapis.com (Cluster Director API)."
  }
}
