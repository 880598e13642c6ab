"""A real Prometheus server per run, scraping replicas, controller and lag exporter.

The server is the Debian/upstream ``prometheus`` binary (2.x) started through
:class:`~pytest_lagscale.process.ManagedProcess` on a free 127.0.0.1 port. Its config is rendered
from the bundled template ``pytest_lagscale/data/prometheus/prometheus.yml.template``; nothing of the
system installation (``/etc/prometheus``, ``/var/lib/prometheus``) is read or written.

Layout under ``<run_dir>/prometheus/``::

    prometheus.yml        the rendered config
    file_sd/<job>.json    targets of each job (replicas, controller, lag_exporter)
    data/                 TSDB (--storage.tsdb.path)
    prometheus.log        stdout and stderr of the server

Targets are discovered from the ``file_sd/*.json`` files, which :meth:`set_targets` rewrites
atomically (temp file + rename); Prometheus rereads them on inotify or at the latest every
``refresh_interval_s``. A removed target gets staleness markers on its next scrape slot, so
``up{job=...}`` stops returning it at once.
"""

from __future__ import annotations

import json
import os
import string
import time
from pathlib import Path
from typing import Mapping, Sequence

from ..contract.errors import ConfigError, LagscaleError
from ..contract.rundir import PROMETHEUS_DIR
from ..kafka.artifacts import fixtures_dir
from ..kafka.embedded import free_port
from ..lifecycle import StartStop
from ..process import ManagedProcess, run_id
from ..wait import probe_ready, wait_ready

#: The scrape jobs of the template, each with its own file_sd file.
JOBS: tuple[str, ...] = ("replicas", "controller", "lag_exporter")


def template_path() -> Path:
    """The Prometheus config template file.

    ``prometheus/prometheus.yml.template`` under :func:`~pytest_lagscale.kafka.artifacts.fixtures_dir`:
    the bundled package data, or ``$LAGSCALE_FIXTURES``.
    """
    return fixtures_dir() / "prometheus" / "prometheus.yml.template"


def _duration(seconds: float) -> str:
    """A Prometheus duration string in whole milliseconds (``1.0`` -> ``1000ms``)."""
    return f"{max(1, round(seconds * 1000))}ms"


def render_config(file_sd_dir: Path, scrape_interval_s: float = 1.0,
                  refresh_interval_s: float = 1.0, template: Path | None = None) -> str:
    """Render the Prometheus config for one run.

    Args:
        file_sd_dir: directory holding ``<job>.json`` target files.
        scrape_interval_s: scrape and rule-evaluation interval, seconds (also the scrape
            timeout).
        refresh_interval_s: file_sd re-read period, seconds.
        template: the template file (default :func:`template_path`).

    Raises:
        ConfigError: the template has a placeholder this function does not fill.
    """
    text = (template or template_path()).read_text()
    values = {
        "scrape_interval": _duration(scrape_interval_s),
        "scrape_timeout": _duration(scrape_interval_s),
        "evaluation_interval": _duration(scrape_interval_s),
        "refresh_interval": _duration(refresh_interval_s),
        "file_sd_dir": str(file_sd_dir),
        "run_id": run_id(),
    }
    try:
        return string.Template(text).substitute(values)
    except (KeyError, ValueError) as exc:
        raise ConfigError(f"prometheus template: placeholder {exc} is unknown; allowed "
                          f"{sorted(values)!r} in {template or template_path()}; "
                          "fix the template") from exc


class PrometheusServer(StartStop):
    """One Prometheus server scraping this run's targets every ``scrape_interval_s``.

    Args:
        run_dir: the run directory; everything goes under ``<run_dir>/prometheus/``.
        scrape_interval_s: scrape and evaluation interval, seconds.
        refresh_interval_s: file_sd refresh interval, seconds.
        startup_timeout_s: seconds to wait for ``GET /-/ready`` == 200.
        stop_timeout_s: seconds between SIGTERM and SIGKILL on stop.
        binary: the ``prometheus`` executable.
        retention_s: TSDB retention, seconds (a run never needs more than a day).

    Raises:
        ReadinessTimeout: from :meth:`start` when not ready in time (last 20 log lines attached).
        LagscaleError: from :meth:`start` when the server exits during startup (exit code and
            log lines attached) or cannot be executed.

    Example:
        >>> with PrometheusServer(tmp_path) as prom:  # doctest: +SKIP
        ...     prom.set_targets("lag_exporter", ["127.0.0.1:9308"])
        ...     prom.url
        'http://127.0.0.1:41234'
    """

    def __init__(self, run_dir: str | os.PathLike[str], scrape_interval_s: float = 1.0, *,
                 refresh_interval_s: float = 1.0, startup_timeout_s: float = 30.0,
                 stop_timeout_s: float = 10.0, binary: str = "prometheus",
                 retention_s: float = 86400.0):
        self.home = Path(run_dir) / PROMETHEUS_DIR
        self.scrape_interval_s = scrape_interval_s
        self.refresh_interval_s = refresh_interval_s
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.binary = binary
        self.retention_s = retention_s
        self.port: int | None = None
        self.process: ManagedProcess | None = None

    @property
    def file_sd_dir(self) -> Path:
        """Directory of the ``<job>.json`` target files."""
        return self.home / "file_sd"

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self.home / "prometheus.log"

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:41234``; raises LagscaleError before start."""
        if self.port is None:
            raise LagscaleError("prometheus: not started; call start() first")
        return f"http://127.0.0.1:{self.port}"

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> "PrometheusServer":
        """Write config and empty target files, start the server, wait until ready."""
        if self.process is not None:
            return self
        self.file_sd_dir.mkdir(parents=True, exist_ok=True)
        for job in JOBS:
            if not (self.file_sd_dir / f"{job}.json").exists():
                self.set_targets(job, [])
        config = self.home / "prometheus.yml"
        config.write_text(render_config(self.file_sd_dir, self.scrape_interval_s,
                                        self.refresh_interval_s))
        self.port = self.port or free_port()
        self.process = ManagedProcess("prometheus", self._argv(config), log_path=self.log_path)
        self.process.start()
        self._wait_ready()
        return self

    def restart(self, *, graceful: bool = True) -> float:
        """Stop the server if it still runs and start it again on the same port and data
        directory (the TSDB's WAL keeps what was scraped before); returns the seconds the
        server took to be ready again.

        Raises:
            LagscaleError, ReadinessTimeout: as :meth:`start`.
        """
        started = time.monotonic()
        if self.process is not None:
            self.process.stop(self.stop_timeout_s if graceful else 0, graceful=graceful)
            self.process = None
        self.start()
        return time.monotonic() - started

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the server (SIGTERM, grace, SIGKILL, reap). Idempotent."""
        if self.process is not None:
            self.process.stop(self.stop_timeout_s if timeout_s is None else timeout_s)

    # -- targets -------------------------------------------------------------------------
    def set_targets(self, job: str, targets: Sequence[str],
                    labels: Mapping[str, str] | None = None) -> Path:
        """Replace the targets of ``job`` (atomic rewrite of ``file_sd/<job>.json``).

        Args:
            job: one of :data:`JOBS`.
            targets: ``host:port`` strings; empty removes every target of the job.
            labels: labels attached to every series scraped from these targets (for
                per-target labels use :meth:`set_target_groups`).

        Returns:
            The file written.

        Raises:
            ConfigError: ``job`` is not one of :data:`JOBS`.
        """
        groups = [{"targets": list(targets), "labels": dict(labels or {})}] if targets else []
        return self.set_target_groups(job, groups)

    def set_target_groups(self, job: str, groups: Sequence[Mapping[str, object]]) -> Path:
        """Replace the target groups of ``job``: ``[{"targets": [...], "labels": {...}}]``.

        Use this for per-target labels (one group per replica).

        Raises:
            ConfigError: ``job`` is not one of :data:`JOBS`.
        """
        if job not in JOBS:
            raise ConfigError(f"prometheus job {job!r} is unknown; allowed {list(JOBS)!r}; "
                              "use one of them or add a job to the template")
        self.file_sd_dir.mkdir(parents=True, exist_ok=True)
        path = self.file_sd_dir / f"{job}.json"
        tmp = path.with_name(f".{job}.json.tmp")
        tmp.write_text(json.dumps(list(groups), indent=1))
        os.replace(tmp, path)
        return path

    # -- steps ---------------------------------------------------------------------------
    def _argv(self, config: Path) -> list[str]:
        return [
            self.binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={self.home / 'data'}",
            f"--storage.tsdb.retention.time={_duration(self.retention_s)}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=info",
        ]

    def _ready(self) -> bool:
        """``GET /-/ready`` answers 200 within a second."""
        return self.port is not None and probe_ready(self.port, "/-/ready", 1.0)

    def _wait_ready(self) -> None:
        assert self.process is not None
        wait_ready(self._ready, self.process, timeout_s=self.startup_timeout_s,
                   poll_interval_s=0.2,
                   exited=lambda how: f"prometheus: {how} during startup; see {self.log_path}",
                   timed_out=lambda: (
                       f"prometheus: timed out after {self.startup_timeout_s:g} s waiting for "
                       f"GET {self.url}/-/ready == 200; raise startup_timeout_s or check "
                       f"{self.log_path}"))
