package mldiag.rules.deletion_protection

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "gke-deletion-protection",
	"severity": "error",
	"title": "Clusters keep deletion protection on",
	"rationale": "A cluster holds every TPU slice and workload; with deletion protection off, a mistaken destroy or a forced replacement deletes it at once. Turn it off only for the one destroy that means it (destroy --disable-deletion-protection).",
	"source": "https://registry.terraform.io/providers/hashicorp/google/latest/docs/resources/container_cluster#deletion_protection",
}

cluster_modules := {"modules/gke/standard-cluster", "modules/gke/autopilot-cluster", "modules/slurm/cluster-director"}

deny contains f if {
	some m in input.stack.modules
	m.dir in cluster_modules
	some args in m.instances
	object.get(args, "deletion_protection", true) != true
	f := lib.finding(sprintf("module.%s sets deletion_protection = %v", [m.name, args.deletion_protection]), sprintf("module.%s", [m.name]))
}

# clusters outside the modules checked above (the provider's default is true: only an
# explicit false fails)
deny contains f if {
	some r in array.concat(lib.resources("google_container_cluster"), lib.resources("google_hypercomputecluster_cluster"))
	not r.module in {m.name | some m in input.stack.modules; m.dir in cluster_modules}
	object.get(r.config, "deletion_protection", true) == false
	f := lib.finding(sprintf("%s has deletion_protection = false", [r.address]), r.address)
}

deny contains f if {
	some type in ["google_container_cluster", "google_hypercomputecluster_cluster"]
	some rc in lib.changes(type)
	after := lib.after(rc)
	object.get(after, "deletion_protection", true) == false
	f := lib.finding(sprintf("the saved plan leaves %s with deletion_protection = false", [rc.address]), rc.address)
}
