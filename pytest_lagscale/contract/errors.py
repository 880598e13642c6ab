"""Exceptions raised by pytest-lagscale and its replica program (contract layer).

Every error the harness and the replica raise derives from :class:`LagscaleError` (itself a ``RuntimeError``,
as in testcontainers' ``core/exceptions.py``), so callers can catch the family with one clause.
Messages start with their subject (the quoted key as the user wrote it, or the replica id),
give the value's repr and the allowed set or range with its unit, and end with the fix.
"""

from __future__ import annotations


class LagscaleError(RuntimeError):
    """Base class of every error raised by pytest-lagscale."""


class ConfigError(LagscaleError, ValueError):
    """Invalid user input: a profile, a manifest field or a command-line value.

    Args:
        problems: one line per problem, each naming the field, the value and the allowed range.
            All problems of one input are reported together.
    """

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class BrokerError(LagscaleError):
    """The Kafka broker could not be resolved, formatted, started, reached or administered."""


class ReplicaError(LagscaleError):
    """A consumer replica misbehaved (failed to start, crashed, did not drain)."""


class ReplicaExited(ReplicaError):
    """A replica process exited when it should have been running.

    Attributes:
        replica_id: the replica that exited.
        returncode: its exit code (negative: killed by that signal number).
    """

    def __init__(self, replica_id: str, returncode: int, message: str):
        self.replica_id = replica_id
        self.returncode = returncode
        super().__init__(message)


class ReadinessTimeout(LagscaleError, TimeoutError):
    """A process did not become ready within its timeout (it is still running)."""


class RegressionError(LagscaleError):
    """A benchmark run regressed past a baseline's tolerance."""
