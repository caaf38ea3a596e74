"""The fuzz suite's budget (inputs per entry point) and Hypothesis settings.

The default run takes a sample: 500 inputs per entry point, derandomized so a run is
reproducible, and each entry point must reach every family of its seeds (every example
recipe; every manifest kind and lint option set; every verify fault mode and path), which
test_fuzz.py asserts. ``MLDIAG_FULL=1`` (docs/testing.md) runs the full set, 2,000 per entry
point; ``MLDIAG_FUZZ_EXAMPLES=N`` sets the figure outright (the longer run documented in
README.md sets 10,000 and ``MLDIAG_FUZZ_RANDOM=1`` for fresh inputs each time).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from sampling import FULL

SAMPLE_EXAMPLES = 500
FULL_EXAMPLES = 2000
EXAMPLES = int(os.environ.get("MLDIAG_FUZZ_EXAMPLES",
                              str(FULL_EXAMPLES if FULL else SAMPLE_EXAMPLES)))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True,
                derandomize=os.environ.get("MLDIAG_FUZZ_RANDOM") != "1",
                suppress_health_check=list(HealthCheck))
