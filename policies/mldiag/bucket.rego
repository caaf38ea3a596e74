package mldiag.rules.bucket_public

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "bucket-public-access",
	"severity": "error",
	"title": "Buckets enforce public access prevention and grant nothing to allUsers",
	"rationale": "The profiles bucket holds XProf traces of your models; public access prevention stops any ACL or IAM grant from making them public.",
	"source": "https://cloud.google.com/storage/docs/public-access-prevention",
}

public_members := {"allUsers", "allAuthenticatedUsers"}

deny contains f if {
	some r in lib.resources("google_storage_bucket")
	object.get(r.config, "public_access_prevention", "inherited") != "enforced"
	f := lib.finding(sprintf("%s does not set public_access_prevention = \"enforced\"", [r.address]), r.address)
}

deny contains f if {
	some rc in lib.changes("google_storage_bucket")
	after := lib.after(rc)
	"public_access_prevention" in object.keys(after)
	after.public_access_prevention != "enforced"
	f := lib.finding(sprintf("the saved plan gives %s public_access_prevention = %v", [rc.address, after.public_access_prevention]), rc.address)
}

deny contains f if {
	some type in ["google_storage_bucket_iam_member", "google_storage_bucket_iam_binding"]
	some r in lib.resources(type)
	members := array.concat([object.get(r.config, "member", "")], object.get(r.config, "members", []))
	some m in members
	m in public_members
	f := lib.finding(sprintf("%s grants the bucket to %s", [r.address, m]), r.address)
}
