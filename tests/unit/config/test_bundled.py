"""Bundled defaults (profiles, manifests, Kafka pin, templates) found through the package."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

import pytest_lagscale
from pytest_lagscale.config import bundled, manifests
from pytest_lagscale.config.bundled import (data_path, manifest_names, manifest_path, manifest_paths,
                                            profile_names, resolve_manifest, resolve_profile)
from pytest_lagscale.contract.errors import ConfigError, LagscaleError

PACKAGE_DATA = Path(pytest_lagscale.__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parents[3]
NAMES = ("bursty, bursty-ci, ceiling, ceiling-ci, partitions, partitions-ci, rebalance, "
         "rebalance-ci, spike, spike-ci, "
         "spike-demo")
MANIFESTS = ("consumer-deployment, consumer-deployment-ci, franz-go-consumer-deployment, "
             "franz-go-consumer-deployment-ci, hpa-cpu, hpa-cpu-ci, hpa-pods-lag, "
             "hpa-pods-lag-ci, lag-per-slot, lag-per-slot-ci, persistent-lag-scaler, scaledobject, "
             "scaledobject-ceiling, scaledobject-ceiling-ci, scaledobject-ceiling-idle, "
             "scaledobject-ceiling-idle-ci, scaledobject-ci, scaledobject-cloudwatch, scaledobject-cloudwatch-ci, "
             "scaledobject-flap, scaledobject-flap-ci, "
             "scaledobject-hysteresis, scaledobject-hysteresis-ci, scaledobject-partitions, "
             "scaledobject-partitions-ci, scaledobject-persistent-lag, scaledobject-persistent-lag-ci, "
             "scaledobject-prometheus, scaledobject-prometheus-ci, "
             "scaledobject-rebalance, scaledobject-rebalance-ci, scaledobject-share-group, "
             "scaledobject-share-group-ceiling-capped-ci, scaledobject-share-group-ceiling-ci, "
             "scaledobject-share-group-ci, scaledobject-tuned, "
             "scaledobject-tuned-ci, share-group-scaler")


def test_data_path_is_a_real_directory_inside_the_package() -> None:
    assert isinstance(data_path(), Path)
    assert data_path() == PACKAGE_DATA
    assert data_path("kafka", "pom.xml").is_file()
    assert data_path("prometheus", "prometheus.yml.template").is_file()


def test_profile_names() -> None:
    assert profile_names() == tuple(NAMES.split(", "))


@pytest.mark.parametrize(("value", "scale", "expected"), [
    pytest.param("spike-ci", None, "spike-ci.yaml", id="name"),
    pytest.param("spike", None, "spike.yaml", id="name-without-scale"),
    pytest.param("spike", "ci", "spike-ci.yaml", id="name-by-scale-ci"),
    pytest.param("spike", "full", "spike.yaml", id="name-by-scale-full"),
    pytest.param("spike-ci", "ci", "spike-ci.yaml", id="ci-name-at-ci"),
    pytest.param("spike-demo", "ci", "spike-demo.yaml", id="no-ci-variant-falls-back"),
])
def test_resolve_bundled_name(value: str, scale: str | None, expected: str) -> None:
    path = resolve_profile(value, scale)
    assert path == PACKAGE_DATA / "profiles" / expected
    assert path.is_file()


def test_resolve_existing_path_wins_over_a_bundled_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("spike").write_text("name: mine\n")
    assert resolve_profile("spike", "ci") == Path("spike")
    assert resolve_profile(str(tmp_path / "spike")) == tmp_path / "spike"


def test_resolve_repository_symlink_path() -> None:
    path = resolve_profile(str(REPO / "fixtures" / "profiles" / "spike-demo.yaml"))
    assert path == REPO / "fixtures" / "profiles" / "spike-demo.yaml"
    assert path.resolve() == PACKAGE_DATA / "profiles" / "spike-demo.yaml"


@pytest.mark.parametrize("value", [
    pytest.param("spikes", id="unknown-name"),
    pytest.param("fixtures/profiles/nope.yaml", id="missing-path"),
])
def test_resolve_unknown_profile(value: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        resolve_profile(value, "ci")
    assert str(info.value) == (
        f"'--profile': got {value!r}, expected an existing profile YAML file or a bundled profile "
        f"name ({NAMES}) in the command line; pass a path to a profile file or one of the bundled "
        "names")


def test_resolve_unknown_scale() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_profile("spike", "huge")
    assert str(info.value) == ("'--lagscale-scale': got 'huge', expected one of ci, full in the "
                               "command line; use ci or full")


@pytest.mark.parametrize(("scale", "suffix"), [pytest.param("ci", "-ci", id="ci"),
                                               pytest.param("full", "", id="full")])
def test_manifest_paths_are_bundled_files(scale: str, suffix: str) -> None:
    paths = manifest_paths(scale)
    assert paths == {"deployment": PACKAGE_DATA / "k8s" / f"consumer-deployment{suffix}.yaml",
                     "scaled_object": PACKAGE_DATA / "k8s" / f"scaledobject{suffix}.yaml",
                     "cpu_hpa": PACKAGE_DATA / "k8s" / f"hpa-cpu{suffix}.yaml"}
    assert all(path.is_file() for path in paths.values())


def test_manifest_paths_still_importable_from_manifests() -> None:
    assert manifests.manifest_paths is bundled.manifest_paths
    assert manifests.K8S_DIR == PACKAGE_DATA / "k8s"


@pytest.mark.parametrize("name", [pytest.param("scaledobject-ci", id="stem"),
                                  pytest.param("scaledobject-ci.yaml", id="file-name")])
def test_manifest_path(name: str) -> None:
    assert manifest_path(name) == PACKAGE_DATA / "k8s" / "scaledobject-ci.yaml"


def test_manifest_path_unknown() -> None:
    with pytest.raises(ConfigError) as info:
        manifest_path("scaledobjects")
    assert str(info.value) == (f"manifest 'scaledobjects': not bundled, expected one of "
                               f"{MANIFESTS}; pass one of the bundled names or a path to your own "
                               "manifest")


def test_manifest_names() -> None:
    assert ", ".join(manifest_names()) == MANIFESTS


@pytest.mark.parametrize("value", [pytest.param("scaledobject-ci", id="name"),
                                   pytest.param("scaledobject-ci.yaml", id="file-name")])
def test_resolve_manifest_bundled(value: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_manifest(value, "--policy") == PACKAGE_DATA / "k8s" / "scaledobject-ci.yaml"


def test_resolve_manifest_existing_path_wins(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("scaledobject-ci.yaml").write_text("kind: ScaledObject\n")
    assert resolve_manifest("scaledobject-ci.yaml", "--policy") == Path("scaledobject-ci.yaml")


def test_resolve_manifest_unknown(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        resolve_manifest("k8s/nope.yaml", "phases[1].policy")
    assert str(info.value) == (
        f"'phases[1].policy': got 'k8s/nope.yaml', expected an existing manifest YAML file or a "
        f"bundled manifest name ({MANIFESTS}); pass a path to a manifest file or one of the "
        "bundled names")


@pytest.mark.parametrize("link", [
    pytest.param("k8s/scaledobject.yaml", id="k8s"),
    pytest.param("fixtures/profiles/spike-demo.yaml", id="profiles"),
    pytest.param("fixtures/kafka/pom.xml", id="kafka-pom"),
    pytest.param("fixtures/prometheus/prometheus.yml.template", id="prometheus"),
    pytest.param("fixtures/dimensions/segments.csv", id="dimension"),
])
def test_repository_paths_are_relative_symlinks_into_the_packages(link: str) -> None:
    if not (REPO / ".git").exists():
        pytest.skip("not a source checkout: the repository's symlinks are not there")
    path = REPO / link
    assert path.is_symlink() and not Path(path.readlink()).is_absolute()
    assert path.resolve().is_file()
    assert path.resolve().is_relative_to(REPO / "pytest_lagscale" / "data") or \
        path.resolve().is_relative_to(REPO / "spark_consumer" / "data")


def test_data_path_refuses_a_zipped_package(tmp_path: Path, monkeypatch) -> None:
    archive = tmp_path / "pkg.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pytest_lagscale/data/kafka/pom.xml", "<project/>")
    monkeypatch.setattr(bundled, "files", lambda package: zipfile.Path(archive, f"{package}/"))
    with pytest.raises(LagscaleError) as info:
        data_path("kafka", "pom.xml")
    assert str(info.value) == ("'pytest_lagscale': package data 'kafka/pom.xml' is not a file on "
                               "disk (Path); install pytest-lagscale unzipped (pip install "
                               "pytest-lagscale)")
