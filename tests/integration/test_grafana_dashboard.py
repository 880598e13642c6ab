"""The committed Grafana dashboard against a real run's real Prometheus.

One short run (tests/data/grafana-spike.yaml: a 20 s spike that scales the group out, arrow
replicas, the run's own Prometheus) records every series; the run's TSDB is then served by a
fresh Prometheus (no targets) and every panel target of k8s/grafana/lagscale-dashboard.json,
with the variables substituted as Grafana would (defaults ``enrich`` / ``events``, ``hpa`` All,
``$__rate_interval`` = 4 x the 1 s scrape), runs through ``/api/v1/query_range`` over the run.
A syntax error (HTTP 400) or a result without a finite sample fails the test; so does a
variable whose label_values options lack the default. Needs the ``prometheus`` binary.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from pytest_lagscale.experiment import RunSettings, run_experiment
from pytest_lagscale.observe.prometheus import PrometheusServer
from pytest_lagscale.report.grafana import (DASHBOARD_PATH, PanelTarget, check_targets,
                                            load_dashboard, panel_targets, substitute,
                                            variable, variable_options)

# One worker under xdist: the module fixture is set up once.
pytestmark = [
    pytest.mark.integration, pytest.mark.xdist_group("grafana-dashboard"),
    pytest.mark.skipif(shutil.which("prometheus") is None,
                       reason="prometheus not installed; run scripts/bootstrap "
                              "(apt-get install prometheus)"),
]

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "tests" / "data" / "grafana-spike.yaml"
#: Grafana's values for the variables at their defaults; $__rate_interval is
#: max(4 x scrape interval, interval + scrape interval) = 4 s for the run's 1 s scrape.
VALUES = {"consumergroup": "enrich", "topic": "events", "hpa": ".*", "__rate_interval": "4s"}


class RunPrometheus:
    """A Prometheus serving a finished run's TSDB, and the run's wall-clock window."""

    def __init__(self, url: str, start_s: float, end_s: float):
        from prometheus_api_client import PrometheusConnect

        self.url, self.start_s, self.end_s = url, start_s, end_s
        self.client = PrometheusConnect(url, disable_ssl=True)

    def query_range(self, expr: str) -> list[dict]:
        """``expr`` over the run at a 1 s step (raises on HTTP 400: the server's message)."""
        return self.client.custom_query_range(
            expr, datetime.fromtimestamp(self.start_s, timezone.utc),
            datetime.fromtimestamp(self.end_s, timezone.utc), "1s")

    def label_values(self, label: str, match: str | None = None) -> list[str]:
        """``/api/v1/label/<label>/values`` over the run (Grafana's ``label_values``)."""
        params = {"start": self.start_s, "end": self.end_s}
        if match:
            params["match[]"] = match
        url = f"{self.url}/api/v1/label/{label}/values?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.load(response)["data"]


@pytest.fixture(scope="module")
def run_prometheus(kafka_cluster: Any, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[RunPrometheus]:
    out = tmp_path_factory.mktemp("grafana-run")
    start_s = time.time()
    result = run_experiment(RunSettings(profile=PROFILE, engine="arrow", out_dir=out,
                                        settle_timeout_s=8), cluster=kafka_cluster)
    end_s = time.time()
    assert result.timeline["desired_replicas"].max() > 1, "the run never scaled out"
    home = tmp_path_factory.mktemp("grafana-prometheus")
    shutil.copytree(result.run_dir / "prometheus" / "data", home / "prometheus" / "data")
    with PrometheusServer(home) as prom:
        yield RunPrometheus(prom.url, start_s, end_s)


def test_every_panel_target_returns_data_from_the_runs_prometheus(
        run_prometheus: RunPrometheus) -> None:
    board = load_dashboard(ROOT / DASHBOARD_PATH)
    targets = panel_targets(board)
    assert len(targets) >= 9
    assert check_targets(targets, VALUES, run_prometheus.query_range) == []


def test_variable_defaults_are_options_of_the_runs_label_values(
        run_prometheus: RunPrometheus) -> None:
    board = load_dashboard(ROOT / DASHBOARD_PATH)
    groups = run_prometheus.label_values("consumergroup")
    assert any(g.startswith("enrich-") for g in groups), groups  # the run's suffixed name
    assert "enrich" in variable_options(variable(board, "consumergroup"), groups)
    topic = variable(board, "topic")
    match = substitute(topic["query"][len("label_values("):].rsplit(",", 1)[0], VALUES)
    assert "events" in variable_options(topic, run_prometheus.label_values("topic", match))
    assert run_prometheus.label_values(
        "horizontalpodautoscaler",
        "kube_horizontalpodautoscaler_status_desired_replicas") != []


def test_a_misspelt_metric_or_a_syntax_error_fails_the_check(
        run_prometheus: RunPrometheus) -> None:
    """The check can fail: the same checker on two broken targets reports both."""
    query: Callable[[str], list[dict]] = run_prometheus.query_range
    broken = [PanelTarget("Total lag", "A", 'sum(kafka_consumergroup_lagg{topic=~"$topic"})'),
              PanelTarget("Rates", "B", "sum(rate(records_processed_total[$__rate_interval])")]
    problems = check_targets(broken, VALUES, query)
    assert len(problems) == 2, problems
    assert problems[0].endswith("no finite sample in 0 series"), problems
    assert "query failed" in problems[1] and "parse error" in problems[1], problems
