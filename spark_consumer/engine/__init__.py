"""Enrichment engines: ``spark`` (local SparkSession, the default) and ``arrow`` (pyarrow)."""

from __future__ import annotations

import pyarrow as pa

from .base import ENRICHED_SCHEMA, Engine

__all__ = ["ENRICHED_SCHEMA", "Engine", "make_engine"]


def make_engine(name: str, dimension: pa.Table, app_name: str = "spark-consumer") -> Engine:
    """Build (not start) the engine called ``name``.

    Raises:
        ValueError: ``name`` is not ``spark`` or ``arrow``.
    """
    if name == "arrow":
        from .arrow import ArrowEngine

        return ArrowEngine(dimension)
    if name == "spark":
        from .spark import SparkEngine

        return SparkEngine(dimension, app_name=app_name)
    raise ValueError(f"--engine: {name!r} is not one of spark, arrow; pass one of those")
