"""free_port: the ports the harness hands to its children (brokers, KEDA, Prometheus)."""

from __future__ import annotations


def test_free_port_picks_below_the_ephemeral_range_and_the_port_is_free() -> None:
    import socket

    from pytest_lagscale.kafka.embedded import _ephemeral_low, free_port

    low = _ephemeral_low()
    ports = {free_port() for _ in range(20)}
    assert all(max(1024, low - 12_000) <= p < low for p in ports), (low, sorted(ports))
    assert len(ports) > 1  # at random, not one port for every caller
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports.pop()))


def test_a_port_handed_out_is_not_handed_out_again_before_its_child_binds() -> None:
    """Nothing binds the ports handed out here, as when a burst of replicas is still starting:
    every one must differ (picked blindly, 1,000 picks among 12,000 ports collide ~40 times)."""
    from pytest_lagscale.kafka import embedded

    ports = [embedded.free_port() for _ in range(1_000)]
    assert len(set(ports)) == len(ports), len(ports) - len(set(ports))


def test_a_held_port_is_free_to_pick_again_after_the_hold(monkeypatch) -> None:
    from pytest_lagscale.kafka import embedded

    port = embedded.free_port()
    assert port in embedded._handed_out
    monkeypatch.setattr(embedded, "HOLD_S", 0.0)
    again = embedded.free_port()
    assert port not in embedded._handed_out or again == port
