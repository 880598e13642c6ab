"""Observation of a run: Prometheus server, lag exporter, recorder (timeline + merged events).

Submodules are loaded on first attribute access, so importing this package loads neither
pandas nor prometheus-api-client:

* :class:`PrometheusServer` (``observe.prometheus``): a per-run Prometheus with file_sd targets;
* :func:`serve_lag_exporter` (``observe.lag_exporter``): kafka_exporter-named lag series;
* :class:`Recorder`, :func:`merge_event_logs`, :func:`save_timeline` (``observe.recorder``).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "PrometheusServer": "prometheus",
    "serve_lag_exporter": "lag_exporter",
    "LagCollector": "lag_exporter",
    "Recorder": "recorder",
    "default_queries": "recorder",
    "merge_event_logs": "recorder",
    "save_timeline": "recorder",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
