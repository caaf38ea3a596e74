"""tests/fuzz: make mutate.py, budget.py and the stand-in API server importable."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # mutate.py, budget.py
sys.path.insert(0, str(Path(__file__).parents[1] / "verify"))  # fake_apiserver.py
