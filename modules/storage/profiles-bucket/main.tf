# Cloud Storage bucket for ML Diagnostics profiles (xprof traces written by the workload's
# profiler server to gcs_path). The workload identity needs roles/storage.objectUser and
# roles/storage.bucketViewer on it (google-cloud-mldiagnostics 1.0.10 README "IAM Permissions");
# those grants live in modules/iam/workload-identity.
#
# - uniform bucket-level access + enforced public access prevention: profile data is never public
#   (https://cloud.google.com/storage/docs/uniform-bucket-level-access,
#   https://cloud.google.com/storage/docs/public-access-prevention).
# - force_destroy defaults to false so a destroy fails on a non-empty bucket instead of
#   deleting profiles.
# Resource docs: https://registry.terraform.io/providers/hashicorp/google/8.7.0/docs/resources/storage_bucket

resource "google_storage_bucket" "this" {
  # Waivers of checkov checks (`mldiag-provision policy` prints them with their reasons):
  #checkov:skip=CKV_GCP_62:Cloud Audit Logs (Data Access) is Google's recommended way to log bucket access, https://cloud.google.com/storage/docs/access-logs; usage logs would need a second bucket
  #checkov:skip=CKV_GCP_78:soft delete (soft_delete_policy below) keeps deleted profiles recoverable, https://cloud.google.com/storage/docs/soft-delete; profiles are written once, so versioning would only add cost
  count = var.create ? 1 : 0

  project                     = var.project_id
  name                        = var.name
  location                    = var.location
  force_destroy               = var.force_destroy
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  labels                      = var.labels

  soft_delete_policy {
    retention_duration_seconds = var.soft_delete_retention_seconds
  }
}

# Reuse: the bucket must already exist. Cross-project buckets additionally need a grant to the
# Cluster Director service agent service-PROJECT_NUMBER@gcp-sa-hypercomputecluster.iam.gserviceaccount.com
# (see reference/ml-diagnostics-facts.md section 2.3); this module does not make that grant.
data "google_storage_bucket" "existing" {
  count = var.create ? 0 : 1

  project = var.project_id
  name    = var.name
}
