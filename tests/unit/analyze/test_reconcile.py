"""Reconciliation of the store against the manifest, checked with the pyarrow implementation.

The same :data:`CASES` run through Spark in ``tests/integration/test_reconcile.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pytest_lagscale.analyze import Reconciliation, reconcile_arrow
from pytest_lagscale.analyze.reconcile import load_manifest, produced_ranges, store_files
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.load.manifest import Manifest, PartitionManifest
from spark_consumer.store import STORE_SCHEMA

Pairs = list[tuple[int, int]]


def manifest(ranges: dict[int, tuple[int, int] | None]) -> Manifest:
    """A manifest with one contiguous range (first, last) per partition, None for nothing."""
    parts = tuple(PartitionManifest(p, *(r if r else (None, None)),
                                    r[1] - r[0] + 1 if r else 0) for p, r in sorted(ranges.items()))
    return Manifest("events", len(parts), 7, "test", "2026-01-01T00:00:00Z", parts,
                    sum(p.count for p in parts), 0, {})


def write_file(path: Path, pairs: Pairs, replica_id: str = "r") -> Path:
    """One store file (full :data:`STORE_SCHEMA`) holding ``pairs`` in the given order."""
    n = len(pairs)
    part = np.array([p for p, _ in pairs], np.int32)
    off = np.array([o for _, o in pairs], np.int64)
    ints = np.zeros(n, np.int64)
    table = pa.table({"partition": part, "offset": off, "seq": off, "entity_id": ints,
                      "ts_ns": ints, "bucket": np.zeros(n, np.int32), "segment": ["s"] * n,
                      "region": ["eu"] * n, "event_lag_ms": np.zeros(n),
                      "processed_at_ns": ints, "written_at_ns": ints,
                      "replica_id": [replica_id] * n}, schema=STORE_SCHEMA)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def write_store(root: Path, replicas: dict[str, Pairs], batch: int = 50) -> Path:
    """``<root>/<replica>/<incarnation>-<batch>.parquet`` files, ``batch`` rows each."""
    root.mkdir(parents=True, exist_ok=True)
    for rid, pairs in replicas.items():
        for i in range(0, len(pairs), batch):
            write_file(root / rid / f"100-{i // batch + 1:06d}.parquet", pairs[i:i + batch], rid)
    return root


def all_pairs(ranges: dict[int, tuple[int, int]]) -> Pairs:
    return [(p, o) for p, (a, b) in sorted(ranges.items()) for o in range(a, b + 1)]


RANGES = {0: (0, 99), 1: (0, 49), 2: (0, 149)}  # 300 records


@dataclass(frozen=True)
class Case:
    """A store and manifest with the expected counts (examples: ``examples`` argument)."""

    replicas: dict[str, Pairs]
    expected: dict[str, object]
    ranges: dict[int, tuple[int, int] | None] = field(default_factory=lambda: dict(RANGES))
    examples: int = 10
    hidden: dict[str, Pairs] = field(default_factory=dict)  # relative path -> pairs


def _without(pairs: Pairs, *drop: tuple[int, int]) -> Pairs:
    return [x for x in pairs if x not in drop]


_ALL = all_pairs(RANGES)
_ZERO = dict(lost_total=0, duplicated_total=0, duplicate_rows_total=0, unexpected_total=0,
             lost_examples=(), duplicated_examples=(), unexpected_examples=())
CASES = [
    pytest.param(Case({"r1": _ALL[:120], "r2": _ALL[120:]},
                      dict(_ZERO, produced_total=300, stored_rows_total=300,
                           distinct_processed_total=300)), id="exact"),
    pytest.param(Case({"r1": _without(_ALL, (1, 17))},
                      dict(_ZERO, produced_total=300, stored_rows_total=299,
                           distinct_processed_total=299, lost_total=1,
                           lost_examples=((1, 17),))), id="one-lost"),
    pytest.param(Case({"r1": _without(_ALL, (0, 0), (2, 149)) + [(2, 148)]},
                      dict(_ZERO, produced_total=300, stored_rows_total=299,
                           distinct_processed_total=298, lost_total=2, duplicated_total=1,
                           duplicate_rows_total=1, lost_examples=((0, 0), (2, 149)),
                           duplicated_examples=((2, 148, 2),))),
                 id="lost-at-range-ends-and-duplicated"),
    pytest.param(Case({"r1": _ALL[:160], "r2": _ALL[150:]},
                      dict(_ZERO, produced_total=300, stored_rows_total=310,
                           distinct_processed_total=300, duplicated_total=10,
                           duplicate_rows_total=10,
                           duplicated_examples=tuple((2, o, 2) for o in range(10)))),
                 id="two-replicas-wrote-the-same-offsets"),
    pytest.param(Case({"r1": _ALL, "r2": [(1, 3), (1, 3)]},
                      dict(_ZERO, produced_total=300, stored_rows_total=302,
                           distinct_processed_total=300, duplicated_total=1,
                           duplicate_rows_total=2, duplicated_examples=((1, 3, 3),))),
                 id="three-copies"),
    pytest.param(Case({"r1": _ALL + [(0, 100), (5, 0), (-1, 4)]},
                      dict(_ZERO, produced_total=300, stored_rows_total=303,
                           distinct_processed_total=303, unexpected_total=3,
                           unexpected_examples=((-1, 4), (0, 100), (5, 0)))),
                 id="unexpected-offset-and-partitions"),
    pytest.param(Case({"r1": [(0, 9), (0, 10), (1, 0), (1, 0)]},
                      dict(_ZERO, produced_total=11, stored_rows_total=4,
                           distinct_processed_total=3, lost_total=10, unexpected_total=2,
                           duplicated_total=1, duplicate_rows_total=1,
                           lost_examples=tuple((0, o) for o in range(11, 21)),
                           duplicated_examples=((1, 0, 2),),
                           unexpected_examples=((0, 9), (1, 0))),
                      ranges={0: (10, 20), 1: None}),
                 id="not-a-fresh-topic-and-empty-partition"),
    pytest.param(Case({}, dict(_ZERO, produced_total=300, stored_rows_total=0,
                               distinct_processed_total=0, lost_total=300,
                               lost_examples=tuple((0, o) for o in range(10)))),
                 id="empty-store"),
    pytest.param(Case({"r1": _ALL},
                      dict(_ZERO, produced_total=300, stored_rows_total=300,
                           distinct_processed_total=300),
                      hidden={"r1/.100-000009.parquet": [(0, 1), (9, 9)],
                              "r1/.100-000009.parquet.tmp": [(0, 1)],
                              ".trash/r1/100-000001.parquet": [(0, 2)],
                              "r2/_SUCCESS.parquet": [(0, 3)]}),
                 id="temporary-and-hidden-files-ignored"),
    pytest.param(Case({"r1": [x for x in _ALL if x[1] % 10] + [(2, 5)] * 4 + [(1, 1), (0, 1)]},
                      dict(_ZERO, produced_total=300, stored_rows_total=276,
                           distinct_processed_total=270, lost_total=30, duplicated_total=3,
                           duplicate_rows_total=6, lost_examples=((0, 0), (0, 10), (0, 20)),
                           duplicated_examples=((0, 1, 2), (1, 1, 2), (2, 5, 5))),
                      examples=3), id="examples-capped-and-sorted"),
    pytest.param(Case({"r1": _ALL[1:] + [(0, 5)]},
                      dict(_ZERO, produced_total=300, stored_rows_total=300,
                           distinct_processed_total=299, lost_total=1, duplicated_total=1,
                           duplicate_rows_total=1), examples=0), id="no-examples"),
]


def build(case: Case, root: Path) -> tuple[Path, Manifest]:
    """Write the case's store under ``root/store``; returns (store, manifest)."""
    store = write_store(root / "store", case.replicas)
    for rel, pairs in case.hidden.items():
        write_file(store / rel, pairs)
    return store, manifest(case.ranges)


def counts(r: Reconciliation) -> dict[str, object]:
    """Everything but engine and elapsed time (a store's reconciliation has no notes)."""
    assert r.notes == ()
    out = {k: v for k, v in vars(r).items() if k not in ("engine", "elapsed_s", "notes")}
    return out


@pytest.mark.parametrize("case", CASES)
def test_reconcile_arrow(case: Case, tmp_path: Path) -> None:
    store, m = build(case, tmp_path)
    r = reconcile_arrow(store, m, examples=case.examples)
    assert counts(r) == case.expected
    assert r.engine == "arrow" and r.elapsed_s >= 0
    assert r.exact == (r.lost_total == r.duplicated_total == r.unexpected_total == 0)


def test_missing_store_directory_means_everything_lost(tmp_path: Path) -> None:
    r = reconcile_arrow(tmp_path / "nothing-here", manifest({0: (0, 4)}))
    assert (r.produced_total, r.stored_rows_total, r.lost_total, r.exact) == (5, 0, 5, False)
    assert r.lost_examples == ((0, 0), (0, 1), (0, 2), (0, 3), (0, 4))


def test_counts_satisfy_the_identities_on_a_random_store(tmp_path: Path) -> None:
    store, m, _ = random_store(tmp_path, seed=3)
    r = reconcile_arrow(store, m)
    assert r.stored_rows_total == r.distinct_processed_total + r.duplicate_rows_total
    assert r.distinct_processed_total == r.produced_total - r.lost_total + r.unexpected_total
    assert min(r.lost_total, r.duplicated_total, r.unexpected_total) > 0


def random_store(root: Path, seed: int, partitions: int = 6,
                 per_partition: int = 400) -> tuple[Path, Manifest, int]:
    """Three replicas' batches with random losses, duplicates and a few strays; returns
    (store, manifest, rows)."""
    rng = np.random.default_rng(seed)
    pairs = all_pairs({p: (0, per_partition - 1) for p in range(partitions)})
    kept = [x for x in pairs if rng.random() > 0.02]
    dups = [kept[i] for i in rng.integers(0, len(kept), 40)]
    strays = [(int(rng.integers(0, partitions + 2)), per_partition + int(rng.integers(0, 9)))
              for _ in range(5)]
    rows = kept + dups + strays
    order = rng.permutation(len(rows))
    shuffled = [rows[i] for i in order]
    third = len(shuffled) // 3
    store = write_store(root / "store", {"r1": shuffled[:third], "r2": shuffled[third:2 * third],
                                         "r3": shuffled[2 * third:]}, batch=97)
    return store, manifest({p: (0, per_partition - 1) for p in range(partitions)}), len(rows)


def test_store_files_skips_hidden_and_temporary_files(tmp_path: Path) -> None:
    for rel in ("r1/1-000001.parquet", "r1/.1-000002.parquet.tmp", "r1/.1-000002.parquet",
                ".tmp/r2/1-000001.parquet", "r2/_x.parquet", "r2/1-000001.parquet"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"")
    assert store_files(tmp_path) == [tmp_path / "r1/1-000001.parquet",
                                     tmp_path / "r2/1-000001.parquet"]
    assert store_files(tmp_path / "missing") == []


def test_manifest_path_is_read(tmp_path: Path) -> None:
    path = manifest({0: (0, 9), 1: None}).write_json(tmp_path / "manifest.json")
    assert load_manifest(path) == manifest({0: (0, 9), 1: None})
    assert reconcile_arrow(tmp_path / "store", str(path)).produced_total == 10


def test_missing_manifest_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "run" / "manifest.json"
    with pytest.raises(ConfigError) as info:
        reconcile_arrow(tmp_path, path)
    assert str(info.value) == (f"manifest {str(path)!r}: no such file; pass the manifest.json "
                               "the producer wrote in the run directory")


def test_unreadable_manifest_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"schema_version": 2}))
    with pytest.raises(ConfigError) as info:
        load_manifest(path)
    assert str(info.value) == (f"manifest {str(path)!r}: cannot be read ({path}: not a "
                               "schema_version 1 manifest); pass the manifest.json the producer "
                               "wrote")


def test_non_contiguous_manifest_is_a_config_error_listing_every_partition() -> None:
    parts = (PartitionManifest(0, 0, 9, 10), PartitionManifest(1, 0, 9, 8),
             PartitionManifest(2, 5, None, 3), PartitionManifest(1, 0, 0, 1))
    m = Manifest("events", 3, 7, "test", "2026-01-01T00:00:00Z", parts, 22, 0, {})
    with pytest.raises(ConfigError) as info:
        produced_ranges(m, "'run/manifest.json'")
    assert info.value.problems == [
        "'per_partition[1].count' 8 in 'run/manifest.json': offsets 0..9 hold 10 records; "
        "reconciliation needs contiguous offsets: produce with enable.idempotence=true to a "
        "fresh topic",
        "'per_partition[2]' offsets 5..None in 'run/manifest.json': not a range of offsets >= 0 "
        "for count 3; use the manifest the producer wrote",
        "'per_partition[3].partition' 1 in 'run/manifest.json': duplicate or negative "
        "partition; use the manifest the producer wrote",
    ]


def test_negative_examples_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as info:
        reconcile_arrow(tmp_path, manifest({0: (0, 1)}), examples=-1)
    assert str(info.value) == "examples: -1 must be >= 0; pass 0 for counts only"


def test_to_dict_is_json_with_exact_flag(tmp_path: Path) -> None:
    r = Reconciliation(produced_total=3, stored_rows_total=4, distinct_processed_total=2,
                       lost_total=1, duplicated_total=1, duplicate_rows_total=2,
                       unexpected_total=0, lost_examples=((0, 2),),
                       duplicated_examples=((0, 1, 3),), unexpected_examples=(),
                       engine="spark", elapsed_s=1.5)
    assert json.loads(json.dumps(r.to_dict())) == {
        "produced_total": 3, "stored_rows_total": 4, "distinct_processed_total": 2,
        "lost_total": 1, "duplicated_total": 1, "duplicate_rows_total": 2,
        "unexpected_total": 0, "lost_examples": [[0, 2]], "duplicated_examples": [[0, 1, 3]],
        "unexpected_examples": [], "engine": "spark", "elapsed_s": 1.5, "notes": [],
        "exact": False}


def test_import_loads_no_pyspark() -> None:
    import subprocess
    import sys

    code = ("import sys, pytest_lagscale.analyze.reconcile; "
            "print(any(m.split('.')[0] == 'pyspark' for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "False"
