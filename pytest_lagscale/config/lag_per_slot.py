"""Load and validate the lag-per-slot halving policy's manifest (kind ``LagPerSlotPolicy``).

The recipe "Kafka Lag Autoscaler" (Cohestra docs, autoscaling/kafka-lag, class
``KafkaLagAutoscaler``) keeps its rules in five constants. The manifest holds them under
``spec`` with camelCase names (house style: YAML keys are camelCase), plus the evaluation
interval the recipe leaves to whoever calls it:

=================  ===============  ========  ======================================  =======
``spec`` key       recipe constant  unit      allowed                                 recipe
=================  ===============  ========  ======================================  =======
minParallelism     MIN_PARALLELISM  replicas  integer >= 1, <= maxParallelism         2
maxParallelism     MAX_PARALLELISM  replicas  integer >= 1                            64
lagPerSlot         LAG_PER_SLOT     records   integer >= 1                            50,000
scaleDownLag       SCALE_DOWN_LAG   records   integer >= 1, <= lagPerSlot             10,000
cooldownSeconds    COOLDOWN         seconds   integer >= 0                            300
pollingInterval    (none)           seconds   integer >= 1; default 30 (KEDA's)       -
=================  ===============  ========  ======================================  =======

The five recipe constants are required (a default would silently be a full-scale value: a
300 s cooldown in a 240 s ci run); ``scaleDownLag <= lagPerSlot`` is checked across fields (the
band between them is where the recipe holds). The harness scales the run's Deployment (there is
no operator for this kind on a cluster); docs/policies.md, "The manifest".

Example:
    >>> config = parse_lag_per_slot({"apiVersion": API_VERSION, "kind": "LagPerSlotPolicy",
    ...     "metadata": {"name": "c"}, "spec": {"minParallelism": 2, "maxParallelism": 64,
    ...     "lagPerSlot": 50000, "scaleDownLag": 10000, "cooldownSeconds": 300}})
    >>> config.lag_per_slot_records, config.cooldown_s, config.polling_interval_s
    (50000, 300, 30)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pytest_lagscale.config import _read
from pytest_lagscale.config._objects import ObjectMeta, collect_envelope
from pytest_lagscale.config._problems import MISSING, Problems, join

API_VERSION = "lagscale.dev/v1alpha1"
KIND = "LagPerSlotPolicy"
#: ``spec`` key -> (recipe constant, lowest value, unit, the recipe's value).
RECIPE_FIELDS: dict[str, tuple[str, int, str, int]] = {
    "minParallelism": ("MIN_PARALLELISM", 1, "replicas", 2),
    "maxParallelism": ("MAX_PARALLELISM", 1, "replicas", 64),
    "lagPerSlot": ("LAG_PER_SLOT", 1, "records", 50_000),
    "scaleDownLag": ("SCALE_DOWN_LAG", 1, "records", 10_000),
    "cooldownSeconds": ("COOLDOWN", 0, "seconds", 300),
}
SPEC_KEYS = (*RECIPE_FIELDS, "pollingInterval")
DEFAULT_POLLING_INTERVAL_S = 30


@dataclass(frozen=True)
class LagPerSlotConfig:
    """A validated ``LagPerSlotPolicy``; the field defaults are the recipe's constants.

    Attributes:
        source: the file it was read from.
        meta: name, namespace, labels and annotations.
        min_parallelism: MIN_PARALLELISM, replicas (>= 1): the halving floor.
        max_parallelism: MAX_PARALLELISM, replicas (>= minParallelism): the scale-up cap.
        lag_per_slot_records: LAG_PER_SLOT, records of total lag per replica (>= 1).
        scale_down_lag_records: SCALE_DOWN_LAG, records (1..lagPerSlot): halve below it.
        cooldown_s: COOLDOWN, seconds between two operations (changes of replicas), >= 0.
        polling_interval_s: seconds between two evaluations (>= 1), default 30.
        kind: class constant ``LagPerSlotPolicy`` (the policy registry key).
    """

    source: str
    meta: ObjectMeta
    min_parallelism: int = 2
    max_parallelism: int = 64
    lag_per_slot_records: int = 50_000
    scale_down_lag_records: int = 10_000
    cooldown_s: int = 300
    polling_interval_s: int = DEFAULT_POLLING_INTERVAL_S
    kind: ClassVar[str] = KIND

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.meta.name


def load_lag_per_slot(path: str | Path) -> LagPerSlotConfig:
    """Read and validate a ``LagPerSlotPolicy`` YAML file.

    Raises:
        ConfigError: every problem in the file, one line each.
    """
    return parse_lag_per_slot(_read.load_yaml(path), source=str(path))


def parse_lag_per_slot(doc: Any, *, source: str = "<string>") -> LagPerSlotConfig:
    """Validate a loaded ``LagPerSlotPolicy`` document (see the module docstring for the keys).

    Args:
        doc: the YAML document as loaded (a mapping).
        source: file name or label used in messages.

    Raises:
        ConfigError: every problem, one line each (``'<key>': got <value>, expected <range>
            (<unit>) in <source>; <fix>``).
    """
    p = Problems(source)
    meta, spec = collect_envelope(doc, p, api_version=API_VERSION, kind=KIND)
    if spec is None:
        p.raise_if_any()
    assert spec is not None
    p.unknown_keys(spec, "spec", SPEC_KEYS)
    values = {key: _recipe_integer(spec, key, p) for key in RECIPE_FIELDS}
    polling = _read.integer(spec, "pollingInterval", "spec", p, default=DEFAULT_POLLING_INTERVAL_S,
                            lo=1, unit="seconds")
    _cross_field(values, p)
    p.raise_if_any()
    assert meta is not None and polling is not None
    return LagPerSlotConfig(source, meta, values["minParallelism"], values["maxParallelism"],
                            values["lagPerSlot"], values["scaleDownLag"], values["cooldownSeconds"],
                            polling)


def _recipe_integer(spec: Mapping[str, Any], key: str, p: Problems) -> int | None:
    """A required recipe constant; a missing one's fix names the recipe's value."""
    constant, lo, unit, recipe = RECIPE_FIELDS[key]
    if key not in spec:
        sub = join("spec", key)
        p.add(sub, MISSING, f"an integer >= {lo} ({unit})",
              f"add '{sub}', e.g. {recipe} (the recipe's {constant})")
        return None
    return _read.integer(spec, key, "spec", p, lo=lo, unit=unit)


def _cross_field(values: Mapping[str, int | None], p: Problems) -> None:
    low, high = values["minParallelism"], values["maxParallelism"]
    if low is not None and high is not None and low > high:
        p.add("spec.minParallelism", low, f"<= spec.maxParallelism ({high}) (replicas)",
              "lower minParallelism or raise maxParallelism")
    down, per_slot = values["scaleDownLag"], values["lagPerSlot"]
    if down is not None and per_slot is not None and down > per_slot:
        p.add("spec.scaleDownLag", down, f"<= spec.lagPerSlot ({per_slot}) (records)",
              "lower scaleDownLag or raise lagPerSlot (lag between the two holds)")


__all__ = ["API_VERSION", "KIND", "LagPerSlotConfig", "load_lag_per_slot", "parse_lag_per_slot"]
