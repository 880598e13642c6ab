"""Lost / duplicated records (docs/design.md "Measurements"): the store against the manifest, on Spark.

Inputs:

* The producer's manifest (:class:`pytest_lagscale.load.manifest.Manifest`, or the path of its
  ``manifest.json``): per partition, the first and last acknowledged offset and the count. The
  *produced set* is every ``(partition, offset)`` with ``first_offset <= offset <= last_offset``;
  a partition whose count does not match its range (acknowledged offsets not contiguous) is a
  :class:`~pytest_lagscale.contract.errors.ConfigError` rather than a guess.
* The replicas' store (``spark_consumer/store.py``): ``<store>/<replica_id>/<incarnation>-
  <batch>.parquet``, one row per processed record; only ``partition`` and ``offset`` are read;
  names starting with ``.`` or ``_`` are ignored. A missing or empty store: everything is lost.

Counts (records): ``produced_total``; ``stored_rows_total`` and ``distinct_processed_total``;
``lost_total`` (produced, not stored); ``duplicated_total`` (stored pairs with more than one row)
and ``duplicate_rows_total`` (the extra rows); ``unexpected_total`` (stored pairs outside the
produced set: a consumer bug or the wrong manifest). Identities: ``stored_rows_total ==
distinct_processed_total + duplicate_rows_total`` and ``distinct_processed_total ==
produced_total - lost_total + unexpected_total``.

:func:`reconcile` runs one Spark job (group by pair, tag each pair against its partition's range,
sum once) in a small local session of its own (:class:`.local_spark.LocalSpark`), stopped before
returning, also on error; pass ``spark=`` to reuse a session (:func:`spark_pair_counts` is the
job, shared with an output topic's reconciliation, :mod:`.reconcile_topic`).
:func:`reconcile_arrow` computes the same with pyarrow (another algorithm) to cross-check it in
tests. Why Spark, and its timings: docs/experiments.md, "Notes moved from module docstrings",
"analyze/reconcile.py".
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..contract.errors import ConfigError
from ..load.manifest import Manifest
from .local_spark import LocalSpark

log = logging.getLogger(__name__)

_CONTIGUOUS_FIX = ("reconciliation needs contiguous offsets: produce with enable.idempotence=true "
                   "to a fresh topic")


@dataclass(frozen=True)
class Reconciliation:
    """Produced vs processed records (see the module docstring for each count's meaning).

    Attributes:
        produced_total: records in the manifest's ranges.
        stored_rows_total: rows in the store.
        distinct_processed_total: distinct (partition, offset) pairs in the store.
        lost_total: produced pairs absent from the store.
        duplicated_total: pairs stored more than once.
        duplicate_rows_total: rows beyond the first of each duplicated pair.
        unexpected_total: stored pairs not in the manifest's ranges.
        lost_examples: up to ``examples`` lost ``(partition, offset)``, ascending.
        duplicated_examples: up to ``examples`` ``(partition, offset, copies)``, ascending.
        unexpected_examples: up to ``examples`` unexpected ``(partition, offset)``, ascending.
        engine: ``"spark"`` or ``"arrow"``.
        elapsed_s: wall seconds of the whole call (including Spark's start when it started one).
        notes: sentences on what the counts include beyond stored pairs (an output topic's
            records that name no input, :mod:`.reconcile_topic`); empty for a store.
    """

    produced_total: int
    stored_rows_total: int
    distinct_processed_total: int
    lost_total: int
    duplicated_total: int
    duplicate_rows_total: int
    unexpected_total: int
    lost_examples: tuple[tuple[int, int], ...]
    duplicated_examples: tuple[tuple[int, int, int], ...]
    unexpected_examples: tuple[tuple[int, int], ...]
    engine: str
    elapsed_s: float
    notes: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        """True when nothing was lost, duplicated or unexpected (processed == produced)."""
        return self.lost_total == self.duplicated_total == self.unexpected_total == 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping (examples as lists) with ``exact`` added."""
        out = asdict(self)
        for key in ("lost_examples", "duplicated_examples", "unexpected_examples"):
            out[key] = [list(e) for e in out[key]]
        out["notes"] = list(self.notes)
        out["exact"] = self.exact
        return out


def load_manifest(manifest: Manifest | str | Path) -> Manifest:
    """The manifest itself, or the one read from a ``manifest.json`` path.

    Raises:
        ConfigError: the file is missing, unreadable or not a schema_version 1 manifest.
    """
    if isinstance(manifest, Manifest):
        return manifest
    path = Path(manifest)
    if not path.is_file():
        raise ConfigError(f"manifest {str(path)!r}: no such file; pass the manifest.json the "
                          "producer wrote in the run directory")
    try:
        return Manifest.read_json(path)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"manifest {str(path)!r}: cannot be read ({exc}); pass the "
                          "manifest.json the producer wrote") from exc


def produced_ranges(manifest: Manifest, source: str = "manifest") -> list[tuple[int, int, int]]:
    """The produced set as ``(partition, first_offset, last_offset)`` ranges (inclusive).

    Args:
        manifest: the producer's manifest.
        source: how to name the manifest in messages (its path).

    Raises:
        ConfigError: one line per partition whose offsets are not a contiguous range holding
            exactly ``count`` records, or that is listed twice.
    """
    problems, ranges, seen = [], [], set()
    for i, p in enumerate(manifest.per_partition):
        key = f"'per_partition[{i}]"
        if p.partition in seen or p.partition < 0:
            problems.append(f"{key}.partition' {p.partition!r} in {source}: duplicate or "
                            "negative partition; use the manifest the producer wrote")
            continue
        seen.add(p.partition)
        if p.count == 0 and p.first_offset is None and p.last_offset is None:
            continue
        first, last = p.first_offset, p.last_offset
        if first is None or last is None or first < 0 or last < first:
            problems.append(f"{key}' offsets {first!r}..{last!r} in {source}: not a range of "
                            f"offsets >= 0 for count {p.count!r}; use the manifest the "
                            "producer wrote")
        elif p.count != last - first + 1:
            problems.append(f"{key}.count' {p.count!r} in {source}: offsets {first}..{last} "
                            f"hold {last - first + 1} records; {_CONTIGUOUS_FIX}")
        else:
            ranges.append((p.partition, first, last))
    if problems:
        raise ConfigError(problems)
    return sorted(ranges)


def store_files(store_dir: str | Path) -> list[Path]:
    """Parquet files of the store, sorted; temporaries and hidden paths excluded (may be [])."""
    root = Path(store_dir)
    if not root.is_dir():
        return []
    return sorted(f for f in root.rglob("*.parquet")
                  if f.is_file() and not any(part.startswith((".", "_"))
                                             for part in f.relative_to(root).parts))


def reconcile(store_dir: str | Path, manifest: Manifest | str | Path, *, spark: Any = None,
              examples: int = 10, log_path: str | Path | None = None) -> Reconciliation:
    """Lost, duplicated and unexpected records of a run, as a Spark batch job.

    Args:
        store_dir: the replicas' Parquet store (missing or empty: everything is lost).
        manifest: the producer's :class:`Manifest` or the path of its ``manifest.json``.
        spark: a SparkSession to use (left running); default: a :class:`LocalSpark` started
            for this call and stopped, JVM included, before it returns or raises.
        examples: at most this many examples of each kind (>= 0).
        log_path: with the default session, the file its JVM writes its output to (None: this
            process's stdout/stderr).

    Returns:
        The counts and examples, ``engine="spark"``.

    Raises:
        ConfigError: the manifest is missing, unreadable, or its offsets are not contiguous.
        ValueError: ``examples`` < 0.
        ImportError: pyspark is not installed.
        LagscaleError: the own session could not start (see :class:`LocalSpark`).
        py4j.protocol.Py4JJavaError: the job failed (e.g. an unreadable Parquet file).
    """
    start = time.perf_counter()
    ranges, files = _inputs(store_dir, manifest, examples)
    if spark is not None:
        counts = _spark_job(spark, files, ranges, examples)
    else:
        with LocalSpark(log_path=log_path) as local:
            counts = _spark_job(local.session, files, ranges, examples)
    return Reconciliation(**counts, engine="spark", elapsed_s=time.perf_counter() - start)


def reconcile_arrow(store_dir: str | Path, manifest: Manifest | str | Path, *,
                    examples: int = 10) -> Reconciliation:
    """:func:`reconcile` with pyarrow in this process (a cross-check; ``engine="arrow"``).

    Materialises the whole produced set and the store's two columns in memory, so it is meant
    for test-sized stores. Raises as :func:`reconcile` (except ImportError).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    start = time.perf_counter()
    ranges, files = _inputs(store_dir, manifest, examples)
    schema = pa.schema([("partition", pa.int32()), ("offset", pa.int64())])
    stored = pa.concat_tables(
        [schema.empty_table()]
        + [pq.read_table(f, columns=schema.names).select(schema.names).cast(schema)
           for f in files])
    copies = stored.group_by(schema.names).aggregate([([], "count_all")])
    copies = copies.rename_columns(["partition", "offset", "copies"])
    produced = pa.table({
        "partition": np.concatenate([np.full(b - a + 1, p, np.int32) for p, a, b in ranges]
                                    + [np.empty(0, np.int32)]),
        "offset": np.concatenate([np.arange(a, b + 1, dtype=np.int64) for _, a, b in ranges]
                                 + [np.empty(0, np.int64)]),
    })
    lost = produced.join(copies, schema.names, join_type="left anti")
    unexpected = copies.join(produced, schema.names, join_type="left anti")
    dup = copies.filter(pc.greater(copies["copies"], 1))

    def first(table: pa.Table, columns: list[str]) -> tuple[tuple[int, ...], ...]:
        rows = table.sort_by([(c, "ascending") for c in schema.names]).slice(0, examples)
        return tuple(zip(*(rows[c].to_pylist() for c in columns)))

    return Reconciliation(
        produced_total=produced.num_rows, stored_rows_total=stored.num_rows,
        distinct_processed_total=copies.num_rows, lost_total=lost.num_rows,
        duplicated_total=dup.num_rows,
        duplicate_rows_total=int(pc.sum(dup["copies"]).as_py() or 0) - dup.num_rows,
        unexpected_total=unexpected.num_rows,
        lost_examples=first(lost, schema.names),  # type: ignore[arg-type]
        duplicated_examples=first(dup, [*schema.names, "copies"]),  # type: ignore[arg-type]
        unexpected_examples=first(unexpected, schema.names),  # type: ignore[arg-type]
        engine="arrow", elapsed_s=time.perf_counter() - start)


def _inputs(store_dir: str | Path, manifest: Manifest | str | Path,
            examples: int) -> tuple[list[tuple[int, int, int]], list[Path]]:
    if examples < 0:
        raise ValueError(f"examples: {examples!r} must be >= 0; pass 0 for counts only")
    source = repr(str(manifest)) if not isinstance(manifest, Manifest) else "the manifest"
    return produced_ranges(load_manifest(manifest), source), store_files(store_dir)


def _spark_job(spark: Any, files: list[Path], ranges: list[tuple[int, int, int]],
               examples: int) -> dict[str, Any]:
    """The store's pairs counted against the manifest (:func:`spark_pair_counts`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    pair = StructType([StructField("partition", IntegerType()),
                       StructField("offset", LongType())])
    if files:
        stored = spark.read.schema(pair).parquet(*(str(f) for f in files))
    else:
        stored = spark.range(0).select(F.lit(0).cast("int").alias("partition"),
                                       F.col("id").alias("offset"))
    return spark_pair_counts(spark, stored, ranges, examples)


def spark_pair_counts(spark: Any, stored: Any, ranges: list[tuple[int, int, int]],
                      examples: int) -> dict[str, Any]:
    """The :class:`Reconciliation` counts and examples of processed ``(partition, offset)``
    pairs: one job for the counts; examples (over the cached per-pair copies) only when
    something is off. Shared by the store's and the output topic's reconciliation.

    The produced set is never expanded: each stored pair is tagged ``in_range`` by a broadcast
    join with the manifest's ranges, and ``lost = produced - distinct in-range pairs``.

    Args:
        spark: the SparkSession.
        stored: a DataFrame of processed pairs, one row per copy: ``partition`` int,
            ``offset`` long, both non-null.
        ranges: :func:`produced_ranges`.
        examples: at most this many examples of each kind.

    Returns:
        Every :class:`Reconciliation` field but ``engine``, ``elapsed_s`` and ``notes``.
    """
    from pyspark.sql import functions as F

    # Local data is built from JVM-side literals: createDataFrame on Python lists would start
    # Python worker processes.
    rows = [F.struct(F.lit(p).cast("int").alias("partition"),
                     F.lit(a).cast("long").alias("first_offset"),
                     F.lit(b).cast("long").alias("last_offset")) for p, a, b in ranges]
    bounds = (spark.range(1).select(F.inline(F.array(*rows))) if rows else
              spark.range(0).select(F.lit(0).cast("int").alias("partition"),
                                    F.col("id").alias("first_offset"),
                                    F.col("id").alias("last_offset")))
    tagged = (stored.groupBy("partition", "offset").agg(F.count(F.lit(1)).alias("copies"))
              .join(F.broadcast(bounds), "partition", "left")
              .select("partition", "offset", "copies",
                      F.coalesce(F.col("offset").between(F.col("first_offset"),
                                                         F.col("last_offset")),
                                 F.lit(False)).alias("in_range")))
    dup = F.col("copies") > 1

    def total(value: Any) -> Any:
        return F.coalesce(F.sum(value), F.lit(0)).cast("long")

    row = tagged.agg(
        total(F.col("copies")).alias("stored_rows_total"),
        F.count(F.lit(1)).alias("distinct_processed_total"),
        total(F.col("in_range").cast("long")).alias("in_range"),
        total(dup.cast("long")).alias("duplicated_total"),
        total(F.when(dup, F.col("copies") - 1)).alias("duplicate_rows_total"),
    ).first().asDict()
    counts = {k: int(v) for k, v in row.items()}
    in_range = counts.pop("in_range")
    counts["produced_total"] = sum(b - a + 1 for _, a, b in ranges)
    counts["lost_total"] = counts["produced_total"] - in_range
    counts["unexpected_total"] = counts["distinct_processed_total"] - in_range
    found: dict[str, tuple[tuple[int, ...], ...]] = {
        "lost_examples": (), "duplicated_examples": (), "unexpected_examples": ()}
    if examples and (counts["lost_total"] or counts["duplicated_total"]
                     or counts["unexpected_total"]):
        tagged.persist()
        try:
            found = _spark_examples(tagged, ranges, examples, counts)
        finally:
            tagged.unpersist()
    return {**counts, **found}


def _spark_examples(tagged: Any, ranges: list[tuple[int, int, int]], examples: int,
                    counts: dict[str, int]) -> dict[str, tuple[tuple[int, ...], ...]]:
    """The first ``examples`` pairs of each kind; lost ones from the gaps between stored pairs.
    A kind whose count (``counts``: ``lost_total``, ``duplicated_total``,
    ``unexpected_total``) is 0 has none, and no job looks for them.

    A lost pair lies before a partition's lowest in-range stored offset, after its highest, or
    in a gap between two consecutive ones; every gap holds at least one lost pair, so the first
    ``examples`` gaps (in (partition, offset) order) hold the first ``examples`` lost pairs.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def first(df: Any, *columns: str) -> list[tuple[int, ...]]:
        rows = df.orderBy("partition", columns[1]).limit(examples).collect()
        return [tuple(int(r[c]) for c in columns) for r in rows]

    key = ("partition", "offset")
    out: dict[str, list[tuple[int, ...]]] = {
        "duplicated_examples": (first(tagged.where(F.col("copies") > 1), *key, "copies")
                                if counts["duplicated_total"] else []),
        "unexpected_examples": (first(tagged.where(~F.col("in_range")), *key)
                                if counts["unexpected_total"] else [])}
    lost: list[tuple[int, ...]] = []
    if counts["lost_total"]:
        kept = tagged.where(F.col("in_range"))
        prev = F.lag("offset").over(Window.partitionBy("partition").orderBy("offset"))
        inner = first(kept.select("partition", (prev + 1).alias("gap_first"),
                                  (F.col("offset") - 1).alias("gap_last"))
                      .where(F.col("gap_first") <= F.col("gap_last")),
                      "partition", "gap_first", "gap_last")
        seen = {int(r[0]): (int(r[1]), int(r[2])) for r in kept.groupBy("partition")
                .agg(F.min("offset"), F.max("offset")).collect()}
        gaps = list(inner)
        for p, a, b in ranges:
            lo, hi = seen.get(p, (b + 1, b))
            gaps += [(p, a, lo - 1), (p, hi + 1, b)]
        for p, a, b in sorted(g for g in gaps if g[1] <= g[2]):
            lost += [(p, o) for o in range(a, min(b, a + examples - len(lost) - 1) + 1)]
            if len(lost) >= examples:
                break
    out["lost_examples"] = lost
    return {k: tuple(v) for k, v in out.items()}
