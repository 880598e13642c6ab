"""OCI images of the kubelet node, built here without a registry: the sandbox (pause) image.

:func:`pause_archive` compiles ``data/kube/pause/pause.c`` with ``gcc -static`` and packs the
680 KB binary as the only file of an OCI image with umoci (Debian's ``umoci``), into an OCI
archive in the per-user cache named by the content hash of the source (built once per machine,
under a second). :func:`import_archive` loads an archive into containerd's ``k8s.io``
namespace with ``ctr images import --base-name``, where the kubelet's CRI finds it: no pull.

Source: opencontainers/umoci doc/man (``init``, ``new``, ``unpack``, ``repack``, ``config``);
containerd v1.6 cmd/ctr/commands/images/import.go (``--base-name``: the image's name is
``<base>:<tag of the OCI index's ref.name annotation>``).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from ..contract.errors import LagscaleError
from ..contract.paths import cache_dir
from .node_commands import SANDBOX_IMAGE

PAUSE_SOURCE = Path(__file__).resolve().parents[1] / "data" / "kube" / "pause" / "pause.c"
#: Seconds any one build or import step may take.
STEP_TIMEOUT_S = 120.0


def _run(argv: list[str], what: str, cwd: Path | None = None) -> str:
    if shutil.which(argv[0]) is None:
        raise LagscaleError(f"{what}: {argv[0]!r} not found on PATH; run scripts/bootstrap "
                            "--with-kube (it installs gcc, umoci and containerd from Debian)")
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    if done.returncode != 0:
        raise LagscaleError(f"{what}: {' '.join(argv[:3])} ... exited {done.returncode}: "
                            f"{(done.stderr or done.stdout).strip()[-400:]}")
    return done.stdout


def pause_archive(cache: Path | None = None) -> Path:
    """The sandbox image as an OCI archive (``<cache>/images/pause-<hash>.tar``), built when
    absent. Its reference after :func:`import_archive` is :data:`SANDBOX_IMAGE`.

    Raises:
        LagscaleError: gcc or umoci is missing or failed (the step and its last output).
    """
    source = PAUSE_SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    images = (cache or cache_dir()) / "images"
    archive = images / f"pause-{digest}.tar"
    if archive.exists():
        return archive
    images.mkdir(parents=True, exist_ok=True)
    tag = SANDBOX_IMAGE.rsplit(":", 1)[1]
    with tempfile.TemporaryDirectory(prefix="lagscale-pause-", dir=images) as tmp:
        work = Path(tmp)
        _run(["gcc", "-static", "-O2", "-o", str(work / "pause"), str(PAUSE_SOURCE)],
             "pause image: compile")
        layout = work / "oci"
        _run(["umoci", "init", "--layout", str(layout)], "pause image: umoci init")
        _run(["umoci", "new", "--image", f"{layout}:{tag}"], "pause image: umoci new")
        _run(["umoci", "unpack", "--image", f"{layout}:{tag}", str(work / "bundle")],
             "pause image: umoci unpack")
        shutil.copy2(work / "pause", work / "bundle" / "rootfs" / "pause")
        _run(["umoci", "repack", "--image", f"{layout}:{tag}", str(work / "bundle")],
             "pause image: umoci repack")
        _run(["umoci", "config", "--image", f"{layout}:{tag}", "--config.entrypoint", "/pause"],
             "pause image: umoci config")
        partial = work / "pause.tar"
        with tarfile.open(partial, "w") as tar:
            for item in sorted(layout.iterdir()):
                tar.add(item, arcname=item.name)
        partial.rename(archive)
    return archive


def import_archive(socket: Path, archive: Path, base_name: str) -> str:
    """Import an OCI archive into containerd's ``k8s.io`` namespace at ``socket``; returns
    ``ctr``'s output (the image names it unpacked).

    Raises:
        LagscaleError: ctr is missing or failed.
    """
    return _run(["ctr", "--address", str(socket), "--namespace", "k8s.io", "images", "import",
                 "--base-name", base_name, str(archive)], f"import {archive.name}")


def archive_digests(archive: Path) -> dict[str, str]:
    """``{tag: manifest digest}`` of an OCI archive's ``index.json`` (the ``ref.name``
    annotations)."""
    import json

    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        index = json.load(member) if member is not None else {}
    return {m["annotations"]["org.opencontainers.image.ref.name"]: m["digest"]
            for m in index.get("manifests", [])
            if "org.opencontainers.image.ref.name" in (m.get("annotations") or {})}


def image_digest(socket: Path, ref: str) -> str | None:
    """The manifest digest containerd (``k8s.io`` namespace at ``socket``) has for ``ref``,
    None when it has no such image."""
    out = _run(["ctr", "--address", str(socket), "--namespace", "k8s.io", "images", "list",
                f"name=={ref}"], f"list {ref}")
    for line in out.splitlines()[1:]:
        fields = line.split()
        if fields and fields[0] == ref:
            return next((f for f in fields if f.startswith("sha256:")), None)
    return None


def ensure_image(socket: Path, archive: Path, base_name: str, tag: str) -> bool:
    """Import ``archive`` unless containerd already has ``<base_name>:<tag>`` at the archive's
    digest (containerd's root, in the per-user cache, keeps images across runs); returns True
    when it imported.

    Raises:
        LagscaleError: the archive has no ``tag``; ctr failed.
    """
    wanted = archive_digests(archive).get(tag)
    if wanted is None:
        raise LagscaleError(f"{archive}: no image tagged {tag!r} in its index.json")
    if image_digest(socket, f"{base_name}:{tag}") == wanted:
        return False
    import_archive(socket, archive, base_name)
    return True
