output "services" {
  description = "Sorted list of the service names this module enabled."
  value       = sort([for s in google_project_service.this : s.service])
}

output "project_id" {
  description = "Project in which the services are enabled (passed through, so callers can depend on enablement)."
  value       = var.project_id
  depends_on  = [google_project_service.this]
}
