"""A consumer's output topic read back for its record times: when each input was written out.

A command consumer that writes the output-topic contract (:mod:`pytest_lagscale.contract.output_topic`)
gives every processed input a downstream record whose timestamp is when processing finished. The
run reads the whole topic once, after the load, while the broker is up
(:func:`read_output_times`), and keeps ``(input partition, input offset, written_at_ns)`` per
record in ``output-times.parquet`` in the run directory; the analysis turns that into per-record
completion times (:func:`pytest_lagscale.analyze.broker_view.output_times`), the best source of
rates and dips a consumer without a store has.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Mapping

from ..contract.errors import BrokerError
from ..contract.output_topic import parse_input_headers

#: The file in the run directory.
OUTPUT_TIMES_FILE = "output-times.parquet"
#: Records per ``consume()`` call.
BATCH = 5000


def read_output_times(bootstrap_servers: str, topic: str, out_path: str | Path, *,
                      client_config: Mapping[str, str] | None = None,
                      timeout_s: float = 120.0) -> int:
    """Read ``topic`` from its start to the end offsets of now and write ``out_path`` (Parquet:
    ``partition`` int32 = the input partition, ``offset`` int64 = the input offset,
    ``written_at_ns`` int64 = the output record's timestamp in ns; records naming no input are
    left out). Returns the number of output records read.

    Raises:
        BrokerError: the topic cannot be read to its end within ``timeout_s`` seconds.
    """
    from confluent_kafka import KafkaException

    try:
        return _read(bootstrap_servers, topic, Path(out_path), dict(client_config or {}),
                     timeout_s)
    except KafkaException as exc:
        raise BrokerError(f"output topic {topic!r}: cannot be read: {exc}") from exc


def _read(bootstrap_servers: str, topic: str, out_path: Path, client_config: dict[str, str],
          timeout_s: float) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({**client_config, "bootstrap.servers": bootstrap_servers,
                         "group.id": f"lagscale-output-times-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    rows: dict[str, list[int]] = {"partition": [], "offset": [], "written_at_ns": []}
    read = 0
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            raise BrokerError(f"output topic {topic!r}: cannot be described "
                              f"({getattr(meta, 'error', 'missing')})")
        ends = {}
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high > low:
                ends[p] = high
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        position = {p: -1 for p in ends}
        deadline = time.monotonic() + timeout_s
        while any(position[p] < ends[p] - 1 for p in ends):
            if time.monotonic() > deadline:
                raise BrokerError(f"output topic {topic!r}: not read to its end within "
                                  f"{timeout_s:g} s ({read:,} records read)")
            for message in consumer.consume(BATCH, 1.0):
                if message.error() is not None:
                    continue
                read += 1
                position[message.partition()] = message.offset()
                named = parse_input_headers(message.headers())
                if named is None:
                    continue
                rows["partition"].append(named[0])
                rows["offset"].append(named[1])
                rows["written_at_ns"].append(message.timestamp()[1] * 1_000_000)
    finally:
        consumer.close()
    table = pa.table({"partition": pa.array(rows["partition"], pa.int32()),
                      "offset": pa.array(rows["offset"], pa.int64()),
                      "written_at_ns": pa.array(rows["written_at_ns"], pa.int64())})
    pq.write_table(table, str(out_path))
    return read


__all__ = ["OUTPUT_TIMES_FILE", "read_output_times"]
