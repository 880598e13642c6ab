"""KEDA's ``metrics-api`` trigger: metadata with KEDA's rules, and a JSON answer -> metric,
activity, proposal (pure).

The scaler GETs ``url`` and reads one number at ``valueLocation`` (a GJSON path for ``json``):
the recipe's "job's own health summary" is such an endpoint. Metadata (strings): the keys,
their defaults and meanings are tabled in docs/lag-sources.md, "KEDA triggers for the same
sources"; the reader is :mod:`pytest_lagscale.config.trigger_metadata`.

The metric is ``s<i>-metric-api-<valueLocation>`` (``/ . : % ( )`` as ``-``).

Registered in :data:`~pytest_lagscale.control.keda.registry.TRIGGERS`; the runner fetches the
answer (:mod:`pytest_lagscale.platform.value_triggers`) into ``observation.values`` and
:meth:`~.value_trigger.ValueTrigger.evaluate` parses it here.

Its user: a ScaledObject copied from a cluster whose trigger is ``type: metrics-api`` (no bundled
manifest or experiment has one); docs/lag-sources.md "KEDA triggers for the same sources" and
"KEDA's value triggers" present it, and tests/unit/control/test_value_triggers_registered.py
``test_metrics_api_trigger_runs_from_its_endpoint_to_a_decision`` runs it from the endpoint's
answer to a scaling decision.

Source: kedacore/keda pkg/scalers/metrics_api_scaler.go (metricsAPIScalerMetadata,
parseMetricsAPIMetadata, getValueFromJSONResponse, GetMetricSpecForScaling,
GetMetricsAndActivity) v2.20.2; tidwall/gjson path syntax (keys, array indexes, ``\\.`` escapes)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from pytest_lagscale.config.trigger_metadata.metrics_api import MetricsApiTriggerMetadata
from pytest_lagscale.control.keda.base import TriggerError, TriggerResult
from pytest_lagscale.control.keda.value_trigger import ValueTrigger


#: Kubernetes quantity suffixes -> multipliers (a string value is parsed as a quantity).
_SUFFIX = {"": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
           "E": 1e18, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)")
_GJSON_SPECIAL = re.compile(r"[*?#@|!=<>%]")


def gjson_get(document: Any, path: str) -> Any:
    """The value at GJSON ``path`` (dot-separated keys, array indexes as numbers, ``\\.`` for a
    literal dot), or None when absent.

    Raises:
        ValueError: the path uses GJSON syntax beyond that (wildcards, queries, modifiers).
    """
    if _GJSON_SPECIAL.search(path.replace("\\.", "")):
        raise ValueError(f"valueLocation {path!r} uses GJSON wildcards, queries or modifiers, which lagscale does "
                         "not read; use plain keys and indexes such as 'data.0.value'")
    node = document
    for part in re.split(r"(?<!\\)\.", path):
        key = part.replace("\\.", ".")
        if isinstance(node, list) and key.isdigit():
            node = node[int(key)] if int(key) < len(node) else None
        elif isinstance(node, Mapping):
            node = node.get(key)
        else:
            return None
        if node is None:
            return None
    return node


def parse_quantity(text: str) -> float:
    """A Kubernetes quantity (``1500``, ``1.5k``, ``250m``, ``2Gi``) as a float.

    Raises:
        ValueError: it is not one.
    """
    found = _QUANTITY.fullmatch(text.strip())
    if not found:
        raise ValueError(text)
    return float(found[1]) * _SUFFIX[found[2]]


def value_from_json(body: bytes | str, value_location: str) -> float:
    """The number KEDA reads at ``value_location`` in a JSON answer: a JSON number, or a string
    holding a Kubernetes quantity.

    Raises:
        TriggerError: the body is not JSON, or the location holds something else (KEDA's messages).

    Source: kedacore/keda pkg/scalers/metrics_api_scaler.go getValueFromJSONResponse v2.20.2
    """
    try:
        document = json.loads(body)
        found = gjson_get(document, value_location)
    except ValueError as exc:
        raise TriggerError(f"metrics-api: {exc}") from exc
    if isinstance(found, str):
        try:
            return parse_quantity(found)
        except ValueError:
            raise TriggerError(f"valueLocation {value_location!r} points to a string that is not parseable as a "
                               "Quantity") from None
    if isinstance(found, bool) or not isinstance(found, (int, float)):
        kind = ("Null" if found is None else "True" if found is True else "False" if found is False else "JSON")
        raise TriggerError(f"valueLocation {value_location!r} must point to a numeric value or a string parseable as "
                           f"a Quantity, got {kind}")
    return float(found)


class MetricsApiTrigger(ValueTrigger):
    """A ``type: metrics-api`` trigger.

    Args:
        meta: the validated metadata.
        trigger_index: position in ``spec.triggers``.
        metric_type: ``AverageValue`` (default) or ``Value``.
    """

    metric_types: ClassVar[tuple[str, ...]] = ("AverageValue", "Value")

    def __init__(self, meta: MetricsApiTriggerMetadata, *, trigger_index: int = 0, metric_type: str = "AverageValue"):
        super().__init__(f"metric-api-{meta.value_location}", meta.target_value, meta.activation_target_value,
                         trigger_index=trigger_index, metric_type=metric_type, type_name="metrics-api")
        self.meta = meta

    def evaluate_response(self, body: bytes | str) -> TriggerResult:
        """The metric and activity for one ``json`` answer (:func:`value_from_json`).

        Raises:
            TriggerError: the format is not json, or as :func:`value_from_json`.
        """
        if self.meta.format != "json":
            raise TriggerError(f"metrics-api: format {self.meta.format!r} is parsed but not read by lagscale yet; "
                               "use format: json")
        return self.result(value_from_json(body, self.meta.value_location))
