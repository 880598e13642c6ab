"""spark_consumer: one replica of consumer group ``enrich``, the thing being autoscaled.

A replica is one OS process. It is a member of the consumer group through confluent-kafka
(librdkafka) and hands each polled micro-batch to a local engine: a SparkSession in local mode
(``--engine spark``, the default) or the same enrichment in pyarrow without a JVM
(``--engine arrow``). Per micro-batch, in the poll thread and never overlapping a rebalance
callback (callbacks only run inside ``consume()``, and a batch is finished before the next one):

1. decode the binary events (entity_id u64, payload 256 B, ts i64 ns, seq u64; 280 bytes),
2. enrich: ``bucket = pmod(entity_id, 10000)`` broadcast-joined with the committed dimension
   table (``fixtures/dimensions/segments.csv``: segment, region per bucket), event-time lag in ms
   and a processing timestamp,
3. simulate the downstream write as I/O: each record costs ``--process-ms`` of wall time with
   ``--inflight`` records written concurrently, so a batch of n records sleeps
   ``ceil(n / inflight) * process_ms`` in waves of ``inflight`` records (CPU stays low),
4. append one row per record to the downstream store (one Parquet file per batch per replica
   under ``--store``, written atomically),
5. commit exactly the processed offsets synchronously (``--commit manual``), or store them for
   the auto-committer (``--commit auto``).

Capacity: one replica processes about ``inflight * 1000 / process_ms`` records/s (for example
``--process-ms 5 --inflight 10`` gives about 2000 records/s), minus the engine's fixed cost per
batch; ``--process-ms 0`` measures the engine alone.

Every flag has an environment equivalent: ``--foo-bar`` is read from ``LAGSCALE_FOO_BAR`` when
the flag is absent (the flag wins). See ``python -m spark_consumer --help`` and
:mod:`spark_consumer.options`.
"""

from __future__ import annotations

__all__ = ["capacity_records_per_s"]


def capacity_records_per_s(process_ms: float, inflight: int) -> float:
    """Nominal records/s of one replica: ``inflight * 1000 / process_ms`` (inf when 0 ms).

    Args:
        process_ms: simulated write time per record, in milliseconds.
        inflight: records written concurrently.
    """
    if process_ms <= 0:
        return float("inf")
    return inflight * 1000.0 / process_ms
