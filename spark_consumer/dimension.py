"""The committed dimension table joined to every micro-batch.

``fixtures/dimensions/segments.csv``: one row per entity bucket, columns ``bucket`` (int32, dense
0..n-1), ``segment`` (string) and ``region`` (string). An event's bucket is
``pmod(entity_id, n)``, with n the number of rows (10,000 in the committed file).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from pytest_lagscale.contract.errors import ConfigError

DIMENSION_SCHEMA = pa.schema(
    [("bucket", pa.int32()), ("segment", pa.string()), ("region", pa.string())]
)


def load_dimension(path: str | Path) -> pa.Table:
    """Read and check the dimension table.

    Args:
        path: CSV file with header ``bucket,segment,region``.

    Returns:
        A table with :data:`DIMENSION_SCHEMA`, one row per bucket, sorted by bucket; its
        ``num_rows`` is the bucket count.

    Raises:
        ConfigError: the file is missing, unreadable, or its buckets are not exactly 0..n-1.
    """
    path = Path(path)
    try:
        table = pacsv.read_csv(
            path,
            convert_options=pacsv.ConvertOptions(
                column_types=DIMENSION_SCHEMA, include_columns=DIMENSION_SCHEMA.names
            ),
        )
    except (OSError, pa.ArrowInvalid, KeyError) as exc:
        raise ConfigError(
            f"--dimension: {str(path)!r} cannot be read as a bucket,segment,region CSV ({exc}); "
            "pass the committed fixtures/dimensions/segments.csv"
        ) from exc
    table = table.sort_by("bucket").cast(DIMENSION_SCHEMA)
    n = table.num_rows
    buckets = table.column("bucket")
    dense = n > 0 and buckets.null_count == 0 and pc.all(
        pc.equal(buckets, pa.array(range(n), pa.int32()))
    ).as_py()
    if not dense:
        raise ConfigError(
            f"--dimension: {str(path)!r} has {n} rows whose buckets are not exactly 0..n-1; "
            "give every bucket from 0 to n-1 exactly once"
        )
    return table
