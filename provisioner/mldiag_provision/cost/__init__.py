"""What a stack costs per hour, before anything is created (issue 29).

:mod:`~mldiag_provision.cost.prices` reads the offline price table
(``catalog/data/prices.yaml``, dated and sourced); :mod:`~mldiag_provision.cost.bom` turns a
plan (``.mldiag/plan.json`` as data) into a priced bill of materials. Loaded only by ``cost``,
``policy``, ``plan`` and ``apply``: ``validate`` never imports this package.
"""
