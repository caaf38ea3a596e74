"""Hypothesis profile for tests/property: ``ci`` (loaded by default) has no deadline, because
the first example of a test pays for imports and the catalog load, and CI machines vary.
Each test sets its own ``max_examples`` so the whole directory stays fast."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
