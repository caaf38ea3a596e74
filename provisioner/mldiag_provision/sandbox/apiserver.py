"""TEMPORARY bridge: the sandbox Kubernetes API server still lives in
``tests/standin/apiserver.py`` (another branch is editing it); this loads that file as
:mod:`mldiag_provision.sandbox.apiserver` until it moves here."""

import importlib.util
import sys
from pathlib import Path

_SRC = Path(__file__).resolve().parents[3] / "tests" / "standin" / "apiserver.py"
_spec = importlib.util.spec_from_file_location(__name__, _SRC)
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
sys.modules[__name__] = _module
_spec.loader.exec_module(_module)
