# Enables Google Cloud APIs for an ML Diagnostics stack.
#
# APIs are never disabled by `terraform destroy`: other workloads in the project may depend on
# them, and disabling e.g. container.googleapis.com would break every cluster in the project.
# Resource reference: https://registry.terraform.io/providers/hashicorp/google/8.7.0/docs/resources/google_project_service
# google_project_service does not support labels.

resource "google_project_service" "this" {
  for_each = var.services

  project                    = var.project_id
  service                    = each.value
  disable_on_destroy         = false
  disable_dependent_services = false
}
