# Helpers shared by the bundled rules (no `deny`: not a rule itself).
package mldiag.lib

import rego.v1

# Module calls of the stack whose source directory is `dir` (e.g. "modules/gke/standard-cluster").
calls(dir) := [m | some m in input.stack.modules; m.dir == dir]

# Resource blocks of the called modules (and the root) of one Terraform type.
resources(type) := [r | some r in input.stack.resources; r.type == type]

# Every resource change of the saved plan(s); [] without a plan.
all_changes := rcs if {
	is_object(input.plan)
	rcs := object.get(input.plan, "resource_changes", [])
} else := []

# Resource changes of one Terraform type.
changes(type) := [rc | some rc in all_changes; rc.type == type]

# The planned values of a change ({} for a delete, whose "after" is null).
after(rc) := a if {
	a := rc.change.after
	is_object(a)
} else := {}

finding(msg, resource) := {"msg": msg, "resource": resource}

# Compute Engine default service account: PROJECT_NUMBER-compute@developer.gserviceaccount.com
# (https://cloud.google.com/compute/docs/access/service-accounts#default_service_account)
default_sa(email) if {
	is_string(email)
	endswith(email, "-compute@developer.gserviceaccount.com")
}

default_sa(email) if email == "default"
