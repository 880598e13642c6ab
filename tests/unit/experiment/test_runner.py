"""The runner's pure helpers: what the group still has to process, from one offsets read."""

from __future__ import annotations

import pytest

from pytest_lagscale.experiment.runner import unprocessed_records


@pytest.mark.parametrize(
    ("offsets", "expected"),
    [
        pytest.param(None, None, id="no-observation-yet"),
        pytest.param({}, 0, id="no-partitions"),
        pytest.param({0: (5, 5), 1: (7, 7)}, 0, id="all-committed"),
        pytest.param({0: (3, 10), 1: (7, 9)}, 9, id="behind"),
        pytest.param({0: (-1, 10)}, 10, id="nothing-committed-counts-the-whole-log"),
        pytest.param({0: (4, None)}, 0, id="log-end-unknown"),
        pytest.param({0: (12, 10)}, 0, id="committed-past-a-stale-log-end"),
    ],
)
def test_unprocessed_records(offsets, expected) -> None:
    assert unprocessed_records(offsets) == expected


@pytest.mark.parametrize(("kafka", "shared_cluster", "suffixed"), [
    pytest.param("embedded", False, False, id="own-broker-keeps-the-manifest-names"),
    pytest.param("embedded", True, True, id="the-sessions-broker"),
    pytest.param("external", False, True, id="an-external-cluster-others-may-use"),
])
def test_a_shared_cluster_gives_the_run_its_own_topic_and_group(tmp_path, kafka, shared_cluster,
                                                                 suffixed) -> None:
    from pathlib import Path

    from pytest_lagscale.contract.clock import RealClock
    from pytest_lagscale.contract.rundir import RunDir
    from pytest_lagscale.experiment.plan import plan_run
    from pytest_lagscale.experiment.runner import Run
    from pytest_lagscale.experiment.settings import RunSettings

    root = Path(__file__).resolve().parents[3]
    settings = RunSettings(root / "fixtures" / "profiles" / "spike-ci.yaml", kafka=kafka,
                           kafka_bootstrap="127.0.0.1:9092" if kafka == "external" else None)
    layout = RunDir(tmp_path / "20261125T000000Z-spike-ci")
    runs = [Run(plan_run(settings), layout, RealClock(), None,
                cluster=object() if shared_cluster else None) for _ in range(2)]
    for run in runs:
        run.events.close()
    topics = {run.topic for run in runs}
    if not suffixed:
        assert (runs[0].topic, runs[0].group) == ("events", "enrich")
        return
    assert len(topics) == 2 and len({run.group for run in runs}) == 2
    assert all(t.startswith("events-20261125t000000z-spike-ci-") for t in topics)


def test_a_run_names_the_commit_it_started_on(tmp_path, monkeypatch) -> None:
    """benchmark.json's commit_info is the checkout's when the run started, not when it was
    written: a run of an hour must not name a commit made while it ran."""
    from pathlib import Path

    from pytest_lagscale.contract.clock import RealClock
    from pytest_lagscale.contract.rundir import RunDir
    from pytest_lagscale.experiment import runner
    from pytest_lagscale.experiment.plan import plan_run
    from pytest_lagscale.experiment.settings import RunSettings

    root = Path(__file__).resolve().parents[3]
    settings = RunSettings(root / "fixtures" / "profiles" / "spike-ci.yaml")
    monkeypatch.setattr(runner, "commit_info", lambda: {"id": "aaaa", "dirty": False})
    run = runner.Run(plan_run(settings), RunDir(tmp_path / "20261125T000000Z-spike-ci"),
                     RealClock(), None)
    run.events.close()
    monkeypatch.setattr(runner, "commit_info", lambda: {"id": "bbbb", "dirty": True})
    assert run.commit_info == {"id": "aaaa", "dirty": False}
