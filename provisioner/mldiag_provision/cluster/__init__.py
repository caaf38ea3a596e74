"""One model of the cluster a recipe creates (issue 25), and the one check over its pod sets.

* :mod:`.model`: the types. A :class:`~.model.ClusterModel` is the node groups (a GKE Standard
  node pool, or the nodes Autopilot provisions for one accelerator class) with their labels,
  taints, capacity and allocatable resources, the Kueue queues pods are admitted through,
  the installed controllers (:class:`~.model.Controller`: version, the kinds its CRDs serve,
  its webhooks with their ports and whether a private control plane reaches them) and GKE's
  per-cluster limits (:class:`~.model.ClusterLimits`). The types import nothing of the plan
  or of Kubernetes clients.
* Builders: :mod:`.from_plan` (preflight and ``lint --recipe``), :mod:`.from_live` (a running
  cluster through a kubeconfig, ``lint --cluster``: nodes grouped by node pool with the
  allocatable and taints they report, the Kueue queues) and, for plain ``lint``, the
  manifests themselves (``lint/cluster_rules.model_of_manifests``: their Kueue objects, the
  machine their TPU selectors name). :mod:`.kueue` reads Kueue's objects for all of them.
* :mod:`.check`: *admitted* (an installed controller serves the kind at its apiVersion, no
  fail-closed webhook the control plane cannot reach intercepts it or its pods, the
  LocalQueue and ClusterQueue exist, the queue covers every requested resource, a flavor's
  quota holds the pod set) and *scheduled* (taints tolerated,
  requests within allocatable) for every pod set, in the words Kueue and the Kubernetes
  scheduler use.
* :mod:`.wiring`: *wired* (workers finding each other: headless Services, coordinator
  addresses after Kubernetes' env expansion, the pod names JobSet, Indexed Jobs and
  LeaderWorkerSet derive), judged over the whole input set; lint's ``wiring-*`` rules
  (``lint/wiring_rules.py``) report its verdicts in the same pass, and preflight runs it over
  the manifests a recipe renders.

* :mod:`.autopilot`: on GKE Autopilot, the accelerator classes of the recipe (their request
  ranges, from ``gke.yaml`` ``autopilotClasses``) and the *scheduled* verdicts on requests
  outside them, in GKE Warden's words.

Controllers come from the plan (what the stack installs: JobSet, Kueue, cert-manager, the ML
Diagnostics injection webhook or GKE's managed add-on; LWS is installed by no recipe field) or
from a live cluster's CRDs and webhook configurations; manifests linted alone leave them
unknown (never judged). A live cluster's webhook reachability is unknown (the firewall is not
a Kubernetes object). Not in the model yet: Autopilot's general-purpose compute classes.
"""
