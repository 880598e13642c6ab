"""The ``broker`` lag source: the group's committed offsets and the log-end offsets, read from the
brokers through the AdminClient, exactly the input ``KafkaLagTrigger`` takes.

Source: kedacore/keda v2.21.0 pkg/scalers/kafka_scaler.go (getConsumerOffsets, getLagForPartition);
confluent-kafka-python ``AdminClient.list_offsets``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ._options import refuse_options
from .base import GroupOffsets, TotalLag, UtcNow, offsets_total_records, utc_now

if TYPE_CHECKING:
    from ..kafka.admin import KafkaAdmin


class BrokerLagSource:
    """The autoscaler's lag input: group offsets of one topic, read per observation.

    Args:
        admin: the admin connection.
        group: consumer group (``enrich``).
        topic: topic (``events``).
        clock: the wall clock readings are dated with (default: UTC now).

    Example:
        >>> source = BrokerLagSource(KafkaAdmin("127.0.0.1:9092"), "enrich", "events")  # doctest: +SKIP
        >>> source.read()  # doctest: +SKIP
        {0: (1200, 1250), 1: (-1, 40)}
        >>> source.total_lag().lag_records  # doctest: +SKIP
        90.0
    """

    name = "broker"
    per_partition: ClassVar[bool] = True

    def __init__(self, admin: KafkaAdmin, group: str, topic: str, *, clock: UtcNow = utc_now):
        self.admin, self.group, self.topic = admin, group, topic
        self.clock = clock

    @classmethod
    def from_options(cls, admin: Any, group: str, topic: str,
                     options: Mapping[str, Any] | None = None) -> BrokerLagSource:
        """The registry's factory: the broker source takes no options.

        Raises:
            ConfigError: any option given.
        """
        refuse_options(options, "broker lag source options")
        return cls(admin, group, topic)

    def read(self) -> GroupOffsets:
        """One snapshot ``{partition: (committed, log_end)}`` (committed offsets read first).

        Raises:
            BrokerError: the broker rejected a request or did not answer in time.
        """
        return self.admin.group_offsets(self.group, self.topic)

    def total_lag(self) -> TotalLag:
        """The sum of the partitions' lag of one :meth:`read`, dated at the read (0 s old).

        Raises:
            BrokerError: as :meth:`read`.
        """
        offsets = self.read()
        now = self.clock()
        return TotalLag(float(offsets_total_records(offsets)), now, now, self.name)
