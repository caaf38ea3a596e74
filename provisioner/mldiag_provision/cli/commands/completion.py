"""``mldiag-provision completion bash|zsh|fish``: print a shell completion script generated
from the argparse parser by shtab (https://github.com/iterative/shtab).

The script completes every command and flag, the values of every flag with choices
(``--output``, ``--stage``, ``catalog``'s family, ``sandbox``'s action), the TPU versions (and
GPU names) of ``catalog``'s VERSION and the topologies of ``--topology`` from the catalog,
recipe files (``*.yaml``/``*.yml`` and directories) wherever a RECIPE goes, directories for
DIR and files for PATH/KUBECONFIG/FILE.svg. Install, e.g.::

    mldiag-provision completion bash > ~/.local/share/bash-completion/completions/mldiag-provision
    mldiag-provision completion zsh > "${fpath[1]}/_mldiag-provision"
    mldiag-provision completion fish > ~/.config/fish/completions/mldiag-provision.fish

shtab is imported only by this command, so no other command's start-up grows.
"""

from __future__ import annotations

import argparse

from mldiag_provision.cli.commands import SUMMARIES
from mldiag_provision.console import Console

NAME = "completion"
SHELLS = ("bash", "zsh", "fish")

# Recipe files: YAML files and the directories that may hold them, per shell. bash and fish:
# a function defined in PREAMBLE; zsh: the _files glob.
_YAML_FN = "_shtab_mldiag_provision_compgen_yaml"
_FISH_YAML_FN = "__mldiag_provision_recipe_files"
RECIPE_FILES = {
    "bash": _YAML_FN,
    "zsh": "_files -g '*.(yaml|yml)'",
    "fish": f"({_FISH_YAML_FN})",
}
PREAMBLE = {
    "bash": f"""
# recipe files: directories, *.yaml and *.yml ($1: the word being completed)
{_YAML_FN}() {{
  compgen -d -- "$1"
  compgen -f -X '!*.yaml' -- "$1"
  compgen -f -X '!*.yml' -- "$1"
}}
""",
    "zsh": "",
    "fish": f"""
# recipe files: directories, *.yaml and *.yml
function {_FISH_YAML_FN}
    __fish_complete_path (commandline -ct) | string match -r -- '.*(?:\\.ya?ml|/)(?:\\t.*)?$'
end
""",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(NAME, help=SUMMARIES[NAME],
                       description="Print a completion script for SHELL on standard output.")
    p.add_argument("shell", metavar="SHELL", choices=SHELLS,
                   help="the shell: bash, zsh or fish")


def completable_parser() -> argparse.ArgumentParser:
    """The full parser, its arguments marked for shtab: what to complete for each metavar,
    and the catalog's TPU versions and topologies as choices where the parser takes any
    string. Built for completion only (the marks and choices are not the parser's own)."""
    import shtab

    from mldiag_provision.catalog.tpu import load_catalog
    from mldiag_provision.cli._main import build_parser

    catalog = load_catalog()
    versions = sorted(catalog.versions)
    topologies = sorted({t for v in catalog.versions.values() for t in v.topologies},
                        key=lambda t: (t.count("x"), [int(n) for n in t.split("x")]))
    try:
        from mldiag_provision.catalog.gpu import load_gpu_catalog

        gpu_names = sorted(load_gpu_catalog().gpus)
    except ImportError:  # pragma: no cover - a tree without the GPU catalog view
        gpu_names = []
    marks: dict[str, object] = {"RECIPE": RECIPE_FILES, "RECIPE|DIR": RECIPE_FILES,
                                "DIR": shtab.DIRECTORY, "PATH": shtab.FILE,
                                "KUBECONFIG": shtab.FILE, "FILE.svg": shtab.FILE}
    parser = build_parser(full=True)
    for sub in _parsers(parser):
        for action in sub._actions:
            mark = marks.get(str(action.metavar))
            if mark is not None:
                action.complete = mark  # type: ignore[attr-defined]
            elif sub.prog.endswith(" catalog") and action.dest == "version":
                action.choices = versions + gpu_names
            elif sub.prog.endswith(" catalog") and action.dest == "topology":
                action.choices = topologies
    return parser


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every subcommand parser under it."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def script(shell: str) -> str:
    """The completion script for ``shell`` (one of :data:`SHELLS`).

    Raises:
      ValueError: ``shell`` is not one of :data:`SHELLS`.
    """
    if shell not in SHELLS:
        raise ValueError(f"no completion for shell {shell!r}; known: {', '.join(SHELLS)}")
    import shtab

    text: str = shtab.complete(completable_parser(), shell=shell, preamble=PREAMBLE[shell])
    if shell == "fish":
        # shtab leaves fish's own file completion on beside a positional's candidates; turn
        # it off (-f) where the candidates are the recipe files, so other files stay out
        text = text.replace(f'-ka "{RECIPE_FILES["fish"]}"', f'-fka "{RECIPE_FILES["fish"]}"')
    return text


def run(args: argparse.Namespace, out: Console) -> int:
    out.print(script(args.shell).rstrip("\n"))
    return 0
