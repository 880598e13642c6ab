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
