"""What the autoscaler reads lag from: a :class:`LagSource`.

One module per source (:mod:`.broker`: the group's offsets from the brokers, as KEDA's kafka
scaler reads them; Prometheus, CloudWatch-style aggregated lag and others later), registered in
:data:`pytest_lagscale.sources.LAG_SOURCES`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

#: ``{partition: (committed_offset, log_end_offset)}``; committed -1 = none committed,
#: log_end None = missing from the latest-offset response.
GroupOffsets = dict[int, "tuple[int, int | None]"]


@runtime_checkable
class LagSource(Protocol):
    """A reader of one consumer group's offsets on one topic.

    Attributes:
        name: the source's registry key (``broker``).
    """

    name: str

    def read(self) -> GroupOffsets:
        """One snapshot ``{partition: (committed, log_end)}``.

        Raises:
            BrokerError: the read failed (the autoscaler counts it as a trigger error).
        """
