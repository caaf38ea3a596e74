"""Check: ``lint`` of the ``lint_1000`` corpus writes the same bytes as another checkout.

Builds the benchmark's corpus (:func:`lint_1000.write_manifests`, ``--files`` manifests) plus
the lint test data's manifests (faults included, so findings of every severity and the
python-jsonschema messages are compared too), then runs ``mldiag-provision lint`` of this
checkout and of ``--baseline`` (the ``provisioner`` folder of another checkout, e.g. main's)
with text, JSON and SARIF output, ``--jobs 1`` and ``--jobs 2``, and compares stdout and the
exit code byte for byte. Used for issue 32 item 4 (lint's memory) against main:

    .venv/bin/python tests/benchmarks/lint_same_as.py --baseline /work/main/provisioner

Exits 1 on any difference (and prints the first differing line).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import ROOT
from lint_1000 import DATA, write_manifests


def _run(provisioner: Path, argv: list[str]) -> tuple[int, bytes]:
    env = {**os.environ, "PYTHONPATH": str(provisioner), "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "mldiag_provision", *argv], env=env,
                          capture_output=True, check=False)
    return proc.returncode, proc.stdout


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", type=Path, required=True,
                   help="the provisioner folder of the checkout to compare with")
    p.add_argument("--files", type=int, default=1000)
    args = p.parse_args()
    mine = ROOT / "provisioner"
    differences = 0
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        write_manifests(corpus, args.files)
        for i, f in enumerate(sorted(DATA.rglob("*.yaml"))):
            shutil.copy(f, corpus / f"z{i:02d}-{f.name}")
        for output in ("text", "json", "sarif"):
            for jobs in ("1", "2"):
                argv = ["lint", str(corpus), "--autopilot", "-O", output, "--jobs", jobs]
                ours, theirs = _run(mine, argv), _run(args.baseline, argv)
                same = ours == theirs
                print(f"{'same' if same else 'DIFFERENT':<9} -O {output:<5} --jobs {jobs}: "
                      f"exit {ours[0]}/{theirs[0]}, {len(ours[1]):,}/{len(theirs[1]):,} bytes")
                if not same:
                    differences += 1
                    a, b = ours[1].splitlines(), theirs[1].splitlines()
                    line = next((n for n, (x, y) in enumerate(zip(a, b, strict=False))
                                 if x != y),
                                min(len(a), len(b)))
                    print(f"  first difference at line {line + 1}:\n"
                          f"  ours:   {a[line] if line < len(a) else b'<end>'!r}\n"
                          f"  theirs: {b[line] if line < len(b) else b'<end>'!r}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
