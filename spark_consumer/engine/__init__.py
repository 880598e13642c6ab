"""Enrichment engines and their registry.

* ``spark`` (:mod:`.spark`, the default): a local SparkSession in a JVM of the replica's own;
* ``arrow`` (:mod:`.arrow`): pyarrow, no JVM;
* ``spark-connect`` (:mod:`.connect`): a client of a Spark Connect server (``--spark-remote``).

A new engine is one module implementing :class:`~.base.Engine` plus one line in
:data:`REGISTRY` (and its name in ``ENGINES`` of :mod:`pytest_lagscale.contract.flags`).
Importing this package is cheap: implementations load when built.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import pyarrow as pa

from .base import ENRICHED_SCHEMA, Engine

__all__ = ["ENRICHED_SCHEMA", "REGISTRY", "Engine", "EngineEntry", "make_engine"]


@dataclass(frozen=True)
class EngineEntry:
    """How to build one engine.

    Attributes:
        target: ``"module:Class"``, the module relative to this package; built as
            ``Class(dimension, **kwargs)``.
        kwargs: which of :func:`make_engine`'s keyword arguments the class takes
            (``app_name``, ``remote``).
        needs_pandas: its client imports pandas (the replica refuses pandas otherwise).
    """

    target: str
    kwargs: tuple[str, ...] = ()
    needs_pandas: bool = False


REGISTRY: Mapping[str, EngineEntry] = MappingProxyType({
    "spark": EngineEntry(".spark:SparkEngine", ("app_name",)),
    "arrow": EngineEntry(".arrow:ArrowEngine"),
    "spark-connect": EngineEntry(".connect:SparkConnectEngine", ("app_name", "remote"),
                                 needs_pandas=True),
})
"""``--engine`` name -> how to build it, in ``--help`` order."""


def make_engine(name: str, dimension: pa.Table, app_name: str = "spark-consumer", *,
                remote: str | None = None) -> Engine:
    """Build (not start) the engine called ``name``.

    Args:
        name: a key of :data:`REGISTRY`.
        dimension: the table from :func:`spark_consumer.dimension.load_dimension`.
        app_name: the replica id (Spark application name, Connect user agent).
        remote: the Spark Connect URL (``--spark-remote``), for engines that take it.

    Raises:
        ValueError: ``name`` is not registered, or an engine that takes ``remote`` got none.
    """
    entry = REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"--engine: {name!r} is not one of {', '.join(REGISTRY)}; pass one "
                         "of those")
    if "remote" in entry.kwargs and not remote:
        raise ValueError(f"--spark-remote: missing with --engine {name}; pass --spark-remote "
                         "sc://HOST:PORT")
    given = {"app_name": app_name, "remote": remote}
    module, _, cls_name = entry.target.partition(":")
    cls = getattr(importlib.import_module(module, __name__), cls_name)
    return cls(dimension, **{key: given[key] for key in entry.kwargs})
