"""The twin's assignors: range, roundrobin and the sticky target."""

from __future__ import annotations

import pytest

from pytest_lagscale.twin.assign import range_assign, roundrobin_assign, sticky_assign


def test_range_gives_contiguous_blocks_first_members_one_more() -> None:
    assert range_assign(["b", "a", "c"], 8) == {"a": [0, 1, 2], "b": [3, 4, 5], "c": [6, 7]}


def test_roundrobin_deals_partitions_in_turn() -> None:
    assert roundrobin_assign(["a", "b", "c"], 7) == {"a": [0, 3, 6], "b": [1, 4], "c": [2, 5]}


@pytest.mark.parametrize("members", [1, 3, 5, 8, 11], ids=lambda n: f"{n}-members")
def test_sticky_is_balanced_complete_and_keeps_what_it_can(members: int) -> None:
    owned = {"r0": list(range(8))}
    ids = [f"r{i}" for i in range(members)]
    target = sticky_assign(ids, 8, owned)
    every = sorted(p for parts in target.values() for p in parts)
    assert every == list(range(8))
    sizes = [len(parts) for parts in target.values()]
    assert max(sizes) - min(sizes) <= 1
    # the old owner keeps a full quota of its own partitions: only the rest moves
    assert set(target["r0"]) <= set(owned["r0"]) and len(target["r0"]) == max(sizes)


def test_sticky_moves_nothing_when_already_balanced() -> None:
    owned = {"a": [0, 5], "b": [1, 2], "c": [3, 4]}
    assert sticky_assign(["a", "b", "c"], 6, owned) == owned


def test_cooperative_sticky_gives_up_its_lowest_partitions_as_librdkafka_does() -> None:
    """Observed in every revocation of 13 real cooperative-sticky runs (docs/twin.md "What is modelled"):
    a member over quota keeps its highest-numbered partitions; the default keeps the lowest."""
    from pytest_lagscale.twin.assign import assign

    owned = {"r1": [0, 1, 2, 3, 4, 5, 6, 7]}
    assert assign("cooperative-sticky", ["r1", "r2"], 8, owned) == \
        {"r1": [4, 5, 6, 7], "r2": [0, 1, 2, 3]}
    assert sticky_assign(["r1", "r2"], 8, owned) == {"r1": [0, 1, 2, 3], "r2": [4, 5, 6, 7]}
    # under quota: everything it owns is kept, whatever the side
    assert sticky_assign(["a", "b"], 6, {"a": [4], "b": [0, 1, 2, 3, 5]}, keep="highest") == \
        {"a": [0, 1, 4], "b": [2, 3, 5]}
    with pytest.raises(ValueError, match="keep: got 'middle'"):
        sticky_assign(["a"], 2, {}, keep="middle")
