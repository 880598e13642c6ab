"""How a child process ended, said one way everywhere the harness reports it.

``Popen.returncode`` is the exit code, or minus the number of the signal that killed the child;
a shell prints 128 plus that number instead. A report names the signal and gives both figures,
so ``-11`` and ``139`` are recognised as the same segfault.
"""

from __future__ import annotations

import signal


def describe_exit(returncode: int) -> str:
    """A child's exit status as its reports say it.

    Args:
        returncode: ``Popen.returncode``: the exit code, or minus the number of the signal that
            killed it.

    Returns:
        ``exited with code 1``, or for a signal its name, the status and the shell's figure
        (128 + the signal's number): ``killed by SIGSEGV (exit status -11; 139 in a shell)``.

    Example:
        >>> describe_exit(-11)
        'killed by SIGSEGV (exit status -11; 139 in a shell)'
    """
    if returncode >= 0:
        return f"exited with code {returncode}"
    return (f"killed by {signal_name(-returncode)} (exit status {returncode}; "
            f"{128 - returncode} in a shell)")


def signal_name(signum: int) -> str:
    """``SIGSEGV`` for 11; ``signal 99`` for a number Python has no name for."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_signal(returncode: int | None) -> str | None:
    """The name of the signal that killed a child (``SIGSEGV``), or None when it exited by
    itself or still runs; for event-log fields."""
    return signal_name(-returncode) if returncode is not None and returncode < 0 else None


__all__ = ["describe_exit", "exit_signal", "signal_name"]
