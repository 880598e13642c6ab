"""Consumed == produced from the group's committed offsets, for a consumer with no output to read.

Without a store or an output topic, the broker's committed offsets are the only trace of what a
consumer processed. A committed offset ``c`` of a partition says the group is done with every
offset below ``c``; so of the manifest's produced range ``first..last`` of that partition, the
offsets ``first..min(c, last + 1) - 1`` were consumed and the rest were not (lost, from the
broker's view, if the run is over). Duplicates (a record processed twice, e.g. after a crash
before a commit) leave no trace in committed offsets: :attr:`CommittedExactness.
duplicates_measurable` is always False, and a report must say so.

:func:`consumed_from_committed` is pure: pass the committed offsets read after the consumers
stopped (``KafkaAdmin.committed_offsets``: -1 or None where none) and the producer's manifest.

Example:
    >>> from pytest_lagscale.load.manifest import Manifest, PartitionManifest
    >>> m = Manifest("events", 2, 1, "spike", "t", (PartitionManifest(0, 0, 9, 10),
    ...              PartitionManifest(1, 0, 4, 5)), 15, 0, {})
    >>> r = consumed_from_committed({0: 10, 1: 3}, m)
    >>> (r.produced_total, r.consumed_total, r.unconsumed_total, r.complete)
    (15, 13, 2, False)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

from ..load.manifest import Manifest
from .reconcile import load_manifest, produced_ranges


@dataclass(frozen=True)
class PartitionCommitted:
    """One partition's produced range against its committed offset.

    Attributes:
        partition: the partition.
        first_offset: first produced offset (None: nothing produced there).
        last_offset: last produced offset (None: nothing produced there).
        produced: records produced (``last - first + 1``, or 0).
        committed: the group's committed offset (None: none committed).
        consumed: produced records below ``committed``.
        unconsumed: ``produced - consumed``.
    """

    partition: int
    first_offset: int | None
    last_offset: int | None
    produced: int
    committed: int | None
    consumed: int
    unconsumed: int


@dataclass(frozen=True)
class CommittedExactness:
    """Produced vs consumed records from committed offsets (see the module docstring).

    Attributes:
        produced_total: records in the manifest's ranges.
        consumed_total: of those, records below their partition's committed offset.
        unconsumed_total: ``produced_total - consumed_total``: not consumed, lost from the
            broker's view.
        per_partition: one entry per partition the manifest or ``committed`` names, ascending.
        duplicates_measurable: always False: committed offsets cannot show duplicates.
    """

    produced_total: int
    consumed_total: int
    unconsumed_total: int
    per_partition: tuple[PartitionCommitted, ...]
    duplicates_measurable: bool = False

    @property
    def complete(self) -> bool:
        """True when every produced record was consumed (consumed == produced)."""
        return self.unconsumed_total == 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping with ``complete`` added."""
        out = asdict(self)
        out["per_partition"] = [asdict(p) for p in self.per_partition]
        out["complete"] = self.complete
        return out


def consumed_from_committed(committed: Mapping[int, int | None],
                            manifest: Manifest | str | Path) -> CommittedExactness:
    """How many produced records the group consumed, per partition, from its committed offsets.

    Args:
        committed: ``{partition: committed offset}``; None or a negative offset (the admin
            client's -1) means none committed; a missing partition too.
        manifest: the producer's :class:`Manifest` or the path of its ``manifest.json``.

    Returns:
        The totals and the per-partition detail; partitions that only ``committed`` names
        (nothing produced there) have ``produced == consumed == 0``.

    Raises:
        ConfigError: the manifest is missing, unreadable, or its offsets are not contiguous.
    """
    source = repr(str(manifest)) if not isinstance(manifest, Manifest) else "the manifest"
    loaded = load_manifest(manifest)
    ranges = {p: (a, b) for p, a, b in produced_ranges(loaded, source)}
    listed = {p.partition for p in loaded.per_partition}
    rows = []
    for partition in sorted(listed | set(committed)):
        offset = committed.get(partition)
        offset = None if offset is None or offset < 0 else int(offset)
        if partition in ranges:
            first, last = ranges[partition]
            produced = last - first + 1
            consumed = 0 if offset is None else min(max(offset - first, 0), produced)
        else:
            first = last = None
            produced = consumed = 0
        rows.append(PartitionCommitted(partition, first, last, produced, offset, consumed,
                                       produced - consumed))
    produced_total = sum(r.produced for r in rows)
    consumed_total = sum(r.consumed for r in rows)
    return CommittedExactness(produced_total, consumed_total, produced_total - consumed_total,
                              tuple(rows))
