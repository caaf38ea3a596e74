# Enables Log Analytics on the project's _Default log bucket (location global).
#
# Why: ML Diagnostics renders model- and performance-metric charts with a Log Analytics query
# against _Default; without analytics the charts stay empty although the data is in Cloud
# Logging. Enabling is not retroactive, cannot be undone, and costs nothing extra.
# Sources: google-cloud-mldiagnostics 1.0.10 README "Enable Log Analytics on Cloud Logging";
# https://cloud.google.com/logging/docs/log-analytics#upgrade
#
# Provider behaviour (hashicorp/google 8.7.0, resource_logging_project_bucket_config.go):
# - create acquires the existing _Default bucket (no import needed) and updates it;
# - enable_analytics is sent as its own PATCH; once true, a later false produces no diff;
# - destroy only removes the config from state: _Default cannot be deleted.
# Resource docs: https://registry.terraform.io/providers/hashicorp/google/8.7.0/docs/resources/logging_project_bucket_config
# This resource does not support labels.

resource "google_logging_project_bucket_config" "default" {
  project          = var.project_id
  location         = "global"
  bucket_id        = "_Default"
  enable_analytics = true
  retention_days   = var.retention_days
}
