output "bucket" {
  description = "ID of the log bucket with Log Analytics enabled (\"_Default\")."
  value       = google_logging_project_bucket_config.default.bucket_id
}

output "bucket_resource_name" {
  description = "Full resource name of the bucket, projects/PROJECT/locations/global/buckets/_Default."
  value       = google_logging_project_bucket_config.default.name
}

output "analytics_enabled" {
  description = "Whether Log Analytics is enabled on the bucket."
  value       = google_logging_project_bucket_config.default.enable_analytics
}
