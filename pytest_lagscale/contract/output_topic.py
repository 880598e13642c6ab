"""The output-topic record contract: each processed input record, written downstream to Kafka.

A consumer that writes its results to an output topic (``spark_consumer --sink topic``, the
example franz-go consumer's ``-output-topic``) writes one output record per processed input
record, carrying the input's coordinates in two headers, each the decimal text of an integer:

* :data:`INPUT_PARTITION_HEADER` (``lagscale-input-partition``): the input record's partition;
* :data:`INPUT_OFFSET_HEADER` (``lagscale-input-offset``): the input record's offset.

The value is the processed record (its encoding is the consumer's own; the reconciliation never
reads it) and the timestamp is when processing finished. A record is written, and the write
acknowledged, before its input offset is committed, so every committed input is in the output
topic at least once. The reconciliation (``pytest_lagscale.analyze.reconcile_topic``) reads the
pairs back and compares them with the producer's manifest; a record missing either header, or
with a value that is not a decimal integer, counts as unexpected.

Example:
    >>> input_headers(3, 1234)
    [('lagscale-input-partition', b'3'), ('lagscale-input-offset', b'1234')]
    >>> parse_input_headers(input_headers(3, 1234))
    (3, 1234)
"""

from __future__ import annotations

from typing import Iterable

INPUT_PARTITION_HEADER = "lagscale-input-partition"
INPUT_OFFSET_HEADER = "lagscale-input-offset"


def input_headers(partition: int, offset: int) -> list[tuple[str, bytes]]:
    """The two headers of the output record of input ``(partition, offset)``, as
    confluent-kafka's ``produce(headers=...)`` takes them."""
    return [(INPUT_PARTITION_HEADER, b"%d" % partition), (INPUT_OFFSET_HEADER, b"%d" % offset)]


def parse_input_headers(headers: Iterable[tuple[str, bytes | None]] | None
                        ) -> tuple[int, int] | None:
    """The input ``(partition, offset)`` an output record names, or None when it names none.

    Args:
        headers: ``(key, value)`` pairs as confluent-kafka's ``Message.headers()`` gives them
            (None: no headers). The first header of each name counts.

    Returns:
        ``(partition, offset)``, or None when a header is missing or its value is not the
        ASCII decimal text of an integer (optionally signed; surrounding whitespace ignored).
    """
    found: dict[str, bytes | None] = {}
    for key, value in headers or ():
        found.setdefault(key, value)
    try:
        return (int(_text(found[INPUT_PARTITION_HEADER])),
                int(_text(found[INPUT_OFFSET_HEADER])))
    except (KeyError, ValueError, TypeError):
        return None


def _text(value: bytes | None) -> str:
    if value is None:
        raise ValueError("no value")
    text = value.decode("ascii").strip()
    if not text.lstrip("+-").isdigit():  # int() would also take "1_000"
        raise ValueError(text)
    return text
