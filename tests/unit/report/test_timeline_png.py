from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.report.timeline_png import write_timeline_png
from tests.unit.analyze import synth


@pytest.fixture(scope="module")
def matplotlib_imported() -> None:
    """Import matplotlib once (~0.8 s, a per-process cost) outside the timed test call."""
    pytest.importorskip("matplotlib", reason="matplotlib missing: pip install "
                                             "'pytest-lagscale[plot]'")
    import matplotlib.figure  # noqa: F401


@pytest.mark.parametrize("spike", [
    pytest.param((20.0, 60.0), id="with-spike"),
    pytest.param(None, id="without-spike"),
])
def test_write_timeline_png(tmp_path: Path, matplotlib_imported: None,
                            spike: tuple[float, float] | None) -> None:
    table, _ = synth.scale_out_run()
    path = write_timeline_png(table, tmp_path / "out" / "timeline.png", spike=spike)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000


def test_module_import_does_not_load_matplotlib() -> None:
    import subprocess
    import sys

    code = ("import sys, pytest_lagscale.report.timeline_png, pytest_lagscale.report.summary, "
            "pytest_lagscale.report.compare; "
            "print(sorted(m for m in ('matplotlib', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("own", "labels"), [
    pytest.param([float("nan"), 300.0, 120.0], ["total lag", "consumer-reported lag"], id="drawn-with-gaps"),
    pytest.param([float("nan")] * 3, ["total lag"], id="never-reported-not-drawn"),
    pytest.param(None, ["total lag"], id="older-timeline-without-the-column"),
])
def test_consumer_reported_lag_is_drawn_beside_the_total_lag(matplotlib_imported: None, own, labels) -> None:
    import pandas as pd
    from matplotlib.figure import Figure

    from pytest_lagscale.report.timeline_png import _plot_lag_and_rate

    table = pd.DataFrame({"t_s": [0.0, 1.0, 2.0], "total_lag": [900, 800, 400],
                          "consume_rate_per_s": [0.0] * 3})
    if own is not None:
        table["consumer_lag"] = own
    ax = Figure().subplots()
    _plot_lag_and_rate(ax, table)
    assert [line.get_label() for line in ax.get_lines()] == labels


def test_stale_samples_are_gaps_and_overlapping_faults_share_a_label(matplotlib_imported: None) -> None:
    """Lag older than the limit is a gap; where Prometheus scraped nothing (the controller's
    series stale too) the consume rate is a gap, not a 0; an injected fault and the restart it
    caused are one label."""
    import math

    import pandas as pd
    from matplotlib.figure import Figure

    from pytest_lagscale.report.timeline_png import _mark_faults, _plot_lag_and_rate

    table = pd.DataFrame({"t_s": [0.0, 1.0, 2.0, 3.0], "total_lag": [900, 900, 900, 400],
                          "consume_rate_per_s": [50.0, 0.0, 0.0, 60.0],
                          "total_lag_age_s": [0.5, 5.0, 6.0, 0.5],
                          "desired_replicas_age_s": [0.5, 0.5, 6.0, 0.5]})
    lag_ax = Figure().subplots()
    _plot_lag_and_rate(lag_ax, table, max_lag_age_s=4.0)
    lag_line = lag_ax.get_lines()[0]
    assert [math.isnan(v) for v in lag_line.get_ydata()] == [False, True, True, False]
    rate_line = lag_ax.figure.axes[1].get_lines()[0]
    assert [math.isnan(v) for v in rate_line.get_ydata()] == [False, False, True, False]
    axes = Figure().subplots(2, 1)
    _mark_faults(axes, [(90.0, 0.6, "kill_prometheus"), (90.2, 0.4, "part_restarted"),
                        (150.0, None, "part_died")], end_s=200.0)
    assert [t.get_text() for t in axes[0].texts] == ["kill_prometheus + part_restarted",
                                                      "part_died"]


@pytest.mark.parametrize("reported, labels", [
    pytest.param([float("nan"), 350.0, 390.0], ["consume rate", "consumer-reported consume rate"],
                 id="drawn-when-reported"),
    pytest.param([float("nan")] * 3, ["consume rate"], id="never-reported-not-drawn"),
    pytest.param(None, ["consume rate"], id="older-timeline-without-the-column"),
])
def test_consumer_reported_consume_rate_is_drawn_beside_the_measured_rate(
        matplotlib_imported: None, reported, labels) -> None:
    import pandas as pd
    from matplotlib.figure import Figure

    from pytest_lagscale.report.timeline_png import _plot_lag_and_rate

    table = pd.DataFrame({"t_s": [0.0, 1.0, 2.0], "total_lag": [900, 800, 400],
                          "consume_rate_per_s": [300.0, 380.0, 400.0]})
    if reported is not None:
        table["consumer_consume_rate_per_s"] = reported
    ax = Figure().subplots()
    _plot_lag_and_rate(ax, table)
    rate_ax = ax.figure.axes[-1]
    assert [line.get_label() for line in rate_ax.get_lines()] == labels
