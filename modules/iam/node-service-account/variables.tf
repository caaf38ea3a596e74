variable "project_id" {
  description = "Project of the grants (and of the Compute Engine default service account)."
  type        = string

  # Project ID rules: https://cloud.google.com/resource-manager/docs/creating-managing-projects#before_you_begin
  validation {
    condition     = can(regex("^([a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 characters: a lowercase letter first, then lowercase letters, digits or hyphens, no trailing hyphen (optionally prefixed by \"domain:\")."
  }
}

variable "service_account_email" {
  description = "Email of the service account the VMs run as; null: the project's Compute Engine default service account (looked up)."
  type        = string
  default     = null

  validation {
    condition     = var.service_account_email == null || can(regex("^[a-z0-9][-a-z0-9._]*@[a-z0-9][-a-z0-9.]*\\.[a-z]+$", var.service_account_email))
    error_message = "service_account_email must be a service account email such as NAME@PROJECT.iam.gserviceaccount.com."
  }
}

variable "iam_mode" {
  description = "\"predefined\": grant var.roles; \"custom-role\": create one project custom role with var.custom_role_permissions and grant only that."
  type        = string

  validation {
    condition     = contains(["predefined", "custom-role"], var.iam_mode)
    error_message = "iam_mode must be \"predefined\" or \"custom-role\"."
  }
}

variable "roles" {
  description = "Predefined roles (iam_mode = predefined): roles/hypercomputecluster.editor, roles/logging.logWriter, roles/storage.objectUser, roles/storage.bucketViewer."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for r in var.roles : can(regex("^roles/[a-zA-Z0-9_.]+$", r)) && !startswith(r, "roles/clusterdirector.")])
    error_message = "Every entry in roles must be a predefined role such as \"roles/logging.logWriter\" (roles/clusterdirector.* is not grantable; use roles/hypercomputecluster.*)."
  }
}

variable "custom_role_id" {
  description = "Role ID of the custom role (iam_mode = custom-role). Unique in the project, so no default: mldiag-provision passes mlDiagnostics_<stack>; a deleted role's ID stays taken for up to 37 days (7 days to undelete, then up to 30 more)."
  type        = string

  validation {
    condition     = can(regex("^[a-zA-Z0-9_.]{3,64}$", var.custom_role_id))
    error_message = "custom_role_id must be 3-64 characters of letters, digits, underscores or periods."
  }
}

variable "custom_role_title" {
  description = "Title of the custom role (at most 100 characters)."
  type        = string
  default     = "ML Diagnostics on VMs (mldiag-provision)"

  validation {
    condition     = length(var.custom_role_title) > 0 && length(var.custom_role_title) <= 100
    error_message = "custom_role_title must be 1-100 characters."
  }
}

variable "custom_role_permissions" {
  description = "Permissions of the custom role (iam_mode = custom-role)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for p in var.custom_role_permissions : can(regex("^[a-zA-Z0-9]+(\\.[a-zA-Z0-9]+){2,}$", p))])
    error_message = "Every entry in custom_role_permissions must look like service.resource.verb, e.g. \"logging.logEntries.create\"."
  }
}
