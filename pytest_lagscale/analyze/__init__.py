"""Measurements of a recorded run (DESIGN.md "Measurements"), pure functions over two tables.

The timeline table (one row per 1 s step) and the event table (one row per event) are described
in :mod:`pytest_lagscale.analyze.tables`; :func:`measure` computes everything at once
(:func:`scale_out` included: every new replica's part of a scale-out and the machine's load).
"""

from .cost import (Baseline, baseline_at_min, ideal_drain_time_s, oracle_replica_seconds,
                   oracle_replicas, replica_seconds)
from .lag import Drain, PeakLag, drain, lag_build_up_rate, peak_lag
from .measure import METRICS, Measurements, RunSpec, measure
from .reaction import Reaction, reaction_time
from .reconcile import Reconciliation, reconcile, reconcile_arrow
from .scale_out import ReplicaStart, ScaleOut, scale_out
from .steps import ScaleStep, direction_reversals, scale_steps
from .tables import check_timeline, events_from_records, spike_window

__all__ = [
    "METRICS", "Baseline", "Drain", "Measurements", "PeakLag", "Reaction", "Reconciliation",
    "ReplicaStart", "RunSpec", "ScaleOut", "ScaleStep", "baseline_at_min", "check_timeline",
    "direction_reversals", "drain", "events_from_records", "ideal_drain_time_s",
    "lag_build_up_rate", "measure",
    "oracle_replica_seconds", "oracle_replicas", "peak_lag", "reaction_time", "reconcile",
    "reconcile_arrow", "replica_seconds", "scale_out", "scale_steps", "spike_window",
]
