from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


@pytest.fixture
def golden() -> Path:
    """The committed golden JSON folder (tests/golden)."""
    return GOLDEN
