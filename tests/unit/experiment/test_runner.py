"""The runner's pure helpers: what the group still has to process, from one offsets read."""

from __future__ import annotations

import pytest

from pytest_lagscale.experiment.runner import unprocessed_records


@pytest.mark.parametrize(
    ("offsets", "expected"),
    [
        pytest.param(None, None, id="no-observation-yet"),
        pytest.param({}, 0, id="no-partitions"),
        pytest.param({0: (5, 5), 1: (7, 7)}, 0, id="all-committed"),
        pytest.param({0: (3, 10), 1: (7, 9)}, 9, id="behind"),
        pytest.param({0: (-1, 10)}, 10, id="nothing-committed-counts-the-whole-log"),
        pytest.param({0: (4, None)}, 0, id="log-end-unknown"),
        pytest.param({0: (12, 10)}, 0, id="committed-past-a-stale-log-end"),
    ],
)
def test_unprocessed_records(offsets, expected) -> None:
    assert unprocessed_records(offsets) == expected
