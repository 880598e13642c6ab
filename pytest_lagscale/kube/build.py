"""Build the control-plane and node binaries from their pinned Go modules into the per-user cache.

``scripts/build-kube`` (and ``scripts/bootstrap --with-kube``) run :func:`main`. For each
component of :data:`~pytest_lagscale.kube.pins.COMPONENTS` the wrapper go.mod is copied to
``<cache>/kube/src/<component>-<key>/`` and each binary is built there with
``go build -mod=mod -trimpath -p=2 -ldflags ...`` into
``<cache>/kube/<component>-<version>-<key>/bin/``; ``built.json`` beside ``bin/`` marks a
complete build. The key (:func:`~pytest_lagscale.kube.pins.cache_key`) covers the pin, the Go
toolchain, the platform and the ldflags, so a present build is reused at once and a changed pin
builds again. Each binary's build time is printed. After the Kubernetes and KEDA builds the
pins are checked against the upstream go.mod files the build downloaded, and KEDA's CRDs
(``config/crd/bases/*.yaml`` of the KEDA module) are copied to ``<install>/crds/``.

Build times are printed and kept in ``built.json``; measured figures are in docs/kubernetes.md.

Source: docs/kubernetes.md "Pins and build" (the recipe); kubernetes/kubernetes hack/lib/version.sh (the ldflags variables);
kedacore/keda Makefile ``GO_LDFLAGS`` and ``GO_BUILD_VARS`` (CGO_ENABLED=0).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..contract.paths import cache_dir
from ..contract.errors import ConfigError, LagscaleError
from . import pins

BOOTSTRAP_COMMAND = "scripts/bootstrap --with-kube"
GO_BUILD_PARALLELISM = 2
MARKER = "built.json"


@dataclass(frozen=True)
class Binary:
    """One binary of a component.

    Attributes:
        name: file name under ``bin/`` (``kube-apiserver``).
        component: its wrapper module (``kubernetes``).
        package: the Go package of its ``main`` (``k8s.io/kubernetes/cmd/kube-apiserver``).
    """

    name: str
    component: str
    package: str


BINARIES: tuple[Binary, ...] = (
    Binary("etcd", "etcd", "go.etcd.io/etcd/server/v3"),
    Binary("kube-apiserver", "kubernetes", "k8s.io/kubernetes/cmd/kube-apiserver"),
    Binary("kube-controller-manager", "kubernetes", "k8s.io/kubernetes/cmd/kube-controller-manager"),
    Binary("keda-operator", "keda", "github.com/kedacore/keda/v2/cmd/operator"),
    Binary("keda-adapter", "keda", "github.com/kedacore/keda/v2/cmd/adapter"),
    Binary("kubelet", "kubernetes-node", "k8s.io/kubernetes/cmd/kubelet"),
    Binary("kube-scheduler", "kubernetes-node", "k8s.io/kubernetes/cmd/kube-scheduler"),
)


def ldflags(component: str, version: str) -> str:
    """The ``-ldflags`` value stamping ``version`` into ``component``'s binaries.

    Kubernetes binaries carry their version in ``k8s.io/component-base/version`` (read by
    ``--version``, the apiserver's ``/version`` and the emulation/compatibility version) and
    client-go's copy in ``k8s.io/client-go/pkg/version``; unstamped they report
    ``v0.0.0-master+$Format:%H$``, which the compatibility-version checks reject.

    Raises:
        ConfigError: a Kubernetes version not of the form ``v1.<minor>.<patch>``, or an
            unknown component.

    Example:
        >>> ldflags("etcd", "v3.6.16")
        '-X go.etcd.io/etcd/api/v3/version.GitSHA=v3.6.16'
    """
    if pins.PIN_OF.get(component, component) == "kubernetes":
        parts = version.lstrip("v").split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise ConfigError(f"k8s.io/kubernetes version {version!r}: not v<major>.<minor>.<patch>; "
                              "fix the require line of data/kube/kubernetes/go.mod")
        flags = []
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={parts[0]}",
                      f"-X {pkg}.gitMinor={parts[1]}", f"-X {pkg}.gitTreeState=clean"]
        return " ".join(flags)
    if component == "keda":
        return (f"-X github.com/kedacore/keda/v2/version.Version={version.lstrip('v')} "
                f"-X github.com/kedacore/keda/v2/version.GitCommit={version}")
    if component == "etcd":
        return f"-X go.etcd.io/etcd/api/v3/version.GitSHA={version}"
    raise ConfigError(f"component {component!r}: not one of {', '.join(pins.COMPONENTS)}")


def go_build_argv(binary: Binary, bin_dir: Path, flags: str, go: str = "go",
                  parallelism: int = GO_BUILD_PARALLELISM) -> list[str]:
    """The ``go build`` command line of one binary (run in the component's source directory).

    Example:
        >>> go_build_argv(BINARIES[0], Path("/c/bin"), "-X a.b=c")  # doctest: +NORMALIZE_WHITESPACE
        ['go', 'build', '-mod=mod', '-trimpath', '-p=2', '-ldflags', '-X a.b=c',
         '-o', '/c/bin/etcd', 'go.etcd.io/etcd/server/v3']
    """
    return [go, "build", "-mod=mod", "-trimpath", f"-p={parallelism}", "-ldflags", flags,
            "-o", str(bin_dir / binary.name), binary.package]


def build_env(base: Mapping[str, str]) -> dict[str, str]:
    """The environment of every ``go`` call: ``base`` with CGO off and no inherited GOFLAGS.

    ``GOTOOLCHAIN`` defaults to ``local`` (the machine's Go, never a download); set it (e.g.
    ``GOTOOLCHAIN=go1.27.3``) when a pinned module's go directive needs a newer Go.
    """
    env = dict(base)
    env["CGO_ENABLED"] = "0"
    env["GOFLAGS"] = ""
    env.setdefault("GOTOOLCHAIN", "local")
    return env


@dataclass(frozen=True)
class Plan:
    """Where one component is built and installed.

    Attributes:
        component, version: as in the pin (``"kubernetes"``, ``"v1.36.3"``).
        key: :func:`~pytest_lagscale.kube.pins.cache_key`.
        ldflags: the stamp of :func:`ldflags`.
        src_dir: ``<cache>/kube/src/<component>-<key>`` (the wrapper go.mod + go.sum).
        install_dir: ``<cache>/kube/<component>-<version>-<key>`` (``bin/``, ``crds/``, marker).
    """

    component: str
    version: str
    key: str
    ldflags: str
    src_dir: Path
    install_dir: Path

    @property
    def bin_dir(self) -> Path:
        return self.install_dir / "bin"

    @property
    def binaries(self) -> tuple[Binary, ...]:
        return tuple(b for b in BINARIES if b.component == self.component)


def kube_cache_dir() -> Path:
    """``<per-user cache>/kube`` (see :func:`pytest_lagscale.contract.paths.cache_dir`)."""
    return cache_dir() / "kube"


def plan(component: str, go_version: str, goos_goarch: str, root: Path | None = None,
         cache: Path | None = None) -> Plan:
    """The :class:`Plan` of ``component`` for this toolchain and platform (no I/O but reads)."""
    version = pins.pinned_version(component, root)
    flags = ldflags(component, version)
    key = pins.cache_key(component, go_version, goos_goarch, flags, root)
    cache = cache or kube_cache_dir()
    return Plan(component, version, key, flags, cache / "src" / f"{component}-{key}",
                cache / f"{component}-{version}-{key}")


def is_built(p: Plan) -> bool:
    """Whether ``p``'s marker and every binary are present."""
    return (p.install_dir / MARKER).exists() and all((p.bin_dir / b.name).exists()
                                                     for b in p.binaries)


def find_installed(component: str, root: Path | None = None,
                   cache: Path | None = None) -> Path | None:
    """The install directory of a complete build of the *current* pin, without calling ``go``.

    The harness uses this at run time: it scans ``<cache>/kube/<component>-<version>-*`` for a
    marker whose ``pin_sha256`` equals the pin's, newest first.

    Returns:
        The directory (holding ``bin/``), or ``None`` when no build matches.
    """
    version = pins.pinned_version(component, root)
    digest = hashlib.sha256(pins.pin_path(component, root).read_bytes()).hexdigest()
    cache = cache or kube_cache_dir()
    found = sorted(cache.glob(f"{component}-{version}-*/{MARKER}"),
                   key=lambda m: m.stat().st_mtime, reverse=True)
    for marker in found:
        try:
            if json.loads(marker.read_text()).get("pin_sha256") == digest:
                return marker.parent
        except (OSError, ValueError):
            continue
    return None


def missing_reason(root: Path | None = None, cache: Path | None = None, *,
                   components: Sequence[str] = pins.CONTROL_PLANE) -> str | None:
    """Why the local control plane (or, with ``components=pins.NODE``, the kubelet node)
    cannot start, or ``None`` when every binary is built.

    The message names the components and the command that builds them (for pytest skips).
    """
    missing = [f"{c} {pins.pinned_version(c, root)}" for c in components
               if find_installed(c, root, cache) is None]
    if not missing:
        return None
    what = "node" if tuple(components) == pins.NODE else "control-plane"
    return (f"{what} binaries not built ({', '.join(missing)}); run "
            f"{BOOTSTRAP_COMMAND} (cold build ~14 min on 2 cores, then cached)")


# --- running the build (not exercised by unit tests: it compiles for minutes) -------------------

def _go_env(go: str, env: Mapping[str, str]) -> dict[str, str]:
    out = subprocess.run([go, "env", "-json", "GOVERSION", "GOOS", "GOARCH", "GOMODCACHE"],
                         capture_output=True, text=True, env=dict(env), check=True)
    return json.loads(out.stdout)


def _build_component(p: Plan, go: str, env: Mapping[str, str], gomodcache: Path,
                     out=sys.stderr) -> None:
    p.src_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pins.pin_path(p.component), p.src_dir / "go.mod")
    staging = p.install_dir.with_name(p.install_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "bin").mkdir(parents=True)
    timings = {}
    for b in p.binaries:
        t0 = time.monotonic()
        argv = go_build_argv(b, staging / "bin", p.ldflags, go)
        done = subprocess.run(argv, cwd=p.src_dir, env=dict(env), capture_output=True, text=True)
        timings[b.name] = round(time.monotonic() - t0, 1)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
            raise LagscaleError(f"{b.name}: go build failed with exit code {done.returncode} "
                                f"after {timings[b.name]} s; see the output below and fix the pin "
                                f"data/kube/{p.component}/go.mod\n{tail}")
        print(f"build-kube: {b.name} {p.version} built in {timings[b.name]:.1f} s", file=out)
    _check_upstream(p, gomodcache, go)
    if p.component == "keda":
        from .manifests import keda_module_crd_dir
        shutil.copytree(keda_module_crd_dir(gomodcache, p.version), staging / "crds")
    pin_sha = hashlib.sha256(pins.pin_path(p.component).read_bytes()).hexdigest()
    (staging / MARKER).write_text(json.dumps({"component": p.component, "version": p.version,
                                              "key": p.key, "pin_sha256": pin_sha,
                                              "build_seconds": timings}, indent=1) + "\n")
    shutil.rmtree(p.install_dir, ignore_errors=True)
    staging.rename(p.install_dir)


def _check_upstream(p: Plan, gomodcache: Path, go: str = "go") -> None:
    module = pins.VERSION_MODULE[p.component]
    mod_file = gomodcache / "cache" / "download" / _escape(module) / "@v" / f"{p.version}.mod"
    if not mod_file.exists():
        return
    upstream = pins.read_gomod(mod_file, go)
    pin = pins.read_pin(p.component, go=go)
    if pins.PIN_OF.get(p.component, p.component) == "kubernetes":
        problems = pins.check_kubernetes_replaces(pin, upstream)
    else:
        problems = pins.check_carried_replaces(pin, upstream)
    if problems:
        raise ConfigError([f"data/kube/{p.component}/go.mod: {x}" for x in problems])


def _escape(module: str) -> str:
    """The module cache's case escaping (go.dev/ref/mod "Module cache": ``!`` + lower case)."""
    return "".join(f"!{c.lower()}" if c.isupper() else c for c in module)


def build(components: Sequence[str], *, force: bool = False, go: str = "go",
          out=sys.stderr) -> dict[str, Path]:
    """Build (or reuse) ``components``; returns component -> install directory.

    Raises:
        LagscaleError: ``go`` is missing or a build failed (last 20 lines of its output).
        ConfigError: a pin disagrees with the upstream go.mod it wraps.
    """
    if shutil.which(go) is None:
        raise LagscaleError(f"go: {go!r} not found on PATH; install Go >= 1.26 to build the "
                            "control plane")
    env = build_env(os.environ)
    facts = _go_env(go, env)
    platform = f"{facts['GOOS']}/{facts['GOARCH']}"
    done: dict[str, Path] = {}
    for component in components:
        p = plan(component, facts["GOVERSION"], platform)
        p.install_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(p.install_dir.parent / f".{component}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if is_built(p) and not force:
                print(f"build-kube: {component} {p.version} present in {p.install_dir}", file=out)
            else:
                print(f"build-kube: building {component} {p.version} with {facts['GOVERSION']} "
                      f"into {p.install_dir}", file=out)
                _build_component(p, go, env, Path(facts["GOMODCACHE"]), out)
        done[component] = p.install_dir
    return done


def main(argv: Sequence[str] | None = None) -> int:
    """``scripts/build-kube [--only COMPONENT ...] [--force]``; exit 0, or 1 with the error."""
    parser = argparse.ArgumentParser(prog="build-kube", description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", choices=list(pins.COMPONENTS),
                        help="Build only this component (repeatable). Default: all")
    parser.add_argument("--force", action="store_true", help="Rebuild even when cached")
    parser.add_argument("--go", default="go", help="The go executable. Default: go")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    try:
        dirs = build(args.only or list(pins.COMPONENTS), force=args.force, go=args.go)
    except LagscaleError as exc:
        print(f"build-kube: {exc}", file=sys.stderr)
        return 1
    for component, path in dirs.items():
        print(f"build-kube: {component}: {path}", file=sys.stderr)
    print(f"build-kube: done in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
