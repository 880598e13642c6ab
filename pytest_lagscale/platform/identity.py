"""Stable replica identities, as a StatefulSet gives its pods (pure: no processes, no clock).

A StatefulSet names its pods ``<name>-<ordinal>`` and recreates a pod that is gone under the same
name; a container reads that name through the downward API (``env: [{name: POD_NAME,
valueFrom: {fieldRef: {fieldPath: metadata.name}}}]``) and Kubernetes expands ``$(POD_NAME)`` in
its ``args``. The local platform does the same for its replica processes: each replica holds an
identity slot (an ordinal), the lowest one no live replica holds, and the replacement of a replica
that exited takes the slot it left. With ``--instance-id=$(POD_NAME)`` in the replica's args, a
restarted replica rejoins its consumer group as the same static member (``group.instance.id``).

Source: Kubernetes StatefulSet pod identity ("Stable Network ID", kubernetes.io/docs/concepts/
workloads/controllers/statefulset) and dependent environment variables ("Define Environment
Variables for a Container", ``$(VAR_NAME)`` expansion in ``args``).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

#: The environment variable (and ``$(VAR)`` reference) carrying a replica's stable name.
POD_NAME_VAR = "POD_NAME"

_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def lowest_free_ordinal(taken: Iterable[int]) -> int:
    """The smallest ordinal >= 0 not in ``taken`` (the slots of the replicas still alive).

    >>> lowest_free_ordinal([0, 1, 3])
    2
    >>> lowest_free_ordinal([])
    0
    """
    used = set(taken)
    ordinal = 0
    while ordinal in used:
        ordinal += 1
    return ordinal


def pod_name(deployment_name: str, ordinal: int) -> str:
    """``<deployment_name>-<ordinal>``, a StatefulSet pod's name (``lagscale-consumer-0``).

    Raises:
        ValueError: ``ordinal`` is negative.
    """
    if ordinal < 0:
        raise ValueError(f"ordinal: {ordinal!r} is negative; use >= 0")
    return f"{deployment_name}-{ordinal}"


def expand_pod_fields(argv: Sequence[str], fields: Mapping[str, str]) -> tuple[str, ...]:
    """``argv`` with each ``$(VAR)`` whose VAR is in ``fields`` replaced by its value; other
    references stay as written (as Kubernetes leaves a reference it cannot resolve).

    >>> expand_pod_fields(["--instance-id=$(POD_NAME)", "$(OTHER)"], {"POD_NAME": "c-0"})
    ('--instance-id=c-0', '$(OTHER)')
    """
    return tuple(_REFERENCE.sub(lambda m: fields.get(m.group(1), m.group(0)), str(arg))
                 for arg in argv)


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value of ``flag`` in ``argv`` written ``--flag=value`` or ``--flag value`` (the
    last one wins), or None when absent.

    >>> flag_value(["prog", "--instance-id", "a", "--instance-id=b"], "--instance-id")
    'b'
    """
    value = None
    for i, arg in enumerate(argv):
        name, eq, rest = str(arg).partition("=")
        if name != flag:
            continue
        if eq:
            value = rest
        elif i + 1 < len(argv):
            value = str(argv[i + 1])
    return value


__all__ = ["POD_NAME_VAR", "expand_pod_fields", "flag_value", "lowest_free_ordinal", "pod_name"]
