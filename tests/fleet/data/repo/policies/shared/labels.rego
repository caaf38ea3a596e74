package fleet.shared.team_label

import data.mldiag.lib
import rego.v1

# A policy the fixture fleet shares (beta/team-h and gamma/team-l read this directory):
# every stack carries a `team` label. The fixture recipes set none, so both get a warning.
metadata := {
	"id": "fleet-team-label",
	"severity": "warning",
	"title": "Stacks of the fleet carry a team label",
	"rationale": "The platform team reports cost and ownership per team.",
	"source": "tests/fleet/data/repo/policies/shared/labels.rego",
}

deny contains f if {
	not "team" in object.keys(object.get(input.stack.decisions, "labels", {}))
	f := lib.finding("the stack's labels lack the key 'team' (recipe metadata.labels)", "metadata.labels")
}
