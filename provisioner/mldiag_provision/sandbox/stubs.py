"""Generates the Python gRPC stubs of the stand-in's .proto files (grpcio-tools), once per
output directory; the generated code is not committed (it is tied to the protobuf runtime
that is installed)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

PROTO_DIR = Path(__file__).resolve().parent / "protos"
PROTOS = ("tfplugin6.proto", "goplugin.proto", "health.proto")


def generate(out: Path) -> Path:
    """Write ``*_pb2.py``/``*_pb2_grpc.py`` into ``out`` (skipped when up to date)."""
    from grpc_tools import protoc  # test-only dependency

    out.mkdir(parents=True, exist_ok=True)
    newest = max((PROTO_DIR / p).stat().st_mtime for p in PROTOS)
    stamp = out / ".generated"
    if stamp.is_file() and stamp.stat().st_mtime >= newest:
        return out
    include = Path(protoc.__file__).resolve().parent / "_proto"
    args = ["protoc", f"-I{PROTO_DIR}", f"-I{include}", f"--python_out={out}",
            f"--grpc_python_out={out}", *PROTOS]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed for {PROTOS} into {out}")
    stamp.write_text("ok\n")
    return out


def load(out: Path) -> dict[str, Any]:
    """Import the generated modules from ``out``: name -> module (``Any``: the modules are
    generated at run time by :func:`generate`, so no type information exists for them)."""
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    names = ("tfplugin6_pb2", "tfplugin6_pb2_grpc", "goplugin_pb2", "goplugin_pb2_grpc",
             "health_pb2", "health_pb2_grpc")
    return {n: importlib.import_module(n) for n in names}
