"""``mldiag-provision lint PATH...``: check hand-written Kubernetes manifests of TPU workloads
before ``kubectl apply``: Kubernetes schema of a chosen version, TPU slice shape and chips,
multi-host wiring, Autopilot refusals (``--autopilot``) and ML Diagnostics readiness.

Exit codes as every command: 0 ok, 1 an error (with ``--strict`` also a warning), 2 usage
(also when a PATH could not be read: each such file is reported with the others' findings,
as ``validate`` does; also a ``--cluster`` kubeconfig that cannot be loaded), 4 the
``--cluster`` cluster cannot be read (unreachable, no answer in time, 401/403), 70 internal
error.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.cli.commands._args import OUTPUT_HELP, jobs_count
from mldiag_provision.console import Console

if TYPE_CHECKING:
    from mldiag_provision.lint.loading import Loaded, Source

NAME = "lint"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        NAME, help=SUMMARIES[NAME],
        description="Lint Kubernetes manifests of TPU workloads: files, directories (every "
                    "*.yaml/*.yml below them) or - for stdin; multi-document YAML. All PATHs "
                    "are one input set: a Job's headless Service may be in another file.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="manifest file, directory or -")
    p.add_argument("--kubernetes-version", "-k", metavar="X.Y",
                   help="validate against this Kubernetes minor version (default: the GKE "
                        "minor that managed ML Diagnostics needs); GKE versions such as "
                        "1.35.0-gke.3065000 are accepted")
    p.add_argument("--autopilot", action="store_true",
                   help="also apply GKE Autopilot's admission rules")
    p.add_argument("--recipe", metavar="RECIPE",
                   help="take --autopilot and the Kubernetes version from a recipe "
                        "(orchestrator type and minVersion)")
    p.add_argument("--cluster", nargs="?", const="", default=None, metavar="KUBECONFIG",
                   help="judge the pods against a live cluster read through KUBECONFIG (no "
                        "value: $KUBECONFIG, else ~/.kube/config; put a bare --cluster after "
                        "the PATHs): its node pools' allocatable cpu/memory and its Kueue "
                        "queues")
    p.add_argument("--context", metavar="NAME",
                   help="with --cluster: the kubeconfig context (default: its current one)")
    from mldiag_provision.cli.commands._stack import _seconds

    p.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                   help="with --cluster: overall deadline for reading the cluster, on top of "
                        "each request's own timeout (default 120)")
    p.add_argument("--crd-version", action="append", default=[], metavar="PROJECT=VERSION",
                   help="the release of a CRD installed in the cluster (jobset, lws, kuberay), "
                        "e.g. jobset=v0.5.2: fields that release does not know are errors "
                        "(default: the newest shipped release, and such findings warn); "
                        "repeatable")
    p.add_argument("--no-diagnostics", action="store_true",
                   help="skip the ML Diagnostics readiness rules")
    p.add_argument("--output", "-O", choices=("text", "json", "sarif"), default="text",
                   help=OUTPUT_HELP)
    p.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")
    p.add_argument("--jobs", "-j", type=jobs_count, default=0, metavar="N",
                   help="N > 1: with 128 objects or more and two CPUs, a second process "
                        "checks the Kubernetes schemas (and the rules that need no TPU pod "
                        "analysis) while this one runs the others; the output is the same. "
                        "0 (the default): the same while the load average leaves a CPU "
                        "idle. 1: one process")


def _from_recipe(path: str) -> object:
    """The valid recipe at ``path`` (its orchestrator gives --autopilot, the Kubernetes version
    and the CRD releases; its slices are what the manifests must fit)."""
    from mldiag_provision.errors import UsageError
    from mldiag_provision.pipeline import check_file

    res = check_file(path)
    recipe = res.parsed.recipe
    if recipe is None or not res.report.ok:
        raise UsageError(f"{path}: the recipe has errors, so lint cannot take settings from it",
                         hint=f"run mldiag-provision validate {path}")
    return recipe


def recipe_settings(recipe: object, where: str,
                    ) -> tuple[bool, str | None, tuple[tuple[str, str], ...]]:
    """What ``lint --recipe`` takes from a valid recipe: (Autopilot admission rules on,
    ``orchestrator.minVersion`` or None, the CRD releases the recipe pins as (project,
    version) pairs). ``where`` names the recipe in errors.

    Raises:
      UsageError: a pinned CRD release is not one the tool knows
        (:func:`~mldiag_provision.lint.schema.resolve_crd_versions`).
    """
    from mldiag_provision import orchestrators
    from mldiag_provision.lint.schema import resolve_crd_versions
    from mldiag_provision.orchestrators import Capability

    orch = recipe.spec.orchestrator  # type: ignore[attr-defined]
    autopilot = orchestrators.get(orch.type).has(Capability.AUTOPILOT_RULES)
    stated = resolve_crd_versions(
        {k: v for k in ("jobset", "lws", "kuberay")
         if (v := getattr(orch.crd_versions, k, None))},
        f"{where}: spec.orchestrator.crdVersions")
    return autopilot, orch.min_version, tuple(sorted(dict(stated).items()))


@contextlib.contextmanager
def _loaded(sources: list[Source]) -> Iterator[Loaded]:
    """The sources loaded (:func:`~mldiag_provision.lint.loading.load_sources`) with the
    cyclic garbage collector paused, and left out of its collections (``gc.freeze``) while
    the block lints them.

    The documents (their data and positions: most of the objects of a run) live until lint
    ends and form no reference cycles (tests/unit/test_loader_fastpath.py checks that
    loading leaves none), so the collector can free none of them: it only scanned them, ~7 %
    of linting 1,000 manifests (issue 16). Reference counting frees them as usual and the
    collector runs for the rest of the block; at its end ``gc.unfreeze`` puts every frozen
    object back, so a caller in the same process (tests) keeps nothing the collector would
    have freed.
    """
    from mldiag_provision.lint.loading import load_sources

    enabled = gc.isenabled()
    gc.disable()
    try:
        loaded = load_sources(sources)
        gc.freeze()
    finally:
        if enabled:
            gc.enable()
    try:
        yield loaded
    finally:
        gc.unfreeze()


def run(args: argparse.Namespace, out: Console) -> int:
    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.errors import ExitCode
    from mldiag_provision.lint.context import LintOptions
    from mldiag_provision.lint.linter import lint_loaded
    from mldiag_provision.lint.loading import read_sources
    from mldiag_provision.lint.schema import (
        default_version,
        resolve_crd_versions,
        resolve_version,
    )

    catalog = load_catalog()
    autopilot, version = args.autopilot, args.kubernetes_version
    recipe = None
    crd_versions = dict(resolve_crd_versions(args.crd_version))
    if args.recipe:
        recipe = _from_recipe(args.recipe)
        on_autopilot, min_version, stated = recipe_settings(recipe, args.recipe)
        if args.autopilot and not on_autopilot:
            from mldiag_provision.errors import UsageError

            orch_type = recipe.spec.orchestrator.type  # type: ignore[attr-defined]
            raise UsageError(f"--autopilot contradicts --recipe {args.recipe}, whose "
                             f"orchestrator {orch_type} is not Autopilot",
                             hint="drop --autopilot: --recipe lints for the recipe's own "
                                  "cluster")
        autopilot = on_autopilot
        version = version or min_version
        crd_versions = {**dict(stated), **crd_versions}  # the command line wins
    if args.context and args.cluster is None:
        from mldiag_provision.errors import UsageError

        raise UsageError("--context needs --cluster", hint="lint PATH... --cluster "
                         "[KUBECONFIG] --context NAME")
    cluster = None
    if args.cluster is not None:
        from mldiag_provision.cluster.from_live import from_kubeconfig

        cluster = from_kubeconfig(args.cluster or None, args.context, args.timeout)
    options = LintOptions(
        kubernetes_version=resolve_version(version) if version else default_version(catalog),
        autopilot=autopilot, diagnostics=not args.no_diagnostics,
        crd_versions=tuple(sorted(crd_versions.items())), recipe=recipe, cluster=cluster)
    sources = read_sources(args.paths)
    with _loaded(sources) as loaded:
        result = lint_loaded(loaded, options, catalog, args.jobs)
    if args.output == "json":
        from mldiag_provision.lint.output import write_json_report

        write_json_report(result, out.stream, strict=args.strict)
    elif args.output == "sarif":
        from mldiag_provision.lint.sarif import write_sarif

        write_sarif(result, out.stream)
    else:
        from mldiag_provision.lint.output import write_text

        write_text(result, out, strict=args.strict)
    if any(src.error is not None for src in sources):  # reported above; as validate: usage
        return int(ExitCode.USAGE)
    return int(ExitCode.INVALID if result.failed(args.strict) else ExitCode.OK)
