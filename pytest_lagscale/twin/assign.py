"""Partition assignors of the twin's consumer group: range, roundrobin and sticky.

Pure functions of member ids (sorted as the coordinator sorts member ids) and partitions.
``range`` and ``roundrobin`` are the classic eager assignors (one topic: range gives each member
a contiguous block, the first ``P % n`` members one more); ``sticky`` is the balanced, sticky
target of cooperative-sticky and of KIP-848's uniform assignor: every member keeps what it owns
up to its quota (``P // n``, the first ``P % n`` members by load one more) and the rest moves to
the members below quota. Which of its partitions a member over quota keeps decides which
partitions pause and move (a hot partition that moves twice drains seconds later):
librdkafka's cooperative-sticky (v2.16.0, ``src/rdkafka_sticky_assignor.c``) keeps the
highest-numbered and gives up the lowest (in 84 of 84 revocations of 13 runs on this machine,
docs/twin.md "What is modelled"); for KIP-848's server-side assignor no run says, and it keeps
the lowest.
"""

from __future__ import annotations

from typing import Mapping, Sequence


def range_assign(members: Sequence[str], partitions: int) -> dict[str, list[int]]:
    """Range: member i (sorted) gets a contiguous block; the first ``P % n`` get one more."""
    members = sorted(members)
    n = len(members)
    out: dict[str, list[int]] = {}
    start = 0
    for i, member in enumerate(members):
        size = partitions // n + (1 if i < partitions % n else 0)
        out[member] = list(range(start, start + size))
        start += size
    return out


def roundrobin_assign(members: Sequence[str], partitions: int) -> dict[str, list[int]]:
    """Round robin: partition p goes to member ``p % n`` (sorted)."""
    members = sorted(members)
    out: dict[str, list[int]] = {m: [] for m in members}
    for p in range(partitions):
        out[members[p % len(members)]].append(p)
    return out


def sticky_assign(members: Sequence[str], partitions: int,
                  owned: Mapping[str, Sequence[int]], keep: str = "lowest"
                  ) -> dict[str, list[int]]:
    """A balanced target that moves as few partitions as possible.

    Args:
        members: the members of the new generation.
        partitions: partition count P.
        owned: partitions each member owns now (members not in ``members`` are ignored).
        keep: ``"lowest"`` or ``"highest"``: which of its partitions a member over its quota
            keeps (the others move).

    Returns:
        member -> sorted partitions; every partition exactly once; sizes differ by at most 1.
    """
    members = sorted(members)
    n = len(members)
    base, extra = divmod(partitions, n)
    if keep not in ("lowest", "highest"):
        raise ValueError(f"keep: got {keep!r}, expected 'lowest' or 'highest'")
    kept = {m: sorted(p for p in owned.get(m, ()) if 0 <= p < partitions) for m in members}
    # members owning the most keep the extra slots (fewest moves)
    by_load = sorted(members, key=lambda m: (-len(kept[m]), m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_load)}
    taken: set[int] = set()
    out: dict[str, list[int]] = {}
    for m in members:
        free_of_others = [p for p in kept[m] if p not in taken]
        if keep == "highest":
            mine = free_of_others[max(0, len(free_of_others) - quota[m]):] if quota[m] else []
        else:
            mine = free_of_others[: quota[m]]
        taken.update(mine)
        out[m] = mine
    free = [p for p in range(partitions) if p not in taken]
    for m in members:
        need = quota[m] - len(out[m])
        out[m] = sorted(out[m] + free[:need])
        free = free[need:]
    return out


ASSIGNORS = {"range": range_assign, "roundrobin": roundrobin_assign}


def assign(balancer: str, members: Sequence[str], partitions: int,
           owned: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """The target assignment of ``balancer`` (``range``, ``roundrobin``; anything else: sticky)."""
    if not members:
        return {}
    if balancer in ASSIGNORS:
        return ASSIGNORS[balancer](members, partitions)
    return sticky_assign(members, partitions, owned,
                         keep="highest" if balancer == "cooperative-sticky" else "lowest")


__all__ = ["assign", "range_assign", "roundrobin_assign", "sticky_assign"]
