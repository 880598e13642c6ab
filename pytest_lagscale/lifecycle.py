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
