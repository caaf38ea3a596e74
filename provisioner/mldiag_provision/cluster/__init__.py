"""One model of the cluster a recipe creates (issue 25), and the one check over its pod sets.

* :mod:`.model`: the types. A :class:`~.model.ClusterModel` is the node groups (a GKE Standard
  node pool, or the nodes Autopilot provisions for one accelerator class) with their labels,
  taints, capacity and allocatable resources, and the Kueue queues pods are admitted through.
  The types import nothing of the plan or of Kubernetes clients.
* :mod:`.from_plan`: the builder from a plan (what preflight and ``lint --recipe`` use).
* :mod:`.from_manifests`: the builder from the manifests being linted (plain ``lint``): their
  own Kueue objects, and the machine their node selectors name.
* :mod:`.check`: *admitted* (Kueue coverage) and *scheduled* (node selectors, allocatable) for
  every pod set, in the words Kueue and the Kubernetes scheduler use. *Wired* (workers finding
  each other) is lint's wiring rules (``lint/wiring_rules.py``), which run in the same pass.

* :mod:`.from_live`: the builder from a running cluster read through a kubeconfig
  (``lint --cluster``): its nodes grouped by node pool with the allocatable they report, its
  Kueue queues.
"""
