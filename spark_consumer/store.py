"""The downstream store: one Parquet file per processed batch per replica (``--sink parquet``).

:class:`Sink` is what a batch is written to: this store, or an output topic
(:mod:`spark_consumer.topic_sink`, ``--sink topic``); both write the rows of :func:`store_rows`.

Files are ``<store>/<replica_id>/<incarnation>-<batch:06d>.parquet``, written to a dot-prefixed
temporary name and renamed, so a reader (``pyarrow.parquet.read_table(store)`` or Spark) never
sees a torn file: dot-prefixed files are ignored by both. ``incarnation`` is the replica
process's start time, so a restarted replica with the same id never overwrites earlier files.

Rows (:data:`STORE_SCHEMA`, one per processed record): partition int32, offset int64, seq int64,
entity_id int64, ts_ns int64 (event time, ns since the epoch), bucket int32, segment string,
region string, event_lag_ms float64, processed_at_ns int64 (batch enrichment time),
written_at_ns int64 (end of the record's simulated write), replica_id string; a share-group
replica (``--group-type share``) adds delivery_count int32 (:data:`SHARE_STORE_SCHEMA`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .engine.base import ENRICHED_SCHEMA

#: The engine's enriched columns (without its ``row`` index) plus when and by whom the row was
#: written.
STORE_SCHEMA = pa.schema(
    [*(f for f in ENRICHED_SCHEMA if f.name != "row"),
     pa.field("written_at_ns", pa.int64()), pa.field("replica_id", pa.string())]
)

DELIVERY_COUNT = "delivery_count"
#: :data:`STORE_SCHEMA` plus ``delivery_count`` (int32: the record's delivery attempt, 1 on its
#: first acquisition; Apache Kafka 4.3.1 KIP-932), the rows of a share-group replica. Readers
#: that select the :data:`STORE_SCHEMA` columns read both.
SHARE_STORE_SCHEMA = STORE_SCHEMA.append(pa.field(DELIVERY_COUNT, pa.int32()))


class Sink(Protocol):
    """Where a replica's processed records go; a write returns once they are durable there."""

    def write(self, enriched: pa.Table, written_at_ns: np.ndarray) -> object:
        """Write one batch's finished prefix (``enriched`` rows and their write end times)."""

    def close(self) -> None:
        """Release the sink's resources (every write is durable already)."""


def store_rows(enriched: pa.Table, written_at_ns: np.ndarray, replica_id: str) -> pa.Table:
    """:data:`STORE_SCHEMA` rows of a batch: the enriched rows (``row`` dropped), when each
    record's write ended (int64 ns since the epoch) and the replica's id;
    :data:`SHARE_STORE_SCHEMA` rows when ``enriched`` carries a ``delivery_count`` column."""
    n = enriched.num_rows
    table = enriched.append_column("written_at_ns", pa.array(written_at_ns, pa.int64()))
    table = table.append_column("replica_id", pa.repeat(pa.scalar(replica_id, pa.string()), n))
    schema = SHARE_STORE_SCHEMA if DELIVERY_COUNT in enriched.column_names else STORE_SCHEMA
    return table.select(schema.names).cast(schema)


class ParquetStore:
    """Writes batches of enriched rows as Parquet files for one replica.

    Args:
        root: the store directory (created).
        replica_id: subdirectory and ``replica_id`` column value.
        incarnation: file name prefix; default: this process's start time in ns.
    """

    def __init__(self, root: str | Path, replica_id: str, incarnation: str | None = None):
        self.root = Path(root)
        self.replica_id = replica_id
        self.incarnation = incarnation or f"{time.time_ns():d}"
        self._dir = self.root / replica_id
        self._dir.mkdir(parents=True, exist_ok=True)
        self._batches = 0

    def write(self, enriched: pa.Table, written_at_ns: np.ndarray) -> Path:
        """Append one batch.

        Args:
            enriched: :data:`spark_consumer.engine.ENRICHED_SCHEMA` rows.
            written_at_ns: int64 per row, end of its simulated write (ns since the epoch).

        Returns:
            The path of the new file.
        """
        table = store_rows(enriched, written_at_ns, self.replica_id)
        self._batches += 1
        name = f"{self.incarnation}-{self._batches:06d}.parquet"
        tmp = self._dir / f".{name}.tmp"
        pq.write_table(table, tmp, compression="snappy")
        final = self._dir / name
        os.replace(tmp, final)
        return final

    def close(self) -> None:
        """Nothing to release: each file is complete when :meth:`write` returns."""


def read_store(root: str | Path, schema: pa.Schema = STORE_SCHEMA) -> pa.Table:
    """Every row in the store (all replicas, all batches); empty table when there is none.

    Args:
        root: the store directory.
        schema: the columns to read: :data:`STORE_SCHEMA`, or :data:`SHARE_STORE_SCHEMA` for a
            share-group replica's store (``delivery_count`` is null in rows that lack it).
    """
    files = sorted(p for p in Path(root).rglob("*.parquet") if not p.name.startswith("."))
    if not files:
        return schema.empty_table()
    return pa.concat_tables(pq.read_table(f, schema=schema) for f in files)
