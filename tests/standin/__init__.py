"""Thin re-export of the sandbox (:mod:`mldiag_provision.sandbox`), for tests and branches
that still import ``standin.<module>``: ``standin.X`` IS ``mldiag_provision.sandbox.X`` (the
same module object, so monkeypatching either patches both). There is one stand-in, the
package's; nothing else lives here.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

_TARGET = "mldiag_provision.sandbox"


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``standin.X`` and answers with the already imported ``mldiag_provision.sandbox.X``."""

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(__name__ + "."):
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        real = importlib.import_module(_TARGET + spec.name[len(__name__):])
        self._spec = real.__spec__  # the import system overwrites __spec__; put it back
        return real

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec


sys.meta_path.insert(0, _Alias())
