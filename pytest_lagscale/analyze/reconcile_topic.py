"""Lost / duplicated records from an output topic: what a consumer wrote downstream, on Spark.

A consumer that writes each processed record to an output topic with its input's partition and
offset in headers (the contract: :mod:`pytest_lagscale.contract.output_topic`) is reconciled
with the producer's manifest exactly as the Parquet store is (:mod:`.reconcile`, the same
:func:`~.reconcile.spark_pair_counts` job and :class:`~.reconcile.Reconciliation`), with no
disk shared with the consumer: the whole topic is read with Spark's Kafka source (a batch read,
``startingOffsets=earliest``, ``endingOffsets=latest``, ``includeHeaders=true``), cached, and
its ``(input partition, input offset)`` pairs counted. The counts read "output record" for
"stored row": ``stored_rows_total`` is every output record read. A record missing either header
(or holding one that is not a decimal integer) names no input: it counts as unexpected (and as
one distinct processed record, so the identities of :mod:`.reconcile` hold), and ``notes`` says
how many there were and where the first ones are (output partition and offset). A partition of
the output topic whose log no longer starts at offset 0 (retention deleted records) is named in
``notes``: inputs written only there count as lost.

The broker must be up. :func:`reconcile_topic` uses a SparkSession given as ``spark=`` (the
Kafka jars are added to it with ``ADD JAR``, once) or starts its own with them on
``spark.jars``; :func:`reconcile_topic_run` is the run analysis's entry (the session's shared
reconcile worker when there is one, mirroring ``experiment.analysis.reconcile_run``). The jars
are pinned in :mod:`.spark_kafka_jars`; the Kafka source of Maven Central's 4.2.0 connector runs
on pyspark 4.3.0.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Mapping

from ..contract.errors import BrokerError, ConfigError
from ..contract.output_topic import INPUT_OFFSET_HEADER, INPUT_PARTITION_HEADER
from ..load.manifest import Manifest
from .reconcile import Reconciliation, load_manifest, produced_ranges, spark_pair_counts

log = logging.getLogger(__name__)

_DECIMAL = r"^\s*[+-]?[0-9]+\s*$"


def reconcile_topic(bootstrap_servers: str, output_topic: str,
                    manifest: Manifest | str | Path, *, spark: Any = None, examples: int = 10,
                    client_config: Mapping[str, str] | None = None,
                    kafka_options: Mapping[str, str] | None = None,
                    log_path: str | Path | None = None) -> Reconciliation:
    """Lost, duplicated and unexpected input records of an output topic, as a Spark batch job.

    Args:
        bootstrap_servers: ``host:port[,...]`` of the cluster holding ``output_topic``.
        output_topic: the topic the consumer wrote its processed records to (must exist).
        manifest: the producer's :class:`Manifest` or the path of its ``manifest.json``.
        spark: a SparkSession to use (left running; the Kafka jars are added to it); default:
            a :class:`~.local_spark.LocalSpark` with the jars, started for this call and
            stopped, JVM included, before it returns or raises.
        examples: at most this many examples of each kind (>= 0).
        client_config: librdkafka settings (SASL/TLS) for the topic check.
        kafka_options: Kafka consumer properties (Java names, e.g. ``security.protocol``) for
            Spark's Kafka source, each passed as ``kafka.<name>``.
        log_path: with the default session, the file its JVM writes its output to.

    Returns:
        The counts and examples, ``engine="spark"``; ``notes`` as in the module docstring.

    Raises:
        ConfigError: the manifest is missing, unreadable, or its offsets are not contiguous.
        ValueError: ``examples`` < 0.
        BrokerError: the topic does not exist or the broker does not answer.
        ImportError: pyspark is not installed.
        LagscaleError: the Kafka jars cannot be fetched, or the own session could not start.
        py4j.protocol.Py4JJavaError: the job failed (e.g. the broker went away mid-read).
    """
    from ..kafka.admin import KafkaAdmin
    from .spark_kafka_jars import resolve

    start = time.perf_counter()
    if examples < 0:
        raise ValueError(f"examples: {examples!r} must be >= 0; pass 0 for counts only")
    source = repr(str(manifest)) if not isinstance(manifest, Manifest) else "the manifest"
    ranges = produced_ranges(load_manifest(manifest), source)
    with KafkaAdmin(bootstrap_servers, client_config) as admin:
        log_start = admin.end_offsets(output_topic, "earliest")  # BrokerError when missing
    jars = resolve()
    options = {**{f"kafka.{k}": v for k, v in (kafka_options or {}).items()},
               "kafka.bootstrap.servers": bootstrap_servers}
    if spark is not None:
        add_jars(spark, jars)
        counts = _topic_job(spark, output_topic, options, ranges, examples)
    else:
        from .local_spark import LocalSpark

        with LocalSpark(settings={"spark.jars": ",".join(str(j) for j in jars)},
                        log_path=log_path) as local:
            counts = _topic_job(local.session, output_topic, options, ranges, examples)
    truncated = {p: o for p, o in sorted(log_start.items()) if o > 0}
    if truncated:
        counts["notes"] += (f"output topic {output_topic!r}: partitions whose log starts after "
                            f"offset 0 (retention deleted records; inputs written only there "
                            f"count as lost), partition: first offset {truncated}",)
    return Reconciliation(**counts, engine="spark", elapsed_s=time.perf_counter() - start)


def add_jars(spark: Any, jars: list[Path]) -> None:
    """Add ``jars`` to a running session with ``ADD JAR``, skipping those it lists already.

    ``ADD JAR`` makes the jars visible to the calling thread's queries (it sets that thread's
    context class loader), so call it from the thread that runs the job.
    """
    listed = {str(row[0]).rsplit("/", 1)[-1] for row in spark.sql("LIST JARS").collect()}
    for jar in jars:
        if jar.name not in listed:
            spark.sql(f"ADD JAR '{jar}'")


def _topic_job(spark: Any, topic: str, options: dict[str, str],
               ranges: list[tuple[int, int, int]], examples: int) -> dict[str, Any]:
    """The topic's records, cached, counted by :func:`~.reconcile.spark_pair_counts`; records
    naming no input counted here."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    reader = spark.read.format("kafka")
    for key, value in {**options, "subscribe": topic, "includeHeaders": "true",
                       "startingOffsets": "earliest", "endingOffsets": "latest"}.items():
        reader = reader.option(key, value)
    records = reader.load().select(
        F.col("partition").alias("out_partition"), F.col("offset").alias("out_offset"),
        _input_field(INPUT_PARTITION_HEADER, "int").alias("partition"),
        _input_field(INPUT_OFFSET_HEADER, "long").alias("offset"))
    records.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        nameless = records.where(F.col("partition").isNull() | F.col("offset").isNull())
        missing = nameless.count()  # the one read of the topic: it fills the cache
        where: list[tuple[int, int]] = []
        if missing and examples:
            where = [(int(r[0]), int(r[1])) for r in nameless.orderBy("out_partition", "out_offset")
                     .limit(examples).select("out_partition", "out_offset").collect()]
        pairs = records.where(F.col("partition").isNotNull() & F.col("offset").isNotNull())
        counts = spark_pair_counts(spark, pairs.select("partition", "offset"), ranges, examples)
    finally:
        records.unpersist()
    counts["notes"] = ()
    if missing:
        for key in ("stored_rows_total", "distinct_processed_total", "unexpected_total"):
            counts[key] += missing
        first = ", ".join(f"partition {p} offset {o}" for p, o in where)
        counts["notes"] = (
            f"output topic {topic!r}: {missing} records lack the {INPUT_PARTITION_HEADER} or "
            f"{INPUT_OFFSET_HEADER} header or hold a value that is not a decimal integer, so "
            f"they name no input record; counted as unexpected"
            + (f" (first: {first})" if first else ""),)
    return counts


def _input_field(header: str, kind: str) -> Any:
    """The integer in the first header named ``header``, or null (no such header, no value,
    not decimal text, or out of the type's range)."""
    from pyspark.sql import functions as F

    found = F.filter(F.col("headers"), lambda h: h["key"] == F.lit(header))
    text = F.try_element_at(found, F.lit(1))["value"].cast("string")
    return F.when(text.rlike(_DECIMAL), text.try_cast(kind))


def reconcile_topic_run(layout: Any, bootstrap_servers: str, output_topic: str, *,
                        client_config: Mapping[str, str] | None = None,
                        kafka_options: Mapping[str, str] | None = None) -> Reconciliation | None:
    """A run's output topic reconciled with its manifest: in the session's shared reconcile
    worker when the plugin enabled one (:mod:`.reconcile_worker`), else in a Spark session of
    its own (its JVM's output in ``layout.reconcile_log``); None (and a warning) when pyspark
    is not installed. The broker must still be up.

    Args:
        layout: the run's :class:`~pytest_lagscale.contract.rundir.RunLayout` (``manifest_json``,
            ``reconcile_log``).
        bootstrap_servers, output_topic, client_config, kafka_options: as
            :func:`reconcile_topic`.

    Raises:
        ConfigError, BrokerError: the manifest or the topic is unusable.
        as :func:`reconcile_topic` when the run's own session fails (a failing worker is
        replaced by the own session, with a warning).
    """
    try:
        import pyspark  # noqa: F401

        from .reconcile_worker import in_shared_or_own
    except ImportError as exc:
        log.warning("output-topic reconciliation skipped: %s", exc)
        return None
    return in_shared_or_own(
        layout, f"output topic {output_topic!r} reconciled",
        lambda worker: worker.reconcile_topic(bootstrap_servers, output_topic,
                                              layout.manifest_json, client_config=client_config,
                                              kafka_options=kafka_options),
        lambda: reconcile_topic(bootstrap_servers, output_topic, layout.manifest_json,
                                client_config=client_config, kafka_options=kafka_options,
                                log_path=layout.reconcile_log),
        passthrough=(ConfigError, BrokerError))