"""The ``share-group`` lag source: a share group's backlog (KIP-932) on one topic, per partition.

A share group has no committed offsets: each share-partition keeps a start offset and the
state of the records after it, and since KIP-1226 (Apache Kafka 4.2) the broker reports its
**lag**, "the number of records that are either still being processed or have not yet been
processed" (records acquired and not yet acknowledged count). This source reads it through
Apache Kafka's Admin client (:class:`~pytest_lagscale.kafka.share_admin.ShareGroupAdmin`,
``listShareGroupOffsets``; confluent-kafka has no share-group admin call).

A partition the group has no state for (nothing of it delivered yet: the broker answers no
start offset and no lag) is not read as 0: it is counted from where the group will start, the
group config ``share.auto.offset.reset`` read from the broker — ``earliest``: every record in
the log (log end - log start); ``latest``: 0 (the group starts at the end); ``by_duration:``:
unknown, so the total is unknown (a reading marked missing, never a guess). Each partition says
how it was counted (:class:`SharePartitionLag`).

Example:
    >>> source = ShareGroupLagSource(KafkaAdmin("127.0.0.1:9092"), "enrich", "events")  # doctest: +SKIP
    >>> source.read_partitions()  # doctest: +SKIP
    {0: SharePartitionLag(lag_records=35, start_offset=1200, counted='broker'),
     1: SharePartitionLag(lag_records=500, start_offset=None, counted='reset-earliest')}
    >>> source.total_lag().lag_records  # doctest: +SKIP
    535.0
    >>> source.close()  # doctest: +SKIP

Source: apache/kafka 4.3.1 ``Admin.listShareGroupOffsets`` / ``SharePartitionOffsetInfo.lag()``
(KIP-1226), ``GroupConfig`` ``share.auto.offset.reset`` (KIP-932).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple

from ._options import refuse_options
from .base import TotalLag, UtcNow, utc_now

if TYPE_CHECKING:
    from ..kafka.admin import KafkaAdmin
    from ..kafka.share_admin import ShareGroupAdmin

#: How a partition's lag was counted: the broker's KIP-1226 lag, or (no share state yet) from
#: the group's ``share.auto.offset.reset``; ``unknown`` when that reset cannot be counted.
Counted = Literal["broker", "reset-earliest", "reset-latest", "unknown"]
#: The group config naming where a share group starts on a partition it has no state for.
RESET_CONFIG = "share.auto.offset.reset"


class SharePartitionLag(NamedTuple):
    """One partition's share-group lag.

    Attributes:
        lag_records: records not yet acknowledged (None when ``counted`` is ``unknown``).
        start_offset: the share-partition start offset (None without share state).
        counted: how ``lag_records`` was obtained (:data:`Counted`).
    """

    lag_records: int | None
    start_offset: int | None
    counted: Counted


class ShareGroupLagSource:
    """A share group's lag on one topic, read from the broker per call.

    Args:
        admin: the admin connection (partitions, log offsets, group config).
        group: the share group id.
        topic: the topic.
        share_admin: the share-group admin service (default: one started on the first read on
            ``admin``'s bootstrap servers and stopped by :meth:`close`).
        clock: the wall clock readings are dated with (default: UTC now).

    Raises:
        BrokerError: from the reads, when the broker refused or did not answer.
    """

    name = "share-group"
    per_partition: ClassVar[bool] = False

    def __init__(self, admin: KafkaAdmin, group: str, topic: str, *,
                 share_admin: ShareGroupAdmin | None = None, clock: UtcNow = utc_now):
        self.admin, self.group, self.topic, self.clock = admin, group, topic, clock
        self._share_admin, self._owned = share_admin, share_admin is None
        self._lock = threading.Lock()

    @classmethod
    def from_options(cls, admin: Any, group: str, topic: str,
                     options: Mapping[str, Any] | None = None) -> ShareGroupLagSource:
        """The registry's factory: the share-group source takes no options.

        Raises:
            ConfigError: any option given.
        """
        refuse_options(options, "share-group lag source options")
        return cls(admin, group, topic)

    def read_partitions(self) -> dict[int, SharePartitionLag]:
        """``{partition: SharePartitionLag}`` for every partition of the topic, read now (the
        share state first, then the log-end offsets and, when needed, the group's reset config
        and the log-start offsets).

        Raises:
            BrokerError: a read failed.
        """
        return self.read_with_log_end()[0]

    def read_with_log_end(self) -> tuple[dict[int, SharePartitionLag], dict[int, int]]:
        """:meth:`read_partitions` and the log-end offsets it read, ``{partition: offset}``.

        Raises:
            BrokerError: a read failed.
        """
        state = self._share().share_group_offsets(self.group)
        latest = self.admin.end_offsets(self.topic, "latest")
        out: dict[int, SharePartitionLag] = {}
        missing = []
        for p in sorted(latest):
            info = state.get((self.topic, p))
            if info is not None and info.lag is not None:
                out[p] = SharePartitionLag(int(info.lag), info.start_offset, "broker")
            else:
                missing.append(p)
        if missing:
            reset = self.admin.group_config(self.group).get(RESET_CONFIG, "latest")
            if reset == "earliest":
                earliest = self.admin.end_offsets(self.topic, "earliest")
                for p in missing:
                    out[p] = SharePartitionLag(max(0, latest[p] - earliest[p]), None, "reset-earliest")
            else:
                counted: Counted = "reset-latest" if reset == "latest" else "unknown"
                for p in missing:
                    out[p] = SharePartitionLag(0 if counted == "reset-latest" else None, None, counted)
        return dict(sorted(out.items())), latest

    def total_lag(self) -> TotalLag:
        """The sum over the partitions of one :meth:`read_partitions`, dated at the read (0 s
        old); no value (``lag_records`` None) when any partition's lag is unknown.

        Raises:
            BrokerError: as :meth:`read_partitions`.
        """
        parts = self.read_partitions()
        now = self.clock()
        if any(v.lag_records is None for v in parts.values()):
            return TotalLag(None, None, now, self.name)
        return TotalLag(float(sum(v.lag_records or 0 for v in parts.values())), now, now, self.name)

    def close(self) -> None:
        """Stop the share-group admin service this source started (idempotent)."""
        with self._lock:
            if self._owned and self._share_admin is not None:
                self._share_admin.stop()
                self._share_admin = None

    def _share(self) -> ShareGroupAdmin:
        with self._lock:
            if self._share_admin is None:
                from ..kafka.share_admin import ShareGroupAdmin

                self._share_admin = ShareGroupAdmin(self.admin.bootstrap_servers).start()
            return self._share_admin


class ShareGroupOffsetsAdmin:
    """A share group's lag in the broker source's shape, for a run of share-group replicas: its
    :meth:`group_offsets` gives ``{partition: (log_end - lag, log_end)}``, so the run's bounded
    lag reads (:class:`~pytest_lagscale.sources.bounded.BoundedLagReads`), its lag exporter (the
    kafka_exporter series, ``kafka_consumergroup_current_offset`` then standing for the offset
    below which every record is acknowledged) and its settle phase read the share group's lag
    (KIP-1226) unchanged.

    Args:
        admin: the admin connection (owned: :meth:`close` closes it).
        share_admin: the run's share-group admin service (not owned).

    Raises:
        BrokerError: from :meth:`group_offsets` when a read failed or a partition's lag is
            unknown (a ``by_duration`` reset with no share state): a failed read, never a guess.
    """

    def __init__(self, admin: KafkaAdmin, share_admin: ShareGroupAdmin):
        self.admin, self.share_admin = admin, share_admin

    def group_offsets(self, group: str, topic: str) -> dict[int, tuple[int, int | None]]:
        """``{partition: (log_end - lag, log_end)}`` of share group ``group`` on ``topic`` (one
        :meth:`ShareGroupLagSource.read_with_log_end`: the share state read first, then the
        log-end offsets)."""
        from ..contract.errors import BrokerError

        parts, log_end = ShareGroupLagSource(self.admin, group, topic,
                                             share_admin=self.share_admin).read_with_log_end()
        unknown = sorted(p for p, v in parts.items() if v.lag_records is None)
        if unknown:
            raise BrokerError(f"share group {group!r}: lag of {topic} partitions {unknown} unknown (no share "
                              "state, and share.auto.offset.reset is by_duration)")
        return {p: (log_end[p] - (v.lag_records or 0), log_end[p]) for p, v in parts.items() if p in log_end}

    def close(self, timeout_s: float | None = None) -> None:
        """Close the admin connection (the share-group admin service is the run's)."""
        self.admin.close(timeout_s)
