"""The output-topic sink (``--sink topic``): each processed record written to a Kafka topic.

One output record per processed input record, on ``--output-topic``, under the contract of
:mod:`pytest_lagscale.contract.output_topic`: headers ``lagscale-input-partition`` and
``lagscale-input-offset`` name the input record; the value is the record's store row
(:func:`spark_consumer.store.store_rows`) as compact JSON; the timestamp is when its simulated
write ended (``written_at_ns``, in ms). :meth:`TopicSink.write` returns only once the broker
acknowledged every record of the batch (an idempotent producer, ``acks=all``), and the replica
commits a batch's offsets only after the write returned, so a committed input is always in the
output topic; a record that could not be delivered fails the batch (nothing of it is committed,
the replica exits 1). The output partition is the producer's choice (no key).
"""

from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from pytest_lagscale.contract.output_topic import input_headers

from .store import store_rows

MESSAGE_TIMEOUT_MS = 60_000
"""How long the producer retries a record before failing its delivery (and the batch)."""


class SinkError(RuntimeError):
    """Records of a batch were not acknowledged by the output topic's broker."""


def _make_producer(config: dict[str, Any]) -> Any:
    from confluent_kafka import Producer

    return Producer(config)


class TopicSink:
    """Writes batches of enriched rows to an output topic, one record per row.

    Args:
        bootstrap: Kafka bootstrap servers.
        topic: the output topic (it must exist, unless the broker creates topics).
        replica_id: ``replica_id`` of the rows and the producer's ``client.id`` prefix.
        make_producer: builds the producer from its librdkafka settings (tests swap it).
    """

    def __init__(self, bootstrap: str, topic: str, replica_id: str,
                 make_producer: Callable[[dict[str, Any]], Any] = _make_producer):
        self.topic = topic
        self.replica_id = replica_id
        self._producer: Any = make_producer({
            "bootstrap.servers": bootstrap, "client.id": f"{replica_id}-sink",
            "enable.idempotence": True, "acks": "all", "linger.ms": 5,
            "message.timeout.ms": MESSAGE_TIMEOUT_MS, "log.connection.close": False})

    def write(self, enriched: pa.Table, written_at_ns: np.ndarray) -> int:
        """Produce one batch and wait until the broker acknowledged all of it.

        Args:
            enriched: :data:`spark_consumer.engine.ENRICHED_SCHEMA` rows.
            written_at_ns: int64 per row, end of its simulated write (ns since the epoch).

        Returns:
            The number of records written.

        Raises:
            SinkError: a record's delivery failed (first error named), or records were still
                unacknowledged after :data:`MESSAGE_TIMEOUT_MS` plus 5 s.
        """
        rows = store_rows(enriched, written_at_ns, self.replica_id).to_pylist()
        failed: list[str] = []

        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                failed.append(str(err))

        producer = self._producer
        for row in rows:
            value = json.dumps(row, separators=(",", ":")).encode()
            headers = input_headers(row["partition"], row["offset"])
            while True:
                try:
                    producer.produce(self.topic, value, headers=headers,
                                     timestamp=row["written_at_ns"] // 1_000_000,
                                     on_delivery=on_delivery)
                    break
                except BufferError:  # the client's queue is full: let deliveries drain
                    producer.poll(0.05)
        remaining = producer.flush(MESSAGE_TIMEOUT_MS / 1000 + 5)
        if failed or remaining:
            raise SinkError(f"output topic {self.topic!r}: {len(failed)} of {len(rows)} records "
                            f"not delivered, {remaining} unacknowledged"
                            + (f"; first error: {failed[0]}" if failed else ""))
        return len(rows)

    def close(self) -> None:
        """Flush (every write did already) and drop the producer."""
        if self._producer is not None:
            self._producer.flush(5.0)
            self._producer = None
