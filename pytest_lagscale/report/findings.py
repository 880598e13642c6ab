"""The findings report's model: runs in, recommendations and one section per experiment out.

``lagscale report`` (:mod:`.findings_cli`) and ``--lagscale-report`` load the benchmark JSON
documents of experiment runs (:func:`load_runs`), find which experiments each run belongs to
(:func:`experiments_of`), and build :class:`Findings` (:func:`build_findings`): the
recommendations first, then one :class:`Section` per experiment 1..10 (docs/design.md, "The
questions it answers"), filled by that experiment's extractor (:data:`.findings_extract.EXTRACTORS`). Rendering
is :mod:`.findings_render` (Jinja2 templates in ``report/templates``).

Nothing here runs anything or reads a clock; every figure comes from the documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..contract.errors import ConfigError
from ..contract.rundir import REPLICAS_PNG, TIMELINE_PNG

EXPERIMENTS = range(1, 12)

# Experiment number -> (title, question, the lab's headline assertion), from DESIGN.md's table.
QUESTIONS: dict[int, tuple[str, str, str]] = {
    1: ("Lag vs CPU as the scaling signal",
        "Does a CPU-based HPA scale out while consumer lag runs away, where a lag trigger does?",
        "CPU-HPA variant never scales out while lag passes 10x lagThreshold; lag trigger does"),
    2: ("Scale-out reaction and drain",
        "How fast does the group react to a 10x spike, and does the backlog drain?",
        "reaction < 90 s, decomposed; backlog drains to <= 1x lagThreshold, lag non-increasing "
        "at full parallelism"),
    3: ("Rebalance dip per scale step by protocol",
        "How much throughput does each scale step's rebalance cost under range (eager), "
        "cooperative-sticky and the KIP-848 consumer protocol?",
        "cooperative dip < 20 %, recovered < 5 s; eager reported beside it"),
    4: ("Over-scaling past the partition count P",
        "Do replicas beyond the partition count P add anything?",
        "replicas P+1..2P own 0 partitions and add no throughput (within 5 %)"),
    5: ("Flapping under bursty load",
        "Does the group flap under bursty load, and does hysteresis stop it?",
        "replica direction reversals == 0 after hysteresis; the short-window variant shows > 0"),
    6: ("Scale-down without loss",
        "Does scale-down lose or duplicate records?",
        "processed == produced exactly (0 lost, 0 duplicated) with graceful drain; without it, "
        "the loss/duplication is measured"),
    7: ("Partition count change mid-run",
        "What happens when the partition count grows mid-run?",
        "the forced rebalance, new ceiling and transient dip are measured"),
    8: ("lagThreshold sweep",
        "Which lagThreshold trades over-scaling against SLO breaches best?",
        "over-scaling vs SLO breach trade-off tabulated; a recommended value printed"),
    9: ("Policy shoot-out",
        "How do the seeds' policies (KEDA's kafka trigger as committed and tuned, the "
        "persistent-lag external scaler, lag-per-slot halving, a Pods-metric HPA on the "
        "replicas' own lag, a CPU HPA) compare on the same spike and bursty load, and do the "
        "seeds' claims hold?",
        "one table per profile; every policy completes with processed == produced; the seeds' "
        "claims judged with the measured ratio"),
    10: ("The cost of a late lag signal",
         "What does reading lag from Prometheus or CloudWatch-style aggregated datapoints instead "
         "of the broker cost in reaction time, peak lag, drain and replica-seconds?",
         "per source: reaction (detection especially), staleness at decision, peak lag, drain, "
         "replica-seconds; the broker reacts no later than the others; processed == produced"),
    11: ("Past the partition ceiling with a share group",
         "Does a share group (KIP-932) of the same replicas use more replicas than partitions, "
         "where a consumer group cannot, and at what cost in redeliveries, duplicates and dips?",
         "consumer group beyond P adds <= 5 %; the share group's gain, duplicate cost and dips "
         "recorded, with a verdict on \"no dips\"; the share group loses nothing"),
}

# experiment.<key> recorded by an experiment's test -> the experiment number.
RECORD_KEYS: dict[str, int] = {"signal": 1, "rebalance_dip": 3, "ceiling": 4, "cap": 4,
                               "flapping": 5, "partitions": 7, "sweep": 8, "policies": 9,
                               "lag_sources": 10, "share_groups": 11, "share_spike": 11}
IMAGES = (TIMELINE_PNG, REPLICAS_PNG)
SPIKE_PROFILES = ("spike", "spike-ci")  # experiments 2 and 6's profile at full and ci scale


@dataclass(frozen=True)
class RunDoc:
    """One run's benchmark document and where it lies.

    Attributes:
        path: the ``benchmark.json`` file (the run directory is its parent).
        doc: the loaded document (schema of :mod:`.benchjson`).
    """

    path: Path
    doc: Mapping[str, Any]

    @property
    def label(self) -> str:
        """The run's label (``run.label``), else the run directory's name."""
        return str((self.doc.get("run") or {}).get("label") or self.path.parent.name)

    @property
    def record(self) -> Mapping[str, Any]:
        """The experiment's own figures (``experiment``), {} when absent."""
        return self.doc.get("experiment") or {}

    @property
    def images(self) -> list[Path]:
        """The run's pictures that exist beside its benchmark.json (timeline, replicas)."""
        return [p for p in (self.path.parent / name for name in IMAGES) if p.is_file()]


@dataclass(frozen=True)
class Figure:
    """One headline number: what, the value as printed (unit included), and a verdict
    (``pass`` / ``fail``) or None when it is reported, not judged."""

    name: str
    value: str
    verdict: str | None = None


@dataclass(frozen=True)
class Table:
    """A table of a section (e.g. experiment 9's policies by figure): a title, the column
    headings and rows of printed cells (units in the headings)."""

    title: str
    header: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Recommendation:
    """One setting the findings recommend.

    Attributes:
        setting: e.g. ``maxReplicaCount``.
        value: the recommended value as printed, or ``not determined``.
        experiment: the experiment it comes from.
        evidence: the numbers behind it, one sentence.
        holds_for: the inputs it holds for (profile, machine, versions, engine), one line.
    """

    setting: str
    value: str
    experiment: int
    evidence: str
    holds_for: str = ""


@dataclass(frozen=True)
class Extract:
    """What an extractor reads from an experiment's runs (see :mod:`.findings_extract`)."""

    figures: list[Figure]
    conclusion: str
    recommendation: Recommendation | None = None
    tables: list[Table] = field(default_factory=list)


@dataclass(frozen=True)
class Section:
    """One experiment's section: its question, runs, figures, pictures and conclusion."""

    number: int
    title: str
    question: str
    headline: str
    runs: list[RunDoc] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    conclusion: str = ""
    tables: list[Table] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        """True when at least one run of this experiment is in the input."""
        return bool(self.runs)

    @property
    def anchor(self) -> str:
        """The HTML id of the section (``experiment-N``)."""
        return f"experiment-{self.number}"


@dataclass(frozen=True)
class HeldPrediction:
    """A pre-registered prediction and the run it predicted (``lagscale report --prediction``).

    Attributes:
        prediction: the prediction file.
        run: the run it was held against (None: no run of the report has its inputs).
        header, rows: the table's cells as text (``calibration.preregistered.markdown``'s
            columns: figure, unit, predicted median (5-95 %), measured, error, in band).
        written_utc, commit: when and at which commit the prediction was written.
    """

    prediction: Path
    run: RunDoc | None
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    written_utc: str
    commit: str


@dataclass(frozen=True)
class Findings:
    """The report: recommendations, then sections 1..10, over ``runs``; ``simulated`` is the
    twin's full-scale predictions and tune cross-check
    (:class:`pytest_lagscale.tune.simulated.Simulated`), None when not asked for; ``held`` the
    pre-registered predictions held against their runs (:class:`HeldPrediction`)."""

    runs: list[RunDoc]
    recommendations: list[Recommendation]
    sections: list[Section]
    simulated: Any = None  # a tune.simulated.Simulated when the twin's section was asked for
    held: tuple["HeldPrediction", ...] = ()


    @property
    def unplaced(self) -> list[RunDoc]:
        """Runs in no experiment's section (e.g. engine comparisons, demos)."""
        placed = {id(run) for section in self.sections for run in section.runs}
        return [run for run in self.runs if id(run) not in placed]


def load_runs(paths: Iterable[str | Path]) -> list[RunDoc]:
    """Load each path: a ``benchmark.json`` file or a run directory holding one.

    Raises:
        ConfigError: every bad path at once, one line each: missing, unreadable, or not a
            benchmark document.
    """
    from .benchjson import read_run_document, run_document_path

    runs, problems = [], []
    for path in map(Path, paths):
        try:
            doc = read_run_document(path, str(path))
        except ConfigError as exc:
            problems += exc.problems
            continue
        runs.append(RunDoc(run_document_path(path), doc))
    if problems:
        raise ConfigError(problems)
    return runs


def experiments_of(run: RunDoc) -> set[int]:
    """The experiment numbers a run belongs to.

    Read from ``experiment.numbers`` (the ``experiment(n)`` markers of the tests that used the
    run, recorded by the plugin) and from the records the experiments write
    (:data:`RECORD_KEYS`). A document without ``experiment.numbers`` (written before the
    plugin recorded the markers) is also placed by its label: the spike profile's
    (:data:`SPIKE_PROFILES`) own run is experiments 2 and 6 (they share it),
    ``<profile>-sigkill`` is experiment 6.
    """
    record = run.record
    numbers = {n for key, n in RECORD_KEYS.items() if key in record}
    if "numbers" in record:
        return numbers | {int(n) for n in record["numbers"] or ()}
    profile = str((run.doc.get("inputs") or {}).get("profile") or "")
    if profile in SPIKE_PROFILES and run.label == profile:
        numbers |= {2, 6}
    if profile in SPIKE_PROFILES and run.label == f"{profile}-sigkill":
        numbers.add(6)
    return numbers


def holds_for(runs: Iterable[RunDoc]) -> str:
    """The inputs a finding holds for, one line: profile(s), engine, scale, machine, versions."""
    runs = list(runs)
    if not runs:
        return ""
    inputs = [r.doc.get("inputs") or {} for r in runs]
    profiles = sorted({str(i.get("profile")) for i in inputs if i.get("profile")})
    engines = sorted({str(i.get("engine")) for i in inputs if i.get("engine")})
    machine = runs[0].doc.get("machine_info") or {}
    versions = inputs[0].get("versions") or {}
    memory = machine.get("memory_bytes")
    parts = [f"profile {', '.join(profiles) or '?'}", f"engine {', '.join(engines) or '?'}",
             f"scale {inputs[0].get('scale', '?')}",
             f"{machine.get('cpu_count', '?')} CPUs"
             + (f", {memory / 2**30:.1f} GiB" if isinstance(memory, (int, float)) else "")
             + f" {machine.get('system', '')} {machine.get('machine', '')}".rstrip(),
             ", ".join(f"{name} {v}" for name, v in sorted(versions.items()))]
    return "; ".join(p for p in parts if p)


def build_findings(runs: list[RunDoc]) -> Findings:
    """Group ``runs`` by experiment and run each experiment's extractor.

    Experiments without a run get a "not run" section; an extractor's recommendation is listed
    first, in :data:`.findings_extract.RECOMMENDATION_ORDER`, with the inputs it holds for.
    """
    from .findings_extract import EXTRACTORS, RECOMMENDATION_ORDER, not_determined

    sections, recommendations = [], {}
    for number in EXPERIMENTS:
        title, question, headline = QUESTIONS[number]
        mine = [run for run in runs if number in experiments_of(run)]
        if not mine:
            sections.append(Section(number, title, question, headline,
                                    conclusion="Not run: no run of this experiment in the "
                                               "input."))
            continue
        extract = EXTRACTORS[number](mine)
        sections.append(Section(number, title, question, headline, mine, extract.figures,
                                extract.conclusion, extract.tables))
        if extract.recommendation is not None:
            rec = extract.recommendation
            recommendations[number] = Recommendation(rec.setting, rec.value, number,
                                                     rec.evidence, holds_for(mine))
    ordered = [recommendations.get(number) or not_determined(setting, number)
               for setting, number in RECOMMENDATION_ORDER]
    return Findings(runs, ordered, sections)

