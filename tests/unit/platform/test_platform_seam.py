"""The platform seam: the registry builds implementations of the Platform Protocol."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.platform import PLATFORMS, make_platform
from pytest_lagscale.platform.base import Platform
from pytest_lagscale.platform.local import ReplicaTemplate


@pytest.mark.parametrize("kind", sorted(PLATFORMS))
def test_every_registered_platform_implements_the_protocol(kind: str, tmp_path: Path) -> None:
    manifest = str(Path(__file__).resolve().parents[3] / "k8s" / "consumer-deployment-ci.yaml")
    platform = make_platform(kind, ReplicaTemplate(argv=("true",), manifest=manifest), tmp_path)
    assert isinstance(platform, Platform)
    assert (platform.desired_replicas, platform.current_replicas, platform.ready_replicas) \
        == (0, 0, 0)


def test_an_unknown_platform_names_the_registered_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        make_platform("nomad", ReplicaTemplate(argv=("true",)), tmp_path)
    assert info.value.problems == ["--platform: 'nomad' is not one of local, kubernetes; use "
                                   "--platform=local"]


def test_kill_replica_of_no_live_replica_names_the_live_ones(tmp_path: Path) -> None:
    platform = make_platform("local", ReplicaTemplate(argv=("true",)), tmp_path)
    with pytest.raises(ConfigError) as info:
        platform.kill_replica("replica-0009", 9)
    assert str(info.value) == ("kill_replica: replica_id 'replica-0009' is not a live replica; "
                               "live: none")
