"""spec.policy.maxHourlyCost: the policy gate refuses a stack above the budget (exit 1, rule
max-hourly-cost named), in RECIPE and rendered-DIR mode alike; the cost is a Rego input
(input.cost) that users' own rules read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import run_cli

ROOT = Path(__file__).resolve().parents[2]
V5E = ROOT / "recipes/tpu-v5e-private-standard.yaml"  # $19.30/h known: 16 x $1.20 + $0.10


def _with_policy(tmp_path: Path, lines: str, recipe: Path = V5E) -> Path:
    text = recipe.read_text(encoding="utf-8")
    assert "\n  policy:" not in text
    out = tmp_path / recipe.name
    out.write_text(text.rstrip("\n") + "\n  policy:\n" + lines, encoding="utf-8")
    return out


def test_gate_refuses_a_stack_over_budget(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    recipe = _with_policy(tmp_path, "    maxHourlyCost: 10\n")
    code, out, _ = run_cli(capsys, ["policy", str(recipe)])
    assert code == 1, out
    assert "ERROR [max-hourly-cost] the stack costs $19.30 per hour at least" in out
    assert "above spec.policy.maxHourlyCost $10.00" in out


def test_gate_passes_a_stack_within_budget(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    recipe = _with_policy(tmp_path, "    maxHourlyCost: 25.5\n")
    code, out, _ = run_cli(capsys, ["policy", str(recipe), "-O", "json"])
    assert code == 0, out
    doc = json.loads(out)
    assert "max-hourly-cost" in {r["id"] for r in doc["rules"]}
    assert not [f for f in doc["findings"] if f["rule"] == "max-hourly-cost"]


def test_the_budget_travels_with_a_rendered_stack(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    """render writes maxHourlyCost into .mldiag/policy.json (what plan/apply's gate and
    `policy DIR` read); a recipe without it keeps policy.json as it was."""
    recipe = _with_policy(tmp_path, "    maxHourlyCost: 5\n")
    stack = tmp_path / "stack"
    code, _, err = run_cli(capsys, ["render", str(recipe), "-o", str(stack)])
    assert code == 0, err
    policy = json.loads((stack / ".mldiag/policy.json").read_text(encoding="utf-8"))
    assert policy["maxHourlyCost"] == 5.0
    code, out, _ = run_cli(capsys, ["policy", str(stack)])
    assert code == 1
    assert "ERROR [max-hourly-cost]" in out
    (tmp_path / "x").mkdir()
    plain = _with_policy(tmp_path / "x", "    allowDeletes: [node-pool]\n")
    code, _, err = run_cli(capsys, ["render", str(plain), "-o", str(tmp_path / "plain")])
    assert code == 0, err
    assert "maxHourlyCost" not in (tmp_path / "plain/.mldiag/policy.json").read_text()


def test_users_write_their_own_cost_rules(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    rules = tmp_path / "acme"
    rules.mkdir()
    (rules / "on_demand.rego").write_text('''package acme.on_demand_chips

import rego.v1

metadata := {"id": "acme-on-demand-chips", "severity": "error",
	"title": "No more than 8 on-demand accelerator chips",
	"rationale": "Our team buys spot or reserved capacity for anything larger than a v5e-8.",
	"source": "https://cloud.google.com/spot-vms/pricing"}

deny contains {"msg": msg, "resource": line.item} if {
	some line in input.cost.lines
	line.capacity == "on-demand"
	is_number(line.chips)
	line.chips > 8
	msg := sprintf("%s runs %d chips on demand at $%.2f per hour (source %s)",
		[line.item, line.chips, line.hourly_max, line.source])
}
''', encoding="utf-8")
    code, out, _ = run_cli(capsys, ["policy", str(V5E), "--policy", str(rules)])
    assert code == 1, out
    assert ("ERROR [acme-on-demand-chips] node pool v5e-16 (slice v5e-16) runs 16 chips on "
            "demand at $19.20 per hour") in out


@pytest.mark.parametrize("value", ["0", "-3", "cheap", "true", ".inf", ".nan"])
def test_a_budget_must_be_a_positive_number(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path, value: str) -> None:
    recipe = _with_policy(tmp_path, f"    maxHourlyCost: {value}\n")
    code, out, err = run_cli(capsys, ["validate", str(recipe)])
    assert code == 1, out + err
    assert "maxHourlyCost" in out + err
