"""The contract between the harness (``pytest_lagscale``) and the replica program (``spark_consumer``).

The replica imports nothing else from ``pytest_lagscale``, and these modules import nothing else
from it and nothing heavy (standard library and numpy; pyspark and py4j only inside functions):

* :mod:`~pytest_lagscale.contract.wire`: the record wire format (280-byte values, keys).
* :mod:`~pytest_lagscale.contract.flags`: the replica's flag table (ranges, defaults, env vars).
* :mod:`~pytest_lagscale.contract.eventlog`: the JSONL event log writer and reader.
* :mod:`~pytest_lagscale.contract.clock`: the ``Clock`` Protocol, ``RealClock``, ``FakeClock``.
* :mod:`~pytest_lagscale.contract.errors`: ``LagscaleError`` and its subclasses.
* :mod:`~pytest_lagscale.contract.paths`: the per-user cache directory.
* :mod:`~pytest_lagscale.contract.jvm`: the one JVM launch path (replica engine, reconciliation).
* :mod:`~pytest_lagscale.contract.rundir`: the run-directory layout.
"""
