package mldiag.rules.mldiag_roles

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "mldiag-roles-workload-only",
	"severity": "error",
	"title": "ML Diagnostics roles go to the workload identity only",
	"rationale": "The ML Diagnostics roles (Cluster Director editor, profile bucket object access) belong to the identity the workloads run as; granted to the nodes' account they reach every pod on every node.",
	"source": "https://cloud.google.com/iam/docs/using-iam-securely#least_privilege",
}

# roles a node needs anyway (logging, monitoring): not ML Diagnostics-specific
node_baseline := {"roles/logging.logWriter", "roles/monitoring.metricWriter", "roles/monitoring.viewer", "roles/stackdriver.resourceMetadata.writer", "roles/autoscaling.metricsWriter", "roles/artifactregistry.reader"}

mldiag_roles contains role if {
	some role in input.stack.decisions.diagnostics.iam.roles
	not role in node_baseline
}

mldiag_roles contains role if {
	input.stack.decisions.diagnostics.iam.mode == "custom-role"
	role := sprintf("projects/%s/roles/%s", [input.stack.decisions.project, input.stack.decisions.diagnostics.iam.custom_role_id])
}

# GKE: the workload's Google service account; Slurm: the nodes' account (jobs run as it)
workload_members contains sprintf("serviceAccount:%s", [input.stack.decisions.diagnostics.service_account.email])

deny contains f if {
	some m in lib.calls("modules/gke/standard-cluster")
	some args in m.instances
	some role in object.get(args, "node_service_account_roles", [])
	role in mldiag_roles
	f := lib.finding(sprintf("module.%s grants %s to the nodes' service account", [m.name, role]), sprintf("module.%s", [m.name]))
}

deny contains f if {
	input.stack.blueprint != "slurm"
	some rc in lib.changes("google_project_iam_member")
	after := lib.after(rc)
	after.role in mldiag_roles
	not after.member in workload_members
	f := lib.finding(sprintf("the saved plan grants %s to %s, not to the workload identity", [after.role, after.member]), rc.address)
}
