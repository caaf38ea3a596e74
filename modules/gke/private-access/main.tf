# What private GKE nodes need around the cluster: a Cloud Router with a Cloud NAT gateway in
# the region (private nodes have no external IP, so public images - python, JAX,
# registry.k8s.io charts - pull through NAT), and a firewall rule that lets the control plane
# call the in-cluster admission webhooks on their pod ports.
#
# Sources:
# - Cloud NAT for private GKE nodes: https://cloud.google.com/nat/docs/gke-example
# - A private cluster's control plane reaches nodes only on TCP 443 and 10250 unless a
#   firewall rule is added; the API server calls the webhook pod's targetPort:
#   https://cloud.google.com/kubernetes-engine/docs/how-to/private-clusters#add_firewall_rules
#   (ports: mldiagnostics-injection-webhook 8443, cert-manager webhook 10250, JobSet 9443;
#   catalog/data/gke.yaml cluster.webhookPorts).
# - Target service accounts instead of network tags (no tags on Autopilot nodes or on node
#   pools needed): https://cloud.google.com/firewall/docs/firewalls#serviceaccounts
# None of these resources support labels.

resource "google_compute_router" "nat" {
  count = var.nat_name == null ? 0 : 1

  project = var.project_id
  name    = var.router_name
  region  = var.region
  network = var.network

  lifecycle {
    precondition {
      condition     = var.router_name != null
      error_message = "nat_name needs router_name (the Cloud Router the NAT gateway runs on)."
    }
  }
}

resource "google_compute_router_nat" "this" {
  count = var.nat_name == null ? 0 : 1

  project                            = var.project_id
  name                               = var.nat_name
  region                             = var.region
  router                             = google_compute_router.nat[0].name
  nat_ip_allocate_option             = "AUTO_ONLY"
  source_subnetwork_ip_ranges_to_nat = "ALL_SUBNETWORKS_ALL_IP_RANGES"

  log_config {
    enable = true
    filter = "ERRORS_ONLY"
  }
}

resource "google_compute_firewall" "webhooks" {
  count = var.firewall_name == null ? 0 : 1

  project       = var.project_id
  name          = var.firewall_name
  network       = var.network
  direction     = "INGRESS"
  description   = "Control plane to the in-cluster admission webhooks of GKE cluster ${var.cluster}. Managed by mldiag-provision."
  source_ranges = [var.control_plane_cidr]

  target_service_accounts = [var.node_service_account]

  allow {
    protocol = "tcp"
    ports    = [for p in var.webhook_ports : tostring(p)]
  }

  lifecycle {
    precondition {
      condition     = length(var.webhook_ports) > 0 && var.control_plane_cidr != null
      error_message = "The webhook firewall rule needs webhook_ports and the cluster's control_plane_cidr (a private cluster)."
    }
  }
}
