"""Time as an input: re-exported from :mod:`pytest_lagscale.contract.clock`.

The definitions live in the contract layer (shared with the replica program); this module keeps
the harness's ``from pytest_lagscale.clock import ...`` imports working.
"""

from .contract.clock import Clock, FakeClock, RealClock

__all__ = ["Clock", "FakeClock", "RealClock"]
