"""The built wheel carries its defaults: installed into a fresh virtualenv, it works anywhere.

The wheel is built from a copy of only what a source distribution needs (``pyproject.toml``,
``README.md`` and the two packages; no ``k8s/`` or ``fixtures/`` symlinks), without build
isolation, and installed with ``--no-deps`` into a virtualenv in a temp directory. The project's
dependencies come from the running interpreter's site-packages through a ``.pth`` file (nothing
is downloaded); that directory's own ``.pth`` files are not processed, so the checkout's
editable install stays out and every import of ``pytest_lagscale`` and ``spark_consumer`` must
come from the temp virtualenv, which the tests assert. Commands run from an unrelated directory.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

# One worker under xdist: the module fixture is set up once.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("wheel")]

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "pytest_lagscale", "spark_consumer")
DATA_FILES = (
    "pytest_lagscale/data/profiles/spike-ci.yaml",
    "pytest_lagscale/data/k8s/scaledobject-ci.yaml",
    "pytest_lagscale/data/k8s/consumer-deployment-ci.yaml",
    "pytest_lagscale/data/k8s/hpa-cpu-ci.yaml",
    "pytest_lagscale/data/kafka/pom.xml",
    "pytest_lagscale/data/prometheus/prometheus.yml.template",
    "spark_consumer/data/segments.csv",
    "pytest_lagscale/report/templates/findings.html.j2",
    "pytest_lagscale/report/templates/findings.md.j2",
)
#: Run inside the temp virtualenv: every bundled default as a path, plus where the packages are.
RESOLVE = """
import json
from importlib.resources import files
import pytest_lagscale, spark_consumer
from pytest_lagscale.config import bundled
from pytest_lagscale.kafka.artifacts import pinned_pom
from pytest_lagscale.observe.prometheus import template_path
from spark_consumer.options import DEFAULT_DIMENSION
paths = {"pytest_lagscale": pytest_lagscale.__file__, "spark_consumer": spark_consumer.__file__,
         "profile": bundled.resolve_profile("spike-ci"),
         "profile_by_scale": bundled.resolve_profile("spike", scale="ci"),
         **{f"manifest_{k}": v for k, v in bundled.manifest_paths("ci").items()},
         "kafka_pom": pinned_pom(), "prometheus_template": template_path(),
         "dimension": DEFAULT_DIMENSION,
         "dimension_resource": files("spark_consumer").joinpath("data", "segments.csv")}
print(json.dumps({k: str(v) for k, v in paths.items()}))
"""


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
         timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout_s, check=False)


def _ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, (f"{' '.join(map(str, done.args))} exited {done.returncode}\n"
                                  f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The wheel (``.wheel``), the temp venv (``.venv``, ``.python``, ``.bin``), a clean
    environment (``.env``) and an unrelated working directory (``.elsewhere``)."""
    root = tmp_path_factory.mktemp("wheel")
    src, dist, venv, elsewhere = root / "src", root / "dist", root / "venv", root / "elsewhere"
    src.mkdir()
    elsewhere.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, src / name)
    _ok(_run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
              "-w", str(dist), str(src)], cwd=root))
    (wheel,) = dist.glob("pytest_lagscale-*.whl")
    _ok(_run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root))
    python = venv / "bin" / "python"
    _ok(_run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
              "--no-deps", "--no-index", str(wheel)], cwd=root))
    site = _ok(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    cwd=elsewhere)).stdout.strip()
    deps = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (Path(site) / "_lagscale_test_deps.pth").write_text("\n".join(deps) + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP")}
    return SimpleNamespace(wheel=wheel, venv=venv.resolve(), python=python, bin=venv / "bin",
                           env=env, elsewhere=elsewhere)


def test_wheel_holds_the_bundled_defaults_as_regular_files(installed: SimpleNamespace) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        infos = {info.filename: info for info in wheel.infolist()}
    assert [name for name in DATA_FILES if name not in infos] == []
    for name in DATA_FILES:
        assert not stat.S_ISLNK(infos[name].external_attr >> 16), f"{name} is a symlink"
        assert infos[name].file_size > 0, name


@pytest.mark.parametrize("command", [pytest.param("run", id="run"),
                                     pytest.param("produce", id="produce")])
def test_cli_help_from_an_unrelated_directory(installed: SimpleNamespace, command: str) -> None:
    done = _ok(_run([str(installed.bin / "lagscale"), command, "--help"], cwd=installed.elsewhere,
                    env=installed.env))
    assert "--profile" in done.stdout


def test_bundled_defaults_resolve_to_files_inside_the_venv(installed: SimpleNamespace) -> None:
    done = _ok(_run([str(installed.python), "-c", RESOLVE], cwd=installed.elsewhere,
                    env=installed.env))
    paths = {key: Path(value) for key, value in json.loads(done.stdout).items()}
    outside = {key: str(path) for key, path in paths.items()
               if not path.resolve().is_relative_to(installed.venv)}
    assert outside == {}, f"not imported/resolved from the temp venv {installed.venv}"
    assert [key for key, path in paths.items() if not path.is_file()] == []
    assert paths["profile"].name == paths["profile_by_scale"].name == "spike-ci.yaml"
    assert paths["manifest_scaled_object"].name == "scaledobject-ci.yaml"
    assert paths["dimension"].resolve() == paths["dimension_resource"].resolve()
