"""The pinned control-plane binaries: the wrapper go.mod files and what they say.

The pins are the three wrapper modules under ``pytest_lagscale/data/kube/`` (in a checkout also
``fixtures/kube/``, a symlink), committed like the Kafka pom: ``kubernetes/go.mod``
(kube-apiserver, kube-controller-manager), ``keda/go.mod`` (operator, metrics adapter) and
``etcd/go.mod``. A go.mod rather than a separate versions file because the go command needs
the file anyway (the 31 staging replaces of Kubernetes, KEDA's replace line); a second file
would have to be kept equal to it. This module reads them: versions for the benchmark JSON,
the cache key of a build, and the two consistency checks run after a build against the
upstream go.mod files in the Go module cache.

The go command reads them (:func:`read_gomod`: ``go mod edit -json``), so the whole go.mod
grammar is understood as Go understands it; the checks and :func:`read_pin` need Go on PATH (a
build has it). What a run needs without Go (a machine with the binaries built, or none: the
skip reason of :func:`~.build.missing_reason`) is only each pin's version, the one
``require`` line of :data:`VERSION_MODULE`, which :func:`pinned_version` reads itself.

Source: go.dev/ref/mod "go.mod files" (directive syntax; replace directives apply only in the
main module); docs/kubernetes.md "Pins and build" (the measured build recipe).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..contract.errors import ConfigError, LagscaleError

#: component -> the binaries its wrapper module builds, in build order.
COMPONENTS: dict[str, tuple[str, ...]] = {
    "etcd": ("etcd",),
    "kubernetes": ("kube-apiserver", "kube-controller-manager"),
    "keda": ("keda-operator", "keda-adapter"),
    "kubernetes-node": ("kubelet", "kube-scheduler"),
}
#: The components of the local control plane (a run on ``--platform kubernetes`` needs them).
CONTROL_PLANE: tuple[str, ...] = ("etcd", "kubernetes", "keda")
#: The components of the kubelet node (``--node kubelet``): built from the Kubernetes pin.
NODE: tuple[str, ...] = ("kubernetes-node",)
#: A component built from another component's wrapper module (same pin, same version).
PIN_OF: dict[str, str] = {"kubernetes-node": "kubernetes"}
#: component -> the module path whose version is the component's version.
VERSION_MODULE: dict[str, str] = {
    "etcd": "go.etcd.io/etcd/server/v3",
    "kubernetes": "k8s.io/kubernetes",
    "keda": "github.com/kedacore/keda/v2",
    "kubernetes-node": "k8s.io/kubernetes",
}


@dataclass(frozen=True)
class Replace:
    """One replace directive: ``old [old_version] => new [new_version]``.

    ``old_version`` is ``None`` when the directive replaces every version; ``new_version`` is
    ``None`` for a directory replacement (``=> ../api``).
    """

    old: str
    old_version: str | None
    new: str
    new_version: str | None


@dataclass(frozen=True)
class GoMod:
    """What a go.mod says, as far as the pins need it.

    Attributes:
        module: the module path.
        go: the ``go`` directive (``"1.26.0"``) or ``None``.
        requires: module path -> version, every ``require`` line (indirect ones included).
        replaces: the replace directives in file order.
    """

    module: str
    go: str | None
    requires: dict[str, str]
    replaces: tuple[Replace, ...]


#: Seconds ``go mod edit -json`` may take (it reads one file; no network, no build).
GO_MOD_EDIT_TIMEOUT_S = 30.0


def read_gomod(path: str | Path, go: str = "go") -> GoMod:
    """What the go command reads in the go.mod at ``path`` (``go mod edit -json <path>``).

    Args:
        path: a go.mod file (a pin, or an upstream ``<version>.mod`` of the module cache).
        go: the go command (a name on PATH or a path).

    Returns:
        The file's :class:`GoMod`: ``Module.Path``, ``Go``, every ``Require`` (indirect ones
        included) and the ``Replace`` directives in file order.

    Raises:
        LagscaleError: ``go`` is not on PATH (the message names what to install).
        ConfigError: the go command refuses the file (its lines: ``<path>:<line>: ...``), or
            the file has no ``module`` line.
    """
    exe = shutil.which(go)
    if exe is None:
        raise LagscaleError(f"go: {go!r} not found on PATH; reading {str(path)!r} runs "
                            "`go mod edit -json`: install Go >= 1.26 (what scripts/bootstrap "
                            "--with-kube needs) or put it on PATH")
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": ""}  # this Go; no download
    done = subprocess.run([exe, "mod", "edit", "-json", str(path)], capture_output=True,
                          text=True, env=env, timeout=GO_MOD_EDIT_TIMEOUT_S)
    if done.returncode != 0:
        raise ConfigError(_go_problems(done.stderr) or [
            f"{path}: go mod edit -json exited with code {done.returncode}"])
    doc = json.loads(done.stdout)
    module = (doc.get("Module") or {}).get("Path") or None
    if module is None:
        raise ConfigError(f"{path}: no module line")
    requires = {r["Path"]: r["Version"] for r in doc.get("Require") or ()}
    replaces = tuple(Replace(r["Old"]["Path"], r["Old"].get("Version"),
                             r["New"]["Path"], r["New"].get("Version"))
                     for r in doc.get("Replace") or ())
    return GoMod(module, doc.get("Go"), requires, replaces)


def parse_gomod(text: str, source: str = "go.mod", go: str = "go") -> GoMod:
    """:func:`read_gomod` of a go.mod text (written to a temporary ``go.mod`` first).

    Args:
        text: the file's content.
        source: the file's name in error messages (in place of the temporary path).
        go: the go command.

    Raises:
        LagscaleError: ``go`` is not on PATH.
        ConfigError: as :func:`read_gomod`, naming ``source``.
    """
    with tempfile.TemporaryDirectory(prefix="lagscale-gomod-") as tmp:
        path = Path(tmp) / "go.mod"
        path.write_text(text)
        try:
            return read_gomod(path, go)
        except ConfigError as exc:
            raise ConfigError([line.replace(str(path), source) for line in exc.problems]) from None


def _go_problems(stderr: str) -> list[str]:
    """The go command's error lines, one per problem (an indented continuation joined to its
    line; the ``go: errors parsing <file>:`` heading dropped)."""
    problems: list[str] = []
    for line in stderr.splitlines():
        if not line.strip() or (line.startswith("go: errors parsing ") and line.endswith(":")):
            continue
        if line[:1].isspace() and problems:
            problems[-1] += " " + line.strip()
        else:
            problems.append(line.strip())
    return problems


def pins_dir() -> Path:
    """Directory holding ``<component>/go.mod`` (``$LAGSCALE_FIXTURES/kube`` when set)."""
    from ..kafka.artifacts import fixtures_dir
    return fixtures_dir() / "kube"


def pin_path(component: str, root: Path | None = None) -> Path:
    """The wrapper go.mod of ``component`` (one of :data:`COMPONENTS`).

    Raises:
        ConfigError: unknown component.
    """
    if component not in COMPONENTS:
        raise ConfigError(f"component {component!r}: not one of {', '.join(COMPONENTS)}; "
                          "pick a component of pytest_lagscale/data/kube")
    return (root or pins_dir()) / PIN_OF.get(component, component) / "go.mod"


def read_pin(component: str, root: Path | None = None, go: str = "go") -> GoMod:
    """The wrapper go.mod of ``component`` as the go command reads it (:func:`read_gomod`).

    Raises:
        ConfigError: unknown component, unreadable file, a file the go command refuses, or a
            pin without the require line of :data:`VERSION_MODULE`.
        LagscaleError: ``go`` is not on PATH.
    """
    path, _ = _pin_text(component, root)
    mod = read_gomod(path, go)
    if VERSION_MODULE[component] not in mod.requires:
        raise ConfigError(_no_require(path, component))
    return mod


def pinned_version(component: str, root: Path | None = None) -> str:
    """The pinned version of ``component`` as its go.mod requires it (``"v1.36.3"``).

    Read without the go command (a run, and the skip reason of a machine without the control
    plane, need it where Go is not installed): the version of the ``require`` directive of
    :data:`VERSION_MODULE`, on one line or in a ``require ( ... )`` block.

    Raises:
        ConfigError: unknown component, unreadable file, or no such require line.
    """
    path, text = _pin_text(component, root)
    module, block = VERSION_MODULE[component], False
    for raw in text.splitlines():
        words = raw.split("//", 1)[0].split()
        if block:
            block = words != [")"]
        elif words[:2] == ["require", "("]:
            block = True
            continue
        elif words[:1] == ["require"]:
            words = words[1:]
        else:
            continue
        if len(words) == 2 and words[0] == module:
            return words[1]
    raise ConfigError(_no_require(path, component))


def _pin_text(component: str, root: Path | None) -> tuple[Path, str]:
    path = pin_path(component, root)
    try:
        return path, path.read_text()
    except OSError as exc:
        raise ConfigError(f"{str(path)!r}: cannot read the {component} pin: {exc}; reinstall "
                          "pytest-lagscale or unset LAGSCALE_FIXTURES") from exc


def _no_require(path: Path, component: str) -> str:
    return f"{str(path)!r}: no 'require {VERSION_MODULE[component]} <version>' line; add it"


def pinned_versions(root: Path | None = None) -> dict[str, str]:
    """The control plane's pinned versions, for the benchmark JSON's ``inputs.versions`` (the
    node's kubelet is the ``kubernetes`` version).

    Example: ``{"etcd": "v3.6.16", "kubernetes": "v1.36.3", "keda": "v2.21.0"}``.
    """
    return {c: pinned_version(c, root) for c in CONTROL_PLANE}


def cache_key(component: str, go_version: str, goos_goarch: str, ldflags: str,
              root: Path | None = None) -> str:
    """The first 16 hex digits of a SHA-256 over what decides the built binaries.

    Args:
        component: one of :data:`COMPONENTS`.
        go_version: ``go env GOVERSION`` (``"go1.26.8"``).
        goos_goarch: ``"linux/amd64"``.
        ldflags: the ``-ldflags`` value of the build.

    A changed pin, toolchain, platform or ldflags gives another key, hence another cache
    directory and a rebuild; an unchanged one reuses the binaries.
    """
    h = hashlib.sha256()
    for part in (pin_path(component, root).read_bytes(), go_version.encode(),
                 goos_goarch.encode(), ldflags.encode()):
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def staging_modules(upstream: GoMod) -> set[str]:
    """The staging modules of a k8s.io/kubernetes go.mod: its requires at ``v0.0.0``.

    Example: ``{"k8s.io/api", "k8s.io/client-go", ...}`` (31 at v1.36.3).
    """
    return {path for path, version in upstream.requires.items() if version == "v0.0.0"}


def check_kubernetes_replaces(pin: GoMod, upstream: GoMod) -> list[str]:
    """Differences between the pin's replaces and the staging modules of ``upstream``.

    Args:
        pin: the wrapper (``kubernetes/go.mod``).
        upstream: k8s.io/kubernetes's own go.mod at the pinned version (from the module
            cache: ``$GOMODCACHE/cache/download/k8s.io/kubernetes/@v/<version>.mod``).

    Returns:
        One line per problem (empty when the pin is right): a staging module without a
        replace, a replace of a module that is not staging, or a replace to a version other
        than ``v0.<minor>.<patch>`` of the pinned ``v1.<minor>.<patch>``.
    """
    version = pin.requires.get("k8s.io/kubernetes", "")
    want_version = "v0." + version[len("v1."):] if version.startswith("v1.") else None
    staging = staging_modules(upstream)
    replaced = {r.old: r for r in pin.replaces if r.old.startswith("k8s.io/")}
    problems = [f"{m}: staging module of k8s.io/kubernetes {version} has no replace; add "
                f"'{m} => {m} {want_version}'" for m in sorted(staging - set(replaced))]
    problems += [f"{m}: replaced but not a staging module of k8s.io/kubernetes {version}; "
                 "remove the line" for m in sorted(set(replaced) - staging)]
    problems += [f"{m}: replaced by {r.new} {r.new_version}, want {m} {want_version}"
                 for m, r in sorted(replaced.items())
                 if m in staging and (r.new != m or r.new_version != want_version)]
    return problems


def check_carried_replaces(pin: GoMod, upstream: GoMod) -> list[str]:
    """Replace directives of ``upstream`` (a dependency's go.mod) missing from ``pin``.

    The go command ignores a dependency's replaces, so the wrapper must carry them itself.
    Directory replacements (``=> ../api``) and ones pointing at a forbidden path are skipped:
    they only matter inside the upstream repository.

    Returns:
        One line per replace of ``upstream`` that ``pin`` lacks or has with another target.
    """
    have = {(r.old, r.old_version): r for r in pin.replaces}
    problems = []
    for r in upstream.replaces:
        if r.new_version is None:
            continue
        mine = have.get((r.old, r.old_version))
        if mine is None or (mine.new, mine.new_version) != (r.new, r.new_version):
            old = f"{r.old} {r.old_version}" if r.old_version else r.old
            problems.append(f"{old}: {upstream.module} replaces it by {r.new} {r.new_version}; "
                            "copy that replace line into the pin")
    return problems
