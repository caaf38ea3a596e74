"""The policy gate's answer cache (provisioner/mldiag_provision/policy/cache.py) with the real
Rego engine: the same input is answered from the cache without starting the engine; any change
of the input, the policies or the engine evaluates again; the file keeps no input data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mldiag_provision import ondisk
from mldiag_provision.policy import engine
from mldiag_provision.policy.cache import CACHE_FILE, GateCache, predict_key
from mldiag_provision.policy.engine import PolicyEngineError
from mldiag_provision.policy.gate import GateRun, Settings

POLICY = """package test.rules.flag

import rego.v1

metadata := {
	"id": "flag-bad",
	"severity": "error",
	"title": "No resource is planned with bad = true",
	"rationale": "test rule",
	"source": "https://example.com/flag-bad",
}

deny contains {"msg": sprintf("%s is bad", [rc.address]), "resource": rc.address} if {
	some rc in object.get(object.get(input, "plan", {}), "resource_changes", [])
	rc.change.after.bad == true
}
"""
LIB = """package test.lib

import rego.v1

# a helper library: its value repeats input data
echo := input.plan
"""
STACK = {"name": "s", "resources": []}
FILES = {"main.tf": b'resource "x" "y" {}\n'}


def _plan(bad: bool, secret: str = "sentinel-value-123") -> dict:
    return {"resource_changes": [{"address": "x.y", "type": "x", "stage": "project",
                                  "change": {"actions": ["create"], "before": None,
                                             "after": {"bad": bad, "token": secret}}}]}


@pytest.fixture
def setup(tmp_path: Path):
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "flag.rego").write_text(POLICY)
    (policies / "lib.rego").write_text(LIB)
    work = tmp_path / "work"
    work.mkdir()
    return policies, work


def _gate(policies: Path, work: Path, plan: dict) -> tuple[GateRun, object]:
    run = GateRun(STACK, Settings(directories=(policies,)), use_bundled=False,
                  cache=lambda m, p: GateCache(work, predict_key(m, p, FILES, {}, work)))
    return run, run.finish(plan)


def _no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting the engine now fails loudly: a result proves it was not started."""
    monkeypatch.setattr(engine, "WORKER_ARGV", ["/nonexistent/rego-worker"])


def test_same_input_is_answered_without_starting_the_engine(setup, monkeypatch) -> None:
    policies, work = setup
    run, first = _gate(policies, work, _plan(True))
    assert not first.cached and [f.message for f in first.findings] == ["x.y is bad"]
    _no_engine(monkeypatch)
    run, second = _gate(policies, work, _plan(True))
    assert second.cached and run.evaluation is None
    assert [(f.rule.id, f.message, f.resource) for f in second.findings] == [
        (f.rule.id, f.message, f.resource) for f in first.findings]
    assert second.engine == first.engine and second.errors and second.failed()


def test_the_cache_file_keeps_no_input_data(setup) -> None:
    policies, work = setup
    _gate(policies, work, _plan(False, secret="sentinel-value-123"))
    path = work / CACHE_FILE
    assert b"sentinel-value-123" not in path.read_bytes()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    answers = json.loads(ondisk.unseal(path.read_bytes()) or b"")["answers"]
    assert answers["test.lib"] == {"value": None, "error": None}


@pytest.mark.parametrize("change", ["plan", "policy", "engine"])
def test_any_change_evaluates_again(setup, monkeypatch, change: str) -> None:
    policies, work = setup
    _gate(policies, work, _plan(False))
    plan = _plan(False)
    if change == "plan":
        plan = _plan(True)
    elif change == "policy":
        (policies / "flag.rego").write_text(POLICY.replace("is bad", "is flagged"))
    else:  # another regopy installed: its files' time is part of both keys
        from mldiag_provision.policy import cache

        monkeypatch.setattr(cache, "_engine_id", lambda: "regopy:reinstalled")
    _, result = _gate(policies, work, plan)
    assert not result.cached
    expected = {"plan": ["x.y is bad"], "policy": [], "engine": []}[change]
    assert [f.message for f in result.findings] == expected


def test_a_changed_state_starts_the_engine_ahead_but_still_uses_a_matching_answer(
        setup, monkeypatch) -> None:
    """The prediction (state bytes) says "changed": the engine starts while Terraform would
    plan; the input turns out the same, so the cached answer is used and the engine stopped."""
    policies, work = setup
    _gate(policies, work, _plan(True))
    (work / "terraform.tfstate").write_text('{"serial": 2}')
    run = GateRun(STACK, Settings(directories=(policies,)), use_bundled=False,
                  cache=lambda m, p: GateCache(work, predict_key(m, p, FILES, {}, work)))
    assert run.evaluation is not None  # started ahead
    result = run.finish(_plan(True))
    assert result.cached and run.evaluation is None


def test_a_remote_state_never_predicts(setup) -> None:
    policies, work = setup
    (work / ".terraform").mkdir()
    (work / ".terraform" / "terraform.tfstate").write_text('{"backend": {"type": "gcs"}}')
    assert predict_key([], [], FILES, {}, work) is None
    _gate(policies, work, _plan(True))
    run = GateRun(STACK, Settings(directories=(policies,)), use_bundled=False,
                  cache=lambda m, p: GateCache(work, predict_key(m, p, FILES, {}, work)))
    assert run.evaluation is not None
    assert run.finish(_plan(True)).cached


@pytest.mark.parametrize("content", ["not json", '{"version": 1, "key": 5}', "[]", ""])
def test_a_damaged_cache_costs_an_evaluation(setup, content: str) -> None:
    policies, work = setup
    (work / ".mldiag").mkdir()
    (work / CACHE_FILE).write_text(content)
    _, result = _gate(policies, work, _plan(True))
    assert not result.cached and [f.message for f in result.findings] == ["x.y is bad"]


def test_an_engine_failure_is_not_cached(setup, monkeypatch) -> None:
    policies, work = setup
    _no_engine(monkeypatch)
    with pytest.raises(PolicyEngineError):
        _gate(policies, work, _plan(True))
    assert not (work / CACHE_FILE).exists()


@pytest.mark.parametrize("call", ["opa.runtime().env.ACME_FLAG", "time.now_ns()",
                                  "rand.intn(\"x\", 10)", "uuid.rfc4122(\"x\")"])
def test_a_policy_reading_the_clock_or_environment_is_never_cached(tmp_path: Path,
                                                                    call: str) -> None:
    """A stale answer would be shown: the same input, another environment or time."""
    from mldiag_provision.cli.commands.policy import _cache
    from mldiag_provision.policy.cache import impure
    from mldiag_provision.policy.engine import Module

    policy = Module("p.rego", f"package p\n\nimport rego.v1\n\nx := {call}\n")
    assert impure([Module("a.rego", POLICY), policy]) == "p.rego"
    assert _cache(tmp_path, [policy], ["p"], FILES, Settings()) is None
    assert _cache(tmp_path, [Module("a.rego", POLICY)], ["p"], FILES, Settings()) is not None


def test_the_environment_policy_of_the_review_is_evaluated_every_time(setup,
                                                                      monkeypatch) -> None:
    """The reviewer's case end to end: a rule that reports an environment variable shows
    the value of each run."""
    from mldiag_provision.cli.commands.policy import _cache

    policies, work = setup
    (policies / "env.rego").write_text(POLICY.replace("test.rules.flag", "test.rules.env")
                                       .replace('"flag-bad"', '"env-flag"')
                                       .replace('sprintf("%s is bad", [rc.address])',
                                                'sprintf("flag %s", [opa.runtime().env.'
                                                'ACME_FLAG])'))
    seen = []
    for value in ("one", "two"):
        monkeypatch.setenv("ACME_FLAG", value)
        run = GateRun(STACK, Settings(directories=(policies,)), use_bundled=False,
                      cache=lambda m, p: _cache(work, m, p, FILES, Settings()))
        result = run.finish(_plan(True))
        assert not result.cached
        seen.append(sorted(f.message for f in result.findings if f.rule.id == "env-flag"))
    # (rego-cpp returns the variable quoted: 'flag "one"')
    assert len(seen[0]) == len(seen[1]) == 1 and "one" in seen[0][0] and "two" in seen[1][0]


def _planted_pass(work: Path) -> bytes:
    """The cache entry of a passing evaluation of this very input (the flagged plan answered
    as if nothing were flagged): what a planted file would say to let a bad plan through."""
    entry = json.loads(ondisk.unseal((work / CACHE_FILE).read_bytes()) or b"")
    for answer in entry["answers"].values():
        if isinstance(answer.get("value"), dict) and "deny" in answer["value"]:
            answer["value"]["deny"] = []
    return json.dumps(entry).encode()


@pytest.mark.parametrize("how", ["unsealed (the old format)", "one flipped bit",
                                 "others may write .mldiag", "group may write the file"])
def test_a_planted_or_damaged_answer_never_passes_the_gate(setup, how: str) -> None:
    """Issue 28: every cache the tool reads back follows one rule. A planted entry saying
    "nothing flagged" for a flagged plan, or a damaged one, is evaluated again."""
    policies, work = setup
    _gate(policies, work, _plan(True))
    path = work / CACHE_FILE
    planted = _planted_pass(work)
    if how == "unsealed (the old format)":
        path.write_bytes(planted)
    elif how == "one flipped bit":
        sealed = bytearray(ondisk.seal(planted))
        sealed[40] ^= 0x01
        path.write_bytes(bytes(sealed))
    else:
        path.write_bytes(ondisk.seal(planted))
        if how == "others may write .mldiag":
            path.parent.chmod(0o777)
        else:
            path.chmod(0o660)
    _, result = _gate(policies, work, _plan(True))
    assert not result.cached and [f.message for f in result.findings] == ["x.y is bad"]


def test_control_a_sealed_trusted_planted_answer_is_what_the_cache_would_use(setup) -> None:
    """The plant above reaches the cache: sealed in the user's own directory it is used (the
    user's own files are trusted, as Python trusts the user's ``__pycache__``)."""
    policies, work = setup
    _gate(policies, work, _plan(True))
    (work / CACHE_FILE).write_bytes(ondisk.seal(_planted_pass(work)))
    _, result = _gate(policies, work, _plan(True))
    assert result.cached and result.findings == []
