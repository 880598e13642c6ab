"""Defaults that ship inside the wheel: traffic profiles, manifests, the Kafka pin, templates.

The files live in ``pytest_lagscale/data/`` and are found with :mod:`importlib.resources`, so
``pip install pytest-lagscale`` followed by ``pytest -m acceptance`` or
``lagscale run --profile spike-ci`` works from any directory. In a source checkout, the
repository's ``k8s/*.yaml`` and ``fixtures/profiles/*.yaml`` are relative symlinks to these files.

Layout of the package data (one directory per kind)::

    data/profiles/<name>.yaml                 traffic profiles (``<name>-ci.yaml`` at ci)
    data/k8s/<manifest>.yaml                  ScaledObject, consumer Deployment, CPU HPA
    data/kafka/pom.xml                        the Kafka classpath pin
    data/prometheus/prometheus.yml.template   the Prometheus config template

The package must be installed unzipped (the default of pip): the files are handed to Maven,
Prometheus and YAML readers as filesystem paths.

Example:
    >>> resolve_profile("spike", scale="ci").name
    'spike-ci.yaml'
    >>> manifest_paths("ci")["scaled_object"].name
    'scaledobject-ci.yaml'
    >>> resolve_manifest("scaledobject-ci", "--policy").name
    'scaledobject-ci.yaml'
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from pytest_lagscale.contract.errors import ConfigError, LagscaleError

SCALES = ("ci", "full")
_PACKAGE = "pytest_lagscale"


def data_path(*parts: str) -> Path:
    """The filesystem path of a file or directory under ``pytest_lagscale/data/``.

    Args:
        parts: path components below ``data/``, e.g. ``("kafka", "pom.xml")``.

    Returns:
        The path; it is not checked for existence.

    Raises:
        LagscaleError: the package is not installed as plain files (e.g. imported from a zip),
            so the data has no filesystem path.
    """
    resource = files(_PACKAGE).joinpath("data", *parts)
    if not isinstance(resource, Path):
        raise LagscaleError(f"{_PACKAGE!r}: package data {'/'.join(parts)!r} is not a file on disk "
                            f"({type(resource).__name__}); install pytest-lagscale unzipped "
                            "(pip install pytest-lagscale)")
    return resource


def profile_names() -> tuple[str, ...]:
    """The bundled traffic profiles' names (file names without ``.yaml``), sorted.

    Example: ``('bursty', 'bursty-ci', 'spike', 'spike-ci', 'spike-demo')``.
    """
    return tuple(sorted(p.stem for p in data_path("profiles").glob("*.yaml") if p.is_file()))


def _is_file(value: str, option: str) -> bool:
    """``Path(value).is_file()``, with a path the system cannot look up (too long, a NUL byte)
    a ConfigError naming ``option`` rather than an OSError."""
    try:
        return Path(value).is_file()
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        shown = value if len(value) <= 80 else f"{value[:40]}...{value[-20:]}"
        raise ConfigError(f"'{option}': {shown!r} ({len(value)} characters) cannot be looked up "
                          f"({why}); allowed: a path of at most 4096 characters, each name at "
                          "most 255; give a shorter path") from None


def resolve_profile(value: str, scale: str | None = None) -> Path:
    """Turn a ``--profile`` value into a profile file.

    A path to an existing file wins (returned as given, relative paths stay relative). Else the
    value is a bundled profile's name: with ``scale="ci"``, ``<value>-ci`` is taken when it is
    bundled (``spike`` -> ``spike-ci.yaml``), otherwise ``<value>`` itself (``spike-ci``).

    Args:
        value: a path to a profile YAML, or a bundled name (see :func:`profile_names`).
        scale: ``ci``, ``full`` or None (no scale variant is looked for).

    Returns:
        The path of the profile file.

    Raises:
        ConfigError: ``scale`` is not ci/full, or ``value`` is neither an existing file nor a
            bundled name; the message names ``--profile``, the value and the bundled names.
    """
    if scale is not None and scale not in SCALES:
        raise _scale_error(scale)
    if _is_file(value, "--profile"):
        return Path(value)
    names = profile_names()
    if scale == "ci" and f"{value}-ci" in names:
        return data_path("profiles", f"{value}-ci.yaml")
    if value in names:
        return data_path("profiles", f"{value}.yaml")
    raise ConfigError(f"'--profile': got {value!r}, expected an existing profile YAML file or a "
                      f"bundled profile name ({', '.join(names)}) in the command line; pass a path "
                      "to a profile file or one of the bundled names")


def manifest_names() -> tuple[str, ...]:
    """The bundled manifests' names (file names without ``.yaml``), sorted.

    Example: ``('consumer-deployment', 'consumer-deployment-ci', 'hpa-cpu', ...)``.
    """
    return tuple(sorted(p.stem for p in data_path("k8s").glob("*.yaml") if p.is_file()))


def manifest_path(name: str) -> Path:
    """The path of one bundled manifest.

    Args:
        name: its name, with or without ``.yaml`` (``scaledobject-ci`` or
            ``scaledobject-ci.yaml``).

    Raises:
        ConfigError: no bundled manifest has that name; the message lists the bundled names.
    """
    stem, names = _stem(name), manifest_names()
    if stem not in names:
        raise ConfigError(f"manifest {name!r}: not bundled, expected one of {', '.join(names)}; "
                          "pass one of the bundled names or a path to your own manifest")
    return data_path("k8s", f"{stem}.yaml")


def resolve_manifest(value: str, option: str) -> Path:
    """Turn a manifest option's value (``--policy``, ``--deployment``, ...) into a file.

    A path to an existing file wins (returned as given); else the value is a bundled manifest's
    name, with or without ``.yaml`` (``scaledobject-ci``).

    Args:
        value: a path to a manifest YAML, or a bundled name (see :func:`manifest_names`).
        option: where the value came from, named in the error (``--policy``,
            ``phases[1].policy``).

    Raises:
        ConfigError: neither an existing file nor a bundled name; the message names ``option``,
            the value and the bundled names.
    """
    if _is_file(value, option):
        return Path(value)
    stem, names = _stem(value), manifest_names()
    if stem in names:
        return data_path("k8s", f"{stem}.yaml")
    raise ConfigError(f"{option!r}: got {value!r}, expected an existing manifest YAML file or a "
                      f"bundled manifest name ({', '.join(names)}); pass a path to a manifest "
                      "file or one of the bundled names")


def manifest_paths(scale: str, k8s_dir: str | Path | None = None) -> dict[str, Path]:
    """The committed manifests for ``--lagscale-scale``: ``ci`` uses the ``-ci`` variants.

    Args:
        scale: ``ci`` or ``full``.
        k8s_dir: directory holding the manifests instead of the bundled ones (None: bundled).

    Returns:
        ``{'deployment': ..., 'scaled_object': ..., 'cpu_hpa': ...}``, paths of YAML files.

    Raises:
        ConfigError: unknown scale.
    """
    if scale not in SCALES:
        raise _scale_error(scale)
    base = Path(k8s_dir) if k8s_dir is not None else data_path("k8s")
    suffix = "-ci" if scale == "ci" else ""
    return {"deployment": base / f"consumer-deployment{suffix}.yaml",
            "scaled_object": base / f"scaledobject{suffix}.yaml",
            "cpu_hpa": base / f"hpa-cpu{suffix}.yaml"}


def _stem(name: str) -> str:
    return name[:-len(".yaml")] if name.endswith(".yaml") else name


def _scale_error(scale: object) -> ConfigError:
    return ConfigError(f"'--lagscale-scale': got {scale!r}, expected one of ci, full in the "
                       "command line; use ci or full")
