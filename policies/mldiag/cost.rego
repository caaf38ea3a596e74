package mldiag.rules.max_hourly_cost

import data.mldiag.lib
import rego.v1

metadata := {
	"id": "max-hourly-cost",
	"severity": "error",
	"title": "The stack's hourly cost stays within spec.policy.maxHourlyCost",
	"rationale": "A wrong slice count or a missing spot is a budget incident; the gate refuses a stack whose priced total (offline price table, `mldiag-provision cost`) is above the recipe's budget. Unknown prices are not counted, so the total is a lower bound and a stack over it is surely over budget.",
	"source": "https://cloud.google.com/kubernetes-engine/pricing",
}

budget := input.params.max_hourly_cost

deny contains f if {
	is_number(budget)
	total := input.cost.total_usd_per_hour
	is_number(total)
	total > budget
	bound := _bound
	f := lib.finding(sprintf("the stack costs $%.2f per hour%s, above spec.policy.maxHourlyCost $%.2f (see `mldiag-provision cost RECIPE`)", [total, bound, budget]), "spec.policy.maxHourlyCost")
}

deny contains f if {
	is_number(budget)
	msg := input.cost.error
	is_string(msg)
	f := lib.finding(sprintf("%s, so spec.policy.maxHourlyCost $%.2f cannot be checked", [msg, budget]), "spec.policy.maxHourlyCost")
}

_bound := " at least (some prices are unknown or 'starting at' figures)" if {
	input.cost.lower_bound == true
} else := ""
