"""consumed_from_committed: produced ranges against committed offsets, per partition."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lagscale.analyze.committed_exactness import (CommittedExactness, PartitionCommitted,
                                                         consumed_from_committed)
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.load.manifest import Manifest, PartitionManifest


def manifest(ranges: dict[int, tuple[int, int] | None]) -> Manifest:
    parts = tuple(PartitionManifest(p, *(r if r else (None, None)), r[1] - r[0] + 1 if r else 0)
                  for p, r in sorted(ranges.items()))
    return Manifest("events", len(parts), 1, "test", "2026-01-01T00:00:00Z", parts,
                    sum(p.count for p in parts), 0, {})


def test_everything_committed_is_complete_and_says_duplicates_are_not_measurable() -> None:
    r = consumed_from_committed({0: 10, 1: 5}, manifest({0: (0, 9), 1: (0, 4)}))
    assert (r.produced_total, r.consumed_total, r.unconsumed_total) == (15, 15, 0)
    assert r.complete and r.duplicates_measurable is False


@pytest.mark.parametrize("committed, consumed", [
    (None, 0),    # nothing committed
    (-1, 0),      # the admin client's "none"
    (3, 0),       # below the produced range (records produced before the run's first offset)
    (5, 0),       # exactly the first produced offset: none of the range consumed
    (8, 3),       # part of the range
    (15, 10),     # exactly last + 1: all of it
    (40, 10),     # beyond (records produced by someone else afterwards): capped at the range
])
def test_consumed_is_the_produced_offsets_below_the_committed_offset(committed, consumed) -> None:
    r = consumed_from_committed({0: committed}, manifest({0: (5, 14)}))
    assert r.per_partition == (PartitionCommitted(
        0, 5, 14, 10, None if committed is None or committed < 0 else committed, consumed,
        10 - consumed),)
    assert (r.consumed_total, r.unconsumed_total) == (consumed, 10 - consumed)
    assert r.complete is (consumed == 10)


def test_missing_partitions_and_empty_ones_are_listed_in_order() -> None:
    r = consumed_from_committed({2: 7, 0: 4}, manifest({0: (0, 3), 1: (0, 2), 3: None}))
    assert [(p.partition, p.produced, p.committed, p.consumed, p.unconsumed)
            for p in r.per_partition] == [
        (0, 4, 4, 4, 0),       # complete
        (1, 3, None, 0, 3),    # no committed offset: all unconsumed
        (2, 0, 7, 0, 0),       # committed, nothing produced there
        (3, 0, None, 0, 0),    # produced nothing, committed nothing
    ]
    assert (r.produced_total, r.consumed_total, r.unconsumed_total) == (7, 4, 3)


def test_manifest_path_and_json_shape(tmp_path: Path) -> None:
    path = manifest({0: (0, 1)}).write_json(tmp_path / "manifest.json")
    r = consumed_from_committed({0: 1}, path)
    assert isinstance(r, CommittedExactness)
    assert json.loads(json.dumps(r.to_dict())) == {
        "produced_total": 2, "consumed_total": 1, "unconsumed_total": 1,
        "per_partition": [{"partition": 0, "first_offset": 0, "last_offset": 1, "produced": 2,
                           "committed": 1, "consumed": 1, "unconsumed": 1}],
        "duplicates_measurable": False, "complete": False}


def test_non_contiguous_manifest_is_a_config_error() -> None:
    bad = Manifest("events", 1, 1, "test", "t", (PartitionManifest(0, 0, 9, 5),), 5, 0, {})
    with pytest.raises(ConfigError, match="offsets 0..9 hold 10 records"):
        consumed_from_committed({0: 10}, bad)


def test_missing_manifest_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        consumed_from_committed({}, tmp_path / "manifest.json")
