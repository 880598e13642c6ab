"""Lag reads that keep the controller's cadence through broker faults.

:class:`BoundedLagReads` wraps the ``broker`` lag source (a
:class:`~pytest_lagscale.kafka.admin.KafkaAdmin` per connection) so that:

* every :meth:`~BoundedLagReads.read` returns or raises within ``timeout_s`` (the run sets the
  policy's polling interval): the read runs in a thread of its own and a read still running
  after ``timeout_s`` is abandoned (it ends by itself within the admin's request timeout and
  its clients are destroyed then) and raised as :class:`LagReadTimeout`;
* after a timeout or a failure, the next read goes through new Kafka clients (a new
  ``KafkaAdmin``), so the first read after the broker's return succeeds rather than waiting on a
  connection that a stopped or restarted broker left broken (seen after a 20 s SIGSTOP of the
  broker: "Failed to get metadata: Local: Broker transport failure" on every read until the end
  of the run);
* the time of the last fresh read is kept (:meth:`~BoundedLagReads.age_s`).

KEDA's kafka scaler (kedacore/keda v2.21.0 pkg/scalers/kafka_scaler.go) sets no request timeout
of its own: it uses sarama's defaults (IBM/sarama v1.60.2 config.go: ``Net.DialTimeout`` and
``Net.ReadTimeout`` 30 s), so a real operator's poll of a stopped broker blocks up to 30 s. The
embedded controller does not copy that value: its reads are bounded by the polling interval so
that the run's record keeps one observation (or one recorded failure) per poll.

Example:
    >>> reads = BoundedLagReads(lambda: KafkaAdmin(bootstrap, timeout_s=10.0),  # doctest: +SKIP
    ...                         "enrich", "events", timeout_s=2.0)
    >>> reads.read()  # doctest: +SKIP
    {0: (1200, 1250), 1: (-1, 40)}
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, ClassVar

from ..contract.errors import BrokerError
from .base import GroupOffsets, TotalLag, offsets_total_records, utc_now

log = logging.getLogger(__name__)


class LagReadTimeout(BrokerError):
    """A lag read did not answer within the bound (the read is abandoned, not cancelled)."""


class BoundedLagReads:
    """The broker lag source, each read bounded in time, its clients renewed after a failure.

    Args:
        new_admin: ``() -> KafkaAdmin`` for the cluster; called for the first read and again
            after every failed or timed-out read.
        group: the consumer group; topic: its topic.
        timeout_s: the most a :meth:`read` takes, seconds (> 0).
        clock: monotonic seconds (default ``time.monotonic``).

    Raises:
        ValueError: ``timeout_s`` is not above 0.

    Attributes:
        last_ok_s: the clock reading of the last successful read (None before one).
        failures_total: failed or timed-out reads so far.
        renewals_total: how many times the clients were replaced.
    """

    name = "broker"
    per_partition: ClassVar[bool] = True

    def __init__(self, new_admin: Callable[[], Any], group: str, topic: str, *,
                 timeout_s: float, clock: Callable[[], float] = time.monotonic):
        if not timeout_s > 0:
            raise ValueError(f"timeout_s: {timeout_s!r} is not above 0; give the polling "
                             "interval in seconds")
        self.new_admin, self.group, self.topic = new_admin, group, topic
        self.timeout_s = timeout_s
        self.clock = clock
        self.last_ok_s: float | None = None
        self.failures_total = 0
        self.renewals_total = 0
        self._admin: Any = None
        self._lock = threading.Lock()
        self._closed = False

    def read(self) -> GroupOffsets:
        """One snapshot ``{partition: (committed, log_end)}`` within :attr:`timeout_s`.

        Raises:
            LagReadTimeout: no answer within ``timeout_s`` (the clients are renewed).
            BrokerError: the read failed (the clients are renewed), or this source is closed.
        """
        admin = self._current()
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def call() -> None:
            try:
                outcome["offsets"] = admin.group_offsets(self.group, self.topic)
            except BaseException as exc:  # handed to the caller
                outcome["error"] = exc
            finally:
                done.set()

        threading.Thread(target=call, name="lagscale-lag-read", daemon=True).start()
        if not done.wait(self.timeout_s):
            self._renew(admin, f"no answer within {self.timeout_s:g} s")
            raise LagReadTimeout(f"group {self.group!r}: lag read of {self.topic!r} gave no "
                                 f"answer within {self.timeout_s:g} s; reading again through "
                                 "new clients")
        if "error" in outcome:
            self._renew(admin, str(outcome["error"]))
            error = outcome["error"]
            if isinstance(error, BrokerError):
                raise error
            raise BrokerError(f"group {self.group!r}: lag read failed: {error}") from error
        self.last_ok_s = self.clock()
        return outcome["offsets"]

    def total_lag(self) -> TotalLag:
        """The sum of one :meth:`read`'s partition lags, dated at the read (0 s old)."""
        offsets = self.read()
        now = utc_now()
        return TotalLag(float(offsets_total_records(offsets)), now, now, self.name)

    def age_s(self) -> float | None:
        """Seconds since the last successful read (None before one)."""
        return None if self.last_ok_s is None else self.clock() - self.last_ok_s

    def close(self) -> None:
        """Close the current clients (a read in flight keeps its own until it returns)."""
        with self._lock:
            self._closed = True
            admin, self._admin = self._admin, None
        if admin is not None:
            _close_when_idle(admin)

    # -- internals -----------------------------------------------------------------------
    def _current(self) -> Any:
        with self._lock:
            if self._closed:
                raise BrokerError(f"group {self.group!r}: lag reads are closed")
            if self._admin is None:
                self._admin = self.new_admin()
            return self._admin

    def _renew(self, failed: Any, why: str) -> None:
        """Drop ``failed`` (if still current) so the next read makes new clients."""
        with self._lock:
            self.failures_total += 1
            if self._admin is not failed:
                return  # another read renewed them already
            self._admin = None
            self.renewals_total += 1
        log.info("lag reads of group %s: renewing the Kafka clients (%s)", self.group, why)
        _close_when_idle(failed)


def _close_when_idle(admin: Any) -> None:
    """Close ``admin`` in a thread of its own once its calls in flight returned (a hung call
    ends within the admin's request timeout), never under a running call."""
    threading.Thread(target=admin.close, name="lagscale-admin-close", daemon=True).start()
