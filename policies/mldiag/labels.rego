package mldiag.rules.required_labels

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "required-labels",
	"severity": "error",
	"title": "Resources carry the labels the organisation requires",
	"rationale": "Cost reports and ownership rely on labels; the stack applies metadata.labels to every resource (provider default_labels), so a missing key is missing everywhere. Set the keys in spec.policy.requiredLabels.",
	"source": "https://cloud.google.com/resource-manager/docs/creating-managing-labels",
}

deny contains f if {
	some key in input.params.required_labels
	not key in object.keys(object.get(input.stack.decisions, "labels", {}))
	f := lib.finding(sprintf("the stack's labels lack the required key '%s' (recipe metadata.labels)", [key]), "metadata.labels")
}

deny contains f if {
	some key in input.params.required_labels
	some rc in lib.all_changes
	after := lib.after(rc)
	labels := object.get(after, "terraform_labels", null)
	is_object(labels)
	not key in object.keys(labels)
	f := lib.finding(sprintf("the saved plan gives %s no label '%s'", [rc.address, key]), rc.address)
}
