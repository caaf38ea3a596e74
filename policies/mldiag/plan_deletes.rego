package mldiag.rules.plan_deletes

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "plan-destructive-delete",
	"severity": "error",
	"title": "No plan deletes a cluster, a TPU/GPU node pool or the profiles bucket unless allowed",
	"rationale": "Deleting (or replacing) a cluster, an accelerator node pool or the profiles bucket loses running work, scarce capacity or profiles; a pipeline must stop unless spec.policy.allowDeletes names the kind.",
	"source": "https://developer.hashicorp.com/terraform/internals/json-format#change-representation",
}

kind(rc) := "cluster" if rc.type in {"google_container_cluster", "google_hypercomputecluster_cluster"}

kind(rc) := "node-pool" if rc.type == "google_container_node_pool"

kind(rc) := "profiles-bucket" if {
	rc.type == "google_storage_bucket"
	contains(rc.address, "profiles_bucket")
}

deny contains f if {
	some rc in lib.all_changes
	"delete" in rc.change.actions
	k := kind(rc)
	not k in input.params.allow_deletes
	verb := verb_of(rc.change.actions)
	f := lib.finding(sprintf("the saved plan %s %s (%s)", [verb, rc.address, k]), rc.address)
}

verb_of(actions) := "replaces" if "create" in actions

verb_of(actions) := "deletes" if not "create" in actions
