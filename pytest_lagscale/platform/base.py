"""What the runner needs from "a Deployment that the autoscaler scales": the :class:`Platform`.

One module per implementation (``local``: replica processes on this machine; ``kubernetes``:
the real KEDA and HPA on a local control plane, docs/kubernetes.md), registered in
:data:`pytest_lagscale.platform.PLATFORMS`. The runner, the autoscaler and the scheduled actions
speak only this Protocol.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ReplicaView(Protocol):
    """One replica as the platform reports it (a pod).

    Attributes:
        replica_id: stable id in creation order (``replica-0001``, ...).
        ready: its readiness probe passed and it is not terminating.
    """

    replica_id: str
    ready: bool


@runtime_checkable
class Platform(Protocol):
    """A scaled Deployment of consumer replicas.

    Replica counts follow Kubernetes: ``desired_replicas`` is ``spec.replicas``,
    ``current_replicas`` the replicas that exist and are not terminating (``status.replicas``),
    ``ready_replicas`` those whose readiness probe passed.
    """

    desired_replicas: int
    current_replicas: int
    ready_replicas: int

    def start(self) -> Any:
        """Begin managing replicas (none run until :meth:`scale`); returns self."""

    def stop(self, timeout_s: float | None = None) -> None:
        """Terminate every replica (grace period each) and release everything. Idempotent."""

    def scale(self, replicas: int) -> None:
        """Set ``spec.replicas``; replicas start or terminate (newest first) asynchronously.

        Raises:
            ConfigError: ``replicas`` is negative.
            ReplicaError: a replica cannot be started.
        """

    def replicas(self) -> list[Any]:
        """The live (non-terminating) replicas, oldest first (each a :class:`ReplicaView`)."""

    def metrics_targets(self) -> list[str]:
        """``host:port`` of each live replica's ``/metrics`` (Prometheus file discovery)."""

    def wait_ready(self, n: int, within_s: float) -> float:
        """Block until ``n`` replicas are ready; returns seconds waited.

        Raises:
            ReplicaError: not ready within ``within_s`` seconds.
        """

    def wait_terminated(self, within_s: float) -> None:
        """Block until every termination in progress ended (bounded by ``within_s`` seconds)."""

    def kill_replica(self, replica_id: str, signum: int) -> None:
        """Send ``signum`` to one replica (a pod's container getting a signal); the Deployment
        replaces it if it exits.

        Raises:
            ConfigError: no live replica has ``replica_id``.
        """
