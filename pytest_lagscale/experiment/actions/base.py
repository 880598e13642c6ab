"""What a scheduled action is: a :class:`ScheduledAction` run at a time of the run, given an
:class:`ActionContext` (the run's parts) and returning the fields of its ``action`` event.

One module per action, registered in :data:`pytest_lagscale.experiment.actions.ACTIONS`.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Protocol, runtime_checkable


@dataclass(frozen=True)
class PlanFacts:
    """What an action's parameters are checked against when the run is planned.

    Attributes:
        partitions: the topic's partition count at the load start.
        max_partitions: the most partitions the topic may have (1024).
    """

    partitions: int
    max_partitions: int = 1024


@dataclass
class ActionContext:
    """The run's live parts, as an action sees them.

    Attributes:
        admin: a :class:`~pytest_lagscale.kafka.admin.KafkaAdmin` of the run's broker.
        topic: the run's topic; group: its consumer group.
        platform: the scaled Deployment (:class:`~pytest_lagscale.platform.base.Platform`).
        autoscaler: the running :class:`~pytest_lagscale.platform.autoscaler.LocalAutoscaler`.
        cluster: the Kafka cluster provider.
        build_policy: ``build_policy(ref) -> ScalingPolicy`` for a policy name or YAML path.
        now_s: the runner's clock reading (monotonic seconds).
        stopping: set when the scheduler stops (the run stopped settling, or is stopping);
            an action that takes long waits on it and returns what it did so far.
        events: the runner's event log, for an action's own events (set by the scheduler).
        prometheus: the run's :class:`~pytest_lagscale.observe.prometheus.PrometheusServer`.
        watch: the run's :class:`~pytest_lagscale.experiment.watch.PartWatch` (an action that
            stops a part on purpose says so through ``watch.expected_down(name)``).
    """

    admin: Any
    topic: str
    group: str
    platform: Any
    autoscaler: Any
    cluster: Any
    build_policy: Callable[[str], Any]
    now_s: Callable[[], float]
    stopping: threading.Event = field(default_factory=threading.Event)
    events: Any = None
    prometheus: Any = None
    watch: Any = None


@runtime_checkable
class ScheduledAction(Protocol):
    """An action at a time of the run.

    ``name`` is its key in profiles (``action: increase_partitions``); :meth:`from_params`
    checks the entry's parameters when the run is planned (nothing is started yet). An action
    that takes long (tens of seconds) sets the class attribute ``background = True``: it then
    runs in its own thread, so the actions after it keep their times.
    """

    name: ClassVar[str]

    @classmethod
    def from_params(cls, params: Mapping[str, Any], where: str,
                    facts: PlanFacts) -> "ScheduledAction":
        """Build from a profile entry's parameters.

        Raises:
            ConfigError: one line per bad or unknown parameter, naming ``where`` (e.g.
                ``actions[0].to``), the value and the allowed range.
        """

    def label(self) -> str:
        """Short text for the timeline PNG and summaries, e.g. ``increase_partitions to=16``."""

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        """Do it; returns the fields of its ``action`` event. Raises on failure."""


class ParamsChecked:
    """Mixin for actions (frozen dataclasses whose fields are their parameters):
    :meth:`from_params` = unknown parameters + :meth:`check_params` (the action's own rules) +
    construction, all problems reported together."""

    @classmethod
    def param_names(cls) -> tuple[str, ...]:
        """The parameters the action takes: its dataclass fields."""
        import dataclasses

        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def from_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> Any:
        problems = unknown_params(params, cls.param_names(), where)
        problems += cls.check_params(params, where, facts)
        if problems:
            from ...contract.errors import ConfigError

            raise ConfigError(problems)
        return cls(**params)

    @classmethod
    def check_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> list[str]:
        """One problem line per bad parameter value."""
        return []


def unknown_params(params: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> list[str]:
    """One problem line per parameter not in ``allowed``."""
    return [f"{where}.{key}: {value!r} is not a parameter of this action; allowed: "
            f"{', '.join(allowed) or 'none'}; remove it" for key, value in params.items()
            if key not in allowed]


#: The longest fault an action may inject, seconds.
MAX_FAULT_S = 3600.0


def check_duration(params: Mapping[str, Any], where: str, key: str = "duration_s",
                   default: float | None = None, lo: float = 0.1) -> list[str]:
    """One problem line when ``params[key]`` is not a number in [``lo``, :data:`MAX_FAULT_S`]
    seconds (missing: fine when ``default`` is given)."""
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not lo <= value <= MAX_FAULT_S:
        return [f"{where}.{key}: {value!r} is not allowed; allowed: a number of seconds in "
                f"[{lo:g}, {MAX_FAULT_S:g}]; set '{key}'"]
    return []


def hold_stopped(process: Any, duration_s: float, stopping: threading.Event) -> float:
    """SIGSTOP ``process``'s group, wait ``duration_s`` (less when the run stops), SIGCONT it
    whatever happens; returns the seconds it was stopped. A fault action's body."""
    started = time.monotonic()
    process.signal(signal.SIGSTOP)
    try:
        stopping.wait(duration_s)
    finally:
        process.signal(signal.SIGCONT)
    return round(time.monotonic() - started, 3)


def broker_process(ctx: "ActionContext", action: str) -> Any:
    """The run's embedded broker's process, or a ConfigError naming ``action``."""
    from ...contract.errors import ConfigError

    process = getattr(ctx.cluster, "process", None)
    if process is None or not hasattr(ctx.cluster, "restart"):
        raise ConfigError(f"{action}: needs the run's own embedded broker (--kafka embedded); "
                          f"this run's broker is {getattr(ctx.cluster, 'kind', 'not embedded')}")
    return process
