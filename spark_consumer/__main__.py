"""``python -m spark_consumer`` / ``spark-consumer``: run one replica until SIGTERM.

Exit codes: 0 after a clean drain (or a stop before joining), 1 on a fatal error or a drain
that outlived ``--drain-timeout``, 2 for invalid flags (nothing started, nothing joined).
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import sys
from typing import Sequence

from pytest_lagscale.contract.clock import RealClock
from pytest_lagscale.contract.errors import ConfigError

from .dimension import load_dimension
from .engine import REGISTRY, make_engine
from .eventlog import EventLog
from .metrics import ReplicaMetrics
from .options import ConsumerOptions, parse_options
from .replica import Replica, ReplicaParts
from .store import ParquetStore, Sink
from .topic_sink import TopicSink

PROG = "spark-consumer"
EXIT_USAGE = 2


def build_replica(opts: ConsumerOptions) -> Replica:
    """Wire a replica from validated options (nothing is started but the sink's client).

    Raises:
        ConfigError: the dimension table or the store directory is unusable.
    """
    dimension = load_dimension(opts.dimension)
    store: Sink
    if opts.sink == "topic":
        assert opts.output_topic is not None  # options: --output-topic is required with it
        store = TopicSink(opts.bootstrap, opts.output_topic, opts.replica_id)
    else:
        try:
            store = ParquetStore(opts.store, opts.replica_id)
        except OSError as exc:
            raise ConfigError(f"--store: {str(opts.store)!r} cannot be created ({exc}); pass "
                              "a writable directory") from exc
    clock = RealClock()
    events = EventLog(opts.replica_id, opts.event_log, clock)
    engine = make_engine(opts.engine, dimension, opts.replica_id, remote=opts.spark_remote)
    parts = ReplicaParts(opts=opts, engine=engine, events=events, metrics=ReplicaMetrics(clock),
                         store=store, clock=clock)
    return Replica(parts)


class _NoPandas:
    """Import finder refusing pandas: the replica never uses it, but pyarrow and pyspark import
    it on first contact when installed (about 37 MB of RSS per replica); both handle its
    absence."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not loaded in a spark_consumer replica")
        return None


def _lean_memory() -> None:
    """Process-wide memory settings for a replica (each measured in the footprint benchmark).

    * glibc: at most 2 malloc arenas (librdkafka, the HTTP server and the JVM's threads each
      got their own otherwise); ``MALLOC_ARENA_MAX`` is also exported for the JVM child.
    * pyarrow: the system allocator instead of mimalloc, which kept freed batch buffers.
    * pandas is refused (see :class:`_NoPandas`).
    """
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    try:
        ctypes.CDLL("libc.so.6").mallopt(-8, 2)  # M_ARENA_MAX
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _NoPandas())


def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags, run a replica, return its exit code (2 for bad flags).

    Python's faulthandler is on from the start (the harness also sets ``PYTHONFAULTHANDLER``; a
    container started by a cluster has no such variable): a native crash in librdkafka, pyarrow
    or the engine prints the Python stack of every thread to stderr, the replica's log.
    """
    if not faulthandler.is_enabled():
        faulthandler.enable()
    _lean_memory()
    try:
        opts = parse_options(argv)
        if REGISTRY[opts.engine].needs_pandas:  # the Spark Connect client imports it
            sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _NoPandas)]
        replica = build_replica(opts)
    except ConfigError as exc:
        for line in exc.problems:
            print(f"{PROG}: error: {line}", file=sys.stderr)
        return EXIT_USAGE
    replica.install_signal_handlers()
    try:
        return replica.run()
    finally:
        replica.p.events.close()


if __name__ == "__main__":
    sys.exit(main())
