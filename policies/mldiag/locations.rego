package mldiag.rules.allowed_locations

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "allowed-locations",
	"severity": "error",
	"title": "The stack stays in the allowed regions and zones",
	"rationale": "Data residency and capacity planning fix where accelerators and profiles may live (as the constraints/gcp.resourceLocations organisation policy does); set spec.policy.allowedRegions / allowedZones.",
	"source": "https://cloud.google.com/resource-manager/docs/organization-policy/defining-locations",
}

zone_keys := {"zone", "node_locations"}

regions contains input.stack.decisions.region

regions contains r if {
	some m in input.stack.modules
	some args in m.instances
	r := object.get(args, "region", null)
	is_string(r)
	not contains(r, "${")
}

zones contains z if {
	z := input.stack.decisions.zone
	is_string(z)
}

zones contains z if {
	some m in input.stack.modules
	some args in m.instances
	z := object.get(args, "zone", null)
	is_string(z)
	not contains(z, "${")
}

zones contains z if {
	some p in object.get(input.stack.decisions, "node_pools", [])
	z := p.zone
	is_string(z)
}

deny contains f if {
	count(input.params.allowed_regions) > 0
	some r in regions
	not r in input.params.allowed_regions
	f := lib.finding(sprintf("region %s is not allowed (allowed: %s)", [r, concat(", ", input.params.allowed_regions)]), "spec.region")
}

deny contains f if {
	count(input.params.allowed_zones) > 0
	some z in zones
	not z in input.params.allowed_zones
	f := lib.finding(sprintf("zone %s is not allowed (allowed: %s)", [z, concat(", ", input.params.allowed_zones)]), "spec.zone")
}
