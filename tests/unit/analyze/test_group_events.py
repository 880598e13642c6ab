"""GroupHistory: membership and rebalance events from snapshots of a group (pure)."""

from __future__ import annotations

import pytest

from pytest_lagscale.analyze.group_events import GroupHistory, GroupSnapshot, MemberView


def _snap(at_s: float, state: str, **owners: tuple[int, ...]) -> GroupSnapshot:
    return GroupSnapshot(at_s, state, tuple(MemberView(m, f"client-{m}", "/127.0.0.1", parts)
                                            for m, parts in owners.items()))


def _names(events: list[dict]) -> list[str]:
    return [e["event"] for e in events]


def test_a_member_joins_is_assigned_and_its_join_time_is_measured() -> None:
    history = GroupHistory()
    assert history.observe(_snap(0.0, "EMPTY")) == []
    joined = history.observe(_snap(0.5, "PREPARING_REBALANCE", a=()))
    assert _names(joined) == ["member_joined", "rebalance_started"]
    assert joined[0]["client_id"] == "client-a" and joined[0]["host"] == "/127.0.0.1"
    done = history.observe(_snap(2.0, "STABLE", a=(0, 1, 2, 3)))
    assert _names(done) == ["member_assigned", "rebalance_ended"]
    assert done[0]["join_s"] == 1.5
    assert done[1]["assigned"] == {"a": [0, 1, 2, 3]} and done[1]["revoked"] == {}
    assert (done[1]["generation"], done[1]["start_s"], done[1]["duration_s"]) == (1, 0.5, 1.5)
    assert done[1]["resolution_s"] is None


def test_an_eager_rebalance_revokes_everything_and_moves_what_changed_owner() -> None:
    history = GroupHistory()
    history.observe(_snap(0.0, "STABLE", a=(0, 1, 2, 3)))
    history.observe(_snap(1.0, "PREPARING_REBALANCE", a=(), b=()))
    [assigned, ended] = history.observe(_snap(3.0, "STABLE", a=(0, 1), b=(2, 3)))
    assert (assigned["event"], assigned["member_id"], assigned["join_s"]) == (
        "member_assigned", "b", 2.0)
    assert ended["revoked"] == {"a": [2, 3]} and ended["assigned"] == {"b": [2, 3]}
    assert ended["moved"] == [2, 3] and ended["duration_s"] == 2.0


def test_a_rebalance_between_two_looks_is_reported_with_its_resolution() -> None:
    history = GroupHistory()
    history.observe(_snap(0.0, "STABLE", a=(0, 1, 2, 3), b=()))
    [left, ended] = history.observe(_snap(0.5, "STABLE", a=(0, 1, 2, 3)))
    assert left == {"event": "member_left", "at_s": 0.5, "member_id": "b"}
    assert ended["event"] == "rebalance_ended" and ended["resolution_s"] == 0.5
    assert ended["start_s"] == 0.0 and ended["moved"] == []


def test_cooperative_steps_are_two_rebalances_each_with_its_own_partitions() -> None:
    history = GroupHistory()
    history.observe(_snap(0.0, "STABLE", a=(0, 1, 2, 3)))
    history.observe(_snap(1.0, "COMPLETING_REBALANCE", a=(0, 1, 2, 3), b=()))
    [first] = [e for e in history.observe(_snap(1.5, "STABLE", a=(0, 1), b=()))
               if e["event"] == "rebalance_ended"]
    assert first["revoked"] == {"a": [2, 3]} and first["assigned"] == {}
    history.observe(_snap(2.0, "COMPLETING_REBALANCE", a=(0, 1), b=()))
    second = [e for e in history.observe(_snap(2.5, "STABLE", a=(0, 1), b=(2, 3)))
              if e["event"] == "rebalance_ended"][0]
    assert second["revoked"] == {} and second["assigned"] == {"b": [2, 3]}
    assert second["moved"] == [] and history.generation == 2


def test_kip848_states_count_as_rebalancing() -> None:
    history = GroupHistory()
    history.observe(_snap(0.0, "STABLE", a=(0, 1)))
    assert _names(history.observe(_snap(0.5, "RECONCILING", a=(0,), b=()))) == [
        "member_joined", "rebalance_started"]


def test_snapshots_out_of_order_are_refused() -> None:
    history = GroupHistory()
    history.observe(_snap(1.0, "EMPTY"))
    with pytest.raises(ValueError, match="at_s: 0.5 is before the previous snapshot's 1.0"):
        history.observe(_snap(0.5, "EMPTY"))


def test_a_new_members_first_commit_is_the_first_progress_of_a_partition_it_owns() -> None:
    history = GroupHistory()
    history.observe_commits(0.5, {0: 10, 1: 20})
    history.observe(GroupSnapshot(1.0, "STABLE", (MemberView("a", partitions=(0,)),
                                                   MemberView("b", partitions=(1,)))))
    # b's partition moves first, a's stays: only b has committed
    events = history.observe_commits(1.5, {0: 10, 1: 25})
    assert [e["event"] for e in events] == ["committed_offsets", "member_first_commit"]
    assert events[1] == {"event": "member_first_commit", "at_s": 1.5, "member_id": "b",
                         "partition": 1, "since_assigned_s": 0.5}
    assert history.observe_commits(2.0, {0: 10, 1: 25}) == []  # nothing moved: no event
    events = history.observe_commits(3.0, {0: 11, 1: 30})
    assert [(e["event"], e.get("member_id")) for e in events] == [
        ("committed_offsets", None), ("member_first_commit", "a")]
    assert history.observe_commits(4.0, {0: 12, 1: 31})[1:] == []  # once per member
