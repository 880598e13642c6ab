"""The twin's parameters: :class:`TwinParams`, from a versioned calibration file and a Deployment.

A calibration file (``pytest_lagscale/data/twin/<engine>.yaml``, and one per machine image in
``machines/<kernel release>/``: :func:`calibration_path`) holds what depends on the engine and
the machine, extracted from real runs by ``lagscale twin calibrate`` (docs/twin.md)::

    schema_version: 1
    engine: spark
    machine: {cores: 2, description: "...", release: 6.18.44-fc-v657}  # release: optional
    source_runs: [20261123T051559Z-spike-ci, ...]     # run directories the numbers came from
    processing:
      per_batch_engine_s: 0.237    # one member, nothing starting
      engine_s_per_member: 0.036   # optional (default 0): + per further member
      engine_s_per_starting: 0.189 # optional (default 0): + per replica starting ...
      starting_delay_s: 3.5        # optional (default 0): ... this long after its start
      warmup_extra: 1.4            # optional (default 0): batch k x (1 + this x e^-(k-1)/...)
      warmup_batches: 2.4          # optional: ... this
    cold_start: {alone_s: 5.49, cores: 1.42, jitter: 0.15, member_load: 0.13}  # load: optional
    group: {subscribe_s: 0.03, first_fetch_s: 0.66, drain_s: 0.2, exit_s: 1.09,
            round_s: {eager: 0.84, cooperative: 0.84}, heartbeat_s: 1.0, idle_poll_s: 1.06}
    cpu: {idle_millicores: 6, cpu_s_per_1000_records: 0.033}  # optional: for CPU policies
    run_to_run: {cold_start_sd: 0.2, engine_sd: 0.3, engine_on_cold_start: 0.8, probe_sd: 0.1}
    controller: {lead_extra_min_s: 0.1, lead_extra_max_s: 0.6, slip_s: 0.018,
                 slip_s_per_starting: 0.022, slip_s_per_member: 0.008}  # optional

Optional keys default to what a file without them meant (constant engine time, starts slowed
by others only, no CPU model, one machine speed in every draw, the controller's phase over its
periods, no slip, a batch at once on the first records); the run's own inputs (per-record time,
max batch, trigger interval, probe period, balancer) come from the Deployment (:func:`twin_params`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from ..config._problems import MISSING, Problems, join
from ..config._read import load_yaml, mapping
from ..contract.errors import ConfigError

SCHEMA_VERSION = 1
ENGINES = ("spark", "arrow")
#: replica ``--balancer`` -> group protocol the twin models.
PROTOCOLS: dict[str, str] = {"range": "eager", "roundrobin": "eager",
                             "cooperative-sticky": "cooperative", "consumer": "consumer"}
_TOP_KEYS = ("schema_version", "engine", "machine", "source_runs", "processing", "cold_start",
             "group", "cpu", "run_to_run", "controller")


@dataclass(frozen=True)
class TwinParams:
    """Everything the twin's world needs besides the load and the policy.

    Attributes:
        engine: ``spark`` or ``arrow``.
        per_record_ms: simulated write per record, ms (``--process-ms`` / ``--inflight``).
        per_batch_engine_s: the engine's fixed time per micro-batch with one member and
            nothing starting, seconds.
        engine_s_per_member: seconds the fixed time grows per further member (CPU contention).
        engine_s_per_starting: seconds it grows per replica starting (a JVM start is CPU-bound).
        engine_starting_delay_s: seconds after its ``replica_started`` from which a starting
            replica counts in :attr:`engine_s_per_starting` (its first seconds load the
            machine little: docs/twin.md); 0: from its start.
        engine_warming_s: seconds after its engine start during which a member is warming
            (it loads the others more than a settled member: docs/twin.md); 0: none.
        engine_s_per_warming: seconds the fixed time grows per other member that is warming,
            beyond :attr:`engine_s_per_member` (which it also counts in).
        engine_warmup_extra: a replica's warm-up (JIT): its k-th batch's engine time is x
            ``1 + engine_warmup_extra x exp(-(k - 1) / engine_warmup_batches)``; 0: none.
        engine_warmup_batches: the warm-up's decay, in batches (> 0).
        max_batch_records: most records per micro-batch (``--max-batch``).
        trigger_interval_s: shortest time between batch starts (``--trigger-interval``), s.
        cold_start_alone_s: replica_started -> engine ready of one replica starting alone on an
            idle machine, seconds (CPU-bound work).
        cold_start_cores: cores the starting replicas share: each of n concurrent starters
            progresses at ``min(1, cores / n)`` of its alone speed.
        cold_start_jitter: relative standard deviation of one start's work (lognormal).
        cold_start_member_load: a member's CPU demand in starters: each of n starters with m
            members progresses at ``min(1, cores / (n + member_load x m))``.
        subscribe_s: engine ready -> ``subscribed``, seconds.
        round_s: classic protocol (eager, cooperative) join/sync round after the last member
            reached its batch boundary, seconds, by protocol.
        heartbeat_s: KIP-848 heartbeat interval, seconds.
        first_fetch_s: an assigned partition's first fetch (assigned -> first record), s.
        drain_s: SIGTERM -> revoked and left the group (graceful), seconds.
        idle_poll_s: an idle replica's poll slice, seconds: the first records after a time with
            nothing to fetch start a batch when the slice they arrived in ends (0: at once).
        exit_s: SIGTERM -> the process is gone (``replica_stopped``), seconds.
        probe_period_s: readiness probe period, seconds.
        balancer: the replicas' ``--balancer``.
        cpu_idle_millicores: a live replica's CPU usage with nothing to process, millicores
            (None: the calibration has no ``cpu`` section; CPU-scaled policies are refused).
        cpu_s_per_1000_records: CPU seconds a replica spends per 1,000 records processed.
        cpu_request_millicores: the Deployment's CPU request, millicores (None when unset).
        run_cold_start_sd: standard deviation of a run's log start-up factor (the machine's
            speed from run to run; the per-start ``cold_start_jitter`` is then within a run).
        run_engine_sd: standard deviation of a run's log engine-time factor.
        run_engine_on_cold_start: slope of a run's log engine factor on its log start-up
            factor (a slow start-up comes with slow batches on a busy machine).
        run_probe_sd: standard deviation of a machine probe's log start-up factor about its
            run's (the run's starts after the probe): a one-start probe's measurement error.
        controller_lead_extra_s: ``(low, high)`` seconds the load starts after the policy's
            first decide beyond ``first_decision_within_s`` + the runner's pre-load scrapes,
            drawn uniformly per draw (``calibration/controller.py``); None: the phase is drawn
            over the policy's periods (``twin/run.py``).
        controller_slip_s: seconds a due controller step runs late on an idle machine.
        controller_slip_s_per_starting: ... more per replica starting.
        controller_slip_s_per_member: ... more per member.
        machine_log_factor: the run's log start-up factor when it is known (a machine probe
            or the run's own cold starts); None: each draw draws one (:func:`machine_draw`).
        machine_log_factor_sd: the measurement error (sd) of a known
            :attr:`machine_log_factor`: 0 takes it as exact; a probe's is
            :attr:`run_probe_sd`, and each draw then draws the factor from its posterior.
        source: the calibration file.
        source_runs: run directories the calibration came from.
        machine: the machine the calibration was measured on.
    """

    engine: str
    per_record_ms: float
    per_batch_engine_s: float
    max_batch_records: int
    trigger_interval_s: float
    cold_start_alone_s: float
    cold_start_cores: float
    cold_start_jitter: float
    subscribe_s: float
    round_s: Mapping[str, float]
    heartbeat_s: float
    first_fetch_s: float
    drain_s: float
    exit_s: float
    idle_poll_s: float = 0.0
    probe_period_s: float = 2.0
    engine_s_per_member: float = 0.0
    engine_s_per_starting: float = 0.0
    engine_starting_delay_s: float = 0.0
    engine_warming_s: float = 0.0
    engine_s_per_warming: float = 0.0
    engine_warmup_extra: float = 0.0
    engine_warmup_batches: float = 1.0
    cold_start_member_load: float = 0.0
    balancer: str = "cooperative-sticky"
    cpu_idle_millicores: float | None = None
    cpu_s_per_1000_records: float = 0.0
    cpu_request_millicores: int | None = None
    run_cold_start_sd: float = 0.0
    run_engine_sd: float = 0.0
    run_engine_on_cold_start: float = 0.0
    run_probe_sd: float = 0.0
    controller_lead_extra_s: tuple[float, float] | None = None
    controller_slip_s: float = 0.0
    controller_slip_s_per_starting: float = 0.0
    controller_slip_s_per_member: float = 0.0
    machine_log_factor: float | None = None
    machine_log_factor_sd: float = 0.0
    source: str = ""
    source_runs: tuple[str, ...] = ()
    machine: Mapping[str, Any] = field(default_factory=dict)

    @property
    def protocol(self) -> str:
        """``eager``, ``cooperative`` or ``consumer`` (KIP-848), from :attr:`balancer`."""
        return PROTOCOLS[self.balancer]

    def engine_s(self, members: int = 1, starting: int = 0, batch: int | None = None,
                 warming: int = 0) -> float:
        """The engine's fixed seconds per batch with ``members`` replicas past their engine
        start (at least 1: the batch's own), ``warming`` of the others less than
        :attr:`engine_warming_s` past it, and ``starting`` replicas starting; of the replica's
        ``batch``-th batch (1 = its first: the warm-up factor), or warm (None)."""
        warm = (self.per_batch_engine_s + self.engine_s_per_member * max(0, members - 1)
                + self.engine_s_per_starting * max(0, starting)
                + self.engine_s_per_warming * max(0, warming))
        return warm * self.warmup_factor(batch)

    def warmup_factor(self, batch: int | None) -> float:
        """``1 + engine_warmup_extra x exp(-(batch - 1) / engine_warmup_batches)``; 1 for a
        warm replica (None) or without a warm-up."""
        if batch is None or not self.engine_warmup_extra:
            return 1.0
        return 1.0 + self.engine_warmup_extra * math.exp(-(max(1, batch) - 1)
                                                          / self.engine_warmup_batches)

    def batch_s(self, records: int, members: int = 1, starting: int = 0,
                batch: int | None = None) -> float:
        """Seconds one batch of ``records`` takes: engine time + records x per-record time."""
        return self.engine_s(members, starting, batch) + records * self.per_record_ms / 1000.0

    def controller_slip(self, members: int, starting: int) -> float:
        """Seconds a due controller step runs late with ``members`` and ``starting`` replicas:
        ``controller_slip_s + controller_slip_s_per_starting x starting +
        controller_slip_s_per_member x members``."""
        return (self.controller_slip_s + self.controller_slip_s_per_starting * starting
                + self.controller_slip_s_per_member * members)

    @property
    def models_cpu(self) -> bool:
        """The calibration has a CPU model and the Deployment requests CPU."""
        return self.cpu_idle_millicores is not None and bool(self.cpu_request_millicores)

    @property
    def varies_by_run(self) -> bool:
        """A draw changes the machine's speed (:func:`machine_draw` has something to do)."""
        return bool(self.run_cold_start_sd or self.run_engine_sd
                    or self.machine_log_factor is not None)

    @property
    def machine_log_factor_mean(self) -> float | None:
        """The known machine factor's posterior mean (see :func:`machine_draw`), or None."""
        m, s, sd = self.machine_log_factor, self.machine_log_factor_sd, self.run_cold_start_sd
        if m is None or s <= 0:
            return m
        return m * sd ** 2 / (sd ** 2 + s ** 2)

    @property
    def capacity_per_s(self) -> float:
        """Records/s of one saturated replica (full batches back to back)."""
        return self.max_batch_records / self.batch_s(self.max_batch_records)


#: The bundled calibrations (``data/twin/<engine>.yaml`` and ``machines/<release>/``).
_TWIN_DATA = Path(str(resources.files("pytest_lagscale") / "data" / "twin"))


def calibration_path(engine: str, release: str | None = None) -> Path:
    """The bundled calibration file of ``engine``: the one measured on the machine image
    ``release`` (a kernel release as a run records it, ``machine_info.release``) when the
    project has one (``data/twin/machines/<release>/<engine>.yaml``,
    :func:`machine_calibrations`), else the default ``data/twin/<engine>.yaml``.

    Raises:
        ConfigError: no calibration is bundled for ``engine``.
    """
    if engine not in ENGINES:
        raise ConfigError(f"--engine: got {engine!r}, expected one of {', '.join(ENGINES)} "
                          "(the engines the twin has a calibration for); pick one of them")
    return machine_calibrations(engine).get(release or "", _TWIN_DATA / f"{engine}.yaml")


def machine_calibrations(engine: str) -> dict[str, Path]:
    """``{release: path}`` of the bundled calibrations of ``engine`` measured on one machine
    image each (``data/twin/machines/<release>/<engine>.yaml``; the folder's name is the
    kernel release its runs recorded, ``machine.release`` in the file). Adding one is one file:
    ``lagscale twin calibrate`` of runs of that image, written there."""
    folder = _TWIN_DATA / "machines"
    if not folder.is_dir():
        return {}
    return {path.parent.name: path for path in sorted(folder.glob(f"*/{engine}.yaml"))}


def calibrated_releases() -> set[str]:
    """Every machine image (kernel release) some bundled calibration was measured on: the
    per-image files' and the default files' ``machine.release``."""
    releases = {release for engine in ENGINES for release in machine_calibrations(engine)}
    return releases | {load_calibration(calibration_path(engine))["machine"].get("release")
                       for engine in ENGINES} - {None}


def _number(node: Mapping[str, Any], key: str, path: str, p: Problems, lo: float, hi: float,
            unit: str, *, lo_open: bool = False) -> float:
    value = node.get(key, MISSING)
    sub = join(path, key)
    allowed = f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}] {unit}".rstrip()
    if value is MISSING:
        p.add(sub, value, allowed, f"add '{sub}'")
        return math.nan
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < lo or value > hi or (lo_open and value == lo):
        p.add(sub, value, allowed, f"set '{sub}' within the range")
        return math.nan
    return float(value)


def _optional(node: Mapping[str, Any], key: str, path: str, p: Problems, hi: float,
              unit: str) -> float:
    """An optional number in [0, hi] (0 when absent)."""
    return _number(node, key, path, p, 0, hi, unit) if key in node else 0.0


def _section(doc: Mapping[str, Any], key: str, known: tuple[str, ...],
             p: Problems) -> Mapping[str, Any]:
    node = mapping(doc.get(key, {}), key, p) or {}
    p.unknown_keys(node, key, known)
    return node


def _header(doc: Mapping[str, Any], p: Problems) -> tuple[str, tuple[str, ...], Mapping[str, Any]]:
    if doc.get("schema_version", MISSING) != SCHEMA_VERSION:
        p.add("schema_version", doc.get("schema_version", MISSING), f"{SCHEMA_VERSION}",
              f"write 'schema_version: {SCHEMA_VERSION}' (the only version this twin reads)")
    engine = doc.get("engine", MISSING)
    if engine not in ENGINES:
        p.add("engine", engine, f"one of {', '.join(ENGINES)}", "name the calibrated engine")
    runs = doc.get("source_runs", MISSING)
    if not isinstance(runs, list) or not runs or not all(isinstance(r, str) for r in runs):
        p.add("source_runs", runs, "a non-empty list of run directory names",
              "list the runs the numbers came from")
        runs = []
    machine = mapping(doc.get("machine", MISSING), "machine", p) or {}
    return str(engine), tuple(runs), dict(machine)


def parse_calibration(doc: Any, *, source: str = "<calibration>") -> dict[str, Any]:
    """Check a calibration document and return its values as :class:`TwinParams` keywords.

    Raises:
        ConfigError: every bad or missing value (key path, value, allowed range), unknown keys.
    """
    p = Problems(source)
    doc = mapping(doc, "", p) or {}
    p.unknown_keys(doc, "", _TOP_KEYS)
    engine, runs, machine = _header(doc, p)
    proc = _section(doc, "processing", ("per_batch_engine_s", "engine_s_per_member",
                                        "warmup_extra", "warmup_batches",
                                        "engine_s_per_starting", "starting_delay_s",
                                        "warming_s", "engine_s_per_warming"), p)
    cold = _section(doc, "cold_start", ("alone_s", "cores", "jitter", "member_load"), p)
    group = _section(doc, "group", ("subscribe_s", "first_fetch_s", "drain_s", "exit_s",
                                     "round_s", "heartbeat_s", "idle_poll_s"), p)
    cpu = _section(doc, "cpu", ("idle_millicores", "cpu_s_per_1000_records"), p)
    runs_sd = _section(doc, "run_to_run", ("cold_start_sd", "engine_sd", "engine_on_cold_start",
                                           "probe_sd"), p)
    ctl = _section(doc, "controller", ("lead_extra_min_s", "lead_extra_max_s", "slip_s",
                                       "slip_s_per_starting", "slip_s_per_member"), p)
    rounds = mapping(group.get("round_s", {}), "group.round_s", p) or {}
    p.unknown_keys(rounds, "group.round_s", ("eager", "cooperative"))
    values = dict(
        engine=engine, source=source, source_runs=runs, machine=machine,
        per_batch_engine_s=_number(proc, "per_batch_engine_s", "processing", p, 0, 60, "s"),
        cold_start_alone_s=_number(cold, "alone_s", "cold_start", p, 0, 600, "s"),
        cold_start_cores=_number(cold, "cores", "cold_start", p, 0, 1024, "cores", lo_open=True),
        engine_s_per_member=_optional(proc, "engine_s_per_member", "processing", p, 60, "s"),
        engine_s_per_starting=_optional(proc, "engine_s_per_starting", "processing", p, 60,
                                        "s"),
        engine_starting_delay_s=_optional(proc, "starting_delay_s", "processing", p, 600, "s"),
        engine_warming_s=_optional(proc, "warming_s", "processing", p, 3600, "s"),
        engine_s_per_warming=_optional(proc, "engine_s_per_warming", "processing", p, 60, "s"),
        engine_warmup_extra=_optional(proc, "warmup_extra", "processing", p, 100,
                                      "(extra fraction of the first batch)"),
        engine_warmup_batches=(_number(proc, "warmup_batches", "processing", p, 0, 1000,
                                       "batches", lo_open=True)
                               if "warmup_batches" in proc else 1.0),
        cold_start_jitter=_number(cold, "jitter", "cold_start", p, 0, 1, "(relative sd)"),
        cold_start_member_load=_optional(cold, "member_load", "cold_start", p, 64,
                                         "(starters per member)"),
        subscribe_s=_number(group, "subscribe_s", "group", p, 0, 60, "s"),
        first_fetch_s=_number(group, "first_fetch_s", "group", p, 0, 60, "s"),
        drain_s=_number(group, "drain_s", "group", p, 0, 600, "s"),
        exit_s=_number(group, "exit_s", "group", p, 0, 600, "s"),
        heartbeat_s=_number(group, "heartbeat_s", "group", p, 0, 60, "s", lo_open=True),
        idle_poll_s=_optional(group, "idle_poll_s", "group", p, 60, "s"),
        round_s={proto: _number(rounds, proto, "group.round_s", p, 0, 60, "s")
                 for proto in ("eager", "cooperative")},
        run_cold_start_sd=_optional(runs_sd, "cold_start_sd", "run_to_run", p, 2,
                                    "(sd of a log factor)"),
        run_engine_sd=_optional(runs_sd, "engine_sd", "run_to_run", p, 2, "(sd of a log factor)"),
        run_engine_on_cold_start=_optional(runs_sd, "engine_on_cold_start", "run_to_run", p, 4,
                                           "(slope)"),
        run_probe_sd=_optional(runs_sd, "probe_sd", "run_to_run", p, 2, "(sd of a log factor)"),
        controller_slip_s=_optional(ctl, "slip_s", "controller", p, 10, "s"),
        controller_slip_s_per_starting=_optional(ctl, "slip_s_per_starting", "controller", p, 10,
                                                 "s"),
        controller_slip_s_per_member=_optional(ctl, "slip_s_per_member", "controller", p, 10,
                                               "s"))
    if values["engine_s_per_warming"] and not values["engine_warming_s"]:
        p.add("processing.warming_s", proc.get("warming_s", MISSING),
              "a number > 0 with engine_s_per_warming",
              "give both keys (lagscale twin calibrate writes them together) or neither")
    if ctl:
        low = _number(ctl, "lead_extra_min_s", "controller", p, 0, 60, "s")
        high = _number(ctl, "lead_extra_max_s", "controller", p, 0, 60, "s")
        if high < low:
            p.add("controller.lead_extra_max_s", high, f"a number >= lead_extra_min_s ({low:g})",
                  "give the range low to high")
        values["controller_lead_extra_s"] = (low, high)
    if cpu:
        values.update(
            cpu_idle_millicores=_number(cpu, "idle_millicores", "cpu", p, 0, 64_000,
                                        "millicores"),
            cpu_s_per_1000_records=_number(cpu, "cpu_s_per_1000_records", "cpu", p, 0, 1000,
                                           "CPU seconds"))
    p.raise_if_any()
    return values


def load_calibration(path: str | Path) -> dict[str, Any]:
    """Read and check a calibration file (see :func:`parse_calibration`).

    Raises:
        ConfigError: unreadable file, bad YAML or any bad value.
    """
    return parse_calibration(load_yaml(path), source=str(path))


def twin_params(deployment: Any, *, engine: str | None = None, balancer: str | None = None,
                trigger_interval_s: float | None = None,
                calibration: str | Path | None = None, release: str | None = None) -> TwinParams:
    """The twin's parameters for a Deployment: its replica flags plus the engine's calibration.

    Args:
        deployment: a :class:`~pytest_lagscale.config.deployment.DeploymentConfig`.
        engine: overrides the Deployment's ``--engine``.
        balancer: overrides its ``--balancer``.
        trigger_interval_s: overrides its ``--trigger-interval`` (seconds).
        calibration: a calibration file; default: the bundled one of the engine for the
            machine image ``release`` (:func:`calibration_path`).
        release: the kernel release of the machine the run is on (``machine_info.release``);
            None: the engine's default calibration.

    Raises:
        ConfigError: no calibration for the engine, a bad calibration file, or a balancer the
            twin does not model.
    """
    from ..contract.flags import FLAG_BY_OPTION

    replica = deployment.replica
    if replica is None:
        raise ConfigError(f"{deployment.source}: the twin models the replica program "
                          "(spark_consumer); this Deployment runs a command consumer")
    engine = engine or replica.engine
    balancer = balancer or replica.balancer
    if balancer not in PROTOCOLS:
        raise ConfigError(f"--balancer: got {balancer!r}, expected one of "
                          f"{', '.join(PROTOCOLS)}; pick one of them")
    values = load_calibration(calibration or calibration_path(engine, release))
    if values["engine"] != engine:
        raise ConfigError(f"'engine': got {values['engine']!r}, expected {engine!r} in "
                          f"{values['source']}; use the calibration of the engine {engine!r}")
    raw_batch = replica.flags.get("--max-batch")
    max_batch = (FLAG_BY_OPTION["--max-batch"].parse(raw_batch) if raw_batch
                 else FLAG_BY_OPTION["--max-batch"].default)
    per_record_ms = replica.process_ms / max(1, replica.inflight)
    return TwinParams(
        per_record_ms=per_record_ms, max_batch_records=int(max_batch),
        trigger_interval_s=(replica.trigger_interval_s if trigger_interval_s is None
                            else trigger_interval_s),
        probe_period_s=float(deployment.readiness.period_s), balancer=balancer,
        cpu_request_millicores=deployment.cpu_request_millicores, **values)


def machine_draw(params: TwinParams, rng: Any) -> TwinParams:
    """``params`` for one draw's machine: the start-up time ``cold_start_alone_s`` x exp(z_c)
    and the engine terms x exp(z_e), with z_c = :attr:`~TwinParams.machine_log_factor` m when
    known exactly, drawn from its posterior N(k m, k s^2), k = sd^2 / (sd^2 + s^2), when it was
    measured with error s = :attr:`~TwinParams.machine_log_factor_sd` (a normal prior
    N(0, sd^2), sd = ``run_cold_start_sd``, and a normal measurement),
    else ~ N(0, ``run_cold_start_sd``), and z_e = ``run_engine_on_cold_start`` x z_c + N(0, r),
    r = sqrt(max(0, ``run_engine_sd``^2 - slope^2 x ``run_cold_start_sd``^2)) (the engine's
    variance not explained by the start-up's). Unchanged (and ``rng`` unused) when
    :attr:`~TwinParams.varies_by_run` is False. The returned params have
    no run-to-run variation left: the factors are applied.

    Args:
        params: the calibrated parameters.
        rng: a ``numpy.random.Generator`` of the draw (its own stream: the other draws of the
            run stay as they are).
    """
    if not params.varies_by_run:
        return params
    slope = params.run_engine_on_cold_start
    known, error_sd, prior_sd = (params.machine_log_factor, params.machine_log_factor_sd,
                                 params.run_cold_start_sd)
    if known is None:
        z_c = float(rng.normal(0.0, prior_sd))
    elif error_sd > 0:
        k = prior_sd ** 2 / (prior_sd ** 2 + error_sd ** 2)
        z_c = float(rng.normal(params.machine_log_factor_mean, math.sqrt(k) * error_sd))
    else:
        z_c = known
    rest = math.sqrt(max(0.0, params.run_engine_sd ** 2 - (slope * params.run_cold_start_sd) ** 2))
    z_e = slope * z_c + (float(rng.normal(0.0, rest)) if rest else 0.0)
    engine = math.exp(z_e)
    return replace(params, cold_start_alone_s=params.cold_start_alone_s * math.exp(z_c),
                   per_batch_engine_s=params.per_batch_engine_s * engine,
                   engine_s_per_member=params.engine_s_per_member * engine,
                   engine_s_per_starting=params.engine_s_per_starting * engine,
                   engine_s_per_warming=params.engine_s_per_warming * engine,
                   run_cold_start_sd=0.0, run_engine_sd=0.0, machine_log_factor=None,
                   machine_log_factor_sd=0.0)


def with_changes(params: TwinParams, **changes: Any) -> TwinParams:
    """A copy of ``params`` with ``changes`` (dataclasses.replace; for ablations and tests)."""
    return replace(params, **changes)


__all__ = ["ENGINES", "PROTOCOLS", "SCHEMA_VERSION", "TwinParams", "calibration_path",
           "load_calibration", "machine_draw", "parse_calibration", "twin_params",
           "with_changes"]
