"""``mldiag-provision lint``: preflight for the Kubernetes manifests people already have.

The pipeline, one module per step::

    loading.py            files / directories / stdin -> objects with positions (Resource)
    schema.py             each object against the Kubernetes OpenAPI schema of a version,
                          custom resources against data/crds.generated.json
                          (upstream CRDs, lint/crdgen.py) and data/crds.yaml
    workloads.py          the pod templates inside each workload kind
    tpu_rules.py          TPU slice, chips, multi-host wiring, multislice, env, ports, capacity
    autopilot_rules.py    what GKE Autopilot refuses (--autopilot)
    diagnostics_rules.py  ML Diagnostics readiness (label, hostNetwork, port 9999, identity)
    linter.py             runs the above over one input set -> LintResult
    output.py, sarif.py   text / JSON, and SARIF 2.1.0

Design constraints: facts are data with sources (the fact store: ``catalog/data/*.yaml``,
``data/crds.yaml``), never constants in rule code; every rule has a stable id declared in
the rulebook (``rules.py`` -> ``mldiag_provision/rulebook.py``); errors only on verified
facts; no input makes lint raise (property-tested);
1,000 manifests lint in under two seconds in one process (tests/benchmarks/lint_1000.py).
"""
