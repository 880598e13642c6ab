"""What the autoscaler reads lag from: every source gives a :class:`TotalLag`; some also give offsets.

Two protocols, because the sources answer two different questions:

* :class:`TotalLagSource` (every source): the group's **total** lag in records and how old the
  number is. Aggregated sources (Prometheus, AWS CloudWatch ``SumOffsetLag`` of MSK, the
  Confluent Cloud Metrics API) only know this: a sum, reported per scrape or per minute, minutes
  late.
* :class:`LagSource` (the broker only, today): the group's committed and log-end **offsets per
  partition**, read now, which is what KEDA's kafka trigger takes. Its total lag is the sum of
  the partitions' lag and is 0 s old.

One module per source (:mod:`.broker`, :mod:`.prometheus`, :mod:`.cloudwatch`,
:mod:`.confluent`), registered in :data:`pytest_lagscale.sources.LAG_SOURCES`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import ClassVar, Literal, Protocol, runtime_checkable

from ..contract.errors import LagscaleError

#: ``{partition: (committed_offset, log_end_offset)}``; committed -1 = none committed,
#: log_end None = missing from the latest-offset response.
GroupOffsets = dict[int, "tuple[int, int | None]"]

#: What a source reports when its query matched no datapoint: ``zero`` (0 records, as the recipe
#: "Kafka Lag Autoscaler" and KEDA's ``ignoreNullValues: true`` do) or ``unknown`` (no value).
EmptyPolicy = Literal["zero", "unknown"]
EMPTY_POLICIES: tuple[str, ...] = ("zero", "unknown")

#: ``utc_now() -> datetime``: the wall clock a source dates its readings with (aware, UTC).
UtcNow = Callable[[], datetime]


def utc_now() -> datetime:
    """The current wall-clock time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


class LagSourceError(LagscaleError):
    """A lag source could not be read: the service refused, failed or answered something that is
    not a lag (the message names the source, the endpoint and the service's own reason)."""


@dataclass(frozen=True)
class TotalLag:
    """One reading of a group's total lag.

    Attributes:
        lag_records: total lag in records (a float: aggregated sources answer averages and
            maxima); None when the source had no datapoint and its empty policy is ``unknown``.
        datapoint_utc: the timestamp of the datapoint the value came from (the start of a
            CloudWatch period or a Confluent bucket, a Prometheus instant query's evaluation
            time, the read time for the broker); None when there was none.
        read_utc: when the source was read (UTC).
        source: the source's registry key (``broker``, ``prometheus``, ...).
    """

    lag_records: float | None
    datapoint_utc: datetime | None
    read_utc: datetime
    source: str

    @property
    def staleness_s(self) -> float | None:
        """Seconds between the datapoint and the read (None without a datapoint); never negative
        (a datapoint dated after the read, by clock skew between hosts, counts as 0 s old)."""
        if self.datapoint_utc is None:
            return None
        return max(0.0, (self.read_utc - self.datapoint_utc).total_seconds())

    @property
    def known(self) -> bool:
        """The reading has a value."""
        return self.lag_records is not None

    @classmethod
    def empty(cls, policy: str, read_utc: datetime, source: str) -> TotalLag:
        """The reading of a query that matched nothing: 0 records (policy ``zero``, dated at the
        read) or no value (``unknown``)."""
        if policy == "zero":
            return cls(0.0, read_utc, read_utc, source)
        return cls(None, None, read_utc, source)


def finite_lag(value: object, where: str) -> float:
    """``value`` (a number or a numeric string, as Prometheus and JSON send them) as a float.

    Raises:
        LagSourceError: it is not a number (``where`` names the field), or it is infinite or NaN.
    """
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise LagSourceError(f"{where}: got {value!r}, expected a number of records") from exc
    if math.isnan(number) or math.isinf(number):
        raise LagSourceError(f"{where}: got {value!r}, expected a finite number of records")
    return number


@runtime_checkable
class TotalLagSource(Protocol):
    """A reader of one consumer group's total lag on one topic.

    Attributes:
        name: the source's registry key.
        per_partition: the source also implements :class:`LagSource` (``read()``).
    """

    name: str
    per_partition: ClassVar[bool]

    def total_lag(self) -> TotalLag:
        """One reading of the total lag.

        Raises:
            LagSourceError: the read failed (a Prometheus, CloudWatch or Confluent error).
            BrokerError: the broker source's read failed.
        """


@runtime_checkable
class LagSource(Protocol):
    """A reader of one consumer group's offsets on one topic (per partition).

    Attributes:
        name: the source's registry key (``broker``).
    """

    name: str

    def read(self) -> GroupOffsets:
        """One snapshot ``{partition: (committed, log_end)}``.

        Raises:
            BrokerError: the read failed (the autoscaler counts it as a trigger error).
        """


def offsets_total_records(offsets: GroupOffsets) -> int:
    """The total lag of a snapshot in records: per partition ``log_end - committed``, the whole
    ``log_end`` when nothing is committed (-1), partitions with an unknown log end left out; not
    clamped, as kafka_exporter's ``kafka_consumergroup_lag_sum`` (so the broker's total equals
    what the Prometheus source sums) and the lag-per-slot policy's ``total_lag_records`` count."""
    total = 0
    for committed, log_end in offsets.values():
        if log_end is not None:
            total += log_end - committed if committed >= 0 else log_end
    return total
