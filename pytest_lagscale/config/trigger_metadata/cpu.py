"""The ``cpu`` trigger's ``metadata`` (``value``, ``containerName``), validated (pure).

``CpuTrigger`` (``control/keda/cpu.py``) builds the Resource metric from it.

Source: kedacore/keda pkg/scalers/cpu_memory_scaler.go (cpuMemoryMetadata) v2.20.2
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pytest_lagscale.config import _read
from pytest_lagscale.config._problems import MISSING, Problems, join

METADATA_KEYS = ("value", "containerName")
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class CpuTriggerMetadata:
    """Validated ``cpu`` trigger metadata.

    Attributes:
        target_utilization_percent: target average utilization in percent of CPU requests (> 0).
        container_name: ``containerName`` (None = whole pod).
    """

    target_utilization_percent: int
    container_name: str | None = None


def collect_cpu_metadata(metadata: Any, path: str, p: Problems,
                         has_authentication_ref: bool = False) -> CpuTriggerMetadata | None:
    """Validate ``metadata`` (``value``: a quoted integer percent > 0; optional
    ``containerName``) into ``p``; None when invalid."""
    data = _read.mapping(metadata, path, p, "a mapping with 'value'")
    if data is None:
        return None
    p.unknown_keys(data, path, METADATA_KEYS,
                   unsupported={"type": "remove it and set the trigger's metricType"})
    value = data.get("value", MISSING)
    allowed = "a string holding an integer > 0 (percent of CPU requests)"
    if not isinstance(value, str) or not _DIGITS.fullmatch(value.strip()) or int(value) <= 0:
        fix = f"quote it: '{value}'" if isinstance(value, int) and value > 0 else "set it to e.g. '70'"
        p.add(join(path, "value"), value, allowed, fix)
        return None
    container = data.get("containerName")
    if container is not None and (not isinstance(container, str) or not container):
        p.add(join(path, "containerName"), container, "a container name", "write the container's name")
    return CpuTriggerMetadata(int(value), container)
