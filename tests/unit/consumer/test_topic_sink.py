"""--sink topic: the batch's records on the output topic (a fake producer), and the flags."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_lagscale.config._problems import Problems
from pytest_lagscale.config.replica_args import collect_replica_args
from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.contract.output_topic import parse_input_headers
from spark_consumer.dimension import load_dimension
from spark_consumer.engine import make_engine
from spark_consumer.metrics import ReplicaMetrics
from spark_consumer.options import DEFAULT_DIMENSION, parse_options
from spark_consumer.pipeline import BatchProcessor, WriteSimulator
from spark_consumer.topic_sink import SinkError, TopicSink

from .fakes import messages, wall_ns_from


class FakeProducer:
    """Records produce() calls; delivers them at flush() (with ``fail`` as every error)."""

    def __init__(self, config: dict[str, Any], fail: str | None = None, full_every: int = 0):
        self.config, self.fail, self.full_every = config, fail, full_every
        self.queued: list[dict[str, Any]] = []
        self.delivered: list[dict[str, Any]] = []
        self.calls = 0

    def produce(self, topic: str, value: bytes, *, headers: Any, timestamp: int,
                on_delivery: Any) -> None:
        self.calls += 1
        if self.full_every and self.calls % self.full_every == 0:
            raise BufferError("queue full")
        self.queued.append({"topic": topic, "value": value, "headers": headers,
                            "timestamp": timestamp, "cb": on_delivery})

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        for record in self.queued:
            record.pop("cb")(self.fail, record)
            self.delivered.append(record)
        self.queued = []
        return 0


def _sink(**fake: Any) -> tuple[TopicSink, list[FakeProducer]]:
    made: list[FakeProducer] = []

    def make(config: dict[str, Any]) -> FakeProducer:
        made.append(FakeProducer(config, **fake))
        return made[-1]

    return TopicSink("kafka:9092", "events-out", "r-1", make_producer=make), made


def _processor(sink: TopicSink, clock: FakeClock) -> BatchProcessor:
    engine = make_engine("arrow", load_dimension(DEFAULT_DIMENSION))
    return BatchProcessor(engine, sink, WriteSimulator(5.0, 2, clock, wall_ns_from(clock)),
                          ReplicaMetrics(FakeClock()), clock, wall_ns=wall_ns_from(clock))


def test_a_batch_is_on_the_output_topic_with_its_input_coordinates_before_it_returns() -> None:
    clock = FakeClock()
    sink, made = _sink(full_every=3)  # every third produce() finds the queue full once
    out = _processor(sink, clock).process(messages([(0, 10), (1, 4), (0, 11)]), lambda: False)
    producer = made[0]
    assert producer.config["enable.idempotence"] is True and producer.config["acks"] == "all"
    assert out.offsets == {0: 12, 1: 5} and producer.queued == []  # flushed: all delivered
    assert [parse_input_headers(r["headers"]) for r in producer.delivered] == [
        (0, 10), (1, 4), (0, 11)]
    rows = [json.loads(r["value"]) for r in producer.delivered]
    assert [(r["partition"], r["offset"], r["replica_id"]) for r in rows] == [
        (0, 10, "r-1"), (1, 4, "r-1"), (0, 11, "r-1")]
    assert {r["topic"] for r in producer.delivered} == {"events-out"}
    assert [r["timestamp"] for r in producer.delivered] == [
        r["written_at_ns"] // 1_000_000 for r in rows]
    sink.close()


def test_a_failed_delivery_fails_the_batch_so_nothing_of_it_is_committed() -> None:
    sink, _ = _sink(fail="Broker: Unknown topic or partition")
    with pytest.raises(SinkError, match="2 of 2 records not delivered.*Unknown topic"):
        _processor(sink, FakeClock()).process(messages([(0, 0), (0, 1)]), lambda: False)


BASE = ["--bootstrap", "k:9092", "--store", "/tmp/store"]


@pytest.mark.parametrize("argv, env, problem", [
    (["--sink", "topic"], {}, "--output-topic: missing with --sink topic; pass --output-topic "
                              "NAME or set LAGSCALE_OUTPUT_TOPIC"),
    (["--output-topic", "out"], {}, "--output-topic: 'out' is only valid with --sink topic, "
                                    "not 'parquet'; drop --output-topic or pass --sink topic"),
    (["--sink", "kafka"], {}, "--sink: 'kafka' is not one of parquet, topic; pass one of those"),
    ([], {"LAGSCALE_SINK": "topic"}, "--output-topic: missing with --sink topic; pass "
                                     "--output-topic NAME or set LAGSCALE_OUTPUT_TOPIC"),
])
def test_sink_flags_are_checked_before_anything_starts(argv, env, problem) -> None:
    with pytest.raises(ConfigError) as info:
        parse_options(BASE + argv, env=env)
    assert info.value.problems == [problem]


def test_sink_defaults_to_parquet_and_takes_the_topic_from_flag_or_env() -> None:
    opts = parse_options(BASE, env={})
    assert (opts.sink, opts.output_topic) == ("parquet", None)
    opts = parse_options(BASE + ["--sink", "topic"], env={"LAGSCALE_OUTPUT_TOPIC": "out"})
    assert (opts.sink, opts.output_topic) == ("topic", "out")


def test_the_deployment_check_refuses_an_output_topic_without_the_topic_sink() -> None:
    argv = ["python", "-m", "spark_consumer", "--bootstrap=k:9092", "--topic=events",
            "--group=enrich", "--balancer=range", "--process-ms=5", "--inflight=10",
            "--commit=manual", "--drain-timeout=25", "--metrics-port=9400", "--store=/data"]
    p = Problems("deploy.yaml")
    assert collect_replica_args([*argv, "--sink=topic", "--output-topic=out"], "args", p)
    assert p.lines == []
    assert collect_replica_args([*argv, "--output-topic=out"], "args", p) is None
    assert len(p.lines) == 1 and "args[--output-topic]" in p.lines[0]
    assert "drop --output-topic or pass --sink topic" in p.lines[0]
