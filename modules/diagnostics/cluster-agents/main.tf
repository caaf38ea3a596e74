# ML Diagnostics inside a cluster that already exists (the second stage of a stack):
# the workload namespace labelled for the injection webhook, the Workload Identity KSA, the
# controllers the workloads' kinds need (JobSet), and for the manual install cert-manager,
# the injection webhook and the connection operator from their Helm charts, with system
# namespaces exempted from the webhook first.
#
# Sources:
# - Charts, versions, namespace gke-mldiagnostics, label managed-mldiagnostics-gke=true set
#   before workloads: google-cloud-mldiagnostics README (PyPI), https://cloud.google.com/tpu/docs/ml-diagnostics/gke
# - The webhook's MutatingWebhookConfiguration has failurePolicy Fail and skips namespaces
#   labelled diagon-webhook-exempt=true (kubernetes-engine-samples sample chart): system
#   namespaces are labelled before the webhook exists, so their pods never depend on it.
# - GKE Autopilot: kube-system, kube-public and kube-node-lease are Autopilot-managed; GKE
#   Warden refuses every write there, labels on the Namespace objects included ("GKE Warden
#   authz [denied by managed-namespaces-limitation]", terraform-google-kubernetes-engine#2348,
#   open-policy-agent/gatekeeper#3045), so on Autopilot the plan passes none of them in
#   exempt_existing_namespaces and no step touches them. failurePolicy Fail is still safe for
#   them: Autopilot's AdmissionWebhookController rewrites every webhook's namespaceSelector
#   to add kubernetes.io/metadata.name NotIn [kube-system, gke-gmp-system, gke-managed-cim]
#   ("mutated namespaceselector of the webhooks to enforce GKE Autopilot policies",
#   Dynatrace/dynatrace-operator#2194), and kube-public / kube-node-lease run no pods.
#   Catalog: gke.yaml autopilot.managedNamespaces, autopilot.webhookNamespaceExclusion.
# - Cluster add-ons the workloads need (gke.yaml workloadAddons): a JobSet workload needs the
#   JobSet controller and its CRD (kubernetes-sigs/jobset chart, pinned); it is installed in
#   its own namespace before the workload namespace exists. helm uninstall keeps the CRD.
# - helm provider 3.x: `set` is a list attribute, not a block.

locals {
  manual = var.injection_webhook != null
}

# System namespaces that always exist: exempt them before the webhook is installed.
resource "kubernetes_labels" "exempt" {
  for_each = local.manual ? toset(var.exempt_existing_namespaces) : toset([])

  api_version = "v1"
  kind        = "Namespace"
  labels      = var.exempt_label

  metadata {
    name = each.value
  }
}

# Namespaces the charts install into, created here (already exempt) instead of by helm.
resource "kubernetes_namespace_v1" "agents" {
  for_each = local.manual ? toset(var.agent_namespaces) : toset([])

  metadata {
    name   = each.value
    labels = var.exempt_label
  }
}

resource "helm_release" "cert_manager" {
  count = var.cert_manager == null ? 0 : 1

  name             = "cert-manager"
  chart            = var.cert_manager.chart
  repository       = var.cert_manager.repository
  version          = var.cert_manager.version
  namespace        = var.cert_manager.namespace
  create_namespace = false
  wait             = true
  timeout          = 600
  set              = var.cert_manager.set

  depends_on = [kubernetes_namespace_v1.agents]
}

resource "helm_release" "injection_webhook" {
  count = local.manual ? 1 : 0

  name             = "mldiagnostics-injection-webhook"
  chart            = var.injection_webhook.chart
  repository       = var.injection_webhook.repository
  version          = var.injection_webhook.version
  namespace        = var.injection_webhook.namespace
  create_namespace = false
  wait             = true
  timeout          = 600
  set              = var.injection_webhook.set

  # cert-manager issues the webhook's serving certificate; exemptions come first
  depends_on = [helm_release.cert_manager, kubernetes_labels.exempt, kubernetes_namespace_v1.agents]
}

resource "helm_release" "connection_operator" {
  count = var.connection_operator == null ? 0 : 1

  name             = "mldiagnostics-connection-operator"
  chart            = var.connection_operator.chart
  repository       = var.connection_operator.repository
  version          = var.connection_operator.version
  namespace        = var.connection_operator.namespace
  create_namespace = false
  wait             = true
  timeout          = 600
  set              = var.connection_operator.set

  depends_on = [helm_release.injection_webhook]
}

# A Diagon DaemonSet chart supplied by the user (there is no public one).
resource "helm_release" "diagon" {
  count = var.diagon == null ? 0 : 1

  name             = "diagon"
  chart            = var.diagon.chart
  repository       = var.diagon.repository
  version          = var.diagon.version
  namespace        = var.diagon.namespace
  create_namespace = true
  set              = var.diagon.set
}

# Namespaces of the add-ons, created here (exempt from the injection webhook) instead of by helm.
resource "kubernetes_namespace_v1" "addons" {
  for_each = toset([for a in var.addons : a.namespace])

  metadata {
    name   = each.value
    labels = var.exempt_label
  }
}

# Controllers of the CRD-backed kinds the workloads use (e.g. JobSet), pinned charts.
resource "helm_release" "addons" {
  for_each = { for a in var.addons : a.name => a }

  name             = each.value.name
  description      = "controller for ${each.value.kind} workloads (CRD ${each.value.crd})"
  chart            = each.value.chart
  repository       = each.value.repository
  version          = each.value.version
  namespace        = each.value.namespace
  create_namespace = false
  wait             = true
  timeout          = 600
  set              = each.value.set

  depends_on = [kubernetes_namespace_v1.addons]
}

# The workload namespace, labelled so the webhook injects GKE_DIAGON_* into its pods; it must
# exist (with the label) before any workload pod is created, and after the controllers its
# workloads need.
resource "kubernetes_namespace_v1" "workload" {
  metadata {
    name   = var.namespace
    labels = var.namespace_labels
  }

  depends_on = [helm_release.injection_webhook, helm_release.connection_operator, helm_release.addons]
}

resource "kubernetes_service_account_v1" "workload" {
  metadata {
    name        = var.service_account
    namespace   = kubernetes_namespace_v1.workload.metadata[0].name
    annotations = var.service_account_annotations
  }
}

# Optional: room for on-demand profiling in namespaces with a default-deny ingress policy.
# Allows the agents' namespace to reach the profiler port, and keeps pod-to-pod traffic inside
# the namespace (multi-host TPU workers talk to each other).
resource "kubernetes_network_policy_v1" "profiler" {
  count = var.profiler_network_policy == null ? 0 : 1

  metadata {
    name      = "mldiag-profiler"
    namespace = kubernetes_namespace_v1.workload.metadata[0].name
  }

  spec {
    policy_types = ["Ingress"]

    pod_selector {}

    ingress {
      from {
        pod_selector {}
      }
    }

    ingress {
      from {
        namespace_selector {
          match_labels = { "kubernetes.io/metadata.name" = var.profiler_network_policy.from_namespace }
        }
      }

      ports {
        port     = tostring(var.profiler_network_policy.port)
        protocol = "TCP"
      }
    }
  }
}
