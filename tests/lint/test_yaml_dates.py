"""An unquoted YAML date in a string field: kubectl passes on the text the user wrote, so lint
checks that text against the string keywords (it crashed with a TypeError on maxLength before,
found by the compiled-schema identity test)."""

from __future__ import annotations

import datetime

import pytest

from mldiag_provision.lint.schema import _validator_class

DAY = datetime.date(2020, 1, 2)  # YAML `2020-01-02`, ISO text of 10 characters


@pytest.mark.parametrize(("keyword", "bound", "fails"), [
    ("maxLength", 63, False), ("maxLength", 5, True),
    ("minLength", 10, False), ("minLength", 11, True),
    ("pattern", r"^[0-9-]+$", False), ("pattern", r"^[a-z]+$", True),
])
def test_string_keywords_see_a_date_as_its_iso_text(keyword: str, bound: object,
                                                    fails: bool) -> None:
    schema = {"type": ["string", "null"], keyword: bound}
    errors = list(_validator_class()(schema).iter_errors(DAY))
    assert [e.validator for e in errors] == ([keyword] if fails else [])
    assert all("2020-01-02" in e.message for e in errors)  # the text, not a date repr
