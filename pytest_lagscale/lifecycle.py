"""``with part:`` for every part that has ``start()`` and ``stop()``.

A start that fails half-way (the broker's JVM up but its port never open, a server bound but
its thread not started) stops what it began before the error propagates, so a failed
``with`` leaves no process or thread behind — the pattern of testcontainers'
``DockerContainer.__enter__``. ``stop()`` must therefore be idempotent and safe after a
partial start; ``start()`` returns the part.
"""

from __future__ import annotations

from typing import Any, Self


class StartStop:
    """Mixin: ``__enter__`` = ``start()`` (``stop()`` then re-raise if it fails),
    ``__exit__`` = ``stop()``. Subclasses define ``start() -> Self`` and ``stop()``."""

    def start(self) -> Self:  # pragma: no cover - defined by every subclass
        raise NotImplementedError

    def stop(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - as above
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class HomeProcess(StartStop):
    """Mixin for a server that is one process group living in a home directory (the embedded
    broker, the Spark Connect server): :meth:`stop` stops the group and removes the home when it
    was a temporary one.

    Subclasses set ``process`` (a ManagedProcess or None), ``home`` (Path or None),
    ``_given_dir`` (the caller's directory, kept; None = temporary) and ``stop_timeout_s``.
    """

    process: Any = None
    home: Any = None
    _given_dir: Any = None
    stop_timeout_s: float = 10.0

    def stop(self, timeout_s: float | None = None) -> str:
        """Stop the process group; returns how (``terminated``/``killed``/``not_started``...).

        Idempotent. Removes the home directory when it was a temporary one.
        """
        import shutil

        outcome = "not_started"
        if self.process is not None:
            outcome = self.process.stop(self.stop_timeout_s if timeout_s is None else timeout_s)
        if self.home is not None and self._given_dir is None:
            shutil.rmtree(self.home, ignore_errors=True)
        return outcome
