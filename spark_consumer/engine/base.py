"""The enrichment engine Protocol shared by the Spark and Arrow engines.

Both engines compute the same columns from the same input (see :data:`ENRICHED_SCHEMA`):
``bucket = pmod(entity_id, n_buckets)``, a left broadcast join with the dimension table on
``bucket`` (adds ``segment`` and ``region``), and ``event_lag_ms = (double(processed_at_ns) -
double(ts_ns)) / 1e6`` (in doubles, so a bogus event time cannot overflow). Rows come back in
input order (sorted by ``row``).
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

ENRICHED_SCHEMA = pa.schema(
    [
        ("row", pa.int32()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("seq", pa.int64()),
        ("entity_id", pa.int64()),
        ("ts_ns", pa.int64()),
        ("bucket", pa.int32()),
        ("segment", pa.string()),
        ("region", pa.string()),
        ("event_lag_ms", pa.float64()),
        ("processed_at_ns", pa.int64()),
    ]
)


@runtime_checkable
class Engine(Protocol):
    """Turns a batch of decoded records into enriched rows.

    Attributes:
        name: ``spark`` or ``arrow``; recorded in the event log and the ``replica_info`` metric.
    """

    name: str

    def start(self) -> "Engine":
        """Bring the engine up (and warm it); returns self. Idempotent."""

    def enrich(self, records: pa.Table) -> pa.Table:
        """Enrich one batch.

        Args:
            records: :data:`spark_consumer.records.RECORD_SCHEMA` rows.

        Returns:
            :data:`ENRICHED_SCHEMA` rows, one per input row, in input order.
        """

    def stop(self) -> None:
        """Release the engine (JVM, temp files). Idempotent."""


def warmup_records(n: int) -> pa.Table:
    """``n`` synthetic RECORD_SCHEMA rows (ids 0..n-1, partition 0, event time now) that an
    engine enriches once at start, so the first real batch finds its query warm."""
    from ..records import RECORD_SCHEMA

    now = time.time_ns()
    ids = np.arange(n, dtype=np.int64)
    return pa.Table.from_arrays(
        [pa.array(ids.astype(np.int32)), pa.array(np.zeros(n, np.int32)), pa.array(ids),
         pa.array(ids), pa.array(np.full(n, now, np.int64)), pa.array(ids),
         pa.array(np.full(n, now, np.int64))],
        schema=RECORD_SCHEMA,
    )
