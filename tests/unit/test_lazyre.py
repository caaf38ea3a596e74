"""Regular expressions compiled on first use (mldiag_provision.lazyre, issue 32)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from mldiag_provision.lazyre import LazyPattern, lazy

ROOT = Path(__file__).resolve().parents[2]


def test_a_lazy_pattern_answers_as_the_compiled_one() -> None:
    text = r"^(?P<chips>[0-9]+)x(?P<vms>[0-9]+)$"
    mine, theirs = lazy(text), re.compile(text)
    assert isinstance(mine, LazyPattern) and "_compiled" not in vars(mine)  # not yet
    for value in ("2x4", "2x", "x4", "12x34\n"):
        for method in ("match", "fullmatch", "search"):
            a, b = getattr(mine, method)(value), getattr(theirs, method)(value)
            assert (a and a.groupdict()) == (b and b.groupdict())
    assert mine.sub("-", "2x4") == theirs.sub("-", "2x4")
    assert mine.findall("2x4") == theirs.findall("2x4")
    assert (mine.pattern, mine.flags, mine.groups) == (theirs.pattern, theirs.flags, 2)
    assert mine == theirs and mine == lazy(text) and hash(mine) == hash(theirs)
    assert mine.compiled() is vars(mine)["_compiled"]
    assert vars(mine)["match"] == mine.compiled().match  # later calls skip __getattr__


def test_importing_the_validate_path_compiles_none_of_the_packages_patterns() -> None:
    """A pattern of this package is compiled when a check first needs it, not on import."""
    code = ("import re, sys\n"
            "seen = []\n"
            "real = re._compile\n"
            "def spy(pattern, flags=0):\n"
            "    f = sys._getframe(1)\n"
            "    while f and 're/__init__' in f.f_code.co_filename:\n"
            "        f = f.f_back\n"
            "    if f and 'mldiag_provision' in f.f_code.co_filename:\n"
            "        seen.append((f.f_code.co_filename, f.f_code.co_name))\n"
            "    return real(pattern, flags)\n"
            "re._compile = spy\n"
            "import mldiag_provision.pipeline\n"
            "print(sorted(set(seen)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"
