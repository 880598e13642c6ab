"""Recorded responses under tests/fixtures/lag_sources/, loaded with their timestamps as boto3 and
the clients give them."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lag_sources"


def load(name: str) -> Any:
    """The JSON fixture ``name`` (without its ``_source``/``_recorded`` note)."""
    data = json.loads((FIXTURES / name).read_text())
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if not k.startswith("_")}
    return data


def cloudwatch(name: str) -> dict[str, Any]:
    """A GetMetricStatistics fixture with ``Timestamp`` as aware datetimes (as boto3 parses them)."""
    data = load(name)
    for point in data["Datapoints"]:
        point["Timestamp"] = datetime.fromisoformat(point["Timestamp"])
    return data


def prometheus(name: str) -> list[dict[str, Any]]:
    """An instant-query fixture's ``data.result`` (what prometheus-api-client's custom_query returns)."""
    return load(name)["data"]["result"]
