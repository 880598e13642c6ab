"""Pure pieces of the foundation: clock, event log, Kafka pin parsing, cluster id, options."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal

import pytest

from pytest_lagscale.contract.clock import Clock, FakeClock, RealClock
from pytest_lagscale.contract.errors import BrokerError, ConfigError, LagscaleError, ReadinessTimeout
from pytest_lagscale.contract.eventlog import EventLog, read_events
from pytest_lagscale.kafka import artifacts, make_cluster
from pytest_lagscale.kafka.embedded import new_cluster_id
from pytest_lagscale.options import check_kafka_options, parse_kafka_config


def test_clocks_implement_the_protocol_and_fake_clock_only_moves_forward() -> None:
    assert isinstance(RealClock(), Clock) and isinstance(FakeClock(), Clock)
    clock = FakeClock(10.0)
    clock.sleep(2.5)
    assert clock.now() == 12.5
    with pytest.raises(ValueError, match=r"^seconds: -1 is negative; a clock only moves forward$"):
        clock.advance(-1)


def test_event_log_lines_carry_wall_and_monotonic_time(tmp_path) -> None:
    log = EventLog(tmp_path / "x" / "events.jsonl", source="platform", clock=FakeClock(3.25))
    log.emit("scaled", replicas_before=1, replicas_after=3)
    (tmp_path / "x" / "events.jsonl").open("a").write('{"torn": ')
    records = list(read_events(tmp_path / "x" / "events.jsonl"))
    assert len(records) == 1
    rec = records[0]
    assert rec["event"] == "scaled" and rec["source"] == "platform"
    assert rec["monotonic_s"] == 3.25 and rec["replicas_after"] == 3
    assert rec["wall_time"].endswith("+00:00") and rec["wall_ns"] > 0


class _SignalDuringWrite(io.StringIO):
    """A stream that sends this process SIGUSR1 from inside its first write and, like
    ``io.BufferedWriter``, raises ``RuntimeError`` on a re-entrant write."""

    def __init__(self) -> None:
        super().__init__()
        self._in_write, self._signalled = False, False

    def write(self, s: str) -> int:
        if self._in_write:
            raise RuntimeError("reentrant call inside _SignalDuringWrite")
        self._in_write = True
        try:
            n = super().write(s)
            if not self._signalled:
                self._signalled = True
                os.kill(os.getpid(), signal.SIGUSR1)  # the handler runs before kill returns
            return n
        finally:
            self._in_write = False


def test_event_log_emitted_from_a_signal_handler_mid_write_lands_after_the_interrupted_line(
        tmp_path) -> None:
    echo = _SignalDuringWrite()
    log = EventLog(tmp_path / "events.jsonl", source="r1", clock=FakeClock(1.0), echo=echo)
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: log.emit("sigterm"))
    try:
        log.emit("batch", records=10)
        log.emit("drained")
    finally:
        signal.signal(signal.SIGUSR1, previous)
        log.close()
    in_file = [r["event"] for r in read_events(tmp_path / "events.jsonl")]
    assert in_file == ["batch", "sigterm", "drained"]
    assert [json.loads(x)["event"] for x in echo.getvalue().splitlines()] == in_file


def test_pinned_kafka_version_is_read_from_the_committed_pom() -> None:
    assert artifacts.pinned_version() == "4.3.1"


def test_pom_without_version_property_is_a_clear_error(tmp_path) -> None:
    pom = tmp_path / "pom.xml"
    pom.write_text('<project xmlns="http://maven.apache.org/POM/4.0.0"><properties/></project>')
    with pytest.raises(BrokerError, match=r"^'.*pom.xml': no <kafka.version> property; add it "
                                          r"under <properties>$"):
        artifacts.pinned_version(pom)


def test_cluster_ids_are_22_char_urlsafe_and_never_start_with_dash() -> None:
    ids = {new_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") and "=" not in i for i in ids)


def test_error_hierarchy() -> None:
    assert issubclass(ConfigError, LagscaleError) and issubclass(ConfigError, ValueError)
    assert issubclass(ReadinessTimeout, TimeoutError)
    assert ConfigError(["a", "b"]).problems == ["a", "b"] and str(ConfigError(["a", "b"])) == "a\nb"


@pytest.mark.parametrize(
    ("kind", "bootstrap", "expected"),
    [
        pytest.param("embedded", None, None, id="embedded-ok"),
        pytest.param("external", "h:1", None, id="external-ok"),
        pytest.param("external", None, "--kafka=external needs --kafka-bootstrap HOST:PORT; add "
                     "it or use --kafka=embedded", id="external-missing-bootstrap"),
        pytest.param("testcontainers", "h:1", "--kafka-bootstrap is only used with "
                     "--kafka=external, not --kafka=testcontainers; add --kafka=external or drop "
                     "--kafka-bootstrap", id="bootstrap-with-testcontainers"),
    ],
)
def test_kafka_option_conflicts(kind, bootstrap, expected) -> None:
    assert check_kafka_options(kind, bootstrap) == expected


def test_kafka_config_parsing() -> None:
    assert parse_kafka_config("sasl.password=a=b") == ("sasl.password", "a=b")
    with pytest.raises(argparse.ArgumentTypeError):
        parse_kafka_config("=x")


def test_unknown_cluster_kind_names_the_option() -> None:
    with pytest.raises(ValueError, match=r"^--kafka: 'docker' is not one of embedded, "
                                         r"testcontainers, external$"):
        make_cluster("docker")
