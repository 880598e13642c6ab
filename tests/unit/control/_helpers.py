"""Shared builders for control tests (history and events relative to ``NOW_S``)."""

from __future__ import annotations

from pytest_lagscale.config.behavior import Behavior, parse_behavior
from pytest_lagscale.control.hpa import Recommendation, ScaleEvent

NOW_S = 10_000.0


def history(*entries: tuple[int, float]) -> tuple[Recommendation, ...]:
    """Recommendations given as ``(replicas, age_s)``, in the order written."""
    return tuple(Recommendation(replicas, NOW_S - age_s) for replicas, age_s in entries)


def spread_events(changes: list[int], window_s: float = 120.0) -> tuple[ScaleEvent, ...]:
    """docs/semantics.md §4.5: n events over W s sit at ages ``W - (i+1)*W/n + W/(2n)``."""
    n = len(changes)
    return tuple(ScaleEvent(change, NOW_S - (window_s - (i + 1) * window_s / n + window_s / (2 * n)))
                 for i, change in enumerate(changes))


def rules(*policies: str, select: str = "Max", window: int | None = None) -> dict:
    """A YAML-shaped direction from strings such as ``"Pods 4/15"`` or ``"Percent 100/60"``."""
    out: dict = {"selectPolicy": select}
    if policies:
        out["policies"] = [{"type": kind, "value": int(v), "periodSeconds": int(p)}
                           for kind, rest in (s.split() for s in policies) for v, p in [rest.split("/")]]
    if window is not None:
        out["stabilizationWindowSeconds"] = window
    return out


def behavior(up: dict | None = None, down: dict | None = None) -> Behavior:
    """Parsed behavior; an unspecified direction gets the API defaults."""
    doc = {}
    if up is not None:
        doc["scaleUp"] = up
    if down is not None:
        doc["scaleDown"] = down
    return parse_behavior(doc)
