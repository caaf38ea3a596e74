"""The fuzz suite's budget (inputs per entry point) and Hypothesis settings.

CI runs ``MLDIAG_FUZZ_EXAMPLES`` (default 2,000) inputs per entry point, derandomized so a
run is reproducible; the longer run documented in README.md sets it to 10,000 and
``MLDIAG_FUZZ_RANDOM=1`` for fresh inputs each time.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("MLDIAG_FUZZ_EXAMPLES", "2000"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True,
                derandomize=os.environ.get("MLDIAG_FUZZ_RANDOM") != "1",
                suppress_health_check=list(HealthCheck))
