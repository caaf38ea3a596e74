"""The application layer: a rendered stack in its work directory, driven stage by stage.

  * :mod:`.workdir`: what is rendered where, and (re-)rendering a recipe;
  * :mod:`.lock`: one run at a time per work directory;
  * :mod:`.stages`: project -> cluster -> workloads, and their plans;
  * :mod:`.kube`: reaching the cluster, readiness waits, the workloads stage;
  * :mod:`.guard`: what would stop a destroy midway, checked before anything is deleted;
  * :mod:`.service`: :class:`~.service.Stack`, the object a CLI, a test or a program drives.
"""
