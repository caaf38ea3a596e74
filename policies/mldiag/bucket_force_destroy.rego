package mldiag.rules.bucket_force_destroy

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "bucket-force-destroy",
	"severity": "error",
	"title": "Buckets keep force_destroy off",
	"rationale": "With force_destroy on, a destroy deletes the profiles bucket with every profile in it; off, Terraform refuses to delete a non-empty bucket (mldiag-provision destroy --delete-profiles lifts it for one destroy).",
	"source": "https://registry.terraform.io/providers/hashicorp/google/latest/docs/resources/storage_bucket#force_destroy",
}

deny contains f if {
	some r in lib.resources("google_storage_bucket")
	object.get(r.config, "force_destroy", false) == true
	f := lib.finding(sprintf("%s sets force_destroy = true (recipe: diagnostics.profilesBucket.deleteOnDestroy)", [r.address]), r.address)
}

deny contains f if {
	some rc in lib.changes("google_storage_bucket")
	after := lib.after(rc)
	object.get(after, "force_destroy", false) == true
	f := lib.finding(sprintf("the saved plan gives %s force_destroy = true", [rc.address]), rc.address)
}
