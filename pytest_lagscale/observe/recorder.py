"""Recorder: the run's Prometheus series -> the timeline table; the run's event logs -> one log.

**Timeline.** :class:`Recorder` runs one ``query_range`` per timeline column (PromQL from
:func:`default_queries`, overridable per column) at a 1 s step through prometheus-api-client and
builds the table of :mod:`pytest_lagscale.analyze.tables` (one row per 1 s bucket
``[t_s, t_s + 1)``): the broker's ``total_lag``, the HPA's desired and current replicas, ready
replicas, consume and produce rates, the consumers' own ``consumer_lag`` and
``consumer_consume_rate_per_s`` (the lab's ``consume_rate`` gauge; NaN where no replica reported:
unknown, not 0), the Spark Connect server's busy ratio, the sample ages
(:data:`AGE_COLUMNS`: how old the newest sample of a gauge is, so a stale value can be told
from a fresh one, :mod:`pytest_lagscale.analyze.staleness`) and the machine columns
(:data:`MACHINE_COLUMNS`, from :mod:`pytest_lagscale.observe.machine`; optional, so older
timelines still load).

Rates use ``irate`` over ``[3s]`` evaluated at the bucket end (the rate of one 1 s bucket, which
the dip measurements need); gauges take the instant value at the bucket start; series of one
query are summed. Missing samples: gauges are forward-filled (0 before the first), counts and
rates become 0, machine columns NaN. The default PromQL per column and the reasons for each
choice: docs/experiments.md, "Notes moved from module docstrings", "observe/recorder.py".

**Events.** :func:`merge_event_logs` (defined in :mod:`pytest_lagscale.contract.rundir`, which
owns the run directory's layout) merges the run's JSONL logs into ``events.jsonl``.
"""

from __future__ import annotations

import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..analyze.tables import TIMELINE_COLUMNS, check_timeline
from ..contract.rundir import TIMELINE_CSV, TIMELINE_PARQUET
from ..contract.rundir import merge_event_logs  # noqa: F401  (re-exported by observe)
from ..contract.errors import ConfigError, LagscaleError

#: Columns forward-filled across missing samples (0 before the first sample).
GAUGE_COLUMNS: tuple[str, ...] = ("total_lag", "desired_replicas", "current_replicas")
#: Columns whose missing samples are 0.
COUNT_COLUMNS: tuple[str, ...] = ("ready_replicas", "consume_rate_per_s", "produce_rate_per_s")
#: The harness machine's load (float64; missing samples stay NaN, the load is forward-filled).
MACHINE_COLUMNS: tuple[str, ...] = ("load_average_1m", "cpu_busy_fraction",
                                     "spark_connect_busy_ratio")
#: The consumers' own view of their lag (float64; NaN where no replica reported, not filled).
CONSUMER_COLUMNS: tuple[str, ...] = ("consumer_lag", "consumer_consume_rate_per_s")
#: Columns evaluated at the bucket end (``t_s + step_s``) rather than its start.
RATE_COLUMNS: tuple[str, ...] = ("consume_rate_per_s", "produce_rate_per_s", "cpu_busy_fraction")
#: One PromQL query per timeline column except ``t_s``.
QUERY_COLUMNS: tuple[str, ...] = GAUGE_COLUMNS + COUNT_COLUMNS + MACHINE_COLUMNS + CONSUMER_COLUMNS
#: The age of each gauge's newest sample at the bucket start, seconds (float64; NaN: no sample
#: in Prometheus's 5 minute lookback). A range query answers with the last sample it finds, so
#: without these a broker that stopped answering or a Prometheus that was down would read as a
#: flat line of the last value.
AGE_COLUMNS: tuple[str, ...] = ("total_lag_age_s", "desired_replicas_age_s",
                                "ready_replicas_age_s")

RangeResult = list[dict[str, Any]]


def default_queries(group: str = "enrich", consumer_kind: str = "spark_consumer"
                    ) -> dict[str, str]:
    """The documented PromQL per timeline column (see the module docstring).

    ``consumer_kind`` ``command`` (a consumer with none of the replica program's metrics):
    ready replicas from the platform (``kube_deployment_status_replicas_ready``) and the
    consume rate from the group's committed offsets (the lag exporter's
    ``kafka_consumergroup_current_offset_sum``), both measured without the consumer's help.
    """
    queries = _replica_program_queries(group)
    if consumer_kind == "command":
        queries.update(
            ready_replicas="sum(kube_deployment_status_replicas_ready)",
            ready_replicas_age_s=("time() - max(timestamp("
                                  "kube_deployment_status_replicas_ready))"),
            consume_rate_per_s=("sum(irate(kafka_consumergroup_current_offset_sum"
                                f'{{consumergroup="{group}"}}[3s]))'))
    return queries


def _replica_program_queries(group: str) -> dict[str, str]:
    return {
        "total_lag": f'sum(kafka_consumergroup_lag_sum{{consumergroup="{group}"}})',
        "desired_replicas": "sum(kube_horizontalpodautoscaler_status_desired_replicas)",
        "current_replicas": "sum(kube_horizontalpodautoscaler_status_current_replicas)",
        "ready_replicas": "sum(replica_ready)",
        "consume_rate_per_s": "sum(irate(records_processed_total[3s]))",
        "produce_rate_per_s": "sum(irate(kafka_topic_partition_current_offset[3s]))",
        "load_average_1m": "max(node_load1)",
        "cpu_busy_fraction": ('clamp(1 - sum(irate(node_cpu_seconds_total{mode="idle"}[3s])) '
                              "/ sum(irate(node_cpu_seconds_total[3s])), 0, 1)"),
        # Only when the run started its own Spark Connect server (NaN otherwise).
        "spark_connect_busy_ratio": "max(spark_connect_server_busy_ratio)",
        "consumer_lag": "sum(consumer_records_lag)",
        # the lab's /metrics name (the replica program and the franz-go consumer serve it)
        "consumer_consume_rate_per_s": "sum(consume_rate)",
        # how old each gauge's newest sample is (the timeline's sample ages)
        "total_lag_age_s": ("time() - max(timestamp(kafka_consumergroup_lag_sum"
                            f'{{consumergroup="{group}"}}))'),
        "desired_replicas_age_s": ("time() - max(timestamp("
                                   "kube_horizontalpodautoscaler_status_desired_replicas))"),
        "ready_replicas_age_s": "time() - max(timestamp(replica_ready))",
    }


def _epoch_s(when: datetime | float) -> float:
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise ConfigError(f"recorder: time {when!r} has no timezone; pass an aware UTC "
                              "datetime or epoch seconds")
        return when.timestamp()
    return float(when)


def _steps_on_grid(result: RangeResult, start_s: float, step_s: float) -> dict[int, float]:
    """``{step index: value summed over series}`` of one range-query result; NaN skipped."""
    out: dict[int, float] = {}
    for series in result:
        for ts, raw in series.get("values", []):
            value = float(raw)
            if math.isnan(value):
                continue
            k = round((float(ts) - start_s) / step_s)
            out[k] = out.get(k, 0.0) + value
    return out


def timeline_from_results(results: Mapping[str, RangeResult], start_s: float, steps: int,
                          step_s: float = 1.0) -> pd.DataFrame:
    """Build the timeline table from one range-query result per column.

    Args:
        results: ``{column: result}`` for every column of :data:`QUERY_COLUMNS`, each result
            as prometheus-api-client's ``custom_query_range`` returns it:
            ``[{"metric": {...}, "values": [[epoch_s, "value"], ...]}, ...]``, evaluated on the
            grid ``start_s + k * step_s`` for ``k`` in ``0..steps`` (``steps + 1`` points).
        start_s: epoch seconds of run start (the grid origin, ``t_s = 0``).
        steps: number of rows (1 s buckets).
        step_s: grid step, seconds.

    Returns:
        The timeline (columns and dtypes of :data:`TIMELINE_COLUMNS`, then the float64
        :data:`MACHINE_COLUMNS` and :data:`CONSUMER_COLUMNS`), ``steps`` rows,
        ``t_s = k * step_s``; missing samples filled as the module docstring says; counts are
        rounded to int64.

    Raises:
        ConfigError: a column of :data:`QUERY_COLUMNS` has no result.
    """
    missing = [c for c in QUERY_COLUMNS if c not in results]
    if missing:
        raise ConfigError(f"recorder: results for {missing!r} are missing; expected "
                          f"{list(QUERY_COLUMNS)!r}; query every timeline column")
    index = range(steps)
    table = pd.DataFrame({"t_s": [k * step_s for k in index]})
    for column in QUERY_COLUMNS:
        by_step = _steps_on_grid(results[column], start_s, step_s)
        offset = 1 if column in RATE_COLUMNS else 0
        values = pd.Series([by_step.get(k + offset, math.nan) for k in index], dtype="float64")
        table[column] = _fill(column, values)
    for column in AGE_COLUMNS:  # recorded since the timeline carries sample ages
        if column in results:
            by_step = _steps_on_grid(results[column], start_s, step_s)
            table[column] = pd.Series([by_step.get(k, math.nan) for k in index],
                                      dtype="float64")
    return check_timeline(table)


def _fill(column: str, values: pd.Series) -> pd.Series:
    """One column's missing samples filled as the module docstring says; counts rounded."""
    if column in CONSUMER_COLUMNS:
        return values
    if column in MACHINE_COLUMNS:
        return values.ffill() if column == "load_average_1m" else values
    values = values.ffill().fillna(0.0) if column in GAUGE_COLUMNS else values.fillna(0.0)
    return values.round() if TIMELINE_COLUMNS[column] == "int64" else values


class Recorder:
    """Pulls a run's timeline from Prometheus.

    Args:
        url: Prometheus base URL (:attr:`PrometheusServer.url`).
        queries: PromQL overrides by column; the rest come from :func:`default_queries`.
        step_s: grid step, seconds (the timeline is defined for 1 s).
        client: an object with prometheus-api-client's ``custom_query_range`` (default:
            ``PrometheusConnect(url, disable_ssl=True)``).

    Raises:
        ConfigError: ``queries`` names a column that is not a timeline column.

    Example:
        >>> rec = Recorder(prom.url)  # doctest: +SKIP
        >>> timeline = rec.record(run_dir, start=t0_wall_s, end=t1_wall_s)  # doctest: +SKIP
    """

    def __init__(self, url: str, queries: Mapping[str, str] | None = None, *,
                 step_s: float = 1.0, client: Any = None):
        unknown = sorted(set(queries or {}) - set(QUERY_COLUMNS + AGE_COLUMNS))
        if unknown:
            raise ConfigError(f"recorder: query columns {unknown!r} are unknown; allowed "
                              f"{list(QUERY_COLUMNS)!r}; rename them")
        self.queries = {**default_queries(), **(queries or {})}
        self.step_s = step_s
        if client is None:
            from prometheus_api_client import PrometheusConnect
            client = PrometheusConnect(url, disable_ssl=True)
        self.client = client

    def query_range(self, query: str, start_s: float, end_s: float) -> RangeResult:
        """One ``query_range`` on the exact grid ``start_s, start_s + step_s, ... <= end_s``.

        prometheus-api-client rounds ``start``/``end`` to whole seconds; the exact epoch
        seconds are passed as request parameters (which it merges over its own) so that the
        grid starts at run start.

        Raises:
            LagscaleError: the request failed or Prometheus answered with an error.
        """
        params = {"start": f"{start_s:.3f}", "end": f"{end_s:.3f}"}
        try:
            return self.client.custom_query_range(
                query, start_time=datetime.fromtimestamp(start_s, tz=timezone.utc),
                end_time=datetime.fromtimestamp(end_s, tz=timezone.utc),
                step=f"{self.step_s:g}", params=params)
        except Exception as exc:  # requests or PrometheusApiClientException
            raise LagscaleError(f"recorder: query {query!r} failed: {exc}; check that "
                                "Prometheus still runs and the PromQL is valid") from exc

    def timeline(self, start: datetime | float, end: datetime | float) -> pd.DataFrame:
        """The timeline of ``[start, end)``: one row per whole ``step_s`` bucket.

        Args:
            start: run start (aware datetime or epoch seconds); ``t_s = 0``. Use the wall time
                of the instant whose ``monotonic_s`` is the event table's origin.
            end: run end; a partial last bucket is dropped.

        Raises:
            ConfigError: ``end`` is before ``start``.
            LagscaleError: a query failed.
        """
        start_s, end_s = _epoch_s(start), _epoch_s(end)
        if end_s < start_s:
            raise ConfigError(f"recorder: end {end_s!r} is before start {start_s!r} (epoch "
                              "seconds); pass the run's start then its end")
        steps = int(math.floor((end_s - start_s) / self.step_s + 1e-9))
        grid_end = start_s + steps * self.step_s
        results = {column: self.query_range(self.queries[column], start_s, grid_end)
                   for column in QUERY_COLUMNS + AGE_COLUMNS}
        return timeline_from_results(results, start_s, steps, self.step_s)

    def record(self, run_dir: str | os.PathLike[str], start: datetime | float,
               end: datetime | float) -> pd.DataFrame:
        """:meth:`timeline` saved with :func:`save_timeline` in ``run_dir``; returns it."""
        table = self.timeline(start, end)
        save_timeline(table, run_dir)
        return table


def save_timeline(timeline: pd.DataFrame, run_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write ``timeline.parquet`` (for analysis) and ``timeline.csv`` (for humans) in ``run_dir``.

    Returns:
        ``(parquet_path, csv_path)``.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    parquet, csv = run_dir / TIMELINE_PARQUET, run_dir / TIMELINE_CSV
    timeline.to_parquet(parquet, index=False)
    timeline.to_csv(csv, index=False)
    return parquet, csv
