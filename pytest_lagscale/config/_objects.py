"""The envelope every Kubernetes object shares: apiVersion, kind, metadata, spec."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pytest_lagscale.config import _read
from pytest_lagscale.config._problems import MISSING, Problems, join

TOP_KEYS = ("apiVersion", "kind", "metadata", "spec", "status")
META_KEYS = ("name", "namespace", "labels", "annotations", "generateName", "uid", "resourceVersion",
             "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
             "ownerReferences", "finalizers", "managedFields", "selfLink")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class ObjectMeta:
    """The parts of ``metadata`` the harness reads.

    Attributes:
        name: object name (DNS-1123 subdomain).
        namespace: namespace, None when unset.
        labels: ``metadata.labels``.
        annotations: ``metadata.annotations`` (strings).
    """

    name: str
    namespace: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


def collect_envelope(doc: Any, p: Problems, *, api_version: str,
                     kind: str) -> tuple[ObjectMeta | None, Mapping[str, Any] | None]:
    """Check apiVersion/kind, read metadata and return it with the ``spec`` mapping.

    Args:
        doc: the loaded YAML document.
        p: where problems are recorded.
        api_version: the required ``apiVersion``.
        kind: the required ``kind``.
    """
    root = _read.mapping(doc, "", p, f"a {kind} object (a YAML mapping)")
    if root is None:
        return None, None
    p.unknown_keys(root, "", TOP_KEYS)
    for key, wanted in (("apiVersion", api_version), ("kind", kind)):
        value = root.get(key, MISSING)
        if value != wanted:
            p.add(key, value, repr(wanted), f"set {key}: {wanted}")
    meta = _metadata(root.get("metadata", MISSING), p)
    spec = root.get("spec", MISSING)
    if spec is MISSING:
        p.add("spec", spec, f"the {kind} spec (a mapping)", "add a spec section")
        return meta, None
    return meta, _read.mapping(spec, "spec", p)


def _metadata(node: Any, p: Problems) -> ObjectMeta | None:
    if node is MISSING:
        p.add("metadata", node, "a mapping with 'name'", "add metadata: {name: ...}")
        return None
    data = _read.mapping(node, "metadata", p)
    if data is None:
        return None
    p.unknown_keys(data, "metadata", META_KEYS)
    name = _read.string(data, "name", "metadata", p)
    if isinstance(name, str) and (len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name)):
        p.add("metadata.name", name, "a DNS-1123 subdomain (lower-case letters, digits, '-', '.')",
              f"use e.g. {re.sub(r'[^a-z0-9.-]+', '-', name.lower()).strip('-.') or 'lagscale'!r}")
        name = None
    namespace = _read.string(data, "namespace", "metadata", p, default=None)
    labels = _string_map(data, "labels", p)
    annotations = _string_map(data, "annotations", p)
    if name is None:
        return None
    return ObjectMeta(name, namespace, labels, annotations)


def _string_map(data: Mapping[str, Any], key: str, p: Problems) -> Mapping[str, str]:
    node = data.get(key)
    if node is None:
        return MappingProxyType({})
    path = join("metadata", key)
    mapping = _read.mapping(node, path, p)
    if mapping is None:
        return MappingProxyType({})
    for k, v in mapping.items():
        if not isinstance(v, str):
            p.add(join(path, k), v, "a string (Kubernetes labels and annotations are strings)",
                  f"quote it: '{v}'")
    return MappingProxyType({k: v for k, v in mapping.items() if isinstance(v, str)})
