"""The local platform's image build: what a replica container image does once, at build time.

A Spark replica maps a class-data-sharing archive of the ~14,000 classes its engine loads
(:mod:`spark_consumer.engine.cds`); a container image runs the replica's training step
(``python -m spark_consumer.engine.cds``) when it is built, so no pod pays for it. The local
platform has no image, so it runs the same step before its first replica starts: once per
machine, JDK and pyspark installation (the archive is kept in the cache directory; later runs
find it and the step costs one Python start). Without the archive every JVM parses its classes
from ~280 jars: about twice the CPU of a start, which seven replicas starting at once on two
cores pay seven times.

The harness never imports the replica's internals: the step is the replica program's own
command line, run as a child process in its own process group.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..contract.flags import ENV_PREFIX, FLAG_BY_OPTION
from ..contract.errors import ReplicaError
from ..exit_status import describe_exit
from ..process import ManagedProcess

#: Seconds the training step may take (measured ~21 s on 2 cores, JDK 17).
PREPARE_TIMEOUT_S = 240.0
#: Engines whose replicas start a JVM and so use the archive.
JVM_ENGINES = frozenset({"spark"})


@dataclass(frozen=True)
class PreparedImage:
    """What :func:`prepare_image` did.

    Attributes:
        engine: the replicas' engine (from the template's ``--engine``).
        cds_archive: path of the archive the replicas will map, or None (no JVM engine).
        duration_s: seconds the step took (0.0 when skipped).
    """

    engine: str
    cds_archive: str | None
    duration_s: float


#: Images the local platform builds itself: image name (without tag) -> the repository script
#: that builds its program into the per-user cache and prints the binary's path.
LOCAL_IMAGES: dict[str, str] = {
    "pytest-lagscale/franz-go-consumer": "scripts/build-franz-go-consumer",
}


def prepare_command_image(image: str, env: Mapping[str, str], log_path: Path,
                          timeout_s: float = PREPARE_TIMEOUT_S) -> dict[str, str]:
    """What a command consumer's replicas need from their image on this machine: for an image
    of :data:`LOCAL_IMAGES`, ``PATH`` with the built program's directory first (the script
    builds once per content hash: about 35 s cold, 0.03 s cached); {} for any other image,
    whose command must be on ``PATH``.

    Raises:
        ReplicaError: the build script failed, timed out or printed no binary (Go missing: the
            script's reason is in the message).
    """
    name = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    script = LOCAL_IMAGES.get(name)
    if script is None:
        return {}
    root = Path(__file__).resolve().parents[2]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = log_path.stat().st_size if log_path.exists() else 0
    step = ManagedProcess("image-build", [str(root / script)], log_path=log_path)
    with step:
        code = step.wait(timeout_s)
    lines = log_path.read_text(errors="replace")[start:].strip().splitlines()
    binary = Path(lines[-1].strip()) if lines else None
    if code != 0 or binary is None or not binary.is_file():
        why = "timed out" if code is None else describe_exit(code)
        raise ReplicaError(f"image {image!r}: {script} {why} without a program; see {log_path}\n"
                           + "\n".join(lines[-5:]))
    path = env.get("PATH") or os.environ.get("PATH", "")
    return {"PATH": f"{binary.parent}{os.pathsep}{path}"}


def template_engine(argv: tuple[str, ...], env: dict[str, str] | None = None) -> str:
    """The ``--engine`` a replica started with ``argv`` (and ``env``) will use.

    The flag wins over its environment variable (``LAGSCALE_ENGINE``), which wins over the
    flag table's default; the same precedence as :mod:`spark_consumer.options`.
    """
    for i, arg in enumerate(argv):
        if arg.startswith("--engine="):
            return arg.split("=", 1)[1]
        if arg == "--engine" and i + 1 < len(argv):
            return argv[i + 1]
    flag = FLAG_BY_OPTION["--engine"]
    return (env or {}).get(f"{ENV_PREFIX}ENGINE") or str(flag.default)


def prepare_image(argv: tuple[str, ...], env: dict[str, str], log_path: Path,
                  timeout_s: float = PREPARE_TIMEOUT_S) -> PreparedImage:
    """Run the replica's build-time step for ``argv``'s engine (the CDS training for Spark).

    Args:
        argv: the replica's command line (``python -m spark_consumer ...``); its interpreter
            runs the step.
        env: the replica's extra environment.
        log_path: where the step's output goes (the run's ``image-build.log``).
        timeout_s: seconds before the step is killed.

    Raises:
        ReplicaError: the step exited non-zero or did not finish in ``timeout_s`` (names the
            log).
    """
    engine = template_engine(argv, env)
    if engine not in JVM_ENGINES or "spark_consumer" not in argv:
        return PreparedImage(engine, None, 0.0)
    started = time.monotonic()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    step = ManagedProcess("image-build", [argv[0], "-m", "spark_consumer.engine.cds"],
                          env=env, log_path=log_path)
    with step:
        code = step.wait(timeout_s)
    if code != 0:
        why = "timed out" if code is None else describe_exit(code)
        raise ReplicaError(f"image build (python -m spark_consumer.engine.cds) {why} after "
                           f"{time.monotonic() - started:.0f} s; see {log_path}\n"
                           + "\n".join(step.tail()))
    lines = [ln.strip() for ln in step.tail(5) if ln.strip().endswith(".jsa")]
    return PreparedImage(engine, lines[-1] if lines else None,
                         round(time.monotonic() - started, 3))


def prepare_template_image(template: Any, log_path: Path) -> tuple[PreparedImage, dict[str, str]]:
    """The image step of a replica template, on any platform: a command consumer's
    (:func:`prepare_command_image`; engine ``command``) or the replica program's
    (:func:`prepare_image`). Returns what was done and the image's env (``PATH`` of a program
    built here; {} otherwise), which goes under each replica's own env.

    Raises:
        ReplicaError: the step failed (see the two functions).
    """
    if getattr(template, "kind", "replica") != "command":
        return prepare_image(template.argv, dict(template.env), log_path), {}
    started = time.monotonic()
    env = prepare_command_image(template.image, template.env, log_path)
    return PreparedImage("command", None, round(time.monotonic() - started, 3)), env
