output "name" {
  description = "Name of the profiles bucket."
  value       = var.create ? google_storage_bucket.this[0].name : data.google_storage_bucket.existing[0].name
}

output "url" {
  description = "gs:// URL of the profiles bucket, e.g. for the SDK's gcs_path."
  value       = "gs://${var.create ? google_storage_bucket.this[0].name : data.google_storage_bucket.existing[0].name}"
}
