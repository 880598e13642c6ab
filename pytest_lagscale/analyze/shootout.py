"""Experiment 9's verdicts: the seeds' claims about their policies, held against measured runs.

The policy shoot-out runs one load under several scaling policies and tabulates, per policy,
the figures of :data:`COLUMNS`. This module turns such a table into verdicts on what the seed
documents claim, as they state it:

* the README "KEDA Persistent Kafka Lag Scaler": "70-90% fewer scaling events" and "20-40%
  reduction in compute costs for bursty workloads" than scaling on lag as it is sampled (KEDA's
  kafka trigger). Compared here on the bursty profile: scale events (steps of the replica count)
  and replica-seconds of ``persistent-lag`` against ``keda`` (the committed ScaledObject).

A claim "holds" when the measured reduction reaches the claim's lower bound (70 %, 20 %): a
larger reduction than claimed is not held against the claim. It is "not measured" when either
run lacks the figure. The verdict is a record, not an assertion: the shoot-out asserts what the
harness guarantees (every policy completes, processed == produced), not which policy wins.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

#: The shoot-out table's columns (figure name -> unit), in order.
COLUMNS = {"reaction_time_s": "s", "peak_lag_records": "records", "drain_time_s": "s",
           "scale_steps": "count", "direction_reversals": "count", "rebalances": "count",
           "replica_seconds": "replica-seconds", "replica_seconds_ratio": "x oracle"}
#: The reference policy the seeds compare against: KEDA's kafka trigger as committed.
REFERENCE = "keda"


@dataclass(frozen=True)
class Claim:
    """One claim of a seed document and what the shoot-out measured against it.

    Attributes:
        source: the seed document's name (e.g. "KEDA Persistent Kafka Lag Scaler (README)").
        statement: the claim, quoted.
        profile: the load the claim is about (``bursty``).
        policy / reference: the policies compared (names of the shoot-out's table).
        figure: the figure compared (a :data:`COLUMNS` key).
        claimed_reduction: the claim's lower bound, a fraction (0.7 = 70 % fewer).
        policy_value / reference_value: the measured figures (None: not measured).
        measured_reduction: ``1 - policy_value / reference_value`` (None: not computable;
            negative: the policy used more).
        verdict: ``holds``, ``does not hold`` or ``not measured``.
    """

    source: str
    statement: str
    profile: str
    policy: str
    reference: str
    figure: str
    claimed_reduction: float
    policy_value: float | None
    reference_value: float | None
    measured_reduction: float | None
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        """The claim as JSON-ready data."""
        return asdict(self)

    def sentence(self) -> str:
        """One line: the claim, the measured reduction with both figures, the verdict."""
        if self.measured_reduction is None:
            return f"{self.statement!r} ({self.source}): not measured"
        return (f"{self.statement!r} ({self.source}): {self.policy} {_n(self.policy_value)} vs "
                f"{self.reference} {_n(self.reference_value)} {self.figure} on {self.profile}, "
                f"a {self.measured_reduction:.0%} reduction against >= "
                f"{self.claimed_reduction:.0%} claimed: {self.verdict}")


def _n(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


#: (source, statement, profile, policy, figure, claimed lower bound).
SEED_CLAIMS = (
    ("KEDA Persistent Kafka Lag Scaler (README)", "70-90% fewer scaling events", "bursty",
     "persistent-lag", "scale_steps", 0.70),
    ("KEDA Persistent Kafka Lag Scaler (README)",
     "20-40% reduction in compute costs for bursty workloads", "bursty", "persistent-lag",
     "replica_seconds", 0.20),
)


def reduction(policy_value: float | None, reference_value: float | None) -> float | None:
    """``1 - policy / reference``: the fraction the policy saved (None when either is missing
    or the reference is 0)."""
    if policy_value is None or reference_value is None or not reference_value:
        return None
    return 1.0 - float(policy_value) / float(reference_value)


def seed_claims(tables: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[Claim]:
    """The verdict on each of :data:`SEED_CLAIMS` from the shoot-out's tables.

    Args:
        tables: profile (``spike``/``bursty``) -> policy name -> figures (:data:`COLUMNS`
            keys; a missing profile, policy or figure counts as not measured).

    Returns:
        One :class:`Claim` per entry of :data:`SEED_CLAIMS`, in order.
    """
    claims = []
    for source, statement, profile, policy, figure, bound in SEED_CLAIMS:
        table = tables.get(profile) or {}
        mine = (table.get(policy) or {}).get(figure)
        ref = (table.get(REFERENCE) or {}).get(figure)
        measured = reduction(mine, ref)
        verdict = ("not measured" if measured is None
                   else "holds" if measured >= bound else "does not hold")
        claims.append(Claim(source, statement, profile, policy, REFERENCE, figure, bound,
                            None if mine is None else float(mine),
                            None if ref is None else float(ref), measured, verdict))
    return claims


__all__ = ["COLUMNS", "Claim", "REFERENCE", "SEED_CLAIMS", "reduction", "seed_claims"]
