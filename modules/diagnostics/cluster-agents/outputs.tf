output "namespace" {
  description = "Workload namespace."
  value       = kubernetes_namespace_v1.workload.metadata[0].name
}

output "service_account" {
  description = "Workload KSA."
  value       = kubernetes_service_account_v1.workload.metadata[0].name
}

output "manual_install" {
  description = "Whether this stage installed the agents' charts (manual strategy)."
  value       = local.manual
}

output "addons" {
  description = "Helm releases of the cluster add-ons the workloads need (e.g. jobset)."
  value       = sort(keys(helm_release.addons))
}
