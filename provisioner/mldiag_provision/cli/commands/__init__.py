"""Every command of the CLI, one module each (``cli/commands/<verb>.py``); the modules whose
names start with ``_`` are helpers shared by several commands.

Each module defines ``NAME``, ``add_parser(subparsers)`` and ``run(args, out) -> int``, and
keeps heavy imports inside ``run`` so that building the parser stays cheap. Register a new
module in :data:`MODULES` and its one-line help in :data:`SUMMARIES` (the top-level
``--help`` lists every command from there without importing the command modules).
"""

# in the order the top-level --help lists them
MODULES: tuple[str, ...] = ("validate", "render", "catalog", "schema", "plan", "apply",
                           "destroy", "output", "lint", "verify", "smoke", "preflight",
                           "policy", "sandbox", "fleet", "completion", "cost")

SUMMARIES: dict[str, str] = {
    "validate": "preflight one or more recipes (nothing is created)",
    "render": "preflight a recipe and write its Terraform stack",
    "catalog": "list accelerators and explain their topologies",
    "schema": "print the recipe JSON Schema (for editors and CI)",
    "plan": "render, then show what apply would change, stage by stage",
    "apply": "render, plan, confirm, then create/update every stage",
    "destroy": "remove everything the stack created (asks first)",
    "output": "show the applied stack's outputs (cluster, bucket, ...)",
    "lint": "check TPU workload manifests (Job, JobSet, Pod, LeaderWorkerSet, ...) "
            "before kubectl apply",
    "verify": "check a live cluster against the recipe (Kubernetes API; Slurm: over ssh)",
    "smoke": "run the JAX + XProf smoke test of the recipe's slices locally (--local); in "
             "the cluster: verify --smoke",
    "preflight": "preflight one recipe; --live also asks its Google Cloud project whether it "
                 "can succeed",
    "policy": "run the policy gate (Rego) over a recipe's stack or a rendered directory, and "
              "its saved plan",
    "sandbox": "the local double of Google Cloud behind --sandbox: ls, reset, rules, "
               "kubeconfig, serve (--sandbox on plan/apply/verify/output/destroy)",
    "fleet": "many recipes: validate them together (names, state, _Default log bucket "
             "shared), list the ones a change affects as a CI matrix, write atlantis.yaml",
    "completion": "print a shell completion script (bash, zsh or fish)",
    "cost": "price the recipe's stack per hour (offline, sourced price table; unknown "
            "prices are shown as unknown, never zero)",
}
