"""JSONL event logs: re-exported from :mod:`pytest_lagscale.contract.eventlog`.

The definitions live in the contract layer (shared with the replica program); this module keeps
the harness's ``from pytest_lagscale.eventlog import ...`` imports working.
"""

from .contract.eventlog import EventLog, read_events

__all__ = ["EventLog", "read_events"]
