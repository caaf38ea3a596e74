package mldiag.rules.tpu_placement

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "tpu-multihost-placement",
	"severity": "error",
	"title": "Multi-host TPU node pools have a placement or workload policy",
	"rationale": "A multi-host TPU slice is one interconnected set of VMs: its node pool needs placement_policy with the TPU topology (COMPACT, or a TPU7x HIGH_THROUGHPUT workload policy), or GKE cannot create the slice as one unit.",
	"source": "https://cloud.google.com/kubernetes-engine/docs/concepts/tpus",
}

tpu_machine(mt) if regex.match(`^(ct[0-9][a-z0-9]*|tpu[0-9][a-z0-9]*)-`, mt)

deny contains f if {
	some m in lib.calls("modules/gke/accelerator-node-pool")
	some key, args in m.instances
	is_string(object.get(args, "tpu_topology", null))
	is_number(object.get(args, "node_count", 1))
	args.node_count > 1
	object.get(args, "multi_host", false) != true
	f := lib.finding(sprintf("%s: %d TPU VMs of topology %s without multi_host (no placement policy)", [m.addresses[key], args.node_count, args.tpu_topology]), m.addresses[key])
}

deny contains f if {
	some r in lib.resources("google_container_node_pool")
	some m in lib.calls("modules/gke/accelerator-node-pool")
	m.name == r.module
	object.get(m.instances[r.instance], "multi_host", false) == true
	not has_placement(r.config)
	f := lib.finding(sprintf("%s has no placement_policy block for its multi-host TPU slice", [r.address]), r.address)
}

has_placement(config) if count(object.get(config, "placement_policy", [])) > 0

has_placement(config) if {
	some d in object.get(config, "dynamic", [])
	"placement_policy" in object.keys(d)
}

deny contains f if {
	some rc in lib.changes("google_container_node_pool")
	after := lib.after(rc)
	some nc in object.get(after, "node_config", [])
	tpu_machine(object.get(nc, "machine_type", ""))
	object.get(after, "node_count", 1) > 1
	count(object.get(after, "placement_policy", [])) == 0
	f := lib.finding(sprintf("the saved plan creates %s (%d TPU VMs) without a placement policy", [rc.address, after.node_count]), rc.address)
}
