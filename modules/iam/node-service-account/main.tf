# ML Diagnostics roles for the service account VMs run as (Compute Engine, Slurm): the SDK on
# a VM authenticates as the VM's attached service account, so that account needs what a
# workload identity needs on GKE.
#
# Sources:
# - Roles: google-cloud-mldiagnostics 1.0.10 README "IAM Permissions" (roles/clusterdirector.*
#   there is roles/hypercomputecluster.* in
#   https://cloud.google.com/iam/docs/roles-permissions/hypercomputecluster).
# - xpk grants the same roles to the Compute Engine default service account for GKE nodes
#   (AI-Hypercomputer/xpk commands/managed_ml_diagnostics.py).
# None of the resources here support labels.

data "google_compute_default_service_account" "default" {
  count = var.service_account_email == null ? 1 : 0

  project = var.project_id
}

locals {
  use_custom_role  = var.iam_mode == "custom-role"
  custom_role_name = "projects/${var.project_id}/roles/${var.custom_role_id}"

  email = var.service_account_email != null ? var.service_account_email : data.google_compute_default_service_account.default[0].email

  # Key: role name known at plan time; value: the role to grant (the custom role's resource
  # attribute, so the grant waits for the role to exist).
  role_grants = local.use_custom_role ? { (local.custom_role_name) = google_project_iam_custom_role.this[0].name } : { for r in var.roles : r => r }
}

resource "google_project_iam_custom_role" "this" {
  count = local.use_custom_role ? 1 : 0

  project     = var.project_id
  role_id     = var.custom_role_id
  title       = var.custom_role_title
  description = "Least-privilege role for ML Diagnostics on VMs. Managed by mldiag-provision."
  permissions = var.custom_role_permissions
  stage       = "GA"
}

resource "google_project_iam_member" "node" {
  for_each = local.role_grants

  project = var.project_id
  role    = each.value
  member  = "serviceAccount:${local.email}"

  lifecycle {
    precondition {
      condition     = var.iam_mode != "predefined" || length(var.roles) > 0
      error_message = "iam_mode = \"predefined\" needs at least one role in roles."
    }
    precondition {
      condition     = var.iam_mode != "custom-role" || length(var.custom_role_permissions) > 0
      error_message = "iam_mode = \"custom-role\" needs at least one permission in custom_role_permissions."
    }
  }
}
