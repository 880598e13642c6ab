"""The run options, declared once for the pytest plugin and the ``lagscale run`` command.

As pytest-benchmark shares its option groups between plugin.py and cli.py: :data:`RUN_OPTIONS` is
one table (flag, destination, metavar, parser, choices, default, help) that
:func:`add_run_options` registers with pytest (``--lagscale-<flag>``; the unprefixed spellings
of before are deprecated aliases that warn) and
:func:`pytest_lagscale.experiment.cli.run_command` turns into click options (no prefix). Each
parser raises ``argparse.ArgumentTypeError`` carrying the option and the repr of the bad value
(pytest turns it into a usage error, exit code 4; the CLI exits 2); :func:`check_run_options`
checks what one value alone cannot (conflicts, files), and :func:`setting_values` is the one
conversion to the fields of :class:`~pytest_lagscale.experiment.settings.RunSettings` (which
imports this module, never the reverse).

This module is imported by the plugin at start-up: it imports nothing heavy.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from .config.bundled import SCALES, resolve_manifest, resolve_profile
from .contract.flags import BALANCERS, ENGINES, FLAG_BY_OPTION, GROUP_TYPES
from .kafka import KINDS
from .platform import NODES, PLATFORMS

MAX_LAG_THRESHOLD = 10_000_000
MAX_PARTITIONS = 1024
MAX_SETTLE_TIMEOUT_S = 7200.0
MAX_DRAIN_SLO_S = 3600.0
#: ``--drain-slo`` when not given, seconds, by scale.
DEFAULT_DRAIN_SLO_S = {"ci": 60.0, "full": 300.0}
DEFAULT_OUT = "lagscale-runs"


# -- parsers: text -> value, or argparse.ArgumentTypeError naming the option -------------------
# Each parser has a typed twin, ``problem(value)``: the same rule for a value that is already
# typed (a RunSettings built in code), with the same message, so nothing is turned back into
# option text to be checked again.
@dataclass(frozen=True)
class _Number:
    """A number option: ``kind`` (int or float) in ``[lo, hi]``; ``allowed`` describes the
    accepted form for the fix."""

    option: str
    lo: float
    hi: float
    kind: type
    allowed: str

    def __call__(self, text: str) -> Any:
        try:
            value = (int(str(text).strip().replace("_", "")) if self.kind is int
                     else float(str(text).strip()))
        except ValueError:
            raise argparse.ArgumentTypeError(self._not_a(text)) from None
        problem = self.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    def _not_a(self, value: Any) -> str:
        what = "an integer" if self.kind is int else "a number"
        return f"{self.option}: {str(value)!r} is not {what}; allowed: {self.allowed}"

    def problem(self, value: Any) -> str | None:
        """The problem with a typed ``value`` (None: fine)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                self.kind is int and not isinstance(value, int)) or not math.isfinite(value):
            return self._not_a(value)
        if not self.lo <= value <= self.hi:
            return f"{self.option}: {self.kind(value)!r} is out of range; allowed: {self.allowed}"
        return None


def _seconds_range(flag: str, low: float, high: float) -> _Number:
    return _Number(flag, low, high, float, f"seconds in [{low:g}, {high:g}]")


LAG_THRESHOLD = _Number("--lag-threshold", 1, MAX_LAG_THRESHOLD, int,
                        f"integers in [1, {MAX_LAG_THRESHOLD:,}] records, comma-separated for a "
                        "sweep (e.g. 1000,10000,100000)")
PARTITIONS = _Number("--partitions", 1, MAX_PARTITIONS, int,
                     f"an integer in [1, {MAX_PARTITIONS:,}] partitions")
SETTLE_TIMEOUT = _seconds_range("--settle-timeout", 0.0, MAX_SETTLE_TIMEOUT_S)
DRAIN_SLO = _seconds_range("--drain-slo", 1.0, MAX_DRAIN_SLO_S)
CLOUDWATCH_WINDOW = _seconds_range("--cloudwatch-window", 10.0, 86_400.0)


def parse_lag_thresholds(value: str) -> tuple[int, ...]:
    """Parse ``--lag-threshold N[,N...]``: records per replica, 1..10,000,000, no repeats.

    Raises:
        argparse.ArgumentTypeError: a value is not an integer in range, or repeats.
    """
    thresholds = tuple(LAG_THRESHOLD(part) for part in str(value).split(","))
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
    return PARTITIONS(value)


def parse_settle_timeout(value: str) -> float:
    """Parse ``--settle-timeout SECONDS``: 0..7200 seconds.

    Raises:
        argparse.ArgumentTypeError: not a number in range.
    """
    return SETTLE_TIMEOUT(value)


def parse_drain_slo(value: str) -> float:
    """Parse ``--drain-slo SECONDS``: experiment 8's drain SLO, 1..3600 seconds.

    Raises:
        argparse.ArgumentTypeError: not a number in range.
    """
    return DRAIN_SLO(value)


@dataclass(frozen=True)
class _ReplicaFlag:
    """A run option that overrides the replica flag ``option``: checked against the contract's
    flag table, the same check the replica makes."""

    option: str

    def _problem_text(self, value: Any) -> str:
        return (f"{self.option}: {str(value)!r} is not allowed; allowed: "
                f"{FLAG_BY_OPTION[self.option].allowed}")

    def __call__(self, text: str) -> Any:
        try:
            return FLAG_BY_OPTION[self.option].parse(str(text).strip())
        except ValueError:
            raise argparse.ArgumentTypeError(self._problem_text(text)) from None

    def problem(self, value: Any) -> str | None:
        """The problem with a typed ``value`` (None: fine)."""
        return None if FLAG_BY_OPTION[self.option].allows(value) else self._problem_text(value)


def replica_flag_parser(option: str) -> Callable[[str], Any]:
    """A parser for a run option that overrides the replica flag ``option`` (``--trigger-interval``):
    the value is checked against the contract's flag table, the same check the replica makes.

    The parser raises ``argparse.ArgumentTypeError`` naming the option, the value and the
    flag's allowed range (with its unit); its ``problem(value)`` checks a typed value.

    Raises:
        KeyError: ``option`` is not a replica flag of the contract's table.
    """
    if option not in FLAG_BY_OPTION:
        raise KeyError(f"{option}: not a replica flag (contract/flags.py)")
    return _ReplicaFlag(option)


#: ``--lag-source`` values: the kinds of :data:`pytest_lagscale.sources.LAG_SOURCES` (kept here so
#: the plugin's start-up imports no source; a unit test keeps the two equal).
LAG_SOURCE_KINDS = ("broker", "prometheus", "cloudwatch", "confluent", "share-group")


@dataclass(frozen=True)
class _CloudWatchPeriod:
    """``--cloudwatch-period``: 1, 5, 10, 30 or a multiple of 60 up to 3600 seconds."""

    seconds: _Number = _seconds_range("--cloudwatch-period", 1.0, 3600.0)

    def __call__(self, text: str) -> float:
        seconds = self.seconds(text)
        problem = self.problem(seconds)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return seconds

    def problem(self, value: Any) -> str | None:
        """The problem with a typed ``value`` in seconds (None: fine)."""
        problem = self.seconds.problem(value)
        if problem:
            return problem
        from .config.trigger_metadata.aws_cloudwatch import is_cloudwatch_period

        if not is_cloudwatch_period(float(value)):
            return (f"--cloudwatch-period: {float(value)!r} is not a CloudWatch period; allowed: "
                    "1, 5, 10, 30 or a multiple of 60 seconds up to 3600")
        return None


CLOUDWATCH_PERIOD = _CloudWatchPeriod()


def parse_cloudwatch_period(value: str) -> float:
    """Parse ``--cloudwatch-period SECONDS``: 1, 5, 10, 30 or a multiple of 60 up to 3600 (the
    periods CloudWatch stores; MSK publishes every 60).

    Raises:
        argparse.ArgumentTypeError: not one of those.
    """
    return CLOUDWATCH_PERIOD(value)


def parse_cloudwatch_window(value: str) -> float:
    """Parse ``--cloudwatch-window SECONDS``: how far back the CloudWatch source looks, 10..86400.

    Raises:
        argparse.ArgumentTypeError: not a number in range.
    """
    return CLOUDWATCH_WINDOW(value)


def parse_kafka_config(value: str) -> tuple[str, str]:
    """Parse one ``KEY=VALUE`` librdkafka setting (``--kafka-config``)."""
    key, sep, val = str(value).partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"--kafka-config: {value!r} is not KEY=VALUE; e.g. security.protocol=SASL_SSL")
    return key.strip(), val


@dataclass(frozen=True)
class _Choice:
    """One of ``choices``, by the option's name ``option``."""

    option: str
    choices: tuple[str, ...]

    def __call__(self, value: str) -> str:
        problem = self.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    def problem(self, value: Any) -> str | None:
        """The problem with ``value`` (None: fine)."""
        if value not in self.choices:
            return f"{self.option}: {value!r} is not allowed; allowed: {', '.join(self.choices)}"
        return None


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
        prefixed: pytest always spelled it ``--lagscale-<flag>``; the others also answer to
            the unprefixed ``--<flag>`` in pytest, a deprecated alias that warns (it could
            clash with other plugins: pytest-profiling's ``--profile``).
        multiple: repeatable; the value is a list.
        negatable: a boolean flag with a ``--no-<flag>`` twin.
        setting: the :class:`~pytest_lagscale.experiment.settings.RunSettings` field the value
            goes to (default: ``dest``); None for options that are not a run setting
            (``--lagscale-baseline``: the gate compares runs, it does not change them).
        to_setting: option value -> field value (e.g. a sweep's first value).
        problem: the typed check of the setting value (None: fine, else the parser's message);
            default: the parser's own ``problem``.
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
    problem: Callable[[Any], str | None] | None = None

    @property
    def field(self) -> str | None:
        """The RunSettings field (``setting``, defaulting to ``dest``), or None."""
        return self.dest if self.setting == "" else self.setting

    @property
    def pytest_flag(self) -> str:
        """``--lagscale-<flag>``: the option in pytest (the CLI drops the prefix)."""
        return f"--lagscale-{self.flag}"

    @property
    def deprecated_pytest_flag(self) -> str | None:
        """``--<flag>``, the unprefixed pytest spelling kept for one release (it warns), or None
        for the options pytest always prefixed."""
        return None if self.prefixed else f"--{self.flag}"

    @property
    def cli_flag(self) -> str:
        return f"--{self.flag}"

    def check(self, value: Any) -> str | None:
        """The problem with the typed setting ``value`` (None: fine): the parser's rule applied
        to the value as it is (``parse.problem``), never to it written back as text."""
        problem = self.problem or getattr(self.parse, "problem", None)
        if value is None or self.negatable or self.multiple or problem is None:
            return None
        return problem(value)


def _choices(flag: str, dest: str, choices: tuple[str, ...], help: str, default: Any = None,
             **more: Any) -> RunOption:
    option = f"--lagscale-{flag}" if more.get("prefixed") else f"--{flag}"
    return RunOption(flag, dest, help, parse=_Choice(option, choices), choices=choices,
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
              parse=parse_lag_thresholds, setting="lag_threshold", problem=LAG_THRESHOLD.problem,
              to_setting=lambda sweep: sweep[0] if sweep else None),
    RunOption("drain-slo", "drain_slo_s", "Drain SLO in seconds (1 to 3600): the backlog after "
              "the spike must drain within it. Experiment 8's lagThreshold sweep recommends a "
              "value for it; `lagscale run` records drain_time_s <= it as an assertion and "
              "exits 1 on a miss. It changes no run. Default: 60 at the ci scale, 300 at full "
              "(lagscale run: no check).", metavar="SECONDS", parse=DRAIN_SLO,
              setting=None),
    _choices("balancer", "balancer", BALANCERS, "Partition assignment protocol of the replicas. "
             "Default: the Deployment's (cooperative-sticky)."),
    _choices("group-type", "group_type", GROUP_TYPES, "What the replicas join: a consumer group "
             "(consumer) or a KIP-932 share group (share: the replicas run --group-type share, "
             "and the run reads the share group's lag). Default: the Deployment's (consumer)."),
    RunOption("partitions", "partitions", "Partitions of the topic (1 to 1024). Default: the "
              "profile's.", metavar="N", parse=PARTITIONS),
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
             "scale the committed Deployment, whose pods run on a kubelet node (--node). "
             "Default: local.", default="local"),
    _choices("node", "node", NODES, "With --platform kubernetes: what runs the pods. kubelet: a "
             "real kubelet with containerd and runc runs them as containers of the replica "
             "image (root; built by scripts/bootstrap --with-kube); process: a node agent in "
             "the harness runs each pod as a local process (machines where containers cannot "
             "run). Default: kubelet, or process for a Deployment running its own consumer "
             "command."),
    RunOption("kubeconfig", "kubeconfig", "With --platform kubernetes: run on the cluster of "
              "this kubeconfig's current context (e.g. one `lagscale kube up` keeps running; "
              "KEDA installed; its pods run by the node agent on this machine, or by its own "
              "kubelets with --replica-image) instead of a "
              "control plane the run starts and stops. Default: none.", metavar="PATH"),
    RunOption("replica-image", "replica_image", "With --kubeconfig of a cluster with kubelets "
              "(kind, a cloud cluster): the image its pods run, pushed or loaded by you (docs/"
              "kubernetes.md \"Clusters with kubelets\"); needs --kafka external with an "
              "address the pods reach. The replica program then writes its output topic and the "
              "run measures it from the broker. Default: none (a cluster without nodes).",
              metavar="REF"),
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
              metavar="SECONDS", parse=CLOUDWATCH_PERIOD),
    RunOption("cloudwatch-window", "cloudwatch_window_s", "Seconds the cloudwatch source looks "
              "back (10 to 86400). Default: the policy's aws-cloudwatch trigger's "
              "metricCollectionTime, else 300 (the recipe's 5 minutes).", metavar="SECONDS",
              parse=CLOUDWATCH_WINDOW),
    RunOption("settle-timeout", "settle_timeout_s", "After the profile ends, seconds to wait "
              "for lag <= lagThreshold and replicas == minReplicaCount (0 to 7200). Default: "
              "300.", metavar="SECONDS", parse=SETTLE_TIMEOUT, default=300.0),
)
OPTIONS_BY_DEST = {option.dest: option for option in RUN_OPTIONS}


def add_run_options(addoption: Callable[..., object],
                    add_deprecated: Callable[..., object] | None = None) -> None:
    """Register :data:`RUN_OPTIONS` with pytest's ``addoption`` (argparse conventions) as
    ``--lagscale-<flag>``; with ``add_deprecated`` (another group's ``addoption``), also the
    unprefixed spellings of before, each into its own destination (``lagscale_deprecated_<dest>``)
    so a bad value is named as it was written; :func:`apply_deprecated` moves their values."""
    for option in RUN_OPTIONS:
        _add(addoption, option, option.pytest_flag, f"--lagscale-no-{option.flag}", option.dest,
             option.help, option.default)
        if add_deprecated is not None and option.deprecated_pytest_flag:
            _add(add_deprecated, option, option.deprecated_pytest_flag, f"--no-{option.flag}",
                 DEPRECATED_DEST + option.dest, f"Deprecated: use {option.pytest_flag}.", None)


#: The destination prefix of a deprecated unprefixed spelling.
DEPRECATED_DEST = "lagscale_deprecated_"


def _add(addoption: Callable[..., object], option: RunOption, flag: str, no_flag: str, dest: str,
         help: str, default: Any) -> None:
    if option.negatable:
        addoption(flag, dest=dest, action="store_const", const=True, default=default, help=help)
        addoption(no_flag, dest=dest, action="store_const", const=False,
                  help=f"The opposite of {flag}")
        return
    kwargs: dict[str, Any] = {"dest": dest, "default": default, "help": help}
    if option.choices:
        kwargs["choices"] = option.choices
    else:
        kwargs.update(metavar=option.metavar, type=option.parse)
    if option.multiple:
        kwargs.update(action="append", default=[] if default is not None else None)
    addoption(flag, **kwargs)


def apply_deprecated(namespace: Any) -> list[str]:
    """Move the values given with deprecated unprefixed spellings in ``namespace`` (pytest's
    ``config.option``) to their options; one warning line per spelling used (``--profile is
    deprecated: use --lagscale-profile``), for the caller to issue. A second call finds
    nothing to move."""
    lines = []
    for option in RUN_OPTIONS:
        dest = DEPRECATED_DEST + option.dest
        value = getattr(namespace, dest, None)
        if value is None:
            continue
        setattr(namespace, dest, None)
        if option.multiple:
            value = [*(getattr(namespace, option.dest, None) or []), *value]
        setattr(namespace, option.dest, value)
        lines.append(f"{option.deprecated_pytest_flag} is deprecated: use {option.pytest_flag} "
                     "(the unprefixed spelling goes in the next release; it can clash with "
                     "other plugins' options)")
    return lines


# -- checks across options --------------------------------------------------------------------
def check_kafka_options(kind: str, bootstrap: str | None) -> str | None:
    """Return a conflict message for the kafka options, or None when they agree."""
    if kind == "external" and not bootstrap:
        return "--kafka=external needs --kafka-bootstrap HOST:PORT; add it or use --kafka=embedded"
    if kind != "external" and bootstrap:
        return (f"--kafka-bootstrap is only used with --kafka=external, not --kafka={kind}; "
                "add --kafka=external or drop --kafka-bootstrap")
    return None


def setting_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The run settings of parsed option ``values`` (by dest): ``{RunSettings field: value}`` for
    each option given that is a setting (a sweep gives its first value). The one conversion
    from options to settings (:meth:`~pytest_lagscale.experiment.settings.RunSettings.from_options`)."""
    return {option.field: option.to_setting(values[option.dest]) for option in RUN_OPTIONS
            if option.field is not None and values.get(option.dest) is not None}


def value_problems(fields: Mapping[str, Any]) -> list[str]:
    """One problem per typed setting value that its option's rule rejects (``fields`` by
    RunSettings field)."""
    return [problem for option in RUN_OPTIONS if option.field and option.field in fields
            if (problem := option.check(fields[option.field]))]


def cross_problems(fields: Mapping[str, Any], baseline: Any = None) -> list[str]:
    """Problems that one value alone cannot show, one line each (``fields`` by RunSettings
    field; ``baseline``: ``--lagscale-baseline``, not a setting).

    Conflicts (kafka, policy vs scaledobject), files that must exist, bundled names that must
    resolve, an output directory that can be written.
    """
    from .contract.errors import ConfigError

    problems = []
    kafka = check_kafka_options(fields.get("kafka") or "embedded", fields.get("kafka_bootstrap"))
    if kafka:
        problems.append(kafka)
    from .kafka.external import check_bootstrap_form

    problems += check_bootstrap_form(fields.get("kafka_bootstrap"), "--kafka-bootstrap")
    kubeconfig = fields.get("kubeconfig")
    if kubeconfig and (fields.get("platform") or "local") != "kubernetes":
        problems.append(f"--kubeconfig is only used with --platform kubernetes, not --platform "
                        f"{fields.get('platform') or 'local'}; add --platform kubernetes or drop "
                        "--kubeconfig")
    if kubeconfig and not Path(kubeconfig).is_file():
        problems.append(f"--kubeconfig: {str(kubeconfig)!r} is not a file; give the path of a "
                        "kubeconfig (lagscale kube up prints one)")
    problems += replica_image_problems(fields)
    if fields.get("policy") and fields.get("scaled_object"):
        problems.append("--policy and --scaledobject both name the scaling policy; give one")
    scale = fields.get("scale") if fields.get("scale") in SCALES else "ci"
    resolvers = (("profile", lambda v: resolve_profile(v, scale)),
                 ("policy", lambda v: resolve_manifest(v, "--policy")),
                 ("scaled_object", lambda v: resolve_manifest(v, "--scaledobject")),
                 ("deployment", lambda v: resolve_manifest(v, "--deployment")))
    for name, resolve in resolvers:
        if fields.get(name):
            try:
                resolve(str(fields[name]))
            except ConfigError as exc:
                problems += exc.problems
    if baseline and not Path(baseline).exists():
        problems.append(f"--lagscale-baseline: {str(baseline)!r} does not exist; give a "
                        "benchmark JSON file or a directory of <run label>.json files")
    problem = out_dir_problem(Path(fields.get("out_dir") or DEFAULT_OUT), "--lagscale-out")
    if problem:
        problems.append(problem)
    return problems


def replica_image_problems(fields: Mapping[str, Any]) -> list[str]:
    """``--replica-image`` without ``--kubeconfig`` or ``--kafka external``, or a reference
    with whitespace, one line each."""
    image = fields.get("replica_image")
    if image is None:
        return []
    problems = []
    if not str(image).strip() or any(c.isspace() for c in str(image)):
        problems.append(f"--replica-image: {str(image)!r} is not an image reference; give one "
                        "like registry.example/lagscale-replica:0.1.0")
    if not fields.get("kubeconfig"):
        problems.append("--replica-image is for a --kubeconfig cluster with kubelets; add "
                        "--kubeconfig PATH (the run's own kubelet node builds its image)")
    if (fields.get("kafka") or "embedded") != "external":
        problems.append("--replica-image: the cluster's pods need a broker they reach; add "
                        "--kafka external --kafka-bootstrap HOST:PORT")
    return problems


def check_run_options(values: Mapping[str, Any]) -> list[str]:
    """Problems of parsed option ``values`` (by dest) that one option's parser cannot see, one
    line each: :func:`cross_problems` of their settings and ``--lagscale-baseline``. Used by the
    plugin's ``pytest_cmdline_main`` and by ``lagscale run`` before any plan is made."""
    return cross_problems(setting_values(values), values.get("lagscale_baseline"))


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
