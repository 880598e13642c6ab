"""The control plane's pins (data/kube/*/go.mod) and the pure parts of scripts/build-kube."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_lagscale.contract.errors import ConfigError, LagscaleError
from pytest_lagscale.kube import build, pins

#: The pins' replaces and the go.mod checks are read by the go command (`go mod edit -json`);
#: the versions (pinned_versions, find_installed, missing_reason) are read without it.
needs_go = pytest.mark.skipif(shutil.which("go") is None,
                              reason="go not on PATH: go.mod files are read with `go mod edit "
                                     "-json` (install Go >= 1.26, as scripts/bootstrap "
                                     "--with-kube needs)")

# k8s.io/kubernetes v1.36.3 requires these at v0.0.0 (its staging modules), as its go.mod read by
# the first build says: 31. The recipe's first draft counted 33: staging/ also holds sample-cli-plugin and
# sample-controller, which k8s.io/kubernetes does not require (the build's pin check refused
# their replace lines).
STAGING_V1_36 = (
    "api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider "
    "cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api "
    "cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice "
    "externaljwt kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl "
    "kubelet metrics mount-utils pod-security-admission sample-apiserver streaming").split()


def _upstream_kubernetes(staging=STAGING_V1_36) -> pins.GoMod:
    lines = ["module k8s.io/kubernetes", "", "go 1.26.0", "", "require ("]
    lines += ["\tgithub.com/spf13/cobra v1.10.0"] + [f"\tk8s.io/{m} v0.0.0" for m in staging]
    lines += ["\tk8s.io/klog/v2 v2.140.0", ")"]
    return pins.parse_gomod("\n".join(lines))


def test_the_three_pins_name_the_issue_versions():
    assert pins.pinned_versions() == {"etcd": "v3.6.16", "kubernetes": "v1.36.3",
                                      "keda": "v2.21.0"}


@needs_go
def test_kubernetes_pin_replaces_exactly_the_31_staging_modules_at_v0_36_3():
    pin = pins.read_pin("kubernetes")
    assert len(STAGING_V1_36) == 31
    assert pins.check_kubernetes_replaces(pin, _upstream_kubernetes()) == []
    assert {r.new_version for r in pin.replaces} == {"v0.36.3"}


@needs_go
def test_kubernetes_check_names_missing_extra_and_wrong_version():
    pin = pins.parse_gomod("module w\nrequire k8s.io/kubernetes v1.36.3\nreplace (\n"
                           "\tk8s.io/api => k8s.io/api v0.36.2\n"
                           "\tk8s.io/legacy-cloud-providers => k8s.io/legacy-cloud-providers v0.30.14\n)\n")
    problems = pins.check_kubernetes_replaces(pin, _upstream_kubernetes(("api", "client-go")))
    assert problems == [
        "k8s.io/client-go: staging module of k8s.io/kubernetes v1.36.3 has no replace; add "
        "'k8s.io/client-go => k8s.io/client-go v0.36.3'",
        "k8s.io/legacy-cloud-providers: replaced but not a staging module of k8s.io/kubernetes "
        "v1.36.3; remove the line",
        "k8s.io/api: replaced by k8s.io/api v0.36.2, want k8s.io/api v0.36.3",
    ]


@needs_go
def test_keda_pin_carries_kedas_own_replace_line():
    # keda's go.mod (main of 2026-08-20, the newest read before v2.21.0) carries one replace;
    # its directory and forbidden-path replaces (none in keda) would be skipped.
    upstream = pins.parse_gomod(
        "module github.com/kedacore/keda/v2\n\ngo 1.26.0\n\n// Needed replaces\n"
        "replace github.com/nexus-rpc/nexus-proto-annotations v0.1.0 => "
        "github.com/nexus-rpc/nexus-proto-annotations v0.1.1-0.20260629224316-835bd8d49cb4\n"
        "replace example.com/local => ../local\n")
    assert pins.check_carried_replaces(pins.read_pin("keda"), upstream) == []
    assert pins.check_carried_replaces(pins.read_pin("etcd"), upstream) == [
        "github.com/nexus-rpc/nexus-proto-annotations v0.1.0: github.com/kedacore/keda/v2 "
        "replaces it by github.com/nexus-rpc/nexus-proto-annotations "
        "v0.1.1-0.20260629224316-835bd8d49cb4; copy that replace line into the pin"]


@needs_go
def test_parse_gomod_blocks_comments_and_errors():
    # the go command's grammar: versions are canonical semver (v1.0.0, not v1), and its own
    # error lines name the file and line
    mod = pins.parse_gomod('// c\nmodule "x/y"\ngo 1.26.0\nrequire (\n\ta v1.0.0 // indirect\n'
                           "\tb v0.2.0\n)\nreplace c => ../c\n")
    assert (mod.module, mod.go, mod.requires) == ("x/y", "1.26.0", {"a": "v1.0.0", "b": "v0.2.0"})
    assert mod.replaces == (pins.Replace("c", None, "../c", None),)
    with pytest.raises(ConfigError) as err:
        pins.parse_gomod("require a\nreplace a b\nbogus\n", "w/go.mod")
    assert str(err.value).splitlines() == [
        "w/go.mod:1: usage: require module/path v1.2.3",
        "w/go.mod:2: usage: replace module/path [v1.2.3] => other/module v1.4 "
        "or replace module/path [v1.2.3] => ../local/directory",
        "w/go.mod:3: unknown directive: bogus"]
    with pytest.raises(ConfigError, match="^w/go.mod: no module line$"):
        pins.parse_gomod("require a v1.0.0\n", "w/go.mod")


def test_pinned_version_reads_the_require_line_without_go(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-go-here"))
    (tmp_path / "keda").mkdir()
    pin = tmp_path / "keda" / "go.mod"
    pin.write_text("module w\n\nrequire (\n\tgithub.com/kedacore/keda/v2 v2.21.0 // the pin\n)\n"
                   "replace github.com/kedacore/keda/v2 v2.0.0 => example.com/keda v2.0.1\n")
    assert pins.pinned_version("keda", tmp_path) == "v2.21.0"
    pin.write_text("module w\nrequire github.com/kedacore/keda/v2 v2.20.0\n")
    assert pins.pinned_version("keda", tmp_path) == "v2.20.0"
    pin.write_text("module w\nreplace github.com/kedacore/keda/v2 v2.0.0 => example.com/k v2.0.1\n")
    with pytest.raises(ConfigError, match="no 'require github.com/kedacore/keda/v2 <version>' line"):
        pins.pinned_version("keda", tmp_path)
    with pytest.raises(LagscaleError, match="go: 'go' not found on PATH; .* install Go >= 1.26"):
        pins.read_pin("keda", tmp_path)


def test_unknown_component_is_a_config_error():
    with pytest.raises(ConfigError, match="component 'kubelet': not one of etcd, kubernetes, keda"):
        pins.pin_path("kubelet")


def test_kubernetes_ldflags_stamp_component_base_and_client_go():
    flags = build.ldflags("kubernetes", "v1.36.3").split(" -X ")
    assert "-X k8s.io/component-base/version.gitVersion=v1.36.3" in flags[0:1]
    assert {"k8s.io/component-base/version.gitMajor=1", "k8s.io/component-base/version.gitMinor=36",
            "k8s.io/client-go/pkg/version.gitVersion=v1.36.3",
            "k8s.io/client-go/pkg/version.gitMinor=36"} <= set(flags)
    with pytest.raises(ConfigError, match="'v1.36': not v<major>.<minor>.<patch>"):
        build.ldflags("kubernetes", "v1.36")


def test_go_build_argv_is_the_issue_recipe():
    argv = build.go_build_argv(build.BINARIES[1], Path("/c/bin"), "-X a=b")
    assert argv == ["go", "build", "-mod=mod", "-trimpath", "-p=2", "-ldflags", "-X a=b",
                    "-o", "/c/bin/kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"]


def test_build_env_turns_cgo_off_and_keeps_a_chosen_toolchain():
    assert build.build_env({"GOFLAGS": "-mod=vendor", "PATH": "/p"}) == {
        "GOFLAGS": "", "PATH": "/p", "CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}
    assert build.build_env({"GOTOOLCHAIN": "go1.27.3"})["GOTOOLCHAIN"] == "go1.27.3"


def test_plan_key_changes_with_the_pin_and_the_toolchain(tmp_path):
    root = tmp_path / "kube"
    (root / "etcd").mkdir(parents=True)
    (root / "etcd" / "go.mod").write_text("module w\nrequire go.etcd.io/etcd/server/v3 v3.6.16\n")
    a = build.plan("etcd", "go1.26.8", "linux/amd64", root, tmp_path / "cache")
    assert a.install_dir == tmp_path / "cache" / f"etcd-v3.6.16-{a.key}"
    assert a.src_dir == tmp_path / "cache" / "src" / f"etcd-{a.key}"
    assert [b.name for b in a.binaries] == ["etcd"]
    assert build.plan("etcd", "go1.27.3", "linux/amd64", root, tmp_path / "cache").key != a.key
    (root / "etcd" / "go.mod").write_text("module w\nrequire go.etcd.io/etcd/server/v3 v3.6.17\n")
    assert build.plan("etcd", "go1.26.8", "linux/amd64", root, tmp_path / "cache").key != a.key


def test_find_installed_matches_the_current_pin_only(tmp_path):
    import hashlib
    root, cache = tmp_path / "kube", tmp_path / "cache"
    (root / "etcd").mkdir(parents=True)
    pin = root / "etcd" / "go.mod"
    pin.write_text("module w\nrequire go.etcd.io/etcd/server/v3 v3.6.16\n")
    assert build.find_installed("etcd", root, cache) is None
    install = cache / "etcd-v3.6.16-abc"
    (install / "bin").mkdir(parents=True)
    (install / "built.json").write_text(json.dumps(
        {"pin_sha256": hashlib.sha256(pin.read_bytes()).hexdigest()}))
    assert build.find_installed("etcd", root, cache) == install
    pin.write_text(pin.read_text() + "// changed\n")
    assert build.find_installed("etcd", root, cache) is None


def test_missing_reason_names_the_bootstrap_command(tmp_path):
    reason = build.missing_reason(cache=tmp_path)
    assert reason == ("control-plane binaries not built (etcd v3.6.16, kubernetes v1.36.3, "
                      "keda v2.21.0); run scripts/bootstrap --with-kube (cold build ~14 min on "
                      "2 cores, then cached)")


def test_module_cache_escaping():
    assert build._escape("github.com/kedacore/keda/v2") == "github.com/kedacore/keda/v2"
    assert build._escape("github.com/Azure/go") == "github.com/!azure/go"
