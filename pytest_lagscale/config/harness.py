"""Harness-only settings, written as ``metadata.annotations`` of the committed manifests.

A real cluster sets these with kube-controller-manager flags, not in any object, so they are
not ScaledObject or HPA spec fields. Kubernetes and KEDA ignore unknown annotations, so the
same file applies unchanged to a cluster; the local controller reads them:

==================================================== ======= =====================================
annotation                                            default controller flag it stands for
==================================================== ======= =====================================
``lagscale.dev/hpa-sync-period-seconds``              15      ``--horizontal-pod-autoscaler-sync-period``
``lagscale.dev/hpa-tolerance``                        0.1     ``--horizontal-pod-autoscaler-tolerance``
``lagscale.dev/hpa-downscale-stabilization-seconds``  300     ``--horizontal-pod-autoscaler-downscale-stabilization``
``lagscale.dev/local-scaler-address``                 unset   (the scaler's Deployment + Service)
``lagscale.dev/local-scaler-kind``                    persistent-lag  (which scaler that Service runs)
==================================================== ======= =====================================

Values are strings (annotations are ``map[string]string``) holding decimal numbers, except
``local-scaler-address``: the ``host:port`` of an external scaler's Service that the local
platform stands in for. A ``type: external`` trigger whose ``scalerAddress`` is that address
(or ``lagscale://local``) is served by the run's own ``lagscale scaler serve``, as the cluster's
Service would send it to ``k8s/persistent-lag-scaler.yaml``'s pods; ``local-scaler-kind`` names
the scaler kind it serves (a key of ``pytest_lagscale.scalers.SCALER_KINDS``:
``persistent-lag``, or ``share-group`` for ``k8s/share-group-scaler.yaml``'s).
Source: kubernetes/kubernetes pkg/controller/podautoscaler/config/v1alpha1/defaults.go v1.28.0;
docs/semantics.md §3.1
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_lagscale.config._problems import Problems, join

_ADDRESS = re.compile(r"[A-Za-z0-9.-]+:[0-9]{1,5}")

PREFIX = "lagscale.dev/"
SYNC_PERIOD = PREFIX + "hpa-sync-period-seconds"
TOLERANCE = PREFIX + "hpa-tolerance"
DOWNSCALE_STABILIZATION = PREFIX + "hpa-downscale-stabilization-seconds"
LOCAL_SCALER_ADDRESS = PREFIX + "local-scaler-address"
LOCAL_SCALER_KIND = PREFIX + "local-scaler-kind"
#: ``local-scaler-kind`` values: the keys of ``pytest_lagscale.scalers.SCALER_KINDS`` (kept here
#: so config imports no scaler; a unit test keeps the two equal).
LOCAL_SCALER_KINDS = ("persistent-lag", "share-group")


@dataclass(frozen=True)
class HarnessSettings:
    """Controller-level settings a cluster takes from flags.

    Attributes:
        hpa_sync_period_s: seconds between two HPA reconciles (> 0), default 15.
        hpa_tolerance: ratio band around 1.0 within which the HPA keeps the replica count
            ([0, 1)), default 0.1.
        hpa_downscale_stabilization_s: scale-down window in seconds used when behavior is
            absent or leaves scaleDown.stabilizationWindowSeconds unset (>= 0), default 300.
        local_scaler_address: the ``host:port`` the run's own external scaler stands in for
            (None: only ``lagscale://local``).
        local_scaler_kind: the kind of scaler the run serves for it (``persistent-lag``).
    """

    hpa_sync_period_s: float = 15.0
    hpa_tolerance: float = 0.1
    hpa_downscale_stabilization_s: float = 300.0
    local_scaler_address: str | None = None
    local_scaler_kind: str = "persistent-lag"


_RULES = {
    SYNC_PERIOD: ("hpa_sync_period_s", 0.0, False, None, "a decimal number of seconds > 0", "'15'"),
    TOLERANCE: ("hpa_tolerance", 0.0, True, 1.0, "a decimal number in [0, 1)", "'0.1'"),
    DOWNSCALE_STABILIZATION: ("hpa_downscale_stabilization_s", 0.0, True, None,
                              "a decimal number of seconds >= 0", "'300'"),
}


def collect_harness_settings(annotations: Mapping[str, Any], path: str, p: Problems) -> HarnessSettings:
    """Read the ``lagscale.dev/*`` annotations; other annotations are left alone.

    Args:
        annotations: ``metadata.annotations`` as loaded.
        path: its key path (``metadata.annotations``).
        p: where problems are recorded (unknown ``lagscale.dev/`` keys are problems).
    """
    values: dict[str, Any] = {}
    ours = {k: v for k, v in annotations.items() if str(k).startswith(PREFIX)}
    p.unknown_keys(ours, path, (*_RULES, LOCAL_SCALER_ADDRESS, LOCAL_SCALER_KIND))
    if LOCAL_SCALER_KIND in ours:
        kind = ours[LOCAL_SCALER_KIND]
        if kind not in LOCAL_SCALER_KINDS:
            p.add(join(path, LOCAL_SCALER_KIND), kind, "one of " + ", ".join(LOCAL_SCALER_KINDS),
                  "set it to the kind `lagscale scaler serve --kind` runs behind the address")
        else:
            values["local_scaler_kind"] = kind
    if LOCAL_SCALER_ADDRESS in ours:
        text = ours[LOCAL_SCALER_ADDRESS]
        if not isinstance(text, str) or not _ADDRESS.fullmatch(text):
            p.add(join(path, LOCAL_SCALER_ADDRESS), text, "'host:port' (a scaler Service's address)",
                  "set it to the scalerAddress of the trigger, e.g. 'lagscale-persistent-lag-scaler:6000'")
        else:
            values["local_scaler_address"] = text
    for key, (name, lo, lo_inclusive, hi, allowed, example) in _RULES.items():
        if key not in ours:
            continue
        sub, text = join(path, key), ours[key]
        number = _number(text)
        if not isinstance(text, str):
            p.add(sub, text, f"a string holding {allowed}", f"quote it: '{text}'")
        elif number is None or not _within(number, lo, lo_inclusive, hi):
            p.add(sub, text, allowed, f"set it to a value in range, e.g. {example}")
        else:
            values[name] = number
    return HarnessSettings(**values)


def _number(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _within(value: float, lo: float, lo_inclusive: bool, hi: float | None) -> bool:
    above = value >= lo if lo_inclusive else value > lo
    return above and (hi is None or value < hi)
