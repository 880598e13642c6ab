"""State of one pytest session's experiment runs: the run cache and the baseline gate.

:class:`LagscaleSession` is what the plugin's ``lagscale_run`` fixture keeps in the config stash:
runs are shared by settings (experiments 2 and 6 use one graceful spike run), compared with
``--lagscale-baseline`` at session end, and listed in the terminal summary.
"""

from __future__ import annotations

import dataclasses
import io
import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest


def _settings_key(settings: Any) -> str:
    """A hashable identity of every field (paths made absolute, mappings sorted); a
    ``lag_threshold`` equal to the policy's own counts as no override (the same run)."""
    settings = _without_noop_lag_threshold(settings)

    def norm(value: Any) -> Any:
        if isinstance(value, Path):
            return os.path.abspath(value)
        if isinstance(value, Mapping):
            return sorted((str(k), str(v)) for k, v in value.items())
        return value

    return repr([(f.name, norm(getattr(settings, f.name)))
                 for f in dataclasses.fields(settings)])


def _without_noop_lag_threshold(settings: Any) -> Any:
    """``settings`` with ``lag_threshold=None`` when overriding the policy's lagThreshold with
    it changes nothing (experiment 8's sweep value that is experiment 2's run); unchanged when
    the value differs or the policy cannot be read (the run reports that problem itself)."""
    if getattr(settings, "lag_threshold", None) is None:
        return settings
    from .config.policy import load_policy_manifest, with_lag_threshold
    from .contract.errors import ConfigError

    try:
        config = load_policy_manifest(settings.manifest_files()["policy"])
        same = with_lag_threshold(config, settings.lag_threshold) == config
    except (ConfigError, OSError):
        return settings
    return dataclasses.replace(settings, lag_threshold=None) if same else settings


@dataclasses.dataclass
class _Run:
    """One cached run: its settings, the result or the error, and the tests that used it."""

    settings: Any
    result: Any = None
    error: BaseException | None = None
    nodeids: list[str] = dataclasses.field(default_factory=list)
    verdict: str = "no baseline"       # pass | fail | no baseline | error
    comparison: Any = None
    message: str = ""


class LagscaleSession:
    """The runs of one pytest session and their comparison with ``--lagscale-baseline``.

    Args:
        baseline: a benchmark JSON file (the baseline of every run) or a directory holding
            ``<RunSettings.label()>.json`` per run; None: no gate.
        announce: called with one progress line (:func:`progress_line`) when a run ends or
            fails, so a long session's log shows each run as it finishes; None: silent.
    """

    def __init__(self, baseline: Path | None,
                 announce: Callable[[str], None] | None = None):
        self.baseline = baseline
        self.announce = announce
        self._runs: dict[str, _Run] = {}

    @property
    def runs(self) -> list[_Run]:
        """Runs that produced a result, in the order they ran."""
        return [run for run in self._runs.values() if run.result is not None]

    @property
    def failed(self) -> bool:
        """True when a run regressed or its baseline could not be compared."""
        return any(run.verdict in ("fail", "error") for run in self.runs)

    def run(self, settings: Any, nodeid: str, call: Callable[[], Any]) -> Any:
        """The result of ``call()`` for ``settings``, from the cache when already run.

        A failed run is not repeated: later tests asking for it fail, naming the first test.
        """
        key = _settings_key(settings)
        entry = self._runs.get(key)
        if entry is None:
            entry = self._runs[key] = _Run(settings)
            started = time.monotonic()
            try:
                entry.result = call()
            except Exception as exc:
                entry.error = exc
                entry.nodeids.append(nodeid)
                self._announce(entry, time.monotonic() - started)
                raise
            except BaseException:
                del self._runs[key]
                raise
            self._announce(entry, time.monotonic() - started)
        elif entry.error is not None:
            pytest.fail(f"lagscale_run: the shared run {settings.label()!r} failed in "
                        f"{entry.nodeids[0]}: {type(entry.error).__name__}: {entry.error}",
                        pytrace=False)
        entry.nodeids.append(nodeid)
        return entry.result

    def _announce(self, entry: _Run, wall_s: float) -> None:
        if self.announce is not None:
            self.announce(progress_line(len(self._runs), entry.settings.label(), wall_s,
                                        entry.result, entry.error))

    def compare_with_baselines(self) -> None:
        """Set each run's verdict against its baseline document (see :class:`_Run`)."""
        if self.baseline is None:
            return
        from .contract.errors import ConfigError
        from .report import benchjson
        from .report.compare import compare_documents

        for run in self.runs:
            label = run.settings.label()
            path = self.baseline / f"{label}.json" if self.baseline.is_dir() else self.baseline
            if not path.is_file():
                run.verdict, run.message = "no baseline", f"{path} does not exist"
                continue
            try:
                run.comparison = compare_documents(benchjson.load(path), run.result.document())
            except (ConfigError, KeyError, OSError) as exc:
                run.verdict, run.message = "error", f"cannot compare with {path}: {exc}"
                continue
            run.verdict, run.message = run.comparison.verdict, f"baseline {path}"

    def summarize(self, terminalreporter: Any) -> None:
        """Write one line per run, then each comparison table, to the terminal summary."""
        from rich.console import Console

        from .report.compare import render_comparison

        tw = terminalreporter._tw
        # In a log (not a terminal), keep metric names whole rather than fit 80 columns.
        width = tw.fullwidth if terminalreporter.isatty else max(tw.fullwidth, 120)
        buffer = io.StringIO()
        console = Console(file=buffer, width=width, force_terminal=tw.hasmarkup,
                          no_color=not tw.hasmarkup, highlight=False, soft_wrap=True)
        terminalreporter.write_sep("=", "lagscale runs")
        for run in self.runs:
            result, label = run.result, run.settings.label()
            console.print(f"[bold]{label}[/]: run dir {result.run_dir}, benchmark "
                          f"{result.benchmark_path} ({len(run.nodeids)} test(s))")
        for run in self.runs:
            if run.comparison is not None:
                console.print(render_comparison(run.comparison,
                                                title=f"{run.settings.label()} vs baseline"))
                for note in run.comparison.warnings:
                    console.print(f"[yellow]warning: {note}[/]")
                for row in run.comparison.failures:
                    console.print(f"[red]  {row.reason}[/]")
            if self.baseline is not None:
                style = {"pass": "green", "fail": "bold red", "error": "bold red"}.get(
                    run.verdict, "yellow")
                console.print(f"[{style}]{run.settings.label()}: {run.verdict}[/] "
                              f"({run.message})")
        if self.failed:
            # Repeated last, so a log's tail names every regression without the tables above.
            for run in self.runs:
                if run.verdict == "error":
                    console.print(f"[red]  {run.settings.label()}: {run.message}[/]")
                for row in run.comparison.failures if run.comparison is not None else ():
                    console.print(f"[red]  {run.settings.label()}: {row.reason}[/]")
            console.print("[bold red]lagscale: regression against --lagscale-baseline; the "
                          "session fails (exit status 1)[/]")
        terminalreporter.write(buffer.getvalue())


def progress_line(number: int, label: str, wall_s: float, result: Any = None,
                  error: BaseException | None = None) -> str:
    """One line for a finished run of the session, e.g. ``lagscale: run 3 spike-ci done in
    312 s: produced 98,412, lost 0, duplicated 0; run dir lagscale-runs/...``, or ``... failed
    after 40 s: RunError: ...``. ``number`` counts the session's runs from 1; ``wall_s`` is the
    run's wall time in seconds (start, load, settle, analysis)."""
    head = f"lagscale: run {number} {label}"
    if error is not None or result is None:
        return f"{head} failed after {wall_s:.0f} s: {type(error).__name__}: {error}"
    metrics = getattr(result, "metrics", None) or {}

    def count(name: str) -> str:
        value = metrics.get(name)
        return "not measured" if value is None else f"{value:,.0f}"

    return (f"{head} done in {wall_s:.0f} s: produced {count('produced_records')}, lost "
            f"{count('lost_records')}, duplicated {count('duplicated_records')}; run dir "
            f"{getattr(result, 'run_dir', '?')}")
