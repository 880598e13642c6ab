"""The shadow's verdict on one kubernetes run, from the run's events.

A run on ``--platform kubernetes`` records what the real HPA saw and did:

* ``hpa_created`` (controller): the HPA object KEDA generated (its spec: bounds, behavior,
  the External metric and its target);
* ``metric_read`` (controller): every external-metrics read the HPA made through the metrics
  tap (:mod:`.metrics_tap`), with the tap's monotonic time ``read_t_s`` and the value the
  adapter answered;
* ``deployment_status`` (platform): each change of the Deployment's ``spec.replicas`` and
  ``status.replicas``;
* ``hpa_status`` (controller): each change of the HPA's ``status.desiredReplicas``.

:func:`run_conformance` aligns them (:func:`.shadow.align_syncs`), replays every sync through
the embedded HPA (:func:`.shadow.shadow_decisions`) with the controller-manager's tolerance and
downscale stabilization, and returns the :class:`~.shadow.ConformanceReport`. All times are the
harness's monotonic clock (the tap, the pollers and the event logs read the same one).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..contract.errors import ConfigError
from .shadow import ConformanceReport, align_syncs, conformance, hpa_spec_view, shadow_decisions


class _Read:
    """A ``metric_read`` event as :class:`~.shadow.ReadLike`."""

    def __init__(self, record: Mapping[str, Any]):
        self.t_s = float(record["read_t_s"])
        self.metric_name = str(record["metric"])
        self.label_selector = str(record.get("label_selector") or "")
        total = record.get("total")
        self.total = None if total is None else float(total)


def run_conformance(records: Iterable[Mapping[str, Any]], *, sync_period_s: float,
                    tolerance: float, downscale_stabilization_s: float) -> ConformanceReport:
    """The shadow HPA against the real one over one run's events.

    Args:
        records: the run's merged events (dicts with ``source``, ``event``, ``monotonic_s``
            and the event's fields).
        sync_period_s, tolerance, downscale_stabilization_s: the controller-manager's
            ``--horizontal-pod-autoscaler-*`` flags of the run.

    Raises:
        ConfigError: no ``hpa_created`` event (the HPA never appeared), or an HPA the shadow
            cannot read (:func:`~.shadow.hpa_spec_view`).
    """
    hpa = None
    reads, status_series, hpa_series = [], [], []
    for r in records:
        event = r.get("event")
        if event == "hpa_created" and hpa is None:
            hpa = {"metadata": {"name": r.get("name")}, "spec": r.get("spec") or {}}
        elif event == "metric_read" and r.get("read_t_s") is not None:
            reads.append(_Read(r))
        elif event == "deployment_status":
            status_series.append((float(r["monotonic_s"]), int(r["spec_replicas"]),
                                  int(r["status_replicas"])))
        elif event == "hpa_status":
            hpa_series.append((float(r["monotonic_s"]), int(r["desired_replicas"])))
    if hpa is None:
        raise ConfigError("conformance: the run has no 'hpa_created' event: KEDA never created "
                          "the HPA; see kube/keda-operator.log in the run directory")
    spec = hpa_spec_view(hpa)
    syncs = align_syncs(reads, status_series, hpa_series, sync_period_s=sync_period_s, spec=spec)
    decisions = shadow_decisions(spec, syncs, tolerance=tolerance,
                                 downscale_stabilization_s=downscale_stabilization_s)
    return conformance(decisions, dropped=syncs.dropped)
