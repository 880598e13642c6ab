"""pytest glue for pytest-lagscale: options, markers, fixtures. Nothing else lives here.

Heavy libraries (confluent_kafka, pyspark, matplotlib, kubernetes) are imported only inside
fixtures, so loading the plugin costs nothing for projects that do not use it.
"""

from __future__ import annotations

import signal
import threading
from typing import Iterator

import pytest

from . import options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lagscale", "lag-based autoscaling experiments (pytest-lagscale)")
    options.add_kafka_options(group.addoption)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    problem = options.check_kafka_options(config.getoption("kafka"),
                                          config.getoption("kafka_bootstrap"))
    if problem:
        raise pytest.UsageError(problem)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: uses the embedded broker and real local "
                                       "processes")
    config.addinivalue_line("markers", "acceptance: a full experiment run with SLO assertions")
    config.addinivalue_line("markers", "experiment(n): the DESIGN.md experiment number n (1-8)")
    if threading.current_thread() is threading.main_thread():
        # SIGTERM (CI timeout, `kill`) must run fixture finalizers like Ctrl-C does, so no
        # broker or replica outlives the session.
        def _sigterm(signum: int, frame: object) -> None:
            raise KeyboardInterrupt("SIGTERM")

        signal.signal(signal.SIGTERM, _sigterm)


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[object]:
    """A running Kafka cluster for the session, chosen by ``--kafka``.

    Yields an object with ``bootstrap_servers``, ``client_config``, ``kind``, ``version`` and
    ``settings`` (see :class:`pytest_lagscale.kafka.base.KafkaCluster`). ``--kafka=testcontainers``
    skips when no Docker engine answers, naming the reason.
    """
    from .kafka import make_cluster

    kind = request.config.getoption("kafka")
    if kind == "testcontainers":
        from .kafka.container import docker_available

        ok, why = docker_available()
        if not ok:
            pytest.skip(f"--kafka=testcontainers: {why}")
    cluster = make_cluster(kind, request.config.getoption("kafka_bootstrap"),
                           dict(request.config.getoption("kafka_config")))
    request.addfinalizer(cluster.stop)
    cluster.start()
    yield cluster
