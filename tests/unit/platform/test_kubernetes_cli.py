"""``lagscale run --platform kubernetes`` refuses what it cannot run: exit 2, nothing started."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from pytest_lagscale.cli import app


def _run(tmp_path: Path, *args: str, **env: str):
    return CliRunner().invoke(app, ["run", "--platform", "kubernetes", "--scale", "ci",
                                    "--profile", "spike-ci", "--out", str(tmp_path / "runs"),
                                    *args], env=env)


def test_without_the_built_control_plane_it_names_the_bootstrap_command(tmp_path: Path) -> None:
    result = _run(tmp_path, LAGSCALE_CACHE_DIR=str(tmp_path / "empty-cache"))
    assert result.exit_code == 2, result.output
    assert "--platform kubernetes: control-plane binaries not built" in result.output
    assert "scripts/bootstrap --with-kube" in result.output
    assert not (tmp_path / "runs").exists()


def test_a_policy_that_is_not_a_scaled_object_is_refused(tmp_path: Path) -> None:
    result = _run(tmp_path, "--policy", "hpa-cpu-ci")
    assert result.exit_code == 2, result.output
    assert "only KEDA ScaledObjects run on the local control plane" in result.output
    assert not (tmp_path / "runs").exists()


def test_kubeconfig_without_the_kubernetes_platform_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\n")
    result = CliRunner().invoke(app, ["run", "--kubeconfig", str(config), "--profile",
                                      "spike-ci", "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert ("--kubeconfig is only used with --platform kubernetes, not --platform local; add "
            "--platform kubernetes or drop --kubeconfig") in result.output
    assert not (tmp_path / "runs").exists()


def test_a_kubeconfig_that_is_not_a_file_is_refused(tmp_path: Path) -> None:
    result = _run(tmp_path, "--kubeconfig", str(tmp_path / "nope"))
    assert result.exit_code == 2, result.output
    assert f"--kubeconfig: '{tmp_path / 'nope'}' is not a file" in result.output
    assert not (tmp_path / "runs").exists()


def test_a_kubeconfig_cluster_that_does_not_answer_is_refused_before_anything_starts(
        tmp_path: Path) -> None:
    from pytest_lagscale.kafka.embedded import free_port

    port = free_port()  # nothing listens there
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:{port}\n"
        "    insecure-skip-tls-verify: true\n"
        "users:\n- name: u\n  user:\n    token: t\n"
        "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n")
    result = _run(tmp_path, "--kubeconfig", str(config))
    assert result.exit_code == 2, result.output
    assert f"--kubeconfig: the cluster at https://127.0.0.1:{port} does not answer" \
        in result.output
    assert "start it (lagscale kube up)" in result.output
    assert not (tmp_path / "runs").exists()


def test_kube_up_refuses_a_policy_keda_cannot_run_and_an_existing_directory(tmp_path: Path
                                                                            ) -> None:
    result = CliRunner().invoke(app, ["kube", "up", "--dir", str(tmp_path / "k"), "--policy",
                                      "hpa-cpu-ci"])
    assert result.exit_code == 2, result.output
    assert "only KEDA ScaledObjects run on the local control plane" in result.output
    result = CliRunner().invoke(app, ["kube", "up", "--dir", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert f"--dir: '{tmp_path}' exists; give a new directory" in result.output


def test_kube_up_without_the_built_control_plane_names_the_bootstrap_command(tmp_path: Path
                                                                             ) -> None:
    result = CliRunner().invoke(app, ["kube", "up", "--dir", str(tmp_path / "k")],
                                env={"LAGSCALE_CACHE_DIR": str(tmp_path / "empty-cache")})
    assert result.exit_code == 2, result.output
    assert "lagscale kube up: control-plane binaries not built" in result.output
    assert "scripts/bootstrap --with-kube" in result.output
    assert not (tmp_path / "k").exists()


def test_replica_image_without_a_kubeconfig_or_an_external_broker_names_both(
        tmp_path: Path) -> None:
    result = _run(tmp_path, "--replica-image", "registry.example/lagscale-replica:0.1.0")
    assert result.exit_code == 2, result.output
    assert ("--replica-image is for a --kubeconfig cluster with kubelets; add --kubeconfig "
            "PATH") in result.output
    assert ("--replica-image: the cluster's pods need a broker they reach; add --kafka "
            "external --kafka-bootstrap HOST:PORT") in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()


def test_a_replica_image_reference_with_whitespace_is_refused(tmp_path: Path) -> None:
    result = _run(tmp_path, "--replica-image", "a b")
    assert result.exit_code == 2, result.output
    assert "--replica-image: 'a b' is not an image reference" in result.output
