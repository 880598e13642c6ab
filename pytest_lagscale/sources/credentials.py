"""Credentials of the lag sources: read from the environment, never shown.

A :class:`Secret` holds one credential (a Confluent Cloud API key or secret, an AWS secret
access key). Its ``repr`` and ``str`` are ``'***'``, so it can sit in a settings dataclass that
is logged, put in an exception or written to JSON without leaking; only :meth:`Secret.reveal`
gives the value, and only the code that sends it (an ``Authorization`` header, a boto3 client)
calls it. :func:`redact` does the same for a plain mapping of options (a run's settings before
they go into ``benchmark.json`` or a log line).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ..contract.errors import ConfigError

#: What every secret shows instead of its value.
REDACTED = "***"
#: Option names whose values are credentials (case-insensitive, anywhere in the name).
_SECRET_NAME = re.compile(r"secret|password|token|api_?key|access_?key|credential", re.IGNORECASE)
#: Option names that only *name* a credential (an environment variable) and may be shown.
_NAMES_A_VARIABLE = re.compile(r"_env$|FromEnv$", re.IGNORECASE)


class Secret:
    """One credential; shown as ``'***'`` everywhere.

    Args:
        value: the credential.
        origin: where it came from, for messages (``$CONFLUENT_API_KEY``); shown.
    """

    __slots__ = ("_value", "origin")

    def __init__(self, value: str, origin: str = "inline"):
        self._value = value
        self.origin = origin

    def reveal(self) -> str:
        """The credential itself: only for the request that sends it."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({REDACTED!r}, origin={self.origin!r})"

    def __str__(self) -> str:
        return REDACTED

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: Any) -> Secret:
        return self

    def __reduce__(self) -> Any:  # no pickling of the value into a run directory or a child
        raise TypeError("a Secret is not picklable; pass the name of its environment variable")


def secret_from_env(variable: str, key: str, source: str,
                    environ: Mapping[str, str] | None = None) -> Secret:
    """The credential in environment variable ``variable``.

    Args:
        variable: the environment variable's name (``CONFLUENT_API_KEY``).
        key: the option that named it, for the message (``api_key_env``).
        source: the label of the options (``confluent lag source``).
        environ: the environment (default ``os.environ``).

    Raises:
        ConfigError: the variable is unset or empty (the message names it, never a value).
    """
    value = (os.environ if environ is None else environ).get(variable, "")
    if not value:
        raise ConfigError(f"'{key}': got {variable!r}, expected the name of a set, non-empty environment "
                          f"variable in {source}; export {variable}=... before the run")
    return Secret(value, origin=f"${variable}")


def is_secret_key(key: str) -> bool:
    """``key`` names a credential value (``api_secret``, ``awsSecretAccessKey``, ``password``),
    not the name of a variable holding one (``api_secret_env``, ``awsSecretAccessKeyFromEnv``)."""
    return bool(_SECRET_NAME.search(key)) and not _NAMES_A_VARIABLE.search(key)


def redact(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``options`` fit for JSON and logs: every credential value (by key name, see
    :func:`is_secret_key`, or a :class:`Secret`) replaced by ``'***'``; nested mappings too.

    Example:
        >>> redact({"cluster_id": "lkc-1", "api_secret": "s3cr3t", "api_key_env": "CONFLUENT_API_KEY"})
        {'cluster_id': 'lkc-1', 'api_secret': '***', 'api_key_env': 'CONFLUENT_API_KEY'}
    """
    out: dict[str, Any] = {}
    for key, value in options.items():
        if isinstance(value, Mapping):
            out[key] = redact(value)
        elif isinstance(value, Secret) or (is_secret_key(str(key)) and value not in (None, "")):
            out[key] = REDACTED
        else:
            out[key] = value
    return out
