"""A user policy that does not compile is reported as ``FILE:LINE:COLUMN: MESSAGE`` lines
(rego-cpp's byte offset turned into a place in the file), exit 2 with a hint, not as the
engine's raw S-expression."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mldiag_provision.cli.app import main
from mldiag_provision.policy.engine import compile_errors

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "tpu-v4-2x2x4-autopilot.yaml"
HEAD = "package acme.bad\nimport rego.v1\n\n# the rule below\n"


def _run(tmp_path: Path, source: str, capsys) -> tuple[int, str]:
    pol = tmp_path / "badpol"
    pol.mkdir()
    (pol / "p.rego").write_text(source, encoding="utf-8")
    code = main(["--no-color", "policy", str(RECIPE), "--policy", str(pol)])
    return code, capsys.readouterr().err


def _place(source: str, needle: str) -> tuple[int, int]:
    """(line, column) from 1 of the first ``needle`` in ``source``."""
    at = source.index(needle)
    return source.count("\n", 0, at) + 1, at - (source.rfind("\n", 0, at) + 1) + 1


@pytest.mark.parametrize("body,needle,message", [
    # two operators where one is expected: one error per operator
    ('deny contains msg if {\n  1 ++ 2\n  msg := "x"\n}\n', "++", "operator"),
    # an operator without its right operand
    ("deny contains x if { x := 1 + }\n", "+ }", "operator"),
    # a bracket that is never closed: the error points into the file
    ("deny contains x if { x := [1, 2 }\nfoo := 3\n", None, "unclosed"),
])
def test_compile_error_names_file_line_column(tmp_path: Path, capsys, body: str,
                                              needle: str | None, message: str) -> None:
    source = HEAD + body
    code, err = _run(tmp_path, source, capsys)
    assert code == 2
    assert "rego-errorseq" not in err and "errormsg" not in err, err
    placed = re.findall(r"^(\S*badpol/p\.rego):(\d+):(\d+): (.+)$", err, re.M)
    assert placed, err
    for _, line, column, _text in placed:
        assert 1 <= int(line) <= source.count("\n")
        assert int(column) >= 1
    assert any(message in text for *_, text in placed), err
    if needle is not None:
        assert (int(placed[0][1]), int(placed[0][2])) == _place(source, needle)
    assert "hint: fix the Rego file at the line and column named" in err


def test_offset_counts_bytes_and_columns_count_characters() -> None:
    # "ü" is two bytes in UTF-8: byte offset 9 is the "+" in the second line, column 4
    source = "x := \"ü\"\nab + c\n"
    offset = len(source[:source.index("+")].encode("utf-8"))
    text = (f"(rego-errorseq (error 5:m.reg|{offset}|1 (errormsg 9:Bad thing) (errorast)) "
            f"(error 7:other.r|3|1 (errormsg 4:Oops) (errorast)))")
    assert compile_errors(text, {"m.reg": source}) == ["m.reg:2:4: Bad thing", "other.r: Oops"]
    assert compile_errors("something else entirely", {"m.reg": source}) == []
