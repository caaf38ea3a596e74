output "email" {
  description = "Email of the service account that got the roles."
  value       = local.email
}

output "member" {
  description = "IAM member string, \"serviceAccount:EMAIL\"."
  value       = "serviceAccount:${local.email}"
}

output "granted_roles" {
  description = "Roles granted on the project (sorted): the predefined roles, or the custom role's full name."
  value       = sort([for m in google_project_iam_member.node : m.role])
}
