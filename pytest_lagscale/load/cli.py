"""``lagscale produce``: drive a traffic profile into Kafka and report achieved vs requested rates.

:mod:`pytest_lagscale.cli` adds it to ``lagscale`` with :func:`register`. Every flag and the
profile are validated before anything starts; bad input exits 2 with one ``error:`` line per
problem. Without ``--bootstrap`` an embedded broker runs for the duration of the command.

Exit codes: 0 done (a producer that did not keep up is reported in the table and JSON, with a
warning line), 1 some records were not acknowledged or the broker failed, 2 bad input,
130 interrupted by Ctrl-C (the partial report and manifest are still written).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import signal
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import typer

from ..cli_usage import fail_usage
from ..contract.errors import BrokerError, ConfigError
from .profiles import Profile, ProfileOverrides, load_profile
from .schedule import Schedule

EXIT_DELIVERY_FAILED = 1
EXIT_INTERRUPTED = 130


def produce(
    profile: Path = typer.Option(..., "--profile", metavar="NAME|PATH",
                                 help="A bundled profile's name (spike-ci, bursty-ci, spike, ...) "
                                      "or a traffic profile YAML, e.g. "
                                      "fixtures/profiles/spike.yaml"),
    rate: Optional[float] = typer.Option(
        None, "--rate", metavar="RECORDS_PER_S",
        help="Base rate: rate_per_s of a steady profile, baseline_rate_per_s of a step "
             "profile. Default: the profile's."),
    spike_mult: Optional[float] = typer.Option(
        None, "--spike-mult", metavar="FACTOR",
        help="Spike multiplier of a step profile. Default: the profile's."),
    spike_hold: Optional[float] = typer.Option(
        None, "--spike-hold", metavar="SECONDS",
        help="Spike hold of a step profile. Default: the profile's."),
    seed: Optional[int] = typer.Option(None, "--seed", metavar="N",
                                       help="Seed of keys and payloads. Default: the profile's."),
    partitions: Optional[int] = typer.Option(
        None, "--partitions", metavar="P", help="Partitions of the topic. Default: the profile's."),
    bootstrap: Optional[str] = typer.Option(
        None, "--bootstrap", metavar="HOST:PORT",
        help="Produce to this existing cluster (the topic is created if missing). "
             "Default: an embedded broker started for the run."),
    topic: Optional[str] = typer.Option(None, "--topic", metavar="NAME",
                                        help="Topic. Default: the profile's (events)."),
    out: Optional[Path] = typer.Option(
        None, "--out", metavar="DIR",
        help="Directory for manifest.json and report.json. Default: runs/<utc>-produce."),
) -> None:
    """Produce a traffic profile (open model) and print achieved vs requested rates."""
    overrides = ProfileOverrides(rate_per_s=rate, spike_multiplier=spike_mult,
                                 spike_hold_s=spike_hold, seed=seed, partitions=partitions,
                                 topic=topic)
    problems: list[str] = []
    try:
        prof: Profile | None = load_profile(profile_path(profile), overrides)
    except ConfigError as exc:
        prof, problems = None, list(exc.problems)
    problems += check_bootstrap(bootstrap) + check_out_dir(out)
    if problems or prof is None:
        raise fail_usage(ConfigError(problems))
    if bootstrap is not None:
        from ..kafka.external import probe

        try:  # before any directory or client of the run exists
            probe(bootstrap, flag="--bootstrap")
        except BrokerError as exc:
            raise fail_usage(ConfigError(str(exc))) from None
    out_dir = out or default_out_dir()
    try:
        code = _run(prof, bootstrap, out_dir)
    except BrokerError as exc:
        typer.echo(f"error: {exc}", err=True)
        code = EXIT_DELIVERY_FAILED
    raise typer.Exit(code)


def profile_path(value: Path) -> Path:
    """The profile file ``--profile`` names: a path as given (an existing file, or anything
    with a directory or a suffix), else a bundled profile's exact name (``spike-ci``, ``spike``:
    no scale applies here), as ``lagscale run --profile`` accepts them.

    Raises:
        ConfigError: neither a path nor a bundled name; the message lists the bundled names.
    """
    from ..config.bundled import resolve_profile

    text = str(value)
    if value.exists() or "/" in text or value.suffix:
        return value
    return resolve_profile(text)


def check_bootstrap(value: str | None) -> list[str]:
    """Problems with a ``--bootstrap`` value (``host:port[,host:port...]``), one line each."""
    from ..kafka.external import check_bootstrap_form

    return check_bootstrap_form(value, "--bootstrap")


def check_out_dir(value: Path | None) -> list[str]:
    """Problems with an ``--out`` value: it must be a directory, or not exist yet under a
    directory (not under a file)."""
    if value is None:
        return []
    if value.exists() and not value.is_dir():
        return [f"'--out': {str(value)!r} is an existing file; allowed: a directory (created "
                f"if missing); source: command line; choose another path"]
    parent = next((p for p in value.absolute().parents if p.exists()), None)
    if not value.exists() and parent is not None and not parent.is_dir():
        return [f"'--out': {str(value)!r} lies under the file {str(parent)!r}; allowed: a "
                f"directory (created if missing); source: command line; choose another path"]
    from ..options import out_dir_problem  # a read-only place: one line, before any write

    problem = out_dir_problem(value, "'--out'")
    return [problem] if problem else []


def default_out_dir(now: dt.datetime | None = None) -> Path:
    """``runs/<UTC yyyymmddThhmmssZ>-produce`` under the working directory."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return Path("runs") / f"{now.strftime('%Y%m%dT%H%M%SZ')}-produce"


def _run(prof: Profile, bootstrap: str | None, out_dir: Path) -> int:
    """Start the broker if needed, produce, print and write the results; returns the exit code."""
    from rich.console import Console

    from ..kafka.admin import KafkaAdmin
    from .producer import ProduceSettings, produce_profile, write_run
    from .report import render_table

    console = Console()
    with contextlib.ExitStack() as stack:
        if bootstrap is None:
            from ..kafka.embedded import EmbeddedKafka

            console.print("starting an embedded Kafka broker ...")
            bootstrap = stack.enter_context(EmbeddedKafka()).bootstrap_servers
        with KafkaAdmin(bootstrap, timeout_s=30.0) as admin:
            _ensure_topic(admin, prof)
        schedule = Schedule(prof.schedule())
        console.print(f"producing {prof.name!r} to {prof.topic} on {bootstrap}: "
                      f"{len(schedule.steps)} steps, {schedule.total_records:,} records over "
                      f"{schedule.end_s:g} s (Ctrl-C stops early)")
        with _stop_on_sigint() as stop:
            result = produce_profile(prof, ProduceSettings(bootstrap), should_stop=stop,
                                     progress=_progress_printer(console, schedule))
    manifest_path, report_path = write_run(result, out_dir)
    report = result.report
    console.print(render_table(report))
    console.print(f"wrote {manifest_path} and {report_path}", soft_wrap=True)
    if not report.kept_up:
        console.print("[bold red]warning:[/] the producer did not keep up with the profile; "
                      "see the achieved rates and send delays above")
    if report.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_DELIVERY_FAILED if report.acked_records < report.sent_records else 0


def _ensure_topic(admin: Any, prof: Profile) -> None:
    """Create the profile's topic unless it exists.

    Raises:
        BrokerError: the cluster did not answer within the admin timeout or refused.
    """
    from confluent_kafka import KafkaException

    try:
        admin.create_topic(prof.topic, prof.partitions, exist_ok=True)
    except (TimeoutError, KafkaException) as exc:
        raise BrokerError(f"'--bootstrap': {admin.bootstrap_servers!r} did not create topic "
                          f"{prof.topic!r} within {admin.timeout_s:g} s ({exc!r}); check that "
                          f"the cluster is up and reachable") from exc


def _progress_printer(console: Any, schedule: Schedule) -> Callable[[float, int], None]:
    """A progress callback printing records sent and, past 0.5 s, how far behind schedule."""

    def progress(elapsed_s: float, sent: int) -> None:
        late_s = elapsed_s - schedule.send_time(sent) if sent < schedule.total_records else 0.0
        console.print(f"{elapsed_s:7.0f} s  sent {sent:,} of {schedule.total_records:,}"
                      + (f"  [bold red]{late_s:.1f} s behind[/]" if late_s > 0.5 else ""))

    return progress


@contextlib.contextmanager
def _stop_on_sigint() -> Iterator[Callable[[], bool]]:
    """Yield a ``should_stop`` that turns True after the first Ctrl-C (the second one raises)."""
    pressed: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if pressed:
            raise KeyboardInterrupt
        pressed.append(signum)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: bool(pressed)
    finally:
        signal.signal(signal.SIGINT, previous)


def register(app: typer.Typer) -> None:
    """Add ``lagscale produce`` to ``app``."""
    app.command()(produce)
