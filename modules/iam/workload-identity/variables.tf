variable "project_id" {
  description = "ID of the project that holds the service account and the IAM grants."
  type        = string

  # Project ID rules: https://cloud.google.com/resource-manager/docs/creating-managing-projects#before_you_begin
  validation {
    condition     = can(regex("^([a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be 6-30 characters: a lowercase letter first, then lowercase letters, digits or hyphens, no trailing hyphen (optionally prefixed by \"domain:\")."
  }
}

variable "account_id" {
  description = "Service account ID (the part of the email before @). Created when create_service_account is true, otherwise looked up."
  type        = string

  # https://cloud.google.com/iam/docs/service-accounts-create#creating (6-30 chars, RFC1035).
  validation {
    condition     = can(regex("^[a-z](?:[-a-z0-9]{4,28}[a-z0-9])$", var.account_id))
    error_message = "account_id must be 6-30 characters: a lowercase letter first, then lowercase letters, digits or hyphens, ending in a letter or digit."
  }
}

variable "create_service_account" {
  description = "true: create the Google service account; false: reuse an existing one with this account_id (looked up with data.google_service_account)."
  type        = bool
}

variable "display_name" {
  description = "Display name of the created service account (ignored when reusing one)."
  type        = string
  default     = "ML Diagnostics workload"

  validation {
    condition     = length(var.display_name) <= 100
    error_message = "display_name must be at most 100 characters."
  }
}

variable "iam_mode" {
  description = "\"predefined\": grant the predefined roles in var.roles; \"custom-role\": create one project custom role with var.custom_role_permissions and grant only that."
  type        = string

  validation {
    condition     = contains(["predefined", "custom-role"], var.iam_mode)
    error_message = "iam_mode must be \"predefined\" or \"custom-role\"."
  }
}

variable "roles" {
  description = "Predefined roles granted on the project when iam_mode = predefined. ML Diagnostics needs roles/hypercomputecluster.editor, roles/logging.logWriter, roles/storage.objectUser, roles/storage.bucketViewer (google-cloud-mldiagnostics 1.0.10 README \"IAM Permissions\"; role names per https://cloud.google.com/iam/docs/roles-permissions/hypercomputecluster)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for r in var.roles : can(regex("^roles/[a-zA-Z0-9_.]+$", r))])
    error_message = "Every entry in roles must be a predefined role such as \"roles/logging.logWriter\"."
  }

  # roles/clusterdirector.* do not appear in the IAM role reference; the real roles are
  # roles/hypercomputecluster.* (https://cloud.google.com/iam/docs/roles-permissions/hypercomputecluster).
  validation {
    condition     = alltrue([for r in var.roles : !startswith(r, "roles/clusterdirector.")])
    error_message = "roles/clusterdirector.* is not a grantable role name; use roles/hypercomputecluster.editor or roles/hypercomputecluster.viewer."
  }
}

variable "custom_role_id" {
  description = "Role ID of the project custom role created when iam_mode = custom-role (https://cloud.google.com/iam/docs/creating-custom-roles#creating). Unique in the project, so no default: mldiag-provision passes mlDiagnostics_<stack>; a deleted role's ID stays taken for up to 37 days (7 days to undelete, then up to 30 more)."
  type        = string

  validation {
    condition     = can(regex("^[a-zA-Z0-9_.]{3,64}$", var.custom_role_id))
    error_message = "custom_role_id must be 3-64 characters of letters, digits, underscores or periods."
  }
}

variable "custom_role_title" {
  description = "Title of the custom role (required by google_project_iam_custom_role; at most 100 characters)."
  type        = string
  default     = "ML Diagnostics workload (mldiag-provision)"

  validation {
    condition     = length(var.custom_role_title) > 0 && length(var.custom_role_title) <= 100
    error_message = "custom_role_title must be 1-100 characters."
  }
}

variable "custom_role_permissions" {
  description = "Permissions of the custom role when iam_mode = custom-role, e.g. hypercomputecluster.machineLearningRuns.create, logging.logEntries.create, storage.objects.create."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for p in var.custom_role_permissions : can(regex("^[a-zA-Z0-9]+(\\.[a-zA-Z0-9]+){2,}$", p))])
    error_message = "Every entry in custom_role_permissions must look like service.resource.verb, e.g. \"logging.logEntries.create\"."
  }
}

variable "k8s_namespace" {
  description = "Kubernetes namespace of the workload's Kubernetes service account."
  type        = string

  # DNS-1123 label: https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names
  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.k8s_namespace))
    error_message = "k8s_namespace must be a DNS-1123 label: at most 63 lowercase letters, digits or hyphens, starting and ending with a letter or digit."
  }
}

variable "k8s_service_account" {
  description = "Name of the Kubernetes service account the workload pods run as."
  type        = string

  # DNS-1123 subdomain: https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-subdomain-names
  validation {
    condition     = length(var.k8s_service_account) <= 253 && can(regex("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", var.k8s_service_account))
    error_message = "k8s_service_account must be a DNS-1123 subdomain: at most 253 lowercase letters, digits, hyphens or periods, starting and ending with a letter or digit."
  }
}

variable "workload_identity_pool" {
  description = "Workload Identity pool of the cluster, PROJECT_ID.svc.id.goog (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity)."
  type        = string
  default     = null

  validation {
    condition     = var.workload_identity_pool == null || can(regex("^[-a-z0-9.:]+\\.svc\\.id\\.goog$", var.workload_identity_pool))
    error_message = "workload_identity_pool must be null or look like \"PROJECT_ID.svc.id.goog\"."
  }
}

variable "enable_workload_identity_binding" {
  description = "Bind the Kubernetes service account through Workload Identity (GKE). False for self-managed Kubernetes, which has no Workload Identity pool."
  type        = bool
  default     = true
}
