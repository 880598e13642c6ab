"""Which node runs ``--platform kubernetes``'s pods (``--node``), and what refuses the kubelet."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.platform import kubernetes as k


def _plan(node=None, kubeconfig=None, command=None, replica_image=None):
    return SimpleNamespace(settings=SimpleNamespace(node=node, kubeconfig=kubeconfig,
                                                    replica_image=replica_image),
                           deployment=SimpleNamespace(command=command))


@pytest.mark.parametrize("plan, expected", [
    (_plan(), "kubelet"),
    (_plan(command=("franz-go-consumer",)), "process"),
    (_plan(node="process"), "process"),
    (_plan(node="kubelet", command=("x",)), "kubelet"),
    (_plan(node="kubelet", kubeconfig="/k"), "process"),
    (_plan(kubeconfig="/k", replica_image="r/lagscale-replica:1"), "cluster"),
])
def test_the_node_is_the_options_else_kubelet_for_the_replica_program(plan, expected) -> None:
    assert k.node_kind(plan) == expected


def test_a_command_consumer_on_the_kubelet_node_is_refused_naming_node_process(
        monkeypatch) -> None:
    monkeypatch.setattr(k, "kubelet_node_problems", lambda: [])
    with pytest.raises(ConfigError) as err:
        k._check_kubelet_node(_plan(node="kubelet", command=("x",)))
    assert "--node kubelet: the Deployment runs its own consumer command" in str(err.value)
    assert "--node process" in str(err.value)


def test_every_missing_part_of_the_kubelet_node_is_named_on_its_own_line(monkeypatch) -> None:
    monkeypatch.setattr(k, "kubelet_node_problems", lambda: ["a missing", "b missing"])
    with pytest.raises(ConfigError) as err:
        k._check_kubelet_node(_plan(node="kubelet"))
    assert str(err.value).splitlines() == ["--node kubelet: a missing", "--node kubelet: b missing"]
