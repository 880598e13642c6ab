"""The run options, declared once for the pytest plugin and the ``lagscale run`` command.

As pytest-benchmark shares its option groups between plugin.py and cli.py: :data:`RUN_OPTIONS` is
one table (flag, destination, metavar, parser, choices, default, help) that
:func:`add_run_options` registers with pytest (``--lagscale-`` prefix on the prefixed ones) and
:func:`pytest_lagscale.experiment.cli.run_command` turns into click options (no prefix). Each
parser raises ``argparse.ArgumentTypeError`` carrying the option and the repr of the bad value
(pytest turns it into a usage error, exit code 4; the CLI exits 2); :func:`check_run_options`
checks what one value alone cannot (conflicts, files), and :func:`settings_from_options` builds
the :class:`~pytest_lagscale.experiment.settings.RunSettings` every run is given.

This module is imported by the plugin at start-up: it imports nothing heavy.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .config.bundled import SCALES, resolve_manifest, resolve_profile
from .contract.flags import BALANCERS, ENGINES, FLAG_BY_OPTION
from .kafka import KINDS
from .platform import PLATFORMS

MAX_LAG_THRESHOLD = 10_000_000
MAX_PARTITIONS = 1024
MAX_SETTLE_TIMEOUT_S = 7200.0
MAX_DRAIN_SLO_S = 3600.0
#: ``--drain-slo`` when not given, seconds, by scale.
DEFAULT_DRAIN_SLO_S = {"ci": 60.0, "full": 300.0}
DEFAULT_OUT = "lagscale-runs"


# -- parsers: text -> value, or argparse.ArgumentTypeError naming the option -------------------
def _integer(option: str, text: str, lo: int, hi: int, allowed: str) -> int:
    """``text`` as an int in [lo, hi]; ``allowed`` describes the accepted form for the fix."""
    try:
        value = int(str(text).strip().replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{option}: {text!r} is not an integer; allowed: {allowed}") from None
    if not lo <= value <= hi:
        raise argparse.ArgumentTypeError(
            f"{option}: {value!r} is out of range; allowed: {allowed}")
    return value


def parse_lag_thresholds(value: str) -> tuple[int, ...]:
    """Parse ``--lag-threshold N[,N...]``: records per replica, 1..10,000,000, no repeats.

    Raises:
        argparse.ArgumentTypeError: a value is not an integer in range, or repeats.
    """
    allowed = (f"integers in [1, {MAX_LAG_THRESHOLD:,}] records, comma-separated for a sweep "
               "(e.g. 1000,10000,100000)")
    thresholds = tuple(_integer("--lag-threshold", part, 1, MAX_LAG_THRESHOLD, allowed)
                       for part in str(value).split(","))
    repeated = sorted({t for t in thresholds if thresholds.count(t) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(
            f"--lag-threshold: {value!r} repeats {', '.join(map(str, repeated))}; "
            "list each value of the sweep once")
    return thresholds


def parse_partitions(value: str) -> int:
    """Parse ``--partitions N``: partitions of the topic, 1..1024.

    Raises:
        argparse.ArgumentTypeError: not an integer in range.
    """
    return _integer("--partitions", value, 1, MAX_PARTITIONS,
                    f"an integer in [1, {MAX_PARTITIONS:,}] partitions")


def parse_settle_timeout(value: str) -> float:
    """Parse ``--settle-timeout SECONDS``: 0..7200 seconds.

    Raises:
        argparse.ArgumentTypeError: not a number in range.
    """
    return _seconds("--settle-timeout", value, 0.0, MAX_SETTLE_TIMEOUT_S)


def parse_drain_slo(value: str) -> float:
    """Parse ``--drain-slo SECONDS``: experiment 8's drain SLO, 1..3600 seconds.

    Raises:
        argparse.ArgumentTypeError: not a number in range.
    """
    return _seconds("--drain-slo", value, 1.0, MAX_DRAIN_SLO_S)


def _seconds(flag: str, value: str, low: float, high: float) -> float:
    """``value`` as seconds in ``[low, high]``; argparse.ArgumentTypeError naming ``flag``."""
    allowed = f"seconds in [{low:g}, {high:g}]"
    try:
        seconds = float(str(value).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{flag}: {value!r} is not a number; allowed: {allowed}") from None
    if not low <= seconds <= high:
        raise argparse.ArgumentTypeError(
            f"{flag}: {seconds!r} is out of range; allowed: {allowed}")
    return seconds


def replica_flag_parser(option: str) -> Callable[[str], Any]:
    """A parser for a run option that overrides the replica flag ``option`` (``--trigger-interval``):
    the value is checked against the contract's flag table, the same check the replica makes.

    The parser raises ``argparse.ArgumentTypeError`` naming the option, the value and the
    flag's allowed range (with its unit).
    """
    flag = FLAG_BY_OPTION[option]

    def parse(value: str) -> Any:
        try:
            return flag.parse(str(value).strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{option}: {value!r} is not allowed; allowed: {flag.allowed}") from None

    return parse


#: ``--lag-source`` values: the kinds of :data:`pytest_lagscale.sources.LAG_SOURCES` (kept here so
#: the plugin's start-up imports no source; a unit test keeps the two equal).
LAG_SOURCE_KINDS = ("broker", "prometheus", "cloudwatch", "confluent")


def parse_cloudwatch_period(value: str) -> float:
    """Parse ``--cloudwatch-period SECONDS``: 1, 5, 10, 30 or a multiple of 60 up to 3600 (the
    periods CloudWatch stores; MSK publishes every 60).

    Raises:
        argparse.ArgumentTypeError: not one of those.
    """
    seconds = _seconds("--cloudwatch-period", value, 1.0, 3600.0)
    from .config.trigger_metadata.aws_cloudwatch import is_cloudwatch_period

    if not is_cloudwatch_period(seconds):
        raise argparse.ArgumentTypeError(
            f"--cloudwatch-period: {seconds!r} is not a CloudWatch period; allowed: 1, 5, 10, 30 or a "
            "multiple of 60 seconds up to 3600")
    return seconds


def parse_cloudwatch_window(value: str) -> float:
    """Parse ``--cloudwatch-window SECONDS``: how far back the CloudWatch source looks, 10..86400.

    Raises:
        argparse.ArgumentTypeError: not a number in range.
    """
    return _seconds("--cloudwatch-window", value, 10.0, 86_400.0)


def parse_kafka_config(value: str) -> tuple[str, str]:
    """Parse one ``KEY=VALUE`` librdkafka setting (``--kafka-config``)."""
    key, sep, val = str(value).partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"--kafka-config: {value!r} is not KEY=VALUE; e.g. security.protocol=SASL_SSL")
    return key.strip(), val


def _choice(option: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value not in choices:
            raise argparse.ArgumentTypeError(
                f"{option}: {value!r} is not allowed; allowed: {', '.join(choices)}")
        return value
    return parse


def _text(value: str) -> str:
    return str(value)


# -- the table --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunOption:
    """One run option.

    Attributes:
        flag: the option without dashes as the CLI spells it (``profile``, ``scale``).
        dest: the attribute it is stored in (``config.getoption(dest)``, the CLI's keyword).
        help: one phrase or several sentences; ends with the default.
        metavar: the value's placeholder (units where they matter), None for choices and flags.
        parse: text -> value; raises ``argparse.ArgumentTypeError`` naming the option.
        choices: the allowed values (shown in help; enforced by ``parse``).
        default: the value when the option is not given.
        prefixed: pytest spells it ``--lagscale-<flag>`` (the CLI drops the prefix).
        multiple: repeatable; the value is a list.
        negatable: a boolean flag with a ``--no-<flag>`` twin.
        setting: the :class:`~pytest_lagscale.experiment.settings.RunSettings` field the value
            goes to (default: ``dest``); None for options that are not a run setting
            (``--lagscale-baseline``: the gate compares runs, it does not change them).
        to_setting: option value -> field value (e.g. a sweep's first value).
    """

    flag: str
    dest: str
    help: str
    metavar: str | None = None
    parse: Callable[[str], Any] = _text
    choices: tuple[str, ...] | None = None
    default: Any = None
    prefixed: bool = False
    multiple: bool = False
    negatable: bool = False
    setting: str | None = ""
    to_setting: Callable[[Any], Any] = lambda value: value

    @property
    def field(self) -> str | None:
        """The RunSettings field (``setting``, defaulting to ``dest``), or None."""
        return self.dest if self.setting == "" else self.setting

    @property
    def pytest_flag(self) -> str:
        """``--lagscale-<flag>`` when prefixed, else ``--<flag>``."""
        return f"--lagscale-{self.flag}" if self.prefixed else f"--{self.flag}"

    @property
    def cli_flag(self) -> str:
        return f"--{self.flag}"

    def check(self, value: Any) -> str | None:
        """The problem with an already typed ``value`` (None: fine), by the same parser."""
        if value is None or self.negatable or self.multiple:
            return None
        try:
            self.parse(str(value))
        except argparse.ArgumentTypeError as exc:
            return str(exc)
        return None


def _choices(flag: str, dest: str, choices: tuple[str, ...], help: str, default: Any = None,
             **more: Any) -> RunOption:
    option = f"--lagscale-{flag}" if more.get("prefixed") else f"--{flag}"
    return RunOption(flag, dest, help, parse=_choice(option, choices), choices=choices,
                     default=default, **more)


#: Every run option, in the order ``--help`` lists them.
RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption("profile", "profile", "Traffic profile: a bundled name (spike, spike-ci, "
              "bursty-ci, spike-demo, ...; spike resolves to spike-ci at the ci scale) or "
              "a YAML path. Default: the test's own, else spike.", metavar="NAME|PATH"),
    RunOption("policy", "policy", "Scaling policy manifest: a KEDA ScaledObject or an "
              "autoscaling/v2 HorizontalPodAutoscaler, as a bundled name (scaledobject-ci, "
              "hpa-cpu-ci, ...) or a YAML path. Default: the ScaledObject of the scale.",
              metavar="NAME|PATH"),
    RunOption("scaledobject", "scaled_object", "KEDA ScaledObject YAML (the same as --policy "
              "with a ScaledObject; give one of the two). Default: k8s/scaledobject[-ci].yaml "
              "by scale.", metavar="PATH"),
    RunOption("deployment", "deployment", "Consumer Deployment YAML, a bundled name or a path. "
              "Default: k8s/consumer-deployment[-ci].yaml by scale.", metavar="NAME|PATH"),
    RunOption("lag-threshold", "lag_thresholds", "Override the lag trigger's lagThreshold (1 to "
              "10,000,000 records); a comma list runs once per value (test ids lt<N>). "
              "Default: the policy's.", metavar="RECORDS[,RECORDS...]",
              parse=parse_lag_thresholds, setting="lag_threshold",
              to_setting=lambda sweep: sweep[0] if sweep else None),
    RunOption("drain-slo", "drain_slo_s", "Drain SLO in seconds (1 to 3600): the backlog after "
              "the spike must drain within it. Experiment 8's lagThreshold sweep recommends a "
              "value for it; `lagscale run` records drain_time_s <= it as an assertion and "
              "exits 1 on a miss. It changes no run. Default: 60 at the ci scale, 300 at full "
              "(lagscale run: no check).", metavar="SECONDS", parse=parse_drain_slo,
              setting=None),
    _choices("balancer", "balancer", BALANCERS, "Partition assignment protocol of the replicas. "
             "Default: the Deployment's (cooperative-sticky)."),
    RunOption("partitions", "partitions", "Partitions of the topic (1 to 1024). Default: the "
              "profile's.", metavar="N", parse=parse_partitions),
    _choices("engine", "engine", ENGINES, "The replicas' processing engine. Default: the "
             "Deployment's."),
    RunOption("trigger-interval", "trigger_interval_s", "The replicas' micro-batch trigger "
              "interval in seconds (0 to 300; 0 = a batch per poll). Default: the Deployment's.",
              metavar="SECONDS", parse=replica_flag_parser("--trigger-interval")),
    RunOption("spark-remote", "spark_remote", "Spark Connect server of the spark-connect engine "
              "(sc://HOST:PORT). Default: the Deployment's, else a server the run starts.",
              metavar="URL", parse=replica_flag_parser("--spark-remote")),
    RunOption("graceful", "graceful", "Scale-down drains replicas with SIGTERM within the grace "
              "period; --no-graceful SIGKILLs them. Default: graceful.", default=True,
              negatable=True),
    RunOption("static-membership", "static_membership", "Replicas join as static members: "
              "group.instance.id is the replica's stable name (<Deployment name>-<ordinal>, "
              "kept by its replacement) and classic groups get a 45 s session timeout, so a "
              "replica restarted within it causes no rebalance. Default: dynamic membership.",
              default=False, negatable=True),
    _choices("platform", "platform", tuple(PLATFORMS), "Where replicas run: local processes, or "
             "kubernetes: the real KEDA operator and HPA on a local control plane (etcd, "
             "kube-apiserver, kube-controller-manager; built by scripts/bootstrap --with-kube) "
             "scale the committed Deployment, whose pods a node agent runs as local processes. "
             "Default: local.", default="local"),
    RunOption("kubeconfig", "kubeconfig", "With --platform kubernetes: run on the cluster of "
              "this kubeconfig's current context (e.g. one `lagscale kube up` keeps running; "
              "KEDA installed, its pods run by the node agent on this machine) instead of a "
              "control plane the run starts and stops. Default: none.", metavar="PATH"),
    _choices("kafka", "kafka", KINDS, "Where the broker comes from: an embedded KRaft node from "
             "pinned Maven jars, a testcontainers container, or an external cluster. "
             "Default: embedded.", default="embedded"),
    RunOption("kafka-bootstrap", "kafka_bootstrap", "Bootstrap servers of the external cluster "
              "(only with --kafka=external)", metavar="HOST:PORT"),
    RunOption("kafka-config", "kafka_config", "A librdkafka setting for every client of an "
              "external cluster, e.g. security.protocol=SASL_SSL; repeatable. Default: none.",
              metavar="KEY=VALUE", parse=parse_kafka_config, multiple=True, default=(),
              to_setting=dict),
    _choices("scale", "lagscale_scale", SCALES, "Size of the runs: ci (P = 8, minutes) or full "
             "(the seed lab's P = 24, 10x spike for 10-15 min). Default: ci.", default="ci",
             prefixed=True, setting="scale"),
    RunOption("out", "lagscale_out", "Parent directory of the run directories. Default: "
              f"{DEFAULT_OUT}.", metavar="DIR", default=DEFAULT_OUT, prefixed=True,
              setting="out_dir", to_setting=Path),
    RunOption("baseline", "lagscale_baseline", "Baseline benchmark JSON: one file for every "
              "run, or a directory of <run label>.json files; a regression fails the session "
              "(the CLI exits 1). Default: none.", metavar="PATH", prefixed=True,
              setting=None),
    _choices("lag-source", "lag_source", LAG_SOURCE_KINDS, "Where a policy reading total lag "
             "(lag-per-slot) reads it: the broker's offsets, the run's Prometheus (the lag "
             "exporter's sum), CloudWatch's SumOffsetLag (a local moto server the run's lag is "
             "published to every --cloudwatch-period) or the Confluent Metrics API (a local "
             "service over the run's Prometheus). Policies reading offsets per partition (KEDA's "
             "kafka trigger, the persistent-lag scaler) take only broker. Default: broker.",
             default="broker"),
    RunOption("cloudwatch-period", "cloudwatch_period_s", "Seconds between the SumOffsetLag "
              "datapoints the run publishes to its CloudWatch stand-in, and the period the "
              "cloudwatch source asks for (1, 5, 10, 30 or a multiple of 60). Default: the "
              "policy's aws-cloudwatch trigger's metricStatPeriod, else 60 (MSK's).",
              metavar="SECONDS", parse=parse_cloudwatch_period),
    RunOption("cloudwatch-window", "cloudwatch_window_s", "Seconds the cloudwatch source looks "
              "back (10 to 86400). Default: the policy's aws-cloudwatch trigger's "
              "metricCollectionTime, else 300 (the recipe's 5 minutes).", metavar="SECONDS",
              parse=parse_cloudwatch_window),
    RunOption("settle-timeout", "settle_timeout_s", "After the profile ends, seconds to wait "
              "for lag <= lagThreshold and replicas == minReplicaCount (0 to 7200). Default: "
              "300.", metavar="SECONDS", parse=parse_settle_timeout, default=300.0),
)
OPTIONS_BY_DEST = {option.dest: option for option in RUN_OPTIONS}


def add_run_options(addoption: Callable[..., object]) -> None:
    """Register :data:`RUN_OPTIONS` with pytest's ``addoption`` (argparse conventions)."""
    for option in RUN_OPTIONS:
        if option.negatable:
            addoption(option.pytest_flag, dest=option.dest, action="store_true",
                      default=option.default, help=option.help)
            addoption(f"--no-{option.flag}", dest=option.dest, action="store_false",
                      help=f"The opposite of {option.pytest_flag}")
            continue
        kwargs: dict[str, Any] = {"dest": option.dest, "default": option.default,
                                  "help": option.help}
        if option.choices:
            kwargs["choices"] = option.choices
        else:
            kwargs.update(metavar=option.metavar, type=option.parse)
        if option.multiple:
            kwargs.update(action="append", default=[])
        addoption(option.pytest_flag, **kwargs)


# -- checks across options --------------------------------------------------------------------
def check_kafka_options(kind: str, bootstrap: str | None) -> str | None:
    """Return a conflict message for the kafka options, or None when they agree."""
    if kind == "external" and not bootstrap:
        return "--kafka=external needs --kafka-bootstrap HOST:PORT; add it or use --kafka=embedded"
    if kind != "external" and bootstrap:
        return (f"--kafka-bootstrap is only used with --kafka=external, not --kafka={kind}; "
                "add --kafka=external or drop --kafka-bootstrap")
    return None


def check_run_options(values: dict[str, Any]) -> list[str]:
    """Problems that one option's parser cannot see, one line each (``values`` by dest).

    Conflicts (kafka, policy vs scaledobject), files that must exist, bundled names that must
    resolve. Used by the plugin's ``pytest_cmdline_main`` and by ``lagscale run``.
    """
    from .contract.errors import ConfigError

    problems = []
    kafka = check_kafka_options(values.get("kafka") or "embedded", values.get("kafka_bootstrap"))
    if kafka:
        problems.append(kafka)
    from .kafka.external import check_bootstrap_form

    problems += check_bootstrap_form(values.get("kafka_bootstrap"), "--kafka-bootstrap")
    kubeconfig = values.get("kubeconfig")
    if kubeconfig and (values.get("platform") or "local") != "kubernetes":
        problems.append(f"--kubeconfig is only used with --platform kubernetes, not --platform "
                        f"{values.get('platform') or 'local'}; add --platform kubernetes or drop "
                        "--kubeconfig")
    if kubeconfig and not Path(kubeconfig).is_file():
        problems.append(f"--kubeconfig: {str(kubeconfig)!r} is not a file; give the path of a "
                        "kubeconfig (lagscale kube up prints one)")
    if values.get("policy") and values.get("scaled_object"):
        problems.append("--policy and --scaledobject both name the scaling policy; give one")
    scale = values.get("lagscale_scale") if values.get("lagscale_scale") in SCALES else "ci"
    resolvers = (("profile", lambda v: resolve_profile(v, scale)),
                 ("policy", lambda v: resolve_manifest(v, "--policy")),
                 ("scaled_object", lambda v: resolve_manifest(v, "--scaledobject")),
                 ("deployment", lambda v: resolve_manifest(v, "--deployment")))
    for dest, resolve in resolvers:
        if values.get(dest):
            try:
                resolve(str(values[dest]))
            except ConfigError as exc:
                problems += exc.problems
    baseline, out = values.get("lagscale_baseline"), values.get("lagscale_out") or DEFAULT_OUT
    if baseline and not Path(baseline).exists():
        problems.append(f"--lagscale-baseline: {str(baseline)!r} does not exist; give a "
                        "benchmark JSON file or a directory of <run label>.json files")
    problem = out_dir_problem(Path(out), "--lagscale-out")
    if problem:
        problems.append(problem)
    return problems


def out_dir_problem(out: Path, option: str) -> str | None:
    """Why runs cannot be written under ``out`` (one line naming ``option`` and the path), or
    None. ``out`` may be missing (it is created): its nearest existing ancestor must be a
    directory this process can create files in, tried with a temporary file that is removed at
    once, so nothing is left behind (a read-only file system, ``/proc``, a path under a file)."""
    import os
    import tempfile

    if out.exists() and not out.is_dir():
        return (f"{option}: {str(out)!r} is a file, not a directory; give a directory (created "
                "when missing)")
    parent = out
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return (f"{option}: {str(out)!r} is under the file {str(parent)!r}; give a directory "
                "(created when missing)")
    try:
        fd, probe = tempfile.mkstemp(prefix=".lagscale-probe-", dir=parent)
    except OSError as exc:
        return (f"{option}: {str(out)!r} cannot be written ({exc.strerror} in {str(parent)!r}); "
                "give a writable directory")
    os.close(fd)
    os.unlink(probe)
    return None


def settings_from_options(values: dict[str, Any], **fields: Any) -> Any:
    """The :class:`RunSettings` of parsed option ``values`` (by dest), not yet validated.

    Each option's value goes to its ``field``; a sweep (``lag_thresholds``) gives its first
    value; ``fields`` override anything (e.g. the sweep value of this test). Options not given
    keep the settings' defaults.
    """
    from .experiment.settings import RunSettings

    kwargs: dict[str, Any] = {}
    for option in RUN_OPTIONS:
        value = values.get(option.dest)
        if option.field is not None and value is not None:
            kwargs[option.field] = option.to_setting(value)
    kwargs.update(fields)
    return RunSettings(**kwargs)
