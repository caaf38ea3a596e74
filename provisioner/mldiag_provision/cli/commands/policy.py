"""``mldiag-provision policy RECIPE|DIR [--plan]``: the policy gate.

RECIPE: preflight and render in memory (nothing is written), then evaluate the bundled Rego
policies, the recipe's ``spec.policy.directories`` and every ``--policy DIR`` over the stack;
with ``--plan -o DIR`` also over the saved plans in ``DIR``, as the stack's engine reads
them (Terraform: ``terraform show -json``; Pulumi: the preview ``plan`` saved).
DIR: evaluate the stack rendered in DIR (settings from its ``.mldiag/policy.json``); with
``--plan`` also its saved plans. Exit 0 when no error-severity finding is left unwaived
(``--strict``: no warning either), 1 otherwise, 2 for a broken policy or bad arguments.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP, describe
from mldiag_provision.console import Console

NAME = "policy"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME],
                       description=describe(__doc__.split("\n\n", 1)[1] if __doc__ else None))
    p.add_argument("target", metavar="RECIPE|DIR", help="a recipe, or a rendered work directory")
    p.add_argument("-o", "--out", metavar="DIR",
                   help="with RECIPE and --plan: the work directory holding the saved plan")
    p.add_argument("--plan", action="store_true",
                   help="also check the saved plan(s) (run `mldiag-provision plan` first)")
    p.add_argument("--policy", action="append", default=[], metavar="DIR",
                   help="another directory of Rego policies (repeatable)")
    p.add_argument("--no-default-policies", action="store_true",
                   help="evaluate only your own policies")
    p.add_argument("--waive", action="append", default=[], metavar="RULE=REASON",
                   help="waive a rule for this run, with the reason printed (repeatable)")
    p.add_argument("--output", "-O", choices=("text", "json", "sarif"), default="text",
                   help=OUTPUT_HELP)
    p.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    from mldiag_provision.cli.commands._args import add_verbose

    add_verbose(p)


def _waivers(items: list[str]) -> dict[str, str]:
    from mldiag_provision.errors import UsageError

    out: dict[str, str] = {}
    for item in items:
        rule, sep, reason = item.partition("=")
        if not sep or not rule.strip() or len(reason.strip()) < 10:
            raise UsageError(f"--waive {item!r}: expected RULE=REASON with a reason of at "
                             "least 10 characters",
                             hint='e.g. --waive gke-deletion-protection="throw-away test '
                                  'cluster, destroyed nightly"')
        out[rule.strip()] = reason.strip()
    return out


def _from_recipe(path: str, out: Console, *,
                 text: bool = True) -> tuple[dict[str, bytes], Any]:
    """(rendered files in memory, recipe) of a valid recipe; the problems of an invalid one
    printed when ``text`` (else they travel in the InputError raised)."""
    from mldiag_provision.cli.commands._args import valid_plan
    from mldiag_provision.policy import policy_data
    from mldiag_provision.render.stack import render_stack

    recipe, plan = valid_plan(path, out, "the policy gate", text=text)
    return render_stack(plan, policy=policy_data(recipe)), recipe


def _cache(workdir: Path, modules: Any, packages: list[str], files: dict[str, bytes],
           settings: Any) -> Any:
    from mldiag_provision.policy.cache import for_stack

    return for_stack(workdir, modules, packages, files, settings.params)


class StagePlansGate:
    """The gate of ``plan``/``apply``, started before Terraform plans: the stack rendered
    in ``workdir`` (settings from its ``.mldiag/policy.json``, directories relative to
    ``recipe_path``) is read and the Rego engine starts while the stages are planned
    (:class:`~mldiag_provision.policy.gate.GateRun`); :meth:`finish` adds the stage plans.
    The answers are cached in the stack directory (:mod:`mldiag_provision.policy.cache`):
    the same input again (a plan in steady state) is not evaluated again. A problem of the
    start (broken settings or policies) is raised by :meth:`finish`, after the planning, as
    before. Use it as a context manager: leaving it unfinished (the plan failed, Ctrl-C)
    stops the engine process.
    """

    def __init__(self, workdir: Path, recipe_path: str) -> None:
        from mldiag_provision.policy.gate import GateRun, settings_for
        from mldiag_provision.policy.inputs import read_stack_dir, stack_document

        self.run: GateRun | None = None
        self.error: Exception | None = None
        try:
            files = read_stack_dir(workdir)
            settings = settings_for(None, recipe_path, files, [], {})
        except Exception as exc:  # raised again by finish()
            self.error = exc
            return
        self.run = GateRun(lambda: stack_document(files), settings,
                           cache=lambda modules, packages: _cache(workdir, modules, packages,
                                                                  files, settings))

    def __enter__(self) -> StagePlansGate:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.run is not None:
            self.run.cancel()
            self.run = None

    def finish(self, stage_plans: list[Any]) -> Any:
        """The :class:`~mldiag_provision.policy.gate.GateResult` over the stage plans.

        Raises:
          PolicyError, PolicyEngineError: a policy is broken, or the engine crashed.
        """
        from mldiag_provision.policy.inputs import plan_document

        if self.error is not None:
            raise self.error
        assert self.run is not None
        for sp in stage_plans:  # the rules read every resource's values: load deferred ones
            if sp.plan is not None:
                sp.plan.detailed()
        run, self.run = self.run, None
        return run.finish(plan_document(stage_plans))


def gate_stage_plans(workdir: Path, recipe_path: str, stage_plans: list[Any]) -> Any:
    """The gate of ``plan``/``apply`` over stage plans already made (see
    :class:`StagePlansGate`, which starts it before planning). Returns the
    :class:`~mldiag_provision.policy.gate.GateResult`.

    Raises:
      PolicyError, PolicyEngineError: a policy is broken, or the engine crashed.
    """
    with StagePlansGate(workdir, recipe_path) as gate:
        return gate.finish(stage_plans)


def show_gate(result: Any, out: Console, workdir: Path, *, text: bool, verb: str,
              verbose: bool = False) -> None:
    """Print the gate's findings and its one summary line (text mode; ``verbose``: with the
    checkov checks the stack skips); stop the command when it failed.

    Raises:
      InputError: an error-severity finding is not waived (exit 1; nothing is applied).
    """
    from mldiag_provision.errors import InputError
    from mldiag_provision.policy import report

    if text:
        report.write_text(result, out, target=str(workdir), verbose=verbose)
    if result.failed():
        raise InputError(f"the policy gate failed: {len(result.errors)} error(s) "
                         f"({', '.join(sorted({f.rule.id for f in result.errors}))}); "
                         f"{verb}",
                         hint="fix the recipe, or waive a rule with a reason in "
                              "spec.policy.waivers",
                         problems=[f.to_problem(str(workdir)) for f in result.errors])


def saved_plans(workdir: Path) -> dict[str, Any]:
    """``input.plan`` of the work directory: each stage's saved plan as the engine unit the
    stack was rendered for reads it (``.mldiag/plan.json`` ``engine``; Terraform's ``terraform
    show -json`` of ``.mldiag/tfplan``, Pulumi's saved preview), merged
    (:func:`~mldiag_provision.policy.inputs.saved_plans_document`).

    Raises:
      UsageError: no stage holds a saved plan (run ``plan`` first), or the engine is unknown.
      EngineError: a saved plan cannot be read.
    """
    from mldiag_provision.errors import UsageError
    from mldiag_provision.policy.inputs import saved_plans_document
    from mldiag_provision.stack.service import Stack

    stack = Stack(workdir, NAME)  # only reads: no lock
    try:
        doc = saved_plans_document(stack.saved_plans())
    finally:
        stack.__exit__()
    if doc is None:
        raise UsageError(f"{workdir} holds no saved plan",
                         hint="run `mldiag-provision plan RECIPE -o DIR` first: it saves the "
                              f"plan of each stage (engine {stack.engine_name})")
    return doc


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.errors import ExitCode, UsageError
    from mldiag_provision.policy import report
    from mldiag_provision.policy.gate import run_gate, settings_for
    from mldiag_provision.policy.inputs import read_stack_dir, stack_document

    target = Path(args.target)
    waive = _waivers(args.waive)
    recipe = None
    if target.is_dir():
        if args.out:
            raise UsageError("-o is for a RECIPE target; a directory is its own work "
                             "directory", hint=f"mldiag-provision policy {args.target} --plan")
        files = read_stack_dir(target)
        workdir: Path | None = target
        recipe_path = None
    elif target.is_file():
        files, recipe = _from_recipe(args.target, out, text=args.output == "text")
        workdir = Path(args.out) if args.out else None
        recipe_path = args.target
    elif target.exists():
        raise UsageError(f"{args.target} is not a regular file (a named pipe, device or "
                         "socket)", hint="give a recipe file or a rendered work directory")
    else:
        raise UsageError(f"{args.target} does not exist",
                         hint="give a recipe file or a rendered work directory")
    plan_doc = None
    if args.plan:
        if workdir is None:
            raise UsageError("--plan with a recipe needs -o DIR (where `plan` saved it)",
                             hint=f"mldiag-provision policy {args.target} -o DIR --plan")
        plan_doc = saved_plans(workdir)
    settings = settings_for(recipe, recipe_path, files, args.policy, waive)
    result = run_gate(lambda: stack_document(files), plan_doc, settings,
                      use_bundled=not args.no_default_policies)
    if args.output == "json":
        out.print(report.to_json(result, target=args.target))
    elif args.output == "sarif":
        out.print(report.to_sarif(result, target=args.target))
    else:
        report.write_text(result, out, target=args.target, verbose=args.verbose,
                          strict=args.strict)
    return int(ExitCode.INVALID if result.failed(args.strict) else ExitCode.OK)
