package mldiag.rules.bucket_uniform

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "bucket-uniform-access",
	"severity": "error",
	"title": "Buckets use uniform bucket-level access",
	"rationale": "With uniform access, IAM alone decides who reads profiles; object ACLs cannot grant access behind IAM's back.",
	"source": "https://cloud.google.com/storage/docs/uniform-bucket-level-access",
}

deny contains f if {
	some r in lib.resources("google_storage_bucket")
	object.get(r.config, "uniform_bucket_level_access", false) != true
	f := lib.finding(sprintf("%s does not set uniform_bucket_level_access = true", [r.address]), r.address)
}

deny contains f if {
	some rc in lib.changes("google_storage_bucket")
	after := lib.after(rc)
	object.get(after, "uniform_bucket_level_access", true) == false
	f := lib.finding(sprintf("the saved plan gives %s uniform_bucket_level_access = false", [rc.address]), rc.address)
}
