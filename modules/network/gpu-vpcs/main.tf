# The extra VPC networks of GPUDirect GPU node pools: one VPC per extra NIC for A3 Mega
# (GPUDirect-TCPXO), or one gVNIC VPC plus one RoCE VPC with a subnet per GPU for A3 Ultra and
# A4 (GPUDirect RDMA). Regular VPCs admit internal tcp/udp/icmp from the slice's range; a VPC
# with an RDMA network profile has implicit allow rules and takes no firewall rules of this
# kind.
#
# Sources (facts and confidence: provisioner/mldiag_provision/catalog/data/gpu.yaml
# gpuNetworking):
# - A3 Mega's eight GPU NICs, one VPC and subnet each:
#   https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx
# - RoCE VPC networks (network profile ZONE-vpc-roce, MTU 8896, implicit allow firewall):
#   https://docs.cloud.google.com/vpc/docs/rdma-network-profiles
# - gVNIC VPC + RDMA VPC with 8 subnets and the internal firewall rule: Cluster Toolkit
#   examples/gke-a3-ultragpu/gke-a3-ultragpu.yaml

locals {
  subnets = merge([
    for n in var.networks : {
      for s in n.subnets : s.name => { network = n.name, cidr = s.cidr }
    }
  ]...)
  firewalled = { for n in var.networks : n.name => n if n.firewall_cidr != null }
}

resource "google_compute_network" "this" {
  for_each = { for n in var.networks : n.name => n }

  project                 = var.project_id
  name                    = each.key
  auto_create_subnetworks = false
  mtu                     = each.value.mtu
  network_profile         = each.value.network_profile == null ? null : "projects/${var.project_id}/global/networkProfiles/${each.value.network_profile}"
  routing_mode            = "REGIONAL"
}

resource "google_compute_subnetwork" "this" {
  for_each = local.subnets

  project       = var.project_id
  name          = each.key
  region        = var.region
  network       = google_compute_network.this[each.value.network].id
  ip_cidr_range = each.value.cidr
}

resource "google_compute_firewall" "internal" {
  #checkov:skip=CKV_GCP_2:the rule admits only the slice's own internal range (no 0.0.0.0/0); GPU-to-GPU traffic needs every tcp port
  #checkov:skip=CKV_GCP_3:the rule admits only the slice's own internal range (no 0.0.0.0/0); GPU-to-GPU traffic needs every tcp port
  #checkov:skip=CKV_GCP_106:the rule admits only the slice's own internal range (no 0.0.0.0/0)
  for_each = local.firewalled

  project       = var.project_id
  name          = "${each.key}-internal"
  network       = google_compute_network.this[each.key].id
  direction     = "INGRESS"
  source_ranges = [each.value.firewall_cidr]

  allow {
    protocol = "tcp"
    ports    = ["0-65535"]
  }
  allow {
    protocol = "udp"
    ports    = ["0-65535"]
  }
  allow {
    protocol = "icmp"
  }
}
