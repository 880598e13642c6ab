"""The enrichment in pyarrow compute: no JVM, a few MB and a few ms per batch."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .base import ENRICHED_SCHEMA


class ArrowEngine:
    """Enrichment with pyarrow (Acero hash join against the in-memory dimension table).

    Args:
        dimension: the table from :func:`spark_consumer.dimension.load_dimension`.
    """

    name = "arrow"

    def __init__(self, dimension: pa.Table):
        self._dimension = dimension
        self._buckets = pa.scalar(dimension.num_rows, pa.int64())

    def start(self) -> "ArrowEngine":
        return self

    def enrich(self, records: pa.Table) -> pa.Table:
        bucket = pc.cast(pc.modulo(records.column("entity_id"), self._buckets), pa.int32())
        processed = pc.cast(records.column("processed_at_ns"), pa.float64(), safe=False)
        event_time = pc.cast(records.column("ts_ns"), pa.float64(), safe=False)
        lag_ms = pc.divide(pc.subtract(processed, event_time), 1e6)
        table = records.append_column("bucket", bucket).append_column("event_lag_ms", lag_ms)
        joined = table.join(self._dimension, keys="bucket", join_type="left outer")
        return joined.sort_by("row").select(ENRICHED_SCHEMA.names).cast(ENRICHED_SCHEMA)

    def stop(self) -> None:
        return None
