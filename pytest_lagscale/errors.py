"""Exceptions raised by pytest-lagscale: re-exported from :mod:`pytest_lagscale.contract.errors`.

The definitions live in the contract layer (shared with the replica program); this module keeps
the harness's ``from pytest_lagscale.errors import ...`` imports working.
"""

from .contract.errors import (BrokerError, ConfigError, LagscaleError, ReadinessTimeout,
                              RegressionError, ReplicaError, ReplicaExited)

__all__ = ["BrokerError", "ConfigError", "LagscaleError", "ReadinessTimeout", "RegressionError",
           "ReplicaError", "ReplicaExited"]
