"""The ``broker`` lag source: the group's committed offsets and the log-end offsets, read from the
brokers through the AdminClient, exactly the input ``KafkaLagTrigger`` takes.

Source: specs/platform-notes.md §C "Lag and assignment via AdminClient";
specs/keda-hpa-semantics.md §1.2-§1.3
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import GroupOffsets

if TYPE_CHECKING:
    from ..kafka.admin import KafkaAdmin


class BrokerLagSource:
    """The autoscaler's lag input: group offsets of one topic, read per observation.

    Args:
        admin: the admin connection.
        group: consumer group (``enrich``).
        topic: topic (``events``).

    Example:
        >>> source = BrokerLagSource(KafkaAdmin("127.0.0.1:9092"), "enrich", "events")  # doctest: +SKIP
        >>> source.read()  # doctest: +SKIP
        {0: (1200, 1250), 1: (-1, 40)}
    """

    name = "broker"

    def __init__(self, admin: KafkaAdmin, group: str, topic: str):
        self.admin, self.group, self.topic = admin, group, topic

    def read(self) -> GroupOffsets:
        """One snapshot ``{partition: (committed, log_end)}`` (committed offsets read first).

        Raises:
            BrokerError: the broker rejected a request or did not answer in time.
        """
        return self.admin.group_offsets(self.group, self.topic)
