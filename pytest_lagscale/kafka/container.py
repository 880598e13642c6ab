"""Kafka in a container through testcontainers' Kafka module (needs a Docker engine)."""

from __future__ import annotations

from ..contract.errors import BrokerError
from ..lifecycle import StartStop

DEFAULT_IMAGE = "apache/kafka:4.3.1"


def docker_available() -> tuple[bool, str]:
    """Whether a Docker engine answers; returns (ok, reason when not)."""
    try:
        import docker  # testcontainers' dependency
    except ImportError:
        return False, "testcontainers is not installed (pip install 'pytest-lagscale[containers]')"
    try:
        docker.from_env().ping()
    except Exception as exc:  # DockerException: no socket, permission, engine down
        return False, f"no Docker engine answers ({type(exc).__name__}: {exc})"
    return True, ""


class ContainerKafka(StartStop):
    """A single-node KRaft broker in a container (testcontainers ``KafkaContainer``).

    Args:
        image: the Kafka image.

    Raises:
        BrokerError: from :meth:`start` when no Docker engine answers or the container fails.
    """

    kind = "testcontainers"

    def __init__(self, image: str = DEFAULT_IMAGE):
        self.image = image
        self.version = image.rsplit(":", 1)[-1]
        self.client_config: dict[str, str] = {}
        self.settings: dict[str, str] = {}
        self._container = None
        self.bootstrap_servers = ""

    def start(self) -> "ContainerKafka":
        ok, why = docker_available()
        if not ok:
            raise BrokerError(f"--kafka=testcontainers: {why}; use --kafka=embedded")
        from testcontainers.kafka import KafkaContainer

        self._container = KafkaContainer(self.image).with_kraft()
        try:
            self._container.start()
        except Exception as exc:
            self.stop()
            raise BrokerError(f"--kafka=testcontainers: {self.image!r} failed to start: "
                              f"{exc}") from exc
        self.bootstrap_servers = self._container.get_bootstrap_server()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop and remove the container. Idempotent."""
        if self._container is not None:
            self._container.stop()
            self._container = None
