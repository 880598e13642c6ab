"""The replica as an OCI image, built here without a registry: ``lagscale-replica:<version>``.

``scripts/build-replica-image`` (and ``scripts/bootstrap --with-kube``) run :func:`main`, which
builds, into the per-user cache, an OCI image of two layers. The base: a Debian bookworm root
filesystem (``debootstrap --variant=minbase``, from the host's Debian mirror) with Java 17 and
Python 3.11 (Debian's packages), a virtualenv at ``/opt/lagscale`` holding the project's
dependencies with pyspark (wheels built on this host, installed with ``--no-index``) and the
Spark replica's class-data-sharing archive trained in the image; it is named by the content
hash of this recipe, those wheels and the CDS trainer, so it is built once per machine. The
top: the project's own wheel (``--no-deps``), named by its hash, repacked on the base in
seconds. :func:`~.images.import_archive` loads the archive into containerd.

Source: debootstrap(8) (``--variant=minbase``); opencontainers/umoci doc/man (``unpack``,
``repack``, ``config``); docs/kubernetes.md "The replica image".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from ..contract.errors import LagscaleError
from ..contract.paths import cache_dir

SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("openjdk-17-jre-headless", "python3", "python3-venv", "ca-certificates")
IMAGE_NAME = "lagscale.local/lagscale-replica"
VENV = "/opt/lagscale"
ROOT = Path(__file__).resolve().parents[2]
#: The image's environment (the replica's interpreter first on PATH; Java found by the JVM
#: launcher through the Debian alternatives).
IMAGE_ENV = (f"PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "HOME=/root", "LANG=C.UTF-8", "PYTHONUNBUFFERED=1")


def image_key(recipe: bytes, wheels: Sequence[Path], suite: str = SUITE) -> str:
    """The first 16 hex digits of a SHA-256 over the recipe, each wheel (name and bytes, in
    name order) and the Debian suite."""
    h = hashlib.sha256(recipe)
    for wheel in sorted(wheels, key=lambda p: p.name):
        h.update(wheel.name.encode() + b"\0" + hashlib.sha256(wheel.read_bytes()).digest())
    h.update(suite.encode())
    return h.hexdigest()[:16]


def base_recipe() -> bytes:
    """What decides the base besides its wheels: the suite, the packages, the virtualenv's
    place, the steps (:func:`build_base_rootfs`'s source) and the CDS trainer."""
    import inspect

    trainer = ROOT / "spark_consumer" / "engine" / "cds.py"
    return (repr((SUITE, PACKAGES, VENV)).encode() + inspect.getsource(build_base_rootfs).encode()
            + trainer.read_bytes())


#: ``<cache>/images/<this>``: the source stamp of the archive last built or found
#: (:func:`source_stamp`), so an unchanged tree skips ``pip wheel`` (about 5 s).
STAMP_FILE = "replica-source-stamp.json"


def source_stamp() -> str | None:
    """The first 16 hex digits of a SHA-256 over the base recipe, ``pyproject.toml`` and every
    file of the two packages (``pytest_lagscale``, ``spark_consumer``; byte caches left out):
    what the image's wheels are built from. None outside a source tree (no pyproject.toml)."""
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.is_file():
        return None
    h = hashlib.sha256(base_recipe() + pyproject.read_bytes())
    for package in ("pytest_lagscale", "spark_consumer"):
        for path in sorted((ROOT / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def _stamped_archive(images: Path, stamp: str | None) -> Path | None:
    """The archive recorded for ``stamp`` if it is still there."""
    try:
        recorded = json.loads((images / STAMP_FILE).read_text())
    except (OSError, ValueError):
        return None
    archive = images / str(recorded.get("archive", ""))
    return archive if stamp and recorded.get("stamp") == stamp and archive.is_file() else None


def image_ref(version: str) -> str:
    """``lagscale.local/lagscale-replica:<version>`` (the project's version)."""
    return f"{IMAGE_NAME}:{version}"


def _run(argv: Sequence[str], log, what: str, **kwargs) -> None:
    log.write(f"$ {' '.join(map(str, argv))}\n")
    log.flush()
    started = time.monotonic()
    done = subprocess.run([str(a) for a in argv], stdout=log, stderr=subprocess.STDOUT, **kwargs)
    log.write(f"# {what}: exit {done.returncode} after {time.monotonic() - started:.1f} s\n")
    log.flush()
    if done.returncode != 0:
        raise LagscaleError(f"replica image: {what} failed (exit {done.returncode}); see {log.name}")


def build_wheels(work: Path, log) -> tuple[Path, list[Path]]:
    """The project's wheel and its dependencies' (with the ``spark`` extra), built for this
    host's Python (the image's is the same minor version) into ``work/wheels``: (the project's
    wheel, the others)."""
    wheels = work / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", wheels,
          f"{ROOT}[spark]"], log, "pip wheel")
    found = sorted(wheels.glob("*.whl"))
    project = [w for w in found if w.name.startswith("pytest_lagscale-")]
    if len(project) != 1:
        raise LagscaleError(f"replica image: pip wheel gave {len(project)} project wheels")
    return project[0], [w for w in found if w != project[0]]


def _chroot(rootfs: Path, argv: Sequence[str], log, what: str) -> None:
    # SPARK_LOCAL_IP: the chroot's /etc/hosts does not name this host, and Spark resolves it
    _run(["chroot", rootfs, *argv], log, what,
         env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
              "DEBIAN_FRONTEND": "noninteractive", "SPARK_LOCAL_IP": "127.0.0.1",
              "SPARK_LOCAL_HOSTNAME": "localhost"})


def build_base_rootfs(rootfs: Path, wheels: Path, project: Path, mirror: str, log) -> None:
    """debootstrap, Debian's packages, the virtualenv of the dependencies in ``wheels``, the
    CDS archive (trained with ``project`` installed, which is then removed: it is the top
    layer's)."""
    _run(["debootstrap", "--variant=minbase", SUITE, rootfs, mirror], log, "debootstrap")
    # minbase writes no /etc/hosts; a pod's is the kubelet's, the build's names localhost
    (rootfs / "etc" / "hosts").write_text("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n")
    proc = rootfs / "proc"
    subprocess.run(["mount", "-t", "proc", "proc", str(proc)], check=True)
    try:
        _chroot(rootfs, ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                         *PACKAGES], log, "apt-get install")
        _chroot(rootfs, ["apt-get", "clean"], log, "apt-get clean")
        shutil.copytree(wheels, rootfs / "wheels")
        _chroot(rootfs, ["python3", "-m", "venv", VENV], log, "venv")
        _chroot(rootfs, [f"{VENV}/bin/pip", "install", "--quiet", "--no-index", "--find-links",
                         "/wheels", f"/wheels/{project.name}[spark]"], log, "pip install")
        whole_second_mtimes(rootfs)
        _chroot(rootfs, [f"{VENV}/bin/python", "-m", "spark_consumer.engine.cds"], log,
                "CDS archive")
        _chroot(rootfs, [f"{VENV}/bin/pip", "uninstall", "--quiet", "-y", "pytest-lagscale"],
                log, "pip uninstall (the top layer installs it)")
        shutil.rmtree(rootfs / "wheels")
    finally:
        subprocess.run(["umount", "--lazy", str(proc)], capture_output=True)
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "root/.cache/pip"):
        shutil.rmtree(rootfs / junk, ignore_errors=True)


def whole_second_mtimes(rootfs: Path) -> None:
    """Truncate every file's modification time under ``rootfs`` to whole seconds.

    An image layer keeps whole seconds (umoci writes its tar layers with Go's archive/tar,
    which rounds ``ModTime`` to the nearest second), and the JVM maps a CDS archive only if
    each archived jar's size and ``st_mtime`` are unchanged, so an archive trained on
    fractional times would be refused in about half the containers' jars."""
    for directory, _, files in os.walk(rootfs):
        for name in files:
            path = os.path.join(directory, name)
            try:
                st = os.lstat(path)
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns // 10**9 * 10**9),
                         follow_symlinks=False)
            except OSError:
                continue


def ensure_cds(rootfs: Path, log) -> None:
    """Train the Spark replica's CDS archive in ``rootfs`` (an unpacked image, whose jar times
    are what containers see) unless the archive for its settings is there already."""
    check = ("import sys; from spark_consumer.engine.spark import cds_archive; "
             "sys.exit(0 if cds_archive().is_file() else 3)")
    done = subprocess.run(["chroot", rootfs, f"{VENV}/bin/python", "-c", check],
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"},
                          capture_output=True)
    if done.returncode == 0:
        return
    print("replica image: the base's CDS archive does not match; training it in the top layer",
          file=log, flush=True)
    proc = rootfs / "proc"
    subprocess.run(["mount", "-t", "proc", "proc", str(proc)], check=True)
    try:
        _chroot(rootfs, [f"{VENV}/bin/python", "-m", "spark_consumer.engine.cds"], log,
                "CDS archive (top)")
    finally:
        subprocess.run(["umount", "--lazy", str(proc)], capture_output=True)


def _config(layout: Path, tag: str, log) -> None:
    argv = ["umoci", "config", "--image", f"{layout}:{tag}", "--config.workingdir", "/"]
    for item in IMAGE_ENV:
        argv += ["--config.env", item]
    _run(argv, log, "umoci config")


def build_base(layout: Path, tag: str, work: Path, wheels: Path, project: Path, mirror: str,
               log) -> None:
    """The base image as ``layout:tag`` (an OCI layout directory in the cache)."""
    partial = layout.with_name(layout.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    rootfs = work / "rootfs"
    build_base_rootfs(rootfs, wheels, project, mirror, log)
    _run(["umoci", "init", "--layout", partial], log, "umoci init")
    _run(["umoci", "new", "--image", f"{partial}:{tag}"], log, "umoci new")
    bundle = work / "base-bundle"
    _run(["umoci", "unpack", "--image", f"{partial}:{tag}", bundle], log, "umoci unpack")
    shutil.rmtree(bundle / "rootfs")
    rootfs.rename(bundle / "rootfs")
    _run(["umoci", "repack", "--image", f"{partial}:{tag}", bundle], log, "umoci repack (base)")
    _config(partial, tag, log)
    shutil.rmtree(bundle)
    partial.rename(layout)


def build_top(base: Path, base_tag: str, project: Path, tag: str, work: Path, archive: Path,
              log) -> None:
    """The project's wheel as a layer on ``base:base_tag``, tagged ``tag``, written as the OCI
    archive ``archive`` (both tags in it)."""
    import tarfile

    layout = work / "oci"
    _run(["cp", "-al", base, layout], log, "copy the base layout (hard links)")
    bundle = work / "bundle"
    _run(["umoci", "unpack", "--image", f"{layout}:{base_tag}", bundle], log, "umoci unpack (base)")
    shutil.copy2(project, bundle / "rootfs" / "tmp" / project.name)
    _chroot(bundle / "rootfs", [f"{VENV}/bin/pip", "install", "--quiet", "--no-deps",
                                "--no-index", f"/tmp/{project.name}"], log, "pip install (top)")
    (bundle / "rootfs" / "tmp" / project.name).unlink()
    ensure_cds(bundle / "rootfs", log)
    shutil.rmtree(bundle / "rootfs" / "root" / ".cache" / "pip", ignore_errors=True)
    _run(["umoci", "repack", "--image", f"{layout}:{tag}", bundle], log, "umoci repack (top)")
    _config(layout, tag, log)
    partial = archive.with_suffix(".partial")
    with tarfile.open(partial, "w") as tar:
        for item in sorted(layout.iterdir()):
            tar.add(item, arcname=item.name)
    partial.rename(archive)


class BaseMissing(LagscaleError):
    """The image's base is not built and the caller did not want it built (``build(base=False)``)."""


def build(mirror: str = DEFAULT_MIRROR, cache: Path | None = None, out=sys.stderr, *,
          base: bool = True) -> Path:
    """Build (or reuse) the replica image's OCI archive; returns its path
    (``<cache>/images/replica-<base key>-<wheel key>.tar``, tags ``base-<base key>`` and the
    project's version). Measured here: cold 121 s (the base 100 s, 773 MiB), about 30 s with
    the base present.

    Args:
        base: False: raise :class:`BaseMissing` rather than build a missing base (tests: the
            base is ``scripts/bootstrap --with-kube``'s).

    Raises:
        BaseMissing: ``base`` False and the base not built.
        LagscaleError: a tool is missing (debootstrap, umoci, chroot; root is needed) or a step
            failed (the step and the log).
    """
    from importlib.metadata import version

    for tool in ("debootstrap", "umoci", "chroot"):
        if shutil.which(tool) is None:
            raise LagscaleError(f"replica image: {tool!r} not found on PATH; run "
                                "scripts/bootstrap --with-kube")
    if os.geteuid() != 0:
        raise LagscaleError("replica image: debootstrap and chroot need root")
    images = (cache or cache_dir()) / "images"
    images.mkdir(parents=True, exist_ok=True)
    log_path = images / "replica-build.log"
    stamp = source_stamp()
    known = _stamped_archive(images, stamp)
    if known is not None:
        print(f"build-replica-image: present (source unchanged): {known}", file=out)
        return known
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lagscale-replica-", dir=images) as tmp, \
            open(log_path, "w") as log:
        work = Path(tmp)
        project, deps = build_wheels(work, log)
        base_key = image_key(base_recipe(), deps)
        top_key = image_key(b"", [project])
        archive = images / f"replica-{base_key}-{top_key}.tar"
        if archive.exists():
            print(f"build-replica-image: present: {archive}", file=out)
            _write_stamp(images, stamp, archive)
            return archive
        base_dir = images / f"replica-base-{base_key}"
        base_tag = f"base-{base_key}"
        if not base_dir.is_dir() and not base:
            raise BaseMissing(f"replica image: base {base_tag} not built; run "
                              "scripts/build-replica-image (or scripts/bootstrap --with-kube)")
        if not base_dir.is_dir():
            only_deps = work / "deps"
            only_deps.mkdir()
            for wheel in [*deps, project]:
                shutil.copy2(wheel, only_deps / wheel.name)
            build_base(base_dir, base_tag, work, only_deps, project, mirror, log)
            print(f"build-replica-image: base {base_tag} built in "
                  f"{time.monotonic() - started:.0f} s", file=out)
        build_top(base_dir, base_tag, project, version("pytest-lagscale"), work, archive, log)
    for stale in images.glob("replica-*.tar"):  # one archive and one base per machine
        if stale != archive:
            stale.unlink()
    for stale in images.glob("replica-base-*"):
        if stale.is_dir() and stale != base_dir:
            shutil.rmtree(stale, ignore_errors=True)
    _write_stamp(images, stamp, archive)
    print(f"build-replica-image: built {archive} ({archive.stat().st_size / 2**20:.0f} MiB) in "
          f"{time.monotonic() - started:.0f} s; log {log_path}", file=out)
    return archive


def _write_stamp(images: Path, stamp: str | None, archive: Path) -> None:
    if stamp is not None:
        (images / STAMP_FILE).write_text(json.dumps({"stamp": stamp, "archive": archive.name}))


def main(argv: Sequence[str] | None = None) -> int:
    """``scripts/build-replica-image [--mirror URL]``: prints the archive's path; exit 0, or 1
    with the error."""
    parser = argparse.ArgumentParser(prog="build-replica-image",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", default=DEFAULT_MIRROR, help="Debian mirror for debootstrap")
    args = parser.parse_args(argv)
    try:
        print(build(args.mirror))
    except LagscaleError as exc:
        print(f"build-replica-image: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())


def missing_reason(cache: Path | None = None) -> str | None:
    """Why a run cannot get the replica image without building its base (None: it can; the
    top layer, the project's wheel, is built by the run in about 30 s when it changed)."""
    for tool in ("debootstrap", "umoci", "chroot", "ctr"):
        if shutil.which(tool) is None:
            return f"{tool!r} not found on PATH; run scripts/bootstrap --with-kube"
    if os.geteuid() != 0:
        return "the replica image's build (chroot) and the kubelet node need root"
    images = (cache or cache_dir()) / "images"
    if not any(d.is_dir() for d in images.glob("replica-base-*")):
        return (f"the replica image's base is not built in {images}; run "
                "scripts/build-replica-image (or scripts/bootstrap --with-kube)")
    return None
