"""Build documents from the committed manifests and edit them by key path."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

K8S = Path(__file__).resolve().parents[3] / "k8s"
DELETE = object()


def committed(name: str) -> dict:
    """A fresh copy of ``k8s/<name>`` as loaded."""
    return yaml.safe_load((K8S / name).read_text(encoding="utf-8"))


def edited(doc: dict, *edits: tuple[tuple[Any, ...], Any]) -> dict:
    """``doc`` with each ``(path, value)`` applied (``DELETE`` removes the key)."""
    out = copy.deepcopy(doc)
    for path, value in edits:
        node = out
        for key in path[:-1]:
            node = node[key]
        if value is DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return out
