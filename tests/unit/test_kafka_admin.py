"""KafkaAdmin's clients (fakes, no broker): committed offsets through a Consumer of the group,
never AdminClient.list_consumer_group_offsets (it crashes librdkafka on NOT_COORDINATOR:
tests/integration/test_kafka_admin_coordinator.py), and close() destroying the clients on its
own thread only once no call is in flight."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from pytest_lagscale.contract.errors import BrokerError
from pytest_lagscale.kafka import admin as admin_module
from pytest_lagscale.kafka.admin import KafkaAdmin

BOOTSTRAP = "127.0.0.1:9092"


class FakeAdminClient:
    def __init__(self, config: dict[str, Any]):
        self.config = config
        self.destroyed_by: str | None = None

    def poll(self, timeout: float) -> int:
        return 0

    def list_topics(self, topic: str, timeout: float) -> Any:
        parts = {0: SimpleNamespace(leader=1), 1: SimpleNamespace(leader=1)}
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions=parts)})

    def list_consumer_group_offsets(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("librdkafka's admin OffsetFetch path must not be used")

    def __exit__(self, *exc: object) -> None:
        assert self.destroyed_by is None, "destroyed twice"
        self.destroyed_by = threading.current_thread().name


class FakeConsumer:
    """``committed`` answers ``{0: 5}`` (partition 1: nothing committed); it first waits for
    ``release`` and raises the errors queued in ``failures``."""

    instances: list["FakeConsumer"] = []

    def __init__(self, config: dict[str, Any]):
        self.config = config
        self.release = threading.Event()
        self.release.set()
        self.entered = threading.Event()
        self.failures: list[KafkaException] = []
        self.events: list[str] = []
        FakeConsumer.instances.append(self)

    def committed(self, parts: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        self.entered.set()
        self.release.wait(5)
        if self.failures:
            raise self.failures.pop(0)
        self.events.append("committed returned")
        return [TopicPartition(tp.topic, tp.partition, 5 if tp.partition == 0 else -1001)
                for tp in parts]

    def poll(self, timeout: float) -> None:
        return None

    def close(self) -> None:
        self.events.append("closed")


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> KafkaAdmin:
    FakeConsumer.instances = []
    monkeypatch.setattr(admin_module, "AdminClient", FakeAdminClient)
    monkeypatch.setattr(admin_module, "Consumer", FakeConsumer)
    return KafkaAdmin(BOOTSTRAP, timeout_s=1.0)


def test_committed_offsets_are_read_by_one_consumer_of_the_group(admin: KafkaAdmin) -> None:
    assert admin.committed_offsets("enrich", "events") == {0: 5, 1: -1}
    assert admin.committed_offsets("enrich", "events") == {0: 5, 1: -1}
    (reader,) = FakeConsumer.instances  # one per group, kept
    assert reader.config["group.id"] == "enrich"
    assert reader.config["enable.auto.commit"] is False
    assert reader.config["bootstrap.servers"] == BOOTSTRAP


def test_not_coordinator_is_retried_within_the_timeout(admin: KafkaAdmin) -> None:
    admin.committed_offsets("enrich", "events")
    (reader,) = FakeConsumer.instances
    reader.failures = [KafkaException(KafkaError(KafkaError.NOT_COORDINATOR))] * 2
    assert admin.committed_offsets("enrich", "events") == {0: 5, 1: -1}


def _call_held_in_flight(admin: KafkaAdmin) -> tuple["FakeConsumer", threading.Thread]:
    """A committed_offsets call on another thread, held inside the reader until
    ``reader.release`` is set; returns the reader and the thread."""
    admin.committed_offsets("enrich", "events")
    (reader,) = FakeConsumer.instances
    reader.release.clear()
    reader.entered.clear()
    call = threading.Thread(target=admin.committed_offsets, args=("enrich", "events"))
    call.start()
    assert reader.entered.wait(2)
    return reader, call


def test_close_waits_for_the_call_in_flight_then_destroys_the_clients_on_its_thread(
        admin: KafkaAdmin) -> None:
    reader, call = _call_held_in_flight(admin)
    closer = threading.Thread(target=admin.close, name="closer")
    closer.start()
    closer.join(0.2)
    assert closer.is_alive() and admin._client.destroyed_by is None  # waits for the call
    reader.release.set()
    closer.join(2)
    call.join(2)
    assert reader.events == ["committed returned", "committed returned", "closed"]
    assert admin._client.destroyed_by == "closer"
    admin.close()  # idempotent


def test_a_call_after_close_raises_and_touches_no_client(admin: KafkaAdmin) -> None:
    admin.close()
    with pytest.raises(BrokerError) as info:
        admin.committed_offsets("enrich", "events")
    assert str(info.value) == (f"kafka admin of {BOOTSTRAP}: closed; committed_offsets needs "
                               "a new KafkaAdmin")
    assert FakeConsumer.instances == []


def test_close_leaves_the_clients_to_a_call_still_in_flight(admin: KafkaAdmin,
                                                            caplog: pytest.LogCaptureFixture,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.setattr(admin_module, "_KEPT", [])
    reader, call = _call_held_in_flight(admin)
    admin.close(timeout_s=0.05)
    assert admin._client.destroyed_by is None and "closed" not in reader.events
    assert admin_module.clients_kept() == 1  # held: never destroyed by the garbage collector
    assert f"kafka admin of {BOOTSTRAP}: 1 call(s) still in flight; its clients are not " \
           "destroyed now" in caplog.text
    reader.release.set()
    call.join(2)


@pytest.mark.parametrize("code", [KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.FENCED_LEADER_EPOCH])
def test_a_leader_epoch_the_broker_has_not_seen_yet_is_retried(admin: KafkaAdmin,
                                                               code: int) -> None:
    """Right after partitions are added a ListOffsets can meet a broker behind on the leader
    epoch (UNKNOWN_LEADER_EPOCH, not flagged retriable by librdkafka): retried, not raised;
    a non-transient error still raises at once."""
    failures = [KafkaException(KafkaError(code))] * 2

    def call() -> str:
        if failures:
            raise failures.pop()
        return "answered"

    assert admin._retry_retriable(call, "topic 'grow-me': list_offsets(latest)") == "answered"
    assert not failures
    with pytest.raises(BrokerError, match="list_offsets"):
        admin._retry_retriable(lambda: (_ for _ in ()).throw(
            KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))), "list_offsets")
