"""The pinned control-plane binaries: the wrapper go.mod files and what they say.

The pins are the three wrapper modules under ``pytest_lagscale/data/kube/`` (in a checkout also
``fixtures/kube/``, a symlink), committed like the Kafka pom: ``kubernetes/go.mod``
(kube-apiserver, kube-controller-manager), ``keda/go.mod`` (operator, metrics adapter) and
``etcd/go.mod``. A go.mod rather than a separate versions file because the go command needs
the file anyway (the 31 staging replaces of Kubernetes, KEDA's replace line); a second file
would have to be kept equal to it. This module reads them: versions for the benchmark JSON,
the cache key of a build, and the two consistency checks run after a build against the
upstream go.mod files in the Go module cache.

Only the subset of the go.mod grammar the pins use is read: ``module``, ``go``, ``require``
and ``replace`` lines, single or in a parenthesised block, ``//`` comments.

Source: go.dev/ref/mod "go.mod files" (directive syntax; replace directives apply only in the
main module); docs/kubernetes.md "Pins and build" (the measured build recipe).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..contract.errors import ConfigError

#: component -> the binaries its wrapper module builds, in build order.
COMPONENTS: dict[str, tuple[str, ...]] = {
    "etcd": ("etcd",),
    "kubernetes": ("kube-apiserver", "kube-controller-manager"),
    "keda": ("keda-operator", "keda-adapter"),
}
#: component -> the module path whose version is the component's version.
VERSION_MODULE: dict[str, str] = {
    "etcd": "go.etcd.io/etcd/server/v3",
    "kubernetes": "k8s.io/kubernetes",
    "keda": "github.com/kedacore/keda/v2",
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


_DIRECTIVE = re.compile(r"^(module|go|require|replace|exclude|retract|toolchain|godebug|tool|ignore)\b\s*(.*)$")


def parse_gomod(text: str, source: str = "go.mod") -> GoMod:
    """Parse the ``module``/``go``/``require``/``replace`` directives of a go.mod text.

    Args:
        text: the file's content.
        source: the file's name for error messages.

    Raises:
        ConfigError: a require or replace line that does not have the directive's shape, or
            no ``module`` line.
    """
    module, go = None, None
    requires: dict[str, str] = {}
    replaces: list[Replace] = []
    problems: list[str] = []
    block: str | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if block is not None:
            if line == ")":
                block = None
                continue
            verb, rest = block, line
        else:
            m = _DIRECTIVE.match(line)
            if m is None:
                problems.append(f"{source}:{lineno}: unknown directive {line!r}")
                continue
            verb, rest = m.group(1), m.group(2).strip()
            if rest == "(":
                block = verb
                continue
        if verb == "module":
            module = rest.strip('"')
        elif verb == "go":
            go = rest
        elif verb == "require":
            parts = rest.split()
            if len(parts) != 2:
                problems.append(f"{source}:{lineno}: require {rest!r} is not 'path version'")
            else:
                requires[parts[0]] = parts[1]
        elif verb == "replace":
            replace = _parse_replace(rest)
            if replace is None:
                problems.append(f"{source}:{lineno}: replace {rest!r} is not "
                                "'path [version] => path [version]'")
            else:
                replaces.append(replace)
    if module is None:
        problems.append(f"{source}: no module line")
    if problems:
        raise ConfigError(problems)
    return GoMod(module, go, requires, tuple(replaces))


def _parse_replace(rest: str) -> Replace | None:
    left, sep, right = rest.partition("=>")
    old, new = left.split(), right.split()
    if not sep or len(old) not in (1, 2) or len(new) not in (1, 2):
        return None
    return Replace(old[0], old[1] if len(old) == 2 else None,
                   new[0], new[1] if len(new) == 2 else None)


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
    return (root or pins_dir()) / component / "go.mod"


def read_pin(component: str, root: Path | None = None) -> GoMod:
    """The parsed wrapper go.mod of ``component``.

    Raises:
        ConfigError: unknown component, unreadable file, or a pin without the require line of
            :data:`VERSION_MODULE`.
    """
    path = pin_path(component, root)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{str(path)!r}: cannot read the {component} pin: {exc}; reinstall "
                          "pytest-lagscale or unset LAGSCALE_FIXTURES") from exc
    mod = parse_gomod(text, str(path))
    if VERSION_MODULE[component] not in mod.requires:
        raise ConfigError(f"{str(path)!r}: no 'require {VERSION_MODULE[component]} <version>' "
                          "line; add it")
    return mod


def pinned_version(component: str, root: Path | None = None) -> str:
    """The pinned version of ``component`` as its go.mod requires it (``"v1.36.3"``)."""
    return read_pin(component, root).requires[VERSION_MODULE[component]]


def pinned_versions(root: Path | None = None) -> dict[str, str]:
    """Every component's pinned version, for the benchmark JSON's ``inputs.versions``.

    Example: ``{"etcd": "v3.6.16", "kubernetes": "v1.36.3", "keda": "v2.21.0"}``.
    """
    return {c: pinned_version(c, root) for c in COMPONENTS}


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
