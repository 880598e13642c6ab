"""The enrichment on a Spark Connect server: the replica is a thin gRPC client, no JVM.

``--engine spark-connect --spark-remote sc://HOST:PORT`` sends each batch to a Spark Connect
server (a cluster's, or the harness's :mod:`pytest_lagscale.spark_connect`) and reads the
enriched rows back as Arrow. The result equals the other engines' (:mod:`.base`).

Query shape: the dimension is uploaded once per session and kept on the server as two session
variables, ``segment`` and ``region`` arrays indexed by bucket (the dimension's buckets are
dense 0..n-1, :func:`spark_consumer.dimension.load_dimension`). A batch is one plan: the Arrow
batch as a local relation, one projection with ``try_element_at(array, bucket + 1)`` for the
left join, collected as Arrow. No join, no shuffle, no broadcast: the cheapest shape for the
server, which every replica shares (measurements in docs/replica.md).

Only pyspark's Connect client is used (``pyspark.sql.connect``), never the classic builder: the
classic ``SparkSession.builder.remote()`` switches the whole process into Connect mode
(``SPARK_CONNECT_MODE_ENABLED``), which would break a local SparkSession in the same process.
The Connect client imports pandas.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa

from pytest_lagscale.contract.errors import ReplicaError

from .base import ENRICHED_SCHEMA, warmup_records

#: Session variables holding the dimension on the server, per Connect session.
SEGMENT_VARIABLE = "lagscale_segment_by_bucket"
REGION_VARIABLE = "lagscale_region_by_bucket"
#: How long start() retries a server that does not answer (seconds).
CONNECT_TIMEOUT_S = 30.0
#: Backoff between retries of a call the server did not answer: 0.1 s doubling up to 2 s.
INITIAL_BACKOFF_MS = 100
MAX_BACKOFF_MS = 2000
_DIMENSION_VIEW = "lagscale_dimension"
_SECRET = re.compile(r"(token=)[^;]*", re.IGNORECASE)
_GRPC_STATUS = re.compile(r'status = StatusCode\.(\w+)\s+details = "([^"]*)"')


class SparkConnectEngine:
    """Enrichment on a Spark Connect server (a lookup in session variables, no join).

    Args:
        dimension: the table from :func:`spark_consumer.dimension.load_dimension`.
        remote: the server's URL, ``sc://HOST:PORT[/;key=value;...]`` (``--spark-remote``).
        app_name: the replica id, sent as the client's user agent.
        connect_timeout_s: how long :meth:`start` retries a server that does not answer, and
            each later call a server that stopped answering (seconds).

    Raises:
        ValueError: the dimension's buckets are not exactly 0..n-1.
        ReplicaError: from :meth:`start` when the server does not answer within
            ``connect_timeout_s`` or refuses the dimension upload (the message names
            ``--spark-remote`` and the URL, a token hidden).
        ImportError: from :meth:`start` when pyspark's Connect client dependencies (grpcio,
            grpcio-status, googleapis-common-protos, zstandard, pandas) are missing.
    """

    name = "spark-connect"

    def __init__(self, dimension: pa.Table, remote: str, app_name: str = "spark-consumer",
                 connect_timeout_s: float = CONNECT_TIMEOUT_S):
        buckets = dimension.column("bucket").to_numpy(zero_copy_only=False)
        if not np.array_equal(buckets, np.arange(dimension.num_rows)):
            raise ValueError("dimension: buckets are not exactly 0..n-1 in order; load it with "
                             "spark_consumer.dimension.load_dimension")
        self._dimension = dimension
        self.remote = remote
        self._app_name = app_name
        self._timeout_s = connect_timeout_s
        self._session: Any = None
        self._plan: _Plan | None = None
        #: The server's Spark version (known after start).
        self.server_version: str | None = None

    def start(self) -> "SparkConnectEngine":
        """Connect, upload the dimension into session variables and run a warm-up batch."""
        if self._session is not None:
            return self
        session = _open_session(self.remote, self._app_name)
        self._session = session
        session.client.set_retry_policies([_retry_policy(self._timeout_s)])
        try:
            self.server_version = session.version  # the first call: does the server answer?
        except Exception as exc:
            self.stop()
            raise ReplicaError(
                f"--spark-remote: the Spark Connect server at {shown(self.remote)} did not answer "
                f"within {self._timeout_s:.0f} s ({_first_line(exc)}); start one there or pass "
                "the URL of a running server") from exc
        try:
            self._plan = _Plan(session, self._dimension)
            self.enrich(warmup_records(64))
        except Exception as exc:
            self.stop()
            raise ReplicaError(
                f"--spark-remote: the Spark Connect server at {shown(self.remote)} (Spark "
                f"{self.server_version}) failed the dimension upload or the warm-up batch "
                f"({_first_line(exc)}); check the server's log") from exc
        return self

    def enrich(self, records: pa.Table) -> pa.Table:
        if self._plan is None:
            raise RuntimeError("spark-connect engine: not started; call start() first")
        out = self._plan.run(records)
        row = out.column("row").to_numpy()
        if len(row) > 1 and np.any(row[1:] < row[:-1]):
            out = out.sort_by("row")
        return out.select(ENRICHED_SCHEMA.names).cast(ENRICHED_SCHEMA)

    def stop(self) -> None:
        """Release the server session (its variables and views go with it) and close the
        channel. Idempotent; never raises for a server that is gone."""
        session, self._session, self._plan = self._session, None, None
        if session is not None:
            session.stop()  # best effort by pyspark's contract: logs, does not raise


class _Plan:
    """The dimension on the server and the per-batch query built once.

    Per batch: the Arrow batch becomes a Connect ``LocalRelation`` directly, without a schema
    string (the server reads the Arrow schema; pyspark's ``createDataFrame`` would first fetch
    13 session settings, a round trip per batch, and a schema string costs the server CPU), and
    the projections are collected as Arrow: one ``ExecutePlan`` call.
    """

    def __init__(self, session: Any, dimension: pa.Table):
        from pyspark.sql.connect import functions as F

        from ..records import RECORD_SCHEMA

        self._session = session
        session.createDataFrame(dimension).createOrReplaceTempView(_DIMENSION_VIEW)
        for variable in (SEGMENT_VARIABLE, REGION_VARIABLE):
            session.sql(f"DECLARE OR REPLACE VARIABLE {variable} ARRAY<STRING>")
        by_bucket = "array_sort(collect_list(struct(bucket, segment, region)))"
        session.sql(f"SET VAR ({SEGMENT_VARIABLE}, {REGION_VARIABLE}) = (SELECT "
                    f"transform({by_bucket}, d -> d.segment), "
                    f"transform({by_bucket}, d -> d.region) FROM {_DIMENSION_VIEW})")
        session.catalog.dropTempView(_DIMENSION_VIEW)
        sizes = session.sql(f"SELECT size({SEGMENT_VARIABLE}) AS s, size({REGION_VARIABLE}) AS r"
                            ).collect()[0]
        if (sizes.s, sizes.r) != (dimension.num_rows, dimension.num_rows):
            raise RuntimeError(f"the server holds {sizes.s}/{sizes.r} dimension rows, not "
                               f"{dimension.num_rows}")
        bucket = F.pmod(F.col("entity_id"), F.lit(dimension.num_rows)).cast("int")
        lag_ms = (F.col("processed_at_ns").cast("double") - F.col("ts_ns").cast("double")) / 1e6
        self._with_bucket = [*(F.col(name) for name in RECORD_SCHEMA.names),
                             bucket.alias("bucket"), lag_ms.alias("event_lag_ms")]
        lookups = {"segment": F.expr(f"try_element_at({SEGMENT_VARIABLE}, bucket + 1)"),
                   "region": F.expr(f"try_element_at({REGION_VARIABLE}, bucket + 1)")}
        self._output = [lookups[name].alias(name) if name in lookups else F.col(name)
                        for name in ENRICHED_SCHEMA.names]

    def run(self, records: pa.Table) -> pa.Table:
        """The batch's enriched rows as Arrow (in the server's row order)."""
        from pyspark.sql.connect.dataframe import DataFrame
        from pyspark.sql.connect.plan import LocalRelation

        if records.num_rows == 0:
            return ENRICHED_SCHEMA.empty_table()
        batch = DataFrame(LocalRelation(records), self._session)
        return batch.select(*self._with_bucket).select(*self._output).toArrow()


def _open_session(remote: str, app_name: str) -> Any:
    """A new Connect session (not the process's default builder: see the module docstring).

    Raises:
        ReplicaError: pyspark rejects the URL.
    """
    from pyspark.errors import PySparkValueError
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.session import SparkSession

    try:
        channel = DefaultChannelBuilder(remote)
    except PySparkValueError as exc:
        raise ReplicaError(f"--spark-remote: {shown(remote)} is not a Spark Connect URL "
                           f"({_first_line(exc)}); pass sc://HOST:PORT") from exc
    if channel.getDefault(channel.PARAM_USER_AGENT, None) is None:
        channel.set(channel.PARAM_USER_AGENT, app_name)
    return SparkSession.builder.channelBuilder(channel).create()


def retries_within(timeout_s: float) -> int:
    """How many retries, waiting :data:`INITIAL_BACKOFF_MS` doubling up to
    :data:`MAX_BACKOFF_MS` between them, it takes to wait at least ``timeout_s`` seconds."""
    retries, waited_ms, backoff_ms = 0, 0.0, float(INITIAL_BACKOFF_MS)
    while waited_ms < timeout_s * 1000.0:
        waited_ms += backoff_ms
        backoff_ms = min(backoff_ms * 2.0, MAX_BACKOFF_MS)
        retries += 1
    return retries


def _retry_policy(timeout_s: float) -> Any:
    """pyspark's retry policy giving up after about ``timeout_s`` seconds (its default retries
    UNAVAILABLE for 10 minutes or more)."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    return DefaultPolicy(max_retries=retries_within(timeout_s), backoff_multiplier=2.0,
                         initial_backoff=INITIAL_BACKOFF_MS, max_backoff=MAX_BACKOFF_MS, jitter=0)


def shown(remote: str) -> str:
    """``remote`` quoted for messages, with a ``token=`` parameter's value hidden."""
    return repr(_SECRET.sub(r"\1***", remote))


def _first_line(exc: BaseException) -> str:
    """A one-line reason: gRPC's status and details when the error carries them."""
    text = str(exc)
    grpc = _GRPC_STATUS.search(text)
    if grpc:
        return f"{grpc[1]}: {grpc[2]}"
    lines = text.strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
