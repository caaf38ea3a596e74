# Identity for an ML Diagnostics workload on GKE: a Google service account (created or reused),
# its project roles, and the Workload Identity binding that lets one Kubernetes service account
# impersonate it.
#
# Sources:
# - Roles the workload identity needs: google-cloud-mldiagnostics 1.0.10 README "IAM Permissions"
#   (roles/clusterdirector.editor in the README is roles/hypercomputecluster.editor in
#   https://cloud.google.com/iam/docs/roles-permissions/hypercomputecluster).
# - Workload Identity binding: https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity
#   (roles/iam.workloadIdentityUser for serviceAccount:POOL[NAMESPACE/KSA] on the Google SA).
# None of the resources here support labels.

locals {
  use_custom_role = var.iam_mode == "custom-role"

  # Known at plan time, so it can key for_each below.
  custom_role_name = "projects/${var.project_id}/roles/${var.custom_role_id}"

  sa_email = var.create_service_account ? google_service_account.this[0].email : data.google_service_account.existing[0].email
  # projects/PROJECT/serviceAccounts/EMAIL, the form service_account_id expects.
  sa_name = var.create_service_account ? google_service_account.this[0].name : data.google_service_account.existing[0].name

  # Key: role name known at plan time; value: the role to grant (for the custom role, the
  # resource attribute, so the grant waits for the role to exist).
  role_grants = local.use_custom_role ? { (local.custom_role_name) = google_project_iam_custom_role.this[0].name } : { for r in var.roles : r => r }

  ksa_member = "serviceAccount:${var.workload_identity_pool}[${var.k8s_namespace}/${var.k8s_service_account}]"
}

resource "google_service_account" "this" {
  count = var.create_service_account ? 1 : 0

  project      = var.project_id
  account_id   = var.account_id
  display_name = var.display_name
  description  = "Runs ML Diagnostics workloads via Workload Identity (${var.k8s_namespace}/${var.k8s_service_account}). Managed by mldiag-provision."
}

data "google_service_account" "existing" {
  count = var.create_service_account ? 0 : 1

  project    = var.project_id
  account_id = var.account_id
}

resource "google_project_iam_custom_role" "this" {
  count = local.use_custom_role ? 1 : 0

  project     = var.project_id
  role_id     = var.custom_role_id
  title       = var.custom_role_title
  description = "Least-privilege role for ML Diagnostics workloads. Managed by mldiag-provision."
  permissions = var.custom_role_permissions
  stage       = "GA"
}

resource "google_project_iam_member" "workload" {
  for_each = local.role_grants

  project = var.project_id
  role    = each.value
  member  = "serviceAccount:${local.sa_email}"
}

resource "google_service_account_iam_member" "workload_identity_user" {
  # Self-managed Kubernetes has no Workload Identity pool: no binding then.
  count = var.enable_workload_identity_binding ? 1 : 0

  service_account_id = local.sa_name
  role               = "roles/iam.workloadIdentityUser"
  member             = local.ksa_member

  lifecycle {
    # Cross-variable checks (variable validation blocks may only reference other variables
    # from Terraform 1.9 on; this module supports >= 1.5).
    precondition {
      condition     = var.iam_mode != "predefined" || length(var.roles) > 0
      error_message = "iam_mode = \"predefined\" needs at least one role in roles."
    }
    precondition {
      condition     = var.workload_identity_pool != null
      error_message = "enable_workload_identity_binding = true needs workload_identity_pool."
    }
    precondition {
      condition     = var.iam_mode != "custom-role" || length(var.custom_role_permissions) > 0
      error_message = "iam_mode = \"custom-role\" needs at least one permission in custom_role_permissions."
    }
  }
}
