package mldiag.rules.default_sa

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "no-default-compute-sa",
	"severity": "error",
	"title": "No workload runs as the Compute Engine default service account",
	"rationale": "The Compute Engine default service account often holds the Editor role on the project; a workload that runs as it can change anything. Use a dedicated account (Workload Identity on GKE; the nodes' account where jobs run on the VM, as on Slurm).",
	"source": "https://cloud.google.com/kubernetes-engine/docs/how-to/hardening-your-cluster#use_least_privilege_sa",
}

# Where pods run under Workload Identity (node metadata mode GKE_METADATA; always on
# Autopilot: https://cloud.google.com/kubernetes-engine/docs/concepts/autopilot-security),
# they act as their Kubernetes service account's Google account, never as the node's; only
# nodes without it lend their account to the workloads.
# (https://cloud.google.com/kubernetes-engine/docs/concepts/workload-identity)

# Slurm nodes (where the jobs run) without a service account of their own
deny contains f if {
	some m in lib.calls("modules/iam/node-service-account")
	some args in m.instances
	default_or_unset(object.get(args, "service_account_email", null))
	f := lib.finding(sprintf("the nodes (and the workloads on them) run as the Compute Engine default service account, which module.%s grants the workload roles", [m.name]), sprintf("module.%s", [m.name]))
}

deny contains f if {
	lib.default_sa(input.stack.decisions.diagnostics.service_account.email)
	f := lib.finding(sprintf("the workloads' Google service account is %s", [input.stack.decisions.diagnostics.service_account.email]), "diagnostics.serviceAccount")
}

deny contains f if {
	some r in lib.resources("google_container_node_pool")
	some nc in object.get(r.config, "node_config", [])
	lib.default_sa(object.get(nc, "service_account", "default"))
	not gke_metadata(nc)
	f := lib.finding(sprintf("%s: pods run with the nodes' Compute Engine default service account (no Workload Identity metadata server)", [r.address]), r.address)
}

deny contains f if {
	some rc in lib.changes("google_container_node_pool")
	some nc in object.get(lib.after(rc), "node_config", [])
	lib.default_sa(object.get(nc, "service_account", "default"))
	not gke_metadata(nc)
	f := lib.finding(sprintf("the saved plan runs the pods of %s with the nodes' Compute Engine default service account (no Workload Identity metadata server)", [rc.address]), rc.address)
}

# Issue 14: the nodes of a GKE cluster the stack creates run as a dedicated account (or one
# the recipe names), never the Compute Engine default one, which GKE uses when the cluster
# names none (https://cloud.google.com/kubernetes-engine/security/configure-node-service-accounts).
deny contains f if {
	some dir in ["modules/gke/autopilot-cluster", "modules/gke/standard-cluster"]
	some m in lib.calls(dir)
	some args in m.instances
	object.get(args, "node_service_account_id", null) == null
	default_or_unset(object.get(args, "node_service_account_email", null))
	f := lib.finding(sprintf("the nodes of module.%s run as the Compute Engine default service account (no node_service_account_id or node_service_account_email)", [m.name]), sprintf("module.%s", [m.name]))
}

gke_metadata(nc) if {
	some w in object.get(nc, "workload_metadata_config", [])
	w.mode == "GKE_METADATA"
}

default_or_unset(email) if email == null

default_or_unset(email) if lib.default_sa(email)
