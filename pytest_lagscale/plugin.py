"""pytest glue for pytest-lagscale: options, markers, fixtures and the baseline gate.

Heavy libraries (confluent_kafka, pyspark, matplotlib, kubernetes, rich) are imported only inside
fixtures and the terminal summary, so loading the plugin costs nothing for projects that do not
use it.

Fixtures: ``kafka_cluster`` (session), ``lagscale_runner`` (session; override it in a conftest
to swap the experiment runner), ``lag_threshold``, ``lagscale_settings``, ``lagscale_run`` and
``scaled_deployment``. Every result of ``lagscale_run`` is kept by the session's
:class:`~pytest_lagscale.session.LagscaleSession`, which compares it with ``--lagscale-baseline`` at session end and
prints the runs and comparisons in the terminal summary.

``--lagscale-dry-run`` is pytest's ``lagscale run --dry-run``: ``lagscale_run`` plans its run
(:func:`~pytest_lagscale.experiment.plan.plan_run`), records the plan as a report section and
skips the test with a one-line summary (a bad plan fails it with the problems); the terminal
summary prints one plan block per test. ``kafka_cluster`` then starts no broker (it gives a
stand-in whose use skips the test) and tests using the broker other than through
``lagscale_run`` are skipped before their fixtures are set up, so nothing is started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator, NoReturn

import pytest

from . import options
from .contract.errors import ConfigError
from .session import LagscaleSession

DEFAULT_PARTITIONS = {"ci": 8, "full": 24}
_SESSION_KEY = pytest.StashKey["LagscaleSession"]()
_OWNS_RECONCILE_WORKER = pytest.StashKey[bool]()
_ACTIVE = pytest.StashKey[bool]()
_PREVIOUS_HANDLERS = pytest.StashKey[dict]()
#: The report section holding a test's plan under ``--lagscale-dry-run``.
DRY_RUN_SECTION = "lagscale dry run"


# -- options and markers ---------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lagscale", "lag-based autoscaling experiments (pytest-lagscale)")
    deprecated = parser.getgroup("lagscale-deprecated", "deprecated spellings of the run options "
                                 "(pytest-lagscale): use --lagscale-<option>; they go in the "
                                 "next release")
    options.add_run_options(group.addoption, deprecated.addoption)
    # A session option, not a run option (no `lagscale run` twin): its own help group.
    report = parser.getgroup("lagscale-report", "findings report (pytest-lagscale)")
    report.addoption("--lagscale-report", dest="lagscale_report", metavar="DIR", default=None,
                    help="At the end of the session, write the findings report of its runs "
                         "(findings.html, findings.md, img/) into DIR; under pytest-xdist "
                         "each worker writes DIR/<worker id>. Default: none")
    # pytest's twin of `lagscale run --dry-run`: a session option, not in the run option table.
    dry = parser.getgroup("lagscale-dry-run", "dry run (pytest-lagscale)")
    dry.addoption("--lagscale-dry-run", dest="lagscale_dry_run", action="store_true",
                  default=False,
                  help="Plan instead of run, as `lagscale run --dry-run` does: each test's "
                       "lagscale_run reads and checks its profile, policy, Deployment, actions "
                       "and overrides, records the plan (printed in the terminal summary, one "
                       "block per test) and the test is skipped with a one-line summary; a "
                       "bad plan fails the test. No broker, Prometheus or replica starts: tests "
                       "using the broker (kafka_cluster) otherwise are skipped. Default: off")


def _dry_run(config: pytest.Config) -> bool:
    """``--lagscale-dry-run`` was given."""
    return bool(config.getoption("lagscale_dry_run", False))


def _option_values(config: pytest.Config) -> dict[str, Any]:
    """Every run option's value, by destination."""
    return {option.dest: config.getoption(option.dest) for option in options.RUN_OPTIONS}


#: Options naming a file (or a value a file's content must accept): given on the command
#: line, they are read and checked before the session starts anything.
_FILE_OPTIONS = ("profile", "policy", "scaled_object", "deployment", "lag_thresholds")


def _plan_problems(values: dict[str, Any]) -> list[str]:
    """Every problem of the runs the options describe, read from their files (what a run
    would read first), before any broker starts; none when no file option is given (the
    committed defaults)."""
    if not any(values.get(dest) for dest in _FILE_OPTIONS):
        return []
    from .experiment.plan import plan_run
    from .experiment.settings import RunSettings

    try:
        for lag_threshold in values.get("lag_thresholds") or (None,):
            plan_run(RunSettings.from_options(values, lag_threshold=lag_threshold))
    except ConfigError as exc:
        return list(exc.problems)
    return []


def _apply_deprecated(config: pytest.Config) -> None:
    """Values given with the unprefixed spellings (``--profile``) go to their options
    (``--lagscale-profile``), with a deprecation warning per spelling."""
    for line in options.apply_deprecated(config.option):
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(f"lagscale: {line}"),
                                         stacklevel=2)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    _apply_deprecated(config)
    values = _option_values(config)
    problems = options.check_run_options(values)
    if not problems:
        problems = _plan_problems(values)
    report = config.getoption("lagscale_report", None)
    if report and Path(report).exists() and not Path(report).is_dir():
        problems.append(f"--lagscale-report: {report!r} is not a directory; give a directory "
                        "(created when absent)")
    if not problems and config.getoption("lagscale_baseline"):
        problems += _check_baselines(Path(config.getoption("lagscale_baseline")))
    if problems:
        raise pytest.UsageError("\n".join(problems))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: uses the embedded broker and real local "
                                       "processes")
    config.addinivalue_line("markers", "acceptance: a full experiment run with SLO assertions")
    config.addinivalue_line("markers", "experiment(n): the experiment number n of DESIGN.md; "
                                       "select one with -m \"experiment(n=N)\"")
    config.addinivalue_line("markers", "gate: the CI gate tier, one real run per code path "
                                       "(`pytest -m gate benchmarks`); the acceptance session "
                                       "(scripts/acceptance) runs every benchmark")
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one run (pytest-xdist "
                                       "keeps a group on one worker; a no-op without it)")
    baseline = config.getoption("lagscale_baseline", None)
    config.stash[_SESSION_KEY] = LagscaleSession(Path(baseline) if baseline else None,
                                                 announce=lambda line: _announce(config, line))
    _apply_deprecated(config)  # an xdist worker parses its own command line
    _configure_xdist(config)
    if _lagscale_options_given(config):
        activate(config)


def _lagscale_options_given(config: pytest.Config) -> bool:
    """Any run option differs from its default, or a session option of lagscale is given."""
    return any(config.getoption(o.dest, None) not in (None, o.default, [], ())
               for o in options.RUN_OPTIONS) or any(
        config.getoption(dest, None) for dest in ("lagscale_report", "lagscale_dry_run"))


def activate(config: pytest.Config) -> None:
    """What a session that uses pytest-lagscale needs process-wide, done once, and only then
    (as pytest-xdist touches nothing unless ``-n`` is given): the session's runs share one
    reconciliation worker, and SIGTERM (CI timeout, `kill`) and SIGHUP (the terminal closed)
    run fixture finalizers like Ctrl-C does, so no broker or replica outlives the session (the
    previous handlers come back at the session's end). Called by the lagscale fixtures, by
    ``pytest_configure`` when a lagscale option is given, or by a conftest that wants it."""
    if config.stash.get(_ACTIVE, False):
        return
    config.stash[_ACTIVE] = True
    _share_reconcile_worker(config)
    if threading.current_thread() is threading.main_thread():
        def _stop(signum: int, frame: object) -> None:
            raise KeyboardInterrupt(signal.Signals(signum).name)

        config.stash[_PREVIOUS_HANDLERS] = {sig: signal.signal(sig, _stop)
                                            for sig in (signal.SIGTERM, signal.SIGHUP)}


def _announce(config: pytest.Config, line: str) -> None:
    """Write a progress line to the terminal as a run ends, inside the test's call: output
    capture is suspended for it, or the line would reach the log only with a failed test's
    captured output (under pytest-xdist a worker's terminal is not shown)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    capman = config.pluginmanager.get_plugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
        reporter.ensure_newline()
        reporter.write_line(line)


def _share_reconcile_worker(config: pytest.Config) -> None:
    """The session's runs share one reconciliation JVM (started at the first run's analysis,
    stopped in :func:`pytest_unconfigure`); a nested session (pytester) uses the outer one's."""
    from .analyze import reconcile_worker

    if reconcile_worker.shared_enabled():
        return
    out = Path(config.getoption("lagscale_out", None) or options.DEFAULT_OUT)
    reconcile_worker.enable_shared(out / "reconcile-worker.log")
    config.stash[_OWNS_RECONCILE_WORKER] = True


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(_OWNS_RECONCILE_WORKER, False):
        from .analyze import reconcile_worker

        reconcile_worker.close_shared()
    if threading.current_thread() is threading.main_thread():
        for sig, handler in config.stash.get(_PREVIOUS_HANDLERS, {}).items():
            signal.signal(sig, handler)


def _configure_xdist(config: pytest.Config) -> None:
    """Under pytest-xdist: tests marked ``xdist_group`` (runs shared by several tests, such as
    experiments 2 and 6) stay on one worker (``--dist load`` becomes ``loadgroup``), and each
    worker has its own run id, so its pid directory and ``lagscale cleanup`` are its own. Each
    worker starts its own broker (the session fixture) on ephemeral ports."""
    if config.getoption("dist", None) == "load":
        config.option.dist = "loadgroup"
    if config.getoption("dist", None) == "loadgroup" and pytest.version_tuple[:2] >= (9, 2):
        config.issue_config_time_warning(pytest.PytestWarning(
            "lagscale: pytest-xdist's xdist_group does not hold on pytest >= 9.2 "
            "(pytest-dev/pytest-xdist#1386): tests sharing one run may each run it on their own "
            "worker; install pytest<9.2 or run with -n0"), stacklevel=2)
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        from .process import RUN_ID_ENV

        if worker.get("lagscale_loadgroup"):  # the worker groups its items' node ids
            config.option.loadgroup = True
        base = os.environ.get(RUN_ID_ENV) or uuid.uuid4().hex[:12]
        os.environ[RUN_ID_ENV] = f"{base}-{worker['workerid']}"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist (controller): tell each worker whether ``xdist_group`` applies; a worker
    decides that from its own command line, which never says ``loadgroup`` when we chose it."""
    node.workerinput["lagscale_loadgroup"] = node.config.getoption("dist") == "loadgroup"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``experiment(N)`` also reads ``experiment(N, n=N)``, so ``-m "experiment(n=3)"`` selects
    experiment 3 (pytest's marker expressions match keyword arguments only); runs before
    pytest's own ``-m`` deselection.

    Under ``--lagscale-dry-run`` a test using the broker (``kafka_cluster``, also through
    ``scaled_deployment`` or ``lagscale_concurrent``) but not ``lagscale_run`` has no run to
    plan: it is skipped before any of its fixtures is set up."""
    dry_run = _dry_run(config)
    for item in items:
        mark = item.get_closest_marker("experiment")
        if mark is not None and mark.args and "n" not in mark.kwargs:
            item.add_marker(pytest.mark.experiment(mark.args[0], n=mark.args[0]), append=False)
        names = getattr(item, "fixturenames", ())
        if dry_run and "kafka_cluster" in names and "lagscale_run" not in names:
            item.add_marker(pytest.mark.skip(
                reason="dry run: uses the broker (kafka_cluster) without lagscale_run; "
                       "nothing to plan, nothing started"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``--lag-threshold A,B,...`` parametrizes every test using ``lag_threshold`` (ids lt<N>),
    unless the test parametrizes ``lag_threshold`` itself."""
    values = metafunc.config.getoption("lag_thresholds")
    if not values or len(values) < 2 or "lag_threshold" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if "lag_threshold" in names:
            return
    metafunc.parametrize("lag_threshold", values, ids=[f"lt{v}" for v in values])


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The baseline gate: a regression turns a passing session into exit status 1."""
    lagscale = session.config.stash.get(_SESSION_KEY, None)
    if lagscale is None:
        return
    lagscale.compare_with_baselines()
    _write_findings(session.config, lagscale)
    if lagscale.failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config
                            ) -> None:
    lagscale = config.stash.get(_SESSION_KEY, None)
    if lagscale is not None and lagscale.runs:
        lagscale.summarize(terminalreporter)
    if _dry_run(config):
        _summarize_dry_run(terminalreporter)


def _summarize_dry_run(terminalreporter: Any) -> None:
    """One block per planned test: its node id, then the plan's lines (read from the skipped
    reports' sections, so the plans of pytest-xdist workers are printed too)."""
    title = f"Captured {DRY_RUN_SECTION} "
    planned = [(report.nodeid, content)
               for report in terminalreporter.stats.get("skipped", [])
               for name, content in getattr(report, "sections", ())
               if name.startswith(title)]
    terminalreporter.section(DRY_RUN_SECTION)
    for nodeid, content in planned:
        terminalreporter.write_line(f"{nodeid}:")
        for line in content.splitlines():
            terminalreporter.write_line(f"  {line}")
    terminalreporter.write_line(f"lagscale: dry run: {len(planned)} test(s) planned, "
                                "nothing started")


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[object]:
    """A running Kafka cluster for the session, chosen by ``--kafka``.

    Yields an object with ``bootstrap_servers``, ``client_config``, ``kind``, ``version`` and
    ``settings`` (see :class:`pytest_lagscale.kafka.base.KafkaCluster`). ``--kafka=testcontainers``
    skips when no Docker engine answers, naming the reason. Under ``--lagscale-dry-run`` no
    cluster is made: it yields a stand-in whose every attribute skips the test asking for it.
    """
    activate(request.config)
    if _dry_run(request.config):
        yield _DryRunCluster()
        return
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


@pytest.fixture(scope="session")
def lagscale_concurrent(request: pytest.FixtureRequest, kafka_cluster: Any,
                        tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Any]:
    """``lagscale_concurrent(module_name, profile, settings) -> {name: FinishedRun}``: the runs
    the calling experiment module's ``concurrent_members`` asks for on ``profile``, from the
    session's concurrent batch of that profile (every selected module that defines
    ``concurrent_members`` takes part; identical runs run once; see
    :mod:`pytest_lagscale.experiment.batch`). The batch runs at the first request, on the
    session's broker, under ``settings.out_dir``.
    """
    from .experiment.batch import ConcurrentBatches, experiment_key, members_of

    servers: list[Any] = []

    def spark_remote() -> str:
        if not servers:
            from .spark_connect import SparkConnectServer

            server = SparkConnectServer(tmp_path_factory.mktemp("concurrent-spark-connect"))
            request.addfinalizer(server.stop)
            servers.append(server.start())
        return servers[0].url

    modules = {item.module for item in request.session.items
               if getattr(item, "module", None) is not None}
    ordered = sorted(modules, key=lambda m: (len(experiment_key(m)), experiment_key(m)))
    extra = [opt for key, value in sorted(kafka_cluster.client_config.items())
             for opt in ("--kafka-config", f"{key}={value}")]
    batches = ConcurrentBatches(members_of(ordered), kafka_cluster.bootstrap_servers, extra,
                                spark_remote)

    def runs(module: str, profile: str, settings: Any) -> dict[str, Any]:
        return batches.runs(experiment_key(module), profile, settings.scale,
                            Path(settings.out_dir))

    return runs


@pytest.fixture(scope="session")
def lagscale_runner(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """The experiment runner ``lagscale_run`` calls: ``run_experiment(settings, *, cluster,
    progress) -> RunResult``. Override it in a conftest to run a fake."""
    from .experiment import run_experiment

    activate(request.config)

    return run_experiment


@pytest.fixture
def lag_threshold(request: pytest.FixtureRequest) -> int | None:
    """This test's lagThreshold override in records: the sweep value (``--lag-threshold A,B``
    parametrizes the test), the single ``--lag-threshold`` value, or None (the ScaledObject's)."""
    values = request.config.getoption("lag_thresholds")
    return values[0] if values else None


@pytest.fixture
def lagscale_settings(request: pytest.FixtureRequest, lag_threshold: int | None) -> Any:
    """A :class:`~pytest_lagscale.experiment.settings.RunSettings` from the run options.

    The profile is ``--profile`` (a bundled name or a path), else ``spike`` (``spike-ci`` at
    ``--lagscale-scale ci``). Not validated here; ``lagscale_run`` checks the settings it runs.
    """
    from .experiment.settings import RunSettings

    return RunSettings.from_options(_option_values(request.config), lag_threshold=lag_threshold)


@pytest.fixture
def lagscale_run(request: pytest.FixtureRequest, lagscale_settings: Any,
                 lagscale_runner: Callable[..., Any], kafka_cluster: object
                 ) -> Callable[..., Any]:
    """``run(profile=None, **overrides) -> RunResult``: run (or reuse) one experiment.

    ``profile`` is a bundled name (``"bursty"`` -> ``bursty-ci`` at ci) or a path; ``--profile``
    wins over it. ``overrides`` are RunSettings fields (``graceful=False``,
    ``balancer="range"``, ``policy="hpa-cpu-ci"``, ``actions=(ActionSpec(120, "kill_replica"),)``).
    A run is cached for the session (per pytest-xdist worker) by its full settings, so tests
    asking for the same run share one result (mark them with the same ``xdist_group`` so they
    share a worker); every result is compared with ``--lagscale-baseline`` at session end.

    A run that did not settle, or whose lag was unread for more than 10 % of it, fails the test
    with those numbers, unless the run injected a fault (the test asserts on its outcome).

    Under ``--lagscale-dry-run`` the first call plans the run instead and skips the test
    (``dry run: <summary>``), the plan in the report section ``lagscale dry run``; a plan's
    problems fail the test. ``kafka_cluster`` is then a stand-in and the runner is not called.
    """
    session = request.config.stash[_SESSION_KEY]
    dry_run = _dry_run(request.config)

    def run(profile: str | os.PathLike[str] | None = None, **overrides: Any) -> Any:
        if profile is not None and not request.config.getoption("profile"):
            overrides["profile"] = str(profile)
        try:
            settings = lagscale_settings.with_overrides(**overrides)
        except ConfigError as exc:
            pytest.fail("lagscale_run: " + "; ".join(exc.problems), pytrace=False)
        _check(settings)
        if dry_run:
            _plan_instead(request.node, settings)
        result = session.run(settings, request.node.nodeid, lambda: _call_runner(
            request.config, lagscale_runner, settings, kafka_cluster))
        _record_experiment_number(request, result)
        _fail_unsound(settings, result)
        return result

    return run


def _fail_unsound(settings: Any, result: Any) -> None:
    """Fail the test of a run that is not a good one (did not settle, lag unread for more than
    10 % of it) with those numbers, unless the run injected a fault: a test that asks for a
    fault asserts on its outcome itself."""
    problems = getattr(result, "problems", ())
    faults = (getattr(result, "world", None) or {}).get("faults", ())
    if problems and not any(f.get("kind") == "injected" for f in faults):
        pytest.fail(f"lagscale_run: {settings.label()} is not a good run ({result.run_dir}):\n  "
                    + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def scaled_deployment(request: pytest.FixtureRequest, kafka_cluster: Any, tmp_path: Path,
                      lag_threshold: int | None) -> Iterator[SimpleNamespace]:
    """Consumer replicas of the committed Deployment under the local autoscaler, no load.

    For tests that drive their own load. The topic (``events-<id>``, ``--partitions`` or 8/24
    partitions by scale) and the group (``enrich-<id>``) are fresh per test; the policy is the
    scale's ScaledObject (or ``--policy``) with ``--lag-threshold``, ``--balancer`` applies to
    the replicas, which run ``--engine arrow`` (replica counts a small machine can hold). Yields
    an object with ``bootstrap``, ``topic``, ``group``, ``partitions``, ``policy``,
    ``deployment`` (the platform, ready at minReplicaCount), ``autoscaler`` (ticking every
    0.25 s), ``admin`` and ``run_dir``; everything is stopped afterwards.
    """
    from .config.deployment import load_deployment
    from .contract.rundir import RunDir
    from .control.policy.build import build_policy
    from .experiment.settings import RunSettings
    from .kafka.admin import KafkaAdmin
    from .platform import make_platform
    from .platform.autoscaler import LocalAutoscaler
    from .platform.local import template_from_deployment
    from .sources import make_lag_source

    config, suffix = request.config, uuid.uuid4().hex[:8]
    settings = RunSettings.from_options(_option_values(config), lag_threshold=lag_threshold)
    topic, group = f"events-{suffix}", f"enrich-{suffix}"
    partitions = settings.partitions or DEFAULT_PARTITIONS[settings.scale]
    files = settings.manifest_files()
    policy_config = settings.policy_config()
    policy = build_policy(policy_config)
    flags = {"--topic": topic, "--group": group, "--engine": "arrow"}
    if settings.balancer:
        flags["--balancer"] = settings.balancer
    template = template_from_deployment(load_deployment(files["deployment"]),
                                        kafka_cluster.bootstrap_servers, flag_overrides=flags)
    with contextlib.ExitStack() as stack:
        # closed last, on this thread, once the autoscaler that reads lag through it stopped
        admin = stack.enter_context(KafkaAdmin(kafka_cluster.bootstrap_servers,
                                               kafka_cluster.client_config))
        admin.create_topic(topic, partitions)
        deployment = stack.enter_context(make_platform(settings.platform, template, tmp_path))
        deployment.scale(policy.min_replicas)
        if policy.min_replicas:
            deployment.wait_ready(policy.min_replicas, within_s=120)
        autoscaler = LocalAutoscaler(policy, deployment,
                                     make_lag_source("broker", admin, group, topic),
                                     RunDir(tmp_path).source_events("controller"))
        stack.enter_context(autoscaler.start(tick_s=0.25))
        yield SimpleNamespace(bootstrap=kafka_cluster.bootstrap_servers, topic=topic,
                              group=group, partitions=partitions, policy=policy,
                              scaled_object=policy_config, deployment=deployment,
                              autoscaler=autoscaler, admin=admin, run_dir=tmp_path)


# -- helpers ---------------------------------------------------------------------------------
class _DryRunCluster:
    """``kafka_cluster`` under ``--lagscale-dry-run``: no broker was made, and reading any of
    its attributes (``bootstrap_servers``, ...) skips the test before it can start anything."""

    def __getattr__(self, name: str) -> NoReturn:
        _skip_test(f"dry run: no broker is started (kafka_cluster.{name} was asked for)")

    def __repr__(self) -> str:
        return "<kafka_cluster: none under --lagscale-dry-run>"


def _plan_instead(item: pytest.Item, settings: Any) -> NoReturn:
    """``--lagscale-dry-run``: plan ``settings``' run, record the plan as the item's report
    section :data:`DRY_RUN_SECTION` and skip the test with its summary; fail the test with the
    plan's problems, one a line."""
    from .experiment.plan import describe_plan, plan_run

    try:
        plan = plan_run(settings)
    except ConfigError as exc:
        problems = exc.problems
    else:
        item.add_report_section("call", DRY_RUN_SECTION, "\n".join(describe_plan(plan)))
        _skip_test(f"dry run: {_plan_summary(plan)}")
    # outside the handler: the failure shows the problems, no chained exception
    pytest.fail("lagscale_run: dry run: the run cannot be planned:\n"
                + "\n".join(f"  {p}" for p in problems), pytrace=False)


def _skip_test(reason: str) -> NoReturn:
    """Skip the test, reported at the test's location (as pytest reports a fixture's skip),
    not at this module's line."""
    try:
        pytest.skip(reason)
    except pytest.skip.Exception as exc:
        exc._use_item_location = True  # read by pytest's report when present
        raise


def _plan_summary(plan: Any) -> str:
    """One line of :func:`~pytest_lagscale.experiment.plan.describe_plan`'s plan."""
    s, prof = plan.settings, plan.profile
    lo, hi = plan.replica_range
    longest = (prof.duration_s + s.settle_timeout_s) / 60
    return (f"{s.label()}: profile {prof.name} ({prof.duration_s:g} s, {prof.partitions} "
            f"partitions), policy {plan.policy_name} (replicas {lo}..{hi}), engine "
            f"{plan.engine}, platform {s.platform}, broker {s.kafka}, scale {s.scale}, "
            f"{len(plan.actions)} action(s), at most {longest:.1f} min")


def _check(settings: Any) -> None:
    try:
        settings.check()
        return
    except ConfigError as exc:
        problems = exc.problems
    # outside the handler: the failure shows the problems, no chained exception
    pytest.fail("lagscale_run: bad settings:\n" + "\n".join(f"  {p}" for p in problems),
                pytrace=False)


def _call_runner(config: pytest.Config, runner: Callable[..., Any], settings: Any,
                 cluster: object) -> Any:
    """Run with a rich progress display; on a terminal, output capture is suspended meanwhile
    so the live display reaches the screen."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    on_screen = capman is not None and reporter is not None and bool(reporter.isatty)
    with capman.global_and_fixture_disabled() if on_screen else contextlib.nullcontext():
        from rich.console import Console

        from .experiment.progress import RunProgress

        return runner(settings, cluster=cluster, progress=RunProgress(Console()))


def _record_experiment_number(request: pytest.FixtureRequest, result: Any) -> None:
    """Add the test's ``experiment(n)`` marker number to ``experiment.numbers`` of the run's
    benchmark.json (the findings report places runs by it; a shared run gets every number)."""
    marker = request.node.get_closest_marker("experiment")
    record = getattr(result, "record", None)
    if marker is None or not marker.args or not callable(record):
        return
    numbers = set(getattr(result, "experiment", {}).get("numbers") or ())
    if marker.args[0] not in numbers:
        record("numbers", sorted(numbers | {marker.args[0]}))


def _write_findings(config: pytest.Config, lagscale: LagscaleSession) -> None:
    """``--lagscale-report DIR``: write the findings of the session's runs into DIR (under
    pytest-xdist, DIR/<worker id>); a failure to write is printed, it does not fail the session."""
    out = config.getoption("lagscale_report", None)
    if not out or not lagscale.runs:
        return
    from .report.findings_render import write_report

    worker = getattr(config, "workerinput", None)
    folder = Path(out) / worker["workerid"] if worker is not None else Path(out)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    try:
        html, _ = write_report([run.result.benchmark_path for run in lagscale.runs], folder)
        line = f"lagscale: findings report {html} ({len(lagscale.runs)} run(s))"
    except (ConfigError, OSError) as exc:
        line = f"lagscale: --lagscale-report: could not write the findings into {folder}: {exc}"
    if reporter is not None:
        reporter.write_line(line)


def _check_baselines(path: Path) -> list[str]:
    """Load every baseline document up front, so a bad file stops the session before a run."""
    from .contract.errors import ConfigError
    from .report import benchjson

    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    problems = []
    for file in files:
        try:
            benchjson.load(file)
        except (ConfigError, OSError) as exc:
            problems.append(f"--lagscale-baseline: {exc}")
    return problems
