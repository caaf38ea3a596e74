"""TEST INFRASTRUCTURE: run the smoke program with a broken collective.

``python fault_psum.py AXIS PROGRAM_ARGS...`` replaces ``jax.lax.psum`` so that the sum over
mesh axis AXIS is skipped (what a collective that never crossed that axis would give), then
runs the real program. The program must notice and exit 1.
"""

from __future__ import annotations

import runpy
import sys

import jax

axis, argv = sys.argv[1], sys.argv[2:]
real_psum = jax.lax.psum


def broken_psum(x, axis_name, **kw):
    if axis_name == axis:
        return x
    return real_psum(x, axis_name, **kw)


jax.lax.psum = broken_psum
program = argv[0]
sys.argv = argv
runpy.run_path(program, run_name="__main__")
