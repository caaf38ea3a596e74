output "email" {
  description = "Email of the Google service account the workload runs as."
  value       = local.sa_email
}

output "member" {
  description = "IAM member string of the service account, \"serviceAccount:EMAIL\"."
  value       = "serviceAccount:${local.sa_email}"
}

output "granted_roles" {
  description = "Roles granted to the service account on the project (sorted): the predefined roles, or the custom role's full name."
  value       = sort([for m in google_project_iam_member.workload : m.role])
}

output "ksa_annotation" {
  description = "Annotation to put on the Kubernetes service account: iam.gke.io/gcp-service-account = EMAIL (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity)."
  value       = { "iam.gke.io/gcp-service-account" = local.sa_email }
}
