"""The JAX + XProf smoke test of a slice: the program and where it runs.

``program.py`` is the program (run in its own process); ``local`` runs it on this machine's
CPU; ``xprof_check`` reads the profile it wrote. What the program must see on a planned slice
and its command line are planned in :mod:`mldiag_provision.plan.smoke`; the in-cluster
ConfigMap + JobSet are rendered by :mod:`mldiag_provision.render.smoke`. Nothing here imports
JAX: only the program and the XProf check do.
"""
