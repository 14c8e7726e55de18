"""Shared pytest fixtures: the path to the read-only shared data (tests skip if it is absent), and the
derandomised hypothesis profile used in CI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs hypothesis derandomised (examples derived from each test, no example database), so a run
# cannot fail by the luck of a fresh draw; locally the default profile keeps exploring new examples.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI") or os.environ.get("HYPOTHESIS_PROFILE") == "ci":
    settings.load_profile("ci")

pytest_plugins = ["pytester"]

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` beside the project; skips the test when it is not there."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not available")
    return SHARED_DATA
