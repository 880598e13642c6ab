"""Service-level objectives of ``lagscale tune``: ``METRIC<=VALUE`` held over the twin's draws.

An SLO names a metric of :data:`pytest_lagscale.analyze.METRICS` (its unit is the metric's), a
comparison (``<=``, ``<``, ``>=``, ``>``) and a number. Over a point's draws it *holds* when at
least :data:`QUANTILE` (95 %) of the draws meet it, i.e. at the draws' 95th percentile for an
upper bound (``<=``, ``<``) and at their 5th percentile for a lower bound (``>=``, ``>``). A draw
in which the metric could not be measured (None, e.g. a run that never drained) misses it.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from ..config._problems import nearest
from ..contract.errors import ConfigError

#: Share of the draws that must meet an SLO.
QUANTILE = 0.95
#: comparison -> (function, True for an upper bound).
OPERATORS: dict[str, tuple[Callable[[float, float], bool], bool]] = {
    "<=": (operator.le, True), "<": (operator.lt, True),
    ">=": (operator.ge, False), ">": (operator.gt, False)}
_FORM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|<|>)\s*(\S+)\s*$")


@dataclass(frozen=True)
class Slo:
    """One objective.

    Attributes:
        metric: a name of ``analyze.METRICS`` (e.g. ``drain_time_s``, seconds).
        op: ``<=``, ``<``, ``>=`` or ``>``.
        threshold: the bound, in the metric's unit.
    """

    metric: str
    op: str
    threshold: float

    @property
    def upper(self) -> bool:
        """True for ``<=``/``<`` (held at the 95th percentile), False for ``>=``/``>``."""
        return OPERATORS[self.op][1]

    def text(self) -> str:
        """As the user writes it, e.g. ``drain_time_s<=60``."""
        return f"{self.metric}{self.op}{self.threshold:g}"

    def met(self, value: float | None) -> bool:
        """One draw (or one real run) meets it; an unmeasured value (None) does not."""
        return value is not None and OPERATORS[self.op][0](value, self.threshold)

    def bound(self, values: Sequence[float | None]) -> float | None:
        """The value :data:`QUANTILE` of the draws are at or better than: the k-th best of n
        draws, k = ceil(0.95 n) (an unmeasured draw counts as the worst); None when that draw
        is unmeasured or there are no draws."""
        if not values:
            return None
        worst = math.inf if self.upper else -math.inf
        ordered = sorted((worst if v is None else float(v) for v in values),
                         reverse=not self.upper)
        value = ordered[math.ceil(QUANTILE * len(ordered)) - 1]
        return None if math.isinf(value) else value

    def holds(self, values: Sequence[float | None]) -> bool:
        """At least :data:`QUANTILE` of the draws meet it (False for no draws)."""
        return self.met(self.bound(values))

    def excess(self, values: Sequence[float | None]) -> float:
        """How far :meth:`bound` misses, relative to the threshold (0 when it holds, inf when
        unmeasured)."""
        value = self.bound(values)
        if value is None:
            return math.inf
        if self.met(value):
            return 0.0
        return abs(value - self.threshold) / max(abs(self.threshold), 1e-9)


def parse_slo(text: str) -> tuple[Slo | None, list[str]]:
    """One ``--slo`` value: the SLO, or None and its problem lines."""
    from ..analyze import METRICS

    match = _FORM.match(text)
    if match is None:
        return None, [f"--slo: got {text!r}, expected METRIC<=VALUE (or <, >=, >) with METRIC "
                      "a name of analyze.METRICS; write e.g. 'drain_time_s<=60'"]
    metric, op, number = match.groups()
    problems = []
    if metric not in METRICS:
        guess = nearest(metric, METRICS)
        problems.append(f"--slo: got metric {metric!r} in {text!r}, expected one of "
                        f"{', '.join(METRICS)}; " + (f"use {guess!r}" if guess
                                                      else "pick one of them"))
    try:
        threshold = float(number)
    except ValueError:
        threshold = math.nan
    if not math.isfinite(threshold):
        problems.append(f"--slo: got value {number!r} in {text!r}, expected a finite number "
                        f"in the metric's unit; write e.g. '{metric}{op}60'")
    return (None, problems) if problems else (Slo(metric, op, threshold), [])


def parse_slos(texts: Sequence[str]) -> tuple[Slo, ...]:
    """Every ``--slo`` value.

    Raises:
        ConfigError: every bad value (one line each: option, value, allowed form or metrics),
            a metric given twice, or no SLO at all.
    """
    slos, problems = [], []
    for text in texts:
        slo, lines = parse_slo(text)
        problems += lines
        if slo is not None and any(s.metric == slo.metric and s.upper == slo.upper
                                   for s in slos):
            problems.append(f"--slo: got a second {'upper' if slo.upper else 'lower'} bound on "
                            f"{slo.metric!r} ({text!r}), expected one per metric and direction; "
                            "keep the tighter one")
        elif slo is not None:
            slos.append(slo)
    if not texts:
        problems.append("--slo: got none, expected at least one METRIC<=VALUE; give e.g. "
                        "--slo 'drain_time_s<=60'")
    if problems:
        raise ConfigError(problems)
    return tuple(slos)


__all__ = ["OPERATORS", "QUANTILE", "Slo", "parse_slo", "parse_slos"]
