"""Shared inputs of tune's tests: the twin tests' bundled spike-ci run, planned once."""

from __future__ import annotations

from tests.unit.twin.conftest import settings, spike_plan  # noqa: F401  (fixture and helper)
