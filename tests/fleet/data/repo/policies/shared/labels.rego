package mldiag.fleet_fixture

import rego.v1

# a shared policy of the fixture fleet: nothing denied
deny contains msg if {
	false
	msg := "never"
}
