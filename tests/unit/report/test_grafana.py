"""The Grafana dashboard: committed JSON == generator output, the Grafana 10+ model fields, the
variables' run-suffix handling, PromQL syntax (promtool) and the query checker's verdicts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_lagscale.report import grafana
from pytest_lagscale.report.grafana import (DEFAULTS, RUN_SUFFIX_MATCH, PanelTarget,
                                            check_targets, panel_targets, substitute,
                                            variable, variable_options)

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / grafana.DASHBOARD_PATH
LOCAL_GROUP = "enrich-20261123t012454z-spike-ci-07fbd2"
#: What the checks substitute for the variables (Grafana's All of ``hpa`` is its allValue).
VALUES = {"consumergroup": "enrich", "topic": "events", "hpa": ".*", "__rate_interval": "4s"}


@pytest.fixture(scope="module")
def board() -> dict:
    return json.loads(COMMITTED.read_text())


def test_committed_dashboard_is_the_generators_output() -> None:
    pytest.importorskip("grafana_foundation_sdk",
                        reason="grafana-foundation-sdk missing: pip install 'pytest-lagscale[test]'")
    assert COMMITTED.read_text() == grafana.render_dashboard(), \
        "rerun: python -m pytest_lagscale.report.grafana"


def test_model_has_the_grafana_10_fields_and_every_panel_uses_the_datasource_variable(
        board: dict) -> None:
    assert board["schemaVersion"] >= 38 and board["uid"] == grafana.UID
    assert board["annotations"] == {"list": []} and "style" not in board
    ids = [p["id"] for p in board["panels"]]
    assert len(set(ids)) == len(ids) == len(grafana.PANELS)
    cells = set()
    for panel in board["panels"]:
        assert panel["type"] == "timeseries" and panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        mine = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"])
                for y in range(pos["y"], pos["y"] + pos["h"])}
        assert not cells & mine, f"{panel['title']} overlaps another panel"
        cells |= mine
        refs = [t["refId"] for t in panel["targets"]]
        assert len(set(refs)) == len(refs) and all(t["range"] for t in panel["targets"])
        assert all(t["datasource"] == panel["datasource"] for t in panel["targets"])


def test_variables_are_a_datasource_and_query_driven_label_values(board: dict) -> None:
    source = variable(board, "datasource")
    assert (source["type"], source["query"]) == ("datasource", "prometheus")
    for name in ("consumergroup", "topic", "hpa"):
        var = variable(board, name)
        assert var["type"] == "query" and var["query"].startswith("label_values(")
        assert var["datasource"]["uid"] == "${datasource}" and var["refresh"] == 2
        assert var["current"]["value"] == DEFAULTS[name]
    assert variable(board, "hpa")["includeAll"] and variable(board, "hpa")["allValue"] == ".*"
    with pytest.raises(KeyError, match="no variable 'nope'"):
        variable(board, "nope")


def test_variables_strip_a_local_runs_suffix_and_queries_match_both_names(board: dict) -> None:
    group = variable(board, "consumergroup")
    assert variable_options(group, [LOCAL_GROUP, "enrich", "billing"]) == ["billing", "enrich"]
    assert variable_options(variable(board, "topic"),
                            ["events-20261123t012454z-spike-ci-07fbd2"]) == ["events"]
    matcher = re.compile("enrich" + RUN_SUFFIX_MATCH)  # PromQL anchors =~ on both ends
    assert matcher.fullmatch("enrich") and matcher.fullmatch(LOCAL_GROUP)
    assert not matcher.fullmatch("enrich-billing") and not matcher.fullmatch("enriched")


def test_every_target_uses_only_known_variables_and_the_issues_lag_query(board: dict) -> None:
    targets = panel_targets(board)
    assert len(targets) == sum(len(p[3]) for p in grafana.PANELS)
    for t in targets:
        assert "$" not in substitute(t.expr, VALUES), t
    lag = substitute(targets[0].expr, VALUES)
    assert lag.startswith("sum(kafka_consumergroup_lag{consumergroup=~\"enrich")
    with pytest.raises(KeyError, match=r"variable \$cluster of .* has no value; given"):
        substitute('x{c="$cluster"}', VALUES)


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool not installed; run scripts/bootstrap (apt-get prometheus)")
@pytest.mark.parametrize("misspelt", [False, True], ids=["dashboard", "broken-expr"])
def test_every_target_parses_with_promtool(board: dict, tmp_path: Path, misspelt: bool) -> None:
    exprs = [substitute(t.expr, VALUES) for t in panel_targets(board)]
    if misspelt:  # proves the check can fail
        exprs.append("sum(rate(records_processed_total[4s])")
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:target{n}", "expr": e} for n, e in enumerate(exprs)]}]}
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps(rules))  # JSON is YAML
    done = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode != 0) is misspelt, done.stdout + done.stderr


def test_checker_reports_failed_empty_and_nan_only_queries() -> None:
    results = {"good": [{"values": [[1, "NaN"], [2, "3"]]}], "empty": [],
               "nan": [{"values": [[1, "NaN"]]}]}

    def query_range(expr: str) -> list[dict]:
        if expr not in results:
            raise ValueError("bad_data: parse error")
        return results[expr]

    targets = [PanelTarget("P", ref, ref) for ref in ("good", "empty", "nan", "broken")]
    assert check_targets(targets, VALUES, query_range) == [
        "P [empty] empty: no finite sample in 0 series",
        "P [nan] nan: no finite sample in 1 series",
        "P [broken] broken: query failed: bad_data: parse error",
    ]


def test_main_writes_and_checks_the_file(tmp_path: Path, capsys: pytest.CaptureFixture
                                         ) -> None:
    pytest.importorskip("grafana_foundation_sdk")
    path = tmp_path / "board.json"
    assert grafana.main([str(path)]) == 0 and grafana.main(["--check", str(path)]) == 0
    path.write_text(path.read_text().replace("Total lag", "Total lagg"))
    assert grafana.main(["--check", str(path)]) == 1
    assert "differs from the generator" in capsys.readouterr().out
