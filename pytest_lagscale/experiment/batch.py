"""Concurrent batches shared by experiments: every concurrent run of a session on one profile
starts at the same moment, and runs with identical options run once.

Experiments 9 (policy shoot-out) and 10 (lag sources) each compare runs that must see the same
records at the same instants on the same machine at the same moment, so each runs its runs at
once (:func:`~pytest_lagscale.experiment.concurrent.run_concurrently`). Both use the spike
profile, and experiment 10's broker run (the committed ScaledObject) is experiment 9's ``keda``
run: one batch per profile holds the runs of every experiment of the session, and a run both
ask for runs once and answers both (the same :class:`FinishedRun`, so the records of both
land in its one ``benchmark.json``).

An experiment module takes part by defining ``concurrent_members(profile, scale, folder) ->
{name: lagscale run options}`` (``{}`` for profiles it does not use; ``folder`` is the batch's
directory, for files a run needs, such as a profile with an action) and asking the session's
``lagscale_concurrent`` fixture (:mod:`pytest_lagscale.plugin`) for its runs. Options with
``--engine spark-connect`` get ``--spark-remote`` of one Spark Connect server shared by the
batch, started on first need.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterable, Mapping

from ..contract.errors import ConfigError
from .concurrent import run_concurrently
from .finished import FinishedRun, read_finished_run

Members = Callable[[str, str, Path], Mapping[str, list[str]]]
"""``(profile, scale, folder) -> {name: lagscale run options}`` of one experiment."""

#: The replicas' engine of concurrent runs by scale: at ci six or more groups of up to 8
#: replicas are more replicas than a 2-core machine holds JVMs (arrow: the same batch pipeline
#: without a JVM); at full, thin Spark Connect clients of one shared server.
ENGINE = {"ci": "arrow", "full": "spark-connect"}
#: Seconds one batch may take, by scale.
TIMEOUT_S = {"ci": 1200.0, "full": 3600.0}


def experiment_key(module: ModuleType | str) -> str:
    """``exp9`` for ``benchmarks.test_exp9_policies`` (the prefix of a member's run name).

    Example:
        >>> experiment_key("benchmarks.test_exp10_lag_source_delay")
        'exp10'
    """
    name = module if isinstance(module, str) else module.__name__
    return name.rsplit(".", 1)[-1].removeprefix("test_").split("_", 1)[0]


def members_of(modules: Iterable[ModuleType]) -> dict[str, Members]:
    """``experiment key -> concurrent_members`` of the modules that define it (each once)."""
    found: dict[str, Members] = {}
    for module in modules:
        members = getattr(module, "concurrent_members", None)
        if callable(members):
            found.setdefault(experiment_key(module), members)
    return found


@dataclass
class ConcurrentBatches:
    """The session's concurrent batches, one per (profile, scale), run on first request.

    Args:
        members: experiment key -> its ``concurrent_members``.
        bootstrap: the session broker's bootstrap servers.
        client_options: extra ``lagscale run`` options for every run (``--kafka-config``).
        spark_remote: starts (once) the shared Spark Connect server and returns its URL.
        runner: :func:`run_concurrently` (tests swap it).
        reader: :func:`read_finished_run` (tests swap it).
    """

    members: Mapping[str, Members]
    bootstrap: str
    client_options: list[str] = field(default_factory=list)
    spark_remote: Callable[[], str] | None = None
    runner: Callable[..., Mapping[str, Any]] = run_concurrently
    reader: Callable[[Path], Any] = read_finished_run
    _done: dict[tuple[str, str], dict[str, dict[str, FinishedRun]]] = field(
        default_factory=dict, repr=False)

    def runs(self, experiment: str, profile: str, scale: str,
             out_dir: Path) -> dict[str, FinishedRun]:
        """``name -> FinishedRun`` of ``experiment``'s runs on ``profile`` at ``scale``; the
        first request for the profile runs the whole batch under ``out_dir``.

        Raises:
            ConfigError: ``experiment`` takes no part, or has no run on ``profile``.
            LagscaleError: from :func:`run_concurrently` (a run failed or timed out).
        """
        if experiment not in self.members:
            raise ConfigError(f"concurrent batch: experiment {experiment!r} defines no "
                              f"concurrent_members; taking part: {sorted(self.members)}")
        key = (profile, scale)
        if key not in self._done:
            self._done[key] = self._run(profile, scale, out_dir)
        mine = self._done[key].get(experiment)
        if not mine:
            raise ConfigError(f"concurrent batch: experiment {experiment!r} has no run on "
                              f"profile {profile!r}")
        return mine

    def _run(self, profile: str, scale: str,
             out_dir: Path) -> dict[str, dict[str, FinishedRun]]:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        folder = Path(out_dir) / f"{stamp}-concurrent-{profile}"
        folder.mkdir(parents=True, exist_ok=True)
        wanted = {exp: dict(members(profile, scale, folder))
                  for exp, members in self.members.items()}
        runs, names = plan_batch(wanted)
        remote = (["--spark-remote", self.spark_remote()]
                  if self.spark_remote is not None and any(
                      _engine(o) == "spark-connect" for o in runs.values()) else [])
        options = {name: [*opts, *(remote if _engine(opts) == "spark-connect" else []),
                          *self.client_options] for name, opts in runs.items()}
        done = self.runner(options, bootstrap=self.bootstrap, out_dir=folder,
                           timeout_s=TIMEOUT_S.get(scale, TIMEOUT_S["full"]))
        finished = {name: self.reader(done[name].run_dir) for name in runs}
        return {exp: {name: finished[names[(exp, name)]] for name in mine}
                for exp, mine in wanted.items()}


def plan_batch(wanted: Mapping[str, Mapping[str, list[str]]]
               ) -> tuple[dict[str, list[str]], dict[tuple[str, str], str]]:
    """The runs of one batch: identical options run once.

    Args:
        wanted: experiment key -> {name: options}.

    Returns:
        ``(runs, names)``: run name (``<experiment>-<name>`` of its first asker) -> options, and
        (experiment, name) -> the run name that answers it.

    Example:
        >>> runs, names = plan_batch({"exp9": {"keda": ["--policy", "a"]},
        ...                           "exp10": {"broker": ["--policy", "a"], "p": ["-x"]}})
        >>> sorted(runs), names[("exp10", "broker")]
        (['exp10-p', 'exp9-keda'], 'exp9-keda')
    """
    runs: dict[str, list[str]] = {}
    by_options: dict[tuple[str, ...], str] = {}
    names: dict[tuple[str, str], str] = {}
    for exp, members in wanted.items():
        for name, opts in members.items():
            run_name = by_options.get(tuple(opts))
            if run_name is None:
                run_name = re.sub(r"[^A-Za-z0-9_-]", "-", f"{exp}-{name}")
                runs[run_name] = list(opts)
                by_options[tuple(opts)] = run_name
            names[(exp, name)] = run_name
    return runs, names


def _engine(options: list[str]) -> str | None:
    return next((options[i + 1] for i, o in enumerate(options[:-1]) if o == "--engine"), None)
