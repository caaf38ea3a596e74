"""Google Cloud name limits: a typed reader over ``catalog/data/names.yaml``.

The limits (pattern, length, source, confidence) live in the YAML; this module loads them
and says why a name breaks one. Preflight applies them to every name the tool derives
(rule ``gcp-names``) and to names the user writes (``diagnostics``, ``engine``,
``slurm-storage``).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from mldiag_provision.catalog.store import DATA_DIR, FactStore, store
from mldiag_provision.errors import CatalogError

try:
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader


@dataclass(frozen=True)
class NameLimit:
    """One kind of name: ``pattern`` (whole-name regex), ``min``/``max`` length in
    characters; ``source`` is a URL; ``confidence`` H, M or L (only H may fail a recipe)."""

    key: str
    what: str
    pattern: re.Pattern[str]
    min: int
    max: int
    source: str
    confidence: str
    max_with_dots: int | None = None
    reserved_prefixes: tuple[str, ...] = ()
    reserved_words: tuple[str, ...] = ()
    no_ip_address: bool = False
    """The name may not be an IPv4 address in dotted-decimal form (``notIpAddress``)."""

    @property
    def verified(self) -> bool:
        return self.confidence == "H"

    def describe(self) -> str:
        """The rule in words, e.g. for a problem's ``expected``."""
        text = f"{self.min}-{self.max} characters matching {self.pattern.pattern}"
        if self.max_with_dots:
            text += (f" (up to {self.max_with_dots} with dots, each dot-separated part at most "
                     f"{self.max})")
        if self.reserved_prefixes or self.reserved_words:
            text += "; not " + ", ".join(
                [f"starting with '{p}'" for p in self.reserved_prefixes]
                + [f"containing '{w}'" for w in self.reserved_words])
        return text

    def why_invalid(self, name: str) -> str | None:
        """Why ``name`` breaks this limit (one short phrase), or None when it is valid."""
        limit = self.max
        if self.max_with_dots and "." in name:
            limit = self.max_with_dots
            long_parts = [p for p in name.split(".") if len(p) > self.max or not p]
            if long_parts:
                return f"dot-separated parts must be 1-{self.max} characters"
        if len(name) > limit:
            return f"{len(name)} characters; at most {limit}"
        if len(name) < self.min:
            return f"{len(name)} characters; at least {self.min}"
        if not self.pattern.match(name):
            return f"does not match {self.pattern.pattern}"
        if self.no_ip_address and _is_ipv4(name):
            return "is an IP address in dotted-decimal form"
        for prefix in self.reserved_prefixes:
            if name.startswith(prefix):
                return f"starts with the reserved prefix '{prefix}'"
        for word in self.reserved_words:
            # Google also refuses close misspellings such as g00gle (TF-VERIFY ValidateGCSName)
            if word in name.replace("0", "o"):
                return f"contains the reserved word '{word}'"
        return None


def _is_ipv4(name: str) -> bool:
    if name.count(".") != 3:  # not four dotted parts (most names have no dot): no parse
        return False
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def load_name_limits(data_dir: Path = DATA_DIR) -> dict[str, NameLimit]:
    """All limits by key (``gcsBucket``, ``gkeNodePool``, ...).

    Raises:
      CatalogError: names.yaml is missing or malformed.
    """
    facts = store() if data_dir == DATA_DIR else FactStore(data_dir)
    doc = facts.doc("names")
    try:
        out: dict[str, NameLimit] = {}
        for key, raw in doc["names"].items():
            src = facts.sources[raw["source"]]
            out[key] = NameLimit(
                key=key, what=str(raw["what"]), pattern=re.compile(str(raw["pattern"])),
                min=int(raw["min"]), max=int(raw["max"]),
                source=src.ref,
                confidence=str(raw.get("confidence", "L")),
                max_with_dots=int(raw["maxWithDots"]) if raw.get("maxWithDots") else None,
                reserved_prefixes=tuple(raw.get("reservedPrefixes", [])),
                reserved_words=tuple(raw.get("reservedWords", [])),
                no_ip_address=bool(raw.get("notIpAddress", False)))
        return out
    except (KeyError, TypeError, ValueError, re.error) as exc:
        raise CatalogError(f"catalog names.yaml in {data_dir} is unreadable: {exc!r}") from exc
