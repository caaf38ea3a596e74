variable "namespace" {
  description = "Namespace of the workloads."
  type        = string
}

variable "namespace_labels" {
  description = "Labels of the workload namespace, including managed-mldiagnostics-gke = \"true\"."
  type        = map(string)
}

variable "service_account" {
  description = "Kubernetes service account the workloads run as."
  type        = string
}

variable "service_account_annotations" {
  description = "Annotations of the KSA, e.g. iam.gke.io/gcp-service-account for Workload Identity."
  type        = map(string)
  default     = {}
}

variable "exempt_label" {
  description = "Label that exempts a namespace from the injection webhook."
  type        = map(string)
  default     = { "diagon-webhook-exempt" = "true" }
}

variable "exempt_existing_namespaces" {
  description = "System namespaces to label exempt before the webhook is installed (none of Autopilot's managed namespaces: GKE Warden refuses to label them)."
  type        = list(string)
  default     = ["kube-system", "kube-public", "kube-node-lease"]
}

variable "agent_namespaces" {
  description = "Namespaces this module creates (exempt) for cert-manager and the agents."
  type        = list(string)
  default     = []
}

variable "cert_manager" {
  description = "cert-manager chart to install, or null (already installed, or the managed add-on)."
  type = object({
    chart      = string
    repository = string
    version    = string
    namespace  = string
    set        = list(object({ name = string, value = string }))
  })
  default = null
}

variable "injection_webhook" {
  description = "mldiagnostics-injection-webhook chart (manual install), or null."
  type = object({
    chart      = string
    repository = string
    version    = string
    namespace  = string
    set        = list(object({ name = string, value = string }))
  })
  default = null
}

variable "connection_operator" {
  description = "mldiagnostics-connection-operator chart (manual install), or null."
  type = object({
    chart      = string
    repository = string
    version    = string
    namespace  = string
    set        = list(object({ name = string, value = string }))
  })
  default = null
}

variable "diagon" {
  description = "A user-supplied Diagon DaemonSet chart, or null."
  type = object({
    chart      = string
    repository = string
    version    = string
    namespace  = string
    set        = list(object({ name = string, value = string }))
  })
  default = null
}

variable "addons" {
  description = "Cluster add-ons the workloads need (a controller per CRD-backed workload kind, e.g. JobSet), installed before the workload namespace."
  type = list(object({
    name       = string
    kind       = string
    crd        = string
    chart      = string
    repository = string
    version    = string
    namespace  = string
    set        = list(object({ name = string, value = string }))
  }))
  default = []
}

variable "profiler_network_policy" {
  description = "Allow the agents' namespace to reach the profiler port (e.g. 9999), or null."
  type = object({
    from_namespace = string
    port           = number
  })
  default = null
}
