"""Per-user paths shared by the harness and the replica program.

The cache root holds the harness's pid files (``pids/<run id>/``) and the replica's Spark
class-data-sharing archives (``spark-cds/``).
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "LAGSCALE_CACHE_DIR"


def cache_dir() -> Path:
    """Per-user cache root (``$LAGSCALE_CACHE_DIR`` or ``~/.cache/pytest-lagscale``).

    ``$XDG_CACHE_HOME`` replaces ``~/.cache`` when set. The directory is not created.
    """
    root = os.environ.get(CACHE_DIR_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pytest-lagscale"
    )
    return Path(root)
