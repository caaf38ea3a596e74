"""Commands beyond validate/render/catalog/schema, one module each.

Each module defines ``NAME``, ``add_parser(subparsers)`` and ``run(args, out) -> int``, and
keeps heavy imports inside ``run`` so that building the parser stays cheap. Register a new
module in :data:`MODULES`.
"""

MODULES: tuple[str, ...] = ("plan", "apply", "destroy", "output", "lint", "verify", "smoke",
                           "preflight", "policy")
