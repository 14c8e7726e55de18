"""Shared pytest fixtures: the path to the read-only shared data (tests skip if it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` beside the project; skips the test when it is not there."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not available")
    return SHARED_DATA
