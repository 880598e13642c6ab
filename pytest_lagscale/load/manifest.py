"""What the broker acknowledged, per partition: the producer's side of the reconciliation.

:class:`DeliveryTracker` is the producer's delivery callback; :class:`Manifest` is what it
collected, written as ``manifest.json``::

    {"schema_version": 1, "topic": "events", "partitions": 8, "seed": 42, "profile": "spike-ci",
     "created_at": "2026-01-01T00:00:00Z",
     "per_partition": [{"partition": 0, "first_offset": 0, "last_offset": 1234, "count": 1235},
                       ...],
     "total_acked": 9876, "total_failed": 0, "errors": {}}

``per_partition`` has one entry per partition 0..partitions-1; a partition nothing was
acknowledged on has ``first_offset``/``last_offset`` null and ``count`` 0. With idempotence
and a fresh topic, ``count == last_offset + 1`` == the partition's log-end offset.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

SCHEMA_VERSION = 1
_MAX_ERROR_KINDS = 20


@dataclass(frozen=True)
class PartitionManifest:
    """Acknowledged records of one partition.

    Attributes:
        partition: partition number.
        first_offset: lowest acknowledged offset, or None when nothing was acknowledged.
        last_offset: highest acknowledged offset, or None.
        count: acknowledged records.
    """

    partition: int
    first_offset: int | None
    last_offset: int | None
    count: int


@dataclass(frozen=True)
class Manifest:
    """Per-partition acknowledgements of one produce run (see the module docstring).

    Attributes:
        topic: Kafka topic.
        partitions: partition count.
        seed: the profile's seed.
        profile: profile name.
        created_at: UTC ISO-8601 time the manifest was built.
        per_partition: one entry per partition, in partition order.
        total_acked: records acknowledged by the broker.
        total_failed: records whose delivery failed (including purged on timeout).
        errors: failure count per error message (at most 20 kinds).
    """

    topic: str
    partitions: int
    seed: int
    profile: str
    created_at: str
    per_partition: tuple[PartitionManifest, ...]
    total_acked: int
    total_failed: int
    errors: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping, ``schema_version`` first."""
        return {"schema_version": SCHEMA_VERSION, **asdict(self),
                "per_partition": [asdict(p) for p in self.per_partition]}

    def write_json(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` as indented JSON to ``path``; returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        return path

    @classmethod
    def read_json(cls, path: str | Path) -> "Manifest":
        """Load a manifest written by :meth:`write_json`.

        Raises:
            OSError: the file cannot be read.
            ValueError: it is not a schema_version 1 manifest.
        """
        data = json.loads(Path(path).read_text())
        if data.pop("schema_version", None) != SCHEMA_VERSION:
            raise ValueError(f"{path}: not a schema_version {SCHEMA_VERSION} manifest")
        data["per_partition"] = tuple(PartitionManifest(**p) for p in data["per_partition"])
        return cls(**data)

    def counts(self) -> dict[int, int]:
        """``{partition: acknowledged records}``."""
        return {p.partition: p.count for p in self.per_partition}


class DeliveryTracker:
    """Per partition, the first/last acknowledged offset and the count, from delivery reports.

    ``callback`` is the producer's ``on_delivery`` (called from ``poll``/``flush`` in the
    producing thread). It runs once per record, so it is a closure over plain lists. The first
    acknowledged offset is the partition's lowest: with idempotence, reports of one partition
    arrive in offset order.

    Args:
        partitions: partition count of the topic (a report for a higher partition is counted
            as failed with reason ``unexpected partition <p>``).
    """

    def __init__(self, partitions: int):
        self.first = [-1] * partitions
        self.last = [-1] * partitions
        self.count = [0] * partitions
        self.errors: Counter[str] = Counter()
        self.callback = self._make_callback()

    def _make_callback(self) -> Callable[[Any, Any], None]:
        first, last, count, errors = self.first, self.last, self.count, self.errors

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                p, offset = msg.partition(), msg.offset()
                try:
                    c = count[p]
                except IndexError:
                    errors[f"unexpected partition {p}"] += 1
                    return
                if c == 0:
                    first[p] = offset
                if offset > last[p]:
                    last[p] = offset
                count[p] = c + 1
            else:
                key = err.str()
                errors[key if key in errors or len(errors) < _MAX_ERROR_KINDS else "other"] += 1

        return on_delivery

    @property
    def acked(self) -> int:
        """Records acknowledged so far."""
        return sum(self.count)

    @property
    def failed(self) -> int:
        """Records whose delivery failed so far."""
        return sum(self.errors.values())

    def manifest(self, *, topic: str, seed: int, profile: str, created_at: str) -> Manifest:
        """The manifest of what was recorded so far."""
        parts = tuple(
            PartitionManifest(p, self.first[p] if self.count[p] else None,
                              self.last[p] if self.count[p] else None, self.count[p])
            for p in range(len(self.count)))
        return Manifest(topic, len(self.count), seed, profile, created_at, parts, self.acked,
                        self.failed, dict(self.errors))
