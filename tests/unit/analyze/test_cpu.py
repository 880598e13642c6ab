"""Replica CPU utilization from replica_cpu events, with known answers."""

from __future__ import annotations

import pandas as pd
import pytest

from pytest_lagscale.analyze.cpu import cpu_utilization
from pytest_lagscale.analyze.tables import events_from_records


def _events(samples):
    return events_from_records(
        [{"event": "replica_cpu", "source": "controller", "monotonic_s": t,
          "request_millicores": 500, "millicores": usage} for t, usage in samples], origin_s=0.0)


def test_per_replica_and_hpa_average_utilization():
    events = _events([(1.0, {"replica-0001": 100.0}),
                      (3.0, {"replica-0001": 300.0, "replica-0002": 100.0}),
                      (9.0, {"replica-0001": 500.0})])          # outside the window
    u = cpu_utilization(events, 0.0, 5.0)
    assert [(r.replica_id, r.samples) for r in u.replicas] == [("replica-0001", 2),
                                                              ("replica-0002", 1)]
    assert u.replicas[0].mean_percent == pytest.approx(40.0)     # (100 + 300) / 2 / 500
    assert u.replicas[0].max_percent == pytest.approx(60.0)
    assert u.average_percent == ((1.0, pytest.approx(20.0)), (3.0, pytest.approx(40.0)))
    assert u.average_max_percent == pytest.approx(40.0)
    assert u.to_dict()["average_mean_percent"] == 30.0


def test_no_samples_in_the_window_is_empty():
    u = cpu_utilization(_events([(1.0, {"replica-0001": 100.0})]), 2.0, 3.0)
    assert u.replicas == () and u.average_max_percent is None
    empty = pd.DataFrame(columns=["t_s", "monotonic_s", "source", "event", "replica_id", "fields"])
    assert cpu_utilization(empty, 0.0, 1.0).replicas == ()
