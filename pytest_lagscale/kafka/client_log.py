"""librdkafka's own log lines from the harness's clients: into a run file, never onto the terminal.

Left alone, librdkafka writes lines such as
``%3|1700000000.123|FAIL|rdkafka#producer-1| [thrd:...]: Connect to ipv4#127.0.0.1:1 failed``
straight to stderr, across the live progress line. Every client the harness creates (the load
producer, the admin client behind lag reads and topic changes) is given :func:`librdkafka_config`,
whose ``logger`` key makes confluent-kafka hand each line to :data:`LOGGER`
(``pytest_lagscale.librdkafka``) instead: a Producer's on ``poll()``/``flush()``, an AdminClient's
on its ``poll()`` (:func:`serve_logs`).

:data:`LOGGER` does not propagate and holds a ``NullHandler``: outside :func:`librdkafka_log_to`
the lines are dropped (Python's last-resort handler would otherwise print ERROR lines to
stderr). The runner wraps a run in ``librdkafka_log_to(<run dir>/librdkafka.log)``.

Levels: confluent-kafka maps syslog levels 0-2 to CRITICAL, 3 to ERROR, 4 to WARNING, 5-6 to
INFO and 7 to DEBUG; the file gets all of them.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

LOGGER_NAME = "pytest_lagscale.librdkafka"
#: The logger every harness librdkafka client logs to.
LOGGER = logging.getLogger(LOGGER_NAME)
LOGGER.propagate = False
LOGGER.setLevel(logging.DEBUG)
if not any(isinstance(h, logging.NullHandler) for h in LOGGER.handlers):
    LOGGER.addHandler(logging.NullHandler())


def librdkafka_config() -> dict[str, Any]:
    """The client configuration entries that route librdkafka's log to :data:`LOGGER`; merge
    them into every Producer, Consumer and AdminClient configuration the harness builds.

    Example:
        >>> AdminClient({"bootstrap.servers": bootstrap, **librdkafka_config()})  # doctest: +SKIP
    """
    return {"logger": LOGGER}


def serve_logs(client: Any) -> None:
    """Hand an AdminClient's (or an idle Consumer's) queued log lines to :data:`LOGGER` now
    (``poll(0)``); a Producer, or a Consumer that consumes, serves them in its own ``poll()``.
    Without this the lines wait in the client's queue."""
    client.poll(0)


@contextmanager
def librdkafka_log_to(path: str | os.PathLike[str]) -> Iterator[logging.Handler]:
    """Append :data:`LOGGER`'s lines to ``path`` while the block runs.

    Each line reads ``<UTC time> <LEVEL> <facility> [<client>] <message>``, e.g.
    ``2026-06-01T12:00:00.123Z ERROR FAIL [rdkafka#producer-1] [thrd:...]: ... refused``.
    Nested or concurrent blocks each get every line.

    Args:
        path: the file (created with its parent directory; appended to).

    Raises:
        OSError: the file cannot be opened.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    formatter = logging.Formatter("%(asctime)s.%(msecs)03dZ %(levelname)s %(message)s",
                                  datefmt="%Y-%m-%dT%H:%M:%S")
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    LOGGER.addHandler(handler)
    try:
        yield handler
    finally:
        LOGGER.removeHandler(handler)
        handler.close()
