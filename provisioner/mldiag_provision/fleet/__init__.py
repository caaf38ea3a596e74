"""Fleets: a repository of many recipes (issue 30).

``fleet validate`` checks every recipe with the same preflight as ``validate``, then what no
single recipe can see (:mod:`.collisions`); ``fleet matrix`` lists the recipes a change
affects (:mod:`.affected`) in the shape a CI engine reads (:mod:`.engines`); ``fleet
atlantis`` writes an ``atlantis.yaml`` with one project per recipe. Nothing here talks to
Google Cloud: the cross-recipe checks read the plan objects (:mod:`mldiag_provision.plan`)
the recipes build offline.
"""
