"""Share-group admin calls (KIP-932) through Apache Kafka's own Admin client.

confluent-kafka 2.16.1 (librdkafka 2.16.0) has no share-group admin call, so
:class:`ShareGroupAdmin` runs the pinned kafka-clients jar's ``Admin`` in a small JVM service,
``pytest_lagscale/data/kafka/ShareGroupAdmin.java`` (a single-file Java program launched from
source), and asks it over loopback HTTP. It is a managed part: one process group, started with
``with`` or :meth:`~ShareGroupAdmin.start` (about 3 s: the JVM and the in-memory compile), ready
when ``GET /healthz`` answers, stopped with the harness (parent-death signal) or
:meth:`~ShareGroupAdmin.stop`.

Example:
    >>> with ShareGroupAdmin("127.0.0.1:9092") as share:  # doctest: +SKIP
    ...     share.share_group_offsets("enrich-share")
    {('events', 0): SharePartitionOffset(start_offset=1200, lag=35), ('events', 1): ...}

Source: apache/kafka 4.3.1 clients ``Admin.listShareGroupOffsets`` (``SharePartitionOffsetInfo``:
start offset and, from KIP-1226, lag) and ``Admin.describeShareGroups``.
"""

from __future__ import annotations

import json
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..config.bundled import data_path
from ..contract.errors import BrokerError
from ..lifecycle import StartStop
from ..process import ManagedProcess
from ..wait import probe_http, wait_ready

#: Seconds the service may take to answer ``/healthz`` after its start.
START_TIMEOUT_S = 60.0
#: Seconds one query may take (the service's own broker timeout is 5 s).
QUERY_TIMEOUT_S = 10.0
#: The service's heap: it holds one Admin client.
HEAP_MB = 96


class SharePartitionOffset(NamedTuple):
    """One share-partition's state as the broker reports it.

    Attributes:
        start_offset: the share-partition start offset (the first offset not yet acknowledged
            for good), None when the broker has none.
        lag: records at or after ``start_offset`` not yet acknowledged (KIP-1226: "still being
            processed or not yet processed"), None when the broker has none (a partition whose
            share state was never initialized: nothing of it was ever delivered).
    """

    start_offset: int | None
    lag: int | None


@dataclass(frozen=True)
class ShareMember:
    """One member of a share group: its member id, ``client.id``, host and the partitions
    assigned to it as ``(topic, partition)`` pairs."""

    member_id: str
    client_id: str
    host: str
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ShareGroupState:
    """A share group as ``describeShareGroups`` gives it: ``state`` (``Stable``, ``Empty``,
    ...), ``group_epoch`` and its members."""

    group: str
    state: str
    group_epoch: int
    members: tuple[ShareMember, ...]


class ShareGroupAdmin(StartStop):
    """The share-group admin service of one cluster.

    Args:
        bootstrap_servers: Kafka ``host:port[,host:port]``.
        log_dir: where its log goes (``share-admin.log``; default: a temporary directory,
            removed at :meth:`stop`).
        java: the ``java`` executable (JDK 11 or later: it launches a source file).

    Raises:
        BrokerError: from :meth:`start` when the service does not start or answer within
            :data:`START_TIMEOUT_S`; from the queries when the broker refused or did not answer.
    """

    def __init__(self, bootstrap_servers: str, *, log_dir: Path | None = None, java: str = "java"):
        self.bootstrap_servers = bootstrap_servers
        self.java = java
        self._given_dir = log_dir
        self.home: Path | None = None
        self.process: ManagedProcess | None = None
        self.port: int | None = None

    def start(self) -> ShareGroupAdmin:
        """Start the JVM service and wait until it answers; returns self."""
        if self.process is not None:
            return self
        from .artifacts import resolve

        dist = resolve()
        self.home = Path(self._given_dir or tempfile.mkdtemp(prefix="lagscale-share-admin-"))
        self.home.mkdir(parents=True, exist_ok=True)
        port_file = self.home / "share-admin.port"
        port_file.unlink(missing_ok=True)
        log_path = self.home / "share-admin.log"
        argv = [self.java, f"-Xmx{HEAP_MB}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", dist.classpath, str(data_path("kafka", "ShareGroupAdmin.java")),
                self.bootstrap_servers, str(port_file)]
        self.process = ManagedProcess("share-admin", argv, log_path=log_path).start()

        def ready() -> int | None:
            try:
                port = int(port_file.read_text())
            except (OSError, ValueError):
                return None
            return port if probe_http(port, "/healthz", 2.0)[0] else None

        self.port = wait_ready(
            ready, self.process, timeout_s=START_TIMEOUT_S, poll_interval_s=0.2,
            exited=lambda how: f"share-admin: {how} during startup; see {log_path}",
            timed_out=lambda: f"share-admin: no answer on /healthz within {START_TIMEOUT_S:.0f} s; "
                              f"see {log_path}",
            exit_error=BrokerError)
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the service (idempotent); removes its temporary directory."""
        import shutil

        if self.process is not None:
            self.process.stop(timeout_s)
            self.process = None
        if self.home is not None and self._given_dir is None:
            shutil.rmtree(self.home, ignore_errors=True)
        self.home, self.port = None, None

    # -- queries -----------------------------------------------------------------------------
    def share_group_offsets(self, group: str) -> dict[tuple[str, int], SharePartitionOffset]:
        """``{(topic, partition): SharePartitionOffset}`` of every share-partition the group has
        state for (empty for a group the broker does not know).

        Raises:
            BrokerError: the broker refused or did not answer within its 5 s.
        """
        doc = self._get("/share-group-offsets", group)
        return {(p["topic"], int(p["partition"])): SharePartitionOffset(_int(p["startOffset"]), _int(p["lag"]))
                for p in doc["partitions"]}

    def describe_share_group(self, group: str) -> ShareGroupState | None:
        """The group's state and members' assignments, or None when the broker does not know it.

        Raises:
            BrokerError: the broker refused or did not answer within its 5 s.
        """
        doc = self._get("/share-group", group, missing_ok=True)
        if doc is None:
            return None
        members = tuple(ShareMember(m["memberId"], m["clientId"], m["host"],
                                    tuple(sorted((p["topic"], int(p["partition"])) for p in m["partitions"])))
                        for m in doc["members"])
        return ShareGroupState(doc["group"], doc["state"], int(doc["groupEpoch"]), members)

    def describe_group(self, group: str, topic: str | None = None) -> Any:
        """The share group as :meth:`KafkaAdmin.describe_group <pytest_lagscale.kafka.admin.KafkaAdmin.describe_group>`
        gives a consumer group (a :class:`~pytest_lagscale.kafka.admin.GroupState`: the state
        upper-cased, protocol ``share``, no assignor name, each member's partitions of
        ``topic``), so the group observer watches either kind; a group the broker does not know
        is ``DEAD`` with no members.

        Raises:
            BrokerError: as :meth:`describe_share_group`.
        """
        from .admin import GroupState, MemberAssignment

        got = self.describe_share_group(group)
        if got is None:
            return GroupState("DEAD", "share", "", ())
        members = tuple(sorted((MemberAssignment(m.member_id, m.client_id, None,
                                                 tuple(p for t, p in m.partitions if topic is None or t == topic),
                                                 m.host) for m in got.members), key=lambda m: m.client_id))
        return GroupState(got.state.upper(), "share", "", members)

    def _get(self, path: str, group: str, missing_ok: bool = False) -> Any:
        if self.port is None or self.process is None:
            raise BrokerError("share-admin: not started; call start() first")
        url = f"http://127.0.0.1:{self.port}{path}?{urllib.parse.urlencode({'group': group})}"
        try:
            with urllib.request.urlopen(url, timeout=QUERY_TIMEOUT_S) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and missing_ok:
                return None
            try:
                why = json.loads(exc.read()).get("error", "")
            except ValueError:
                why = ""
            raise BrokerError(f"share group {group!r} on {self.bootstrap_servers}: {path} answered "
                              f"HTTP {exc.code}: {why}") from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            alive = self.process.poll() is None
            raise BrokerError(f"share group {group!r}: the share-admin service "
                              f"{'did not answer' if alive else 'has exited'} ({exc}); see "
                              f"{self.process.log_path}") from exc


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
