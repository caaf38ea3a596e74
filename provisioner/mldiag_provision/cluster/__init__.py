"""One model of the cluster a recipe creates (issue 25), and the one check over its pod sets.

* :mod:`.model`: the types. A :class:`~.model.ClusterModel` is the node groups (a GKE Standard
  node pool, or the nodes Autopilot provisions for one accelerator class) with their labels,
  taints, capacity and allocatable resources, and the Kueue queues pods are admitted through.
  The types import nothing of the plan or of Kubernetes clients.
* Builders: :mod:`.from_plan` (preflight and ``lint --recipe``), :mod:`.from_live` (a running
  cluster through a kubeconfig, ``lint --cluster``: nodes grouped by node pool with the
  allocatable and taints they report, the Kueue queues) and, for plain ``lint``, the
  manifests themselves (``lint/cluster_rules.model_of_manifests``: their Kueue objects, the
  machine their TPU selectors name). :mod:`.kueue` reads Kueue's objects for all of them.
* :mod:`.check`: *admitted* (the LocalQueue and ClusterQueue exist, the queue covers every
  requested resource, a flavor's quota holds the pod set) and *scheduled* (taints tolerated,
  requests within allocatable) for every pod set, in the words Kueue and the Kubernetes
  scheduler use.
* :mod:`.wiring`: *wired* (workers finding each other: headless Services, coordinator
  addresses after Kubernetes' env expansion, the pod names JobSet, Indexed Jobs and
  LeaderWorkerSet derive), judged over the whole input set; lint's ``wiring-*`` rules
  (``lint/wiring_rules.py``) report its verdicts in the same pass, and preflight runs it over
  the manifests a recipe renders.

Not in the model yet: the installed controllers and their versions (JobSet, LWS, the ML
Diagnostics webhook), webhook reachability, and Autopilot's compute classes; preflight's
existing rules answer those questions one field at a time.
"""
