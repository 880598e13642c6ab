"""The embedded autoscaler's timing in real runs, for the twin's controller: ``controller``.

Two facts of the harness decide when a real run's controller steps, and with them which
controller period a spike or a stabilization window falls into:

* **lead**: the runner starts the autoscaler (its ``autoscale`` phase), waits for the policy's
  first decision (``first_decision_within_s`` after its first decide: one HPA sync period),
  lets Prometheus scrape ``PRE_LOAD_SCRAPES`` times and starts the load
  (``experiment/runner.py``). The load thus starts ``first_decision_within_s +
  PRE_LOAD_SCRAPES x scrape interval + extra`` after the ``autoscale`` phase, the same in every
  run up to ``extra`` (the autoscaler's start, the wait's 0.1 s polling, the producer's
  start): :func:`lead_extra_s`, per run.
* **slip**: ``LocalAutoscaler`` checks ``policy.due`` every 0.25 s after its last step
  (``platform/autoscaler.py``), so a step due at t runs at t + slip, and the policy's next step
  is due one period after that: a real run's KEDA polls and HPA syncs come 1-4 % further apart
  than their periods, more while replicas start (CPU). :func:`step_slips` gives each step's
  ``(slip_s, starting, members)``, :func:`fit_controller` the least-squares ``slip_s +
  slip_s_per_starting x starting + slip_s_per_member x members`` (coefficients clipped at 0).

``calibrate.calibrate`` writes the fit as the calibration's ``controller`` section; the twin's
driver (``twin/driver.py``) starts the policy at -(lead) and runs each due step at its slip.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from ..contract.rundir import RunDir
from .facts import RunFacts, run_settings

#: Step events of the KEDA + HPA policy -> the policy attribute holding their period.
STEP_PERIODS = {"keda_poll": "polling_interval_s", "hpa_sync": "sync_period_s"}
#: Fewest steps with a slip for the fit (else the section is left out).
MIN_STEPS = 20


def _policy(facts: RunFacts) -> Any:
    from ..experiment.plan import plan_run

    return plan_run(run_settings(facts.benchmark)).build_policy()


def _records(facts: RunFacts) -> list[dict[str, Any]]:
    with open(RunDir(facts.path).events_jsonl, encoding="utf-8") as fh:
        return sorted((json.loads(line) for line in fh), key=lambda r: r["wall_ns"])


def lead_extra_s(facts: RunFacts, records: Sequence[dict[str, Any]] | None = None,
                 policy: Any = None) -> float | None:
    """Seconds between the run's ``autoscale`` phase and its ``load_start`` beyond the runner's
    own wait (``twin.driver.runner_lead_s`` of the run's policy, built from its inputs when not
    given); None when either event is missing."""
    from ..twin.driver import runner_lead_s

    records = _records(facts) if records is None else records
    start = next((r["wall_ns"] for r in records if r.get("event") == "run_phase"
                  and r.get("phase") == "autoscale"), None)
    load = next((r["wall_ns"] for r in records if r.get("event") == "load_start"), None)
    if start is None or load is None:
        return None
    return (load - start) / 1e9 - runner_lead_s(policy or _policy(facts))


def step_slips(facts: RunFacts, records: Sequence[dict[str, Any]] | None = None,
               policy: Any = None) -> list[tuple[float, int, int]]:
    """``(slip_s, starting, members)`` per controller step after the first of its kind: the
    seconds between two consecutive steps of a :data:`STEP_PERIODS` event (their ``now_s``)
    minus the period, with the replicas starting and the members when the later one ran
    (:meth:`~.facts.RunFacts.counts_at`). Steps further apart than 1.5 periods are left out."""
    records = _records(facts) if records is None else records
    policy = policy or _policy(facts)
    out = []
    for event, attr in STEP_PERIODS.items():
        period = getattr(policy, attr, None)
        if not period:
            continue
        steps = [r for r in records if r.get("event") == event and "now_s" in r]
        for before, after in zip(steps, steps[1:]):
            gap = float(after["now_s"]) - float(before["now_s"])
            if not 0 <= gap <= 1.5 * period:
                continue
            wall_s = after["wall_ns"] / 1e9 - (float(after["monotonic_s"]) - float(after["now_s"]))
            members, starting = facts.counts_at(wall_s)
            out.append((gap - period, starting, members))
    return out


def fit_controller(runs: Sequence[RunFacts]) -> dict[str, float] | None:
    """The ``controller`` section from ``runs``: ``lead_extra_min_s`` and ``lead_extra_max_s``
    (the range of :func:`lead_extra_s`, at least 0) and the slip's ``slip_s``,
    ``slip_s_per_starting``, ``slip_s_per_member`` (least squares over every step of
    :func:`step_slips`, coefficients clipped at 0) with ``steps`` and ``runs`` (sample counts);
    None without a lead or with fewer than :data:`MIN_STEPS` steps."""
    extras, rows = [], []
    for facts in runs:
        records, policy = _records(facts), _policy(facts)
        extra = lead_extra_s(facts, records, policy)
        if extra is not None:
            extras.append(max(0.0, extra))
        rows += step_slips(facts, records, policy)
    if not extras or len(rows) < MIN_STEPS:
        return None
    data = np.array(rows, dtype=float)
    design = np.column_stack([np.ones(len(data)), data[:, 1], data[:, 2]])
    coef, *_ = np.linalg.lstsq(design, data[:, 0], rcond=None)
    base, per_starting, per_member = (max(0.0, float(c)) for c in coef)
    return {"lead_extra_min_s": min(extras), "lead_extra_max_s": max(extras),
            "slip_s": base, "slip_s_per_starting": per_starting,
            "slip_s_per_member": per_member, "steps": float(len(rows)),
            "runs": float(len(extras))}


__all__ = ["MIN_STEPS", "STEP_PERIODS", "fit_controller", "lead_extra_s", "step_slips"]
