"""The verdict table of an acceptance session (``scripts/acceptance``), from its JUnit XML.

``python -m pytest_lagscale.experiment.acceptance JUNIT_XML --scale ci --wall-s S
--exit-status N [--out acceptance.md]`` prints, and writes as Markdown, one row per benchmark
module (experiment N, or the module's name for the other benchmarks): tests passed, known misses
(xfail), failed (failures and errors), skipped, and the seconds pytest spent in them; then the
session's wall time and exit status. docs/experiments.md keeps the last ci-scale table.

:func:`tally` is the library function (``{module: Tally}`` from a JUnit XML path); pytest writes
the XML with ``--junitxml`` (a ``testcase`` per test, ``failure``/``error`` children for failed
ones, ``skipped`` with ``type="pytest.xfail"`` for known misses).
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

_EXPERIMENT = re.compile(r"test_exp(\d+)_")


@dataclass
class Tally:
    """Outcomes of one module's tests; ``time_s`` is pytest's sum of their durations."""

    passed: int = 0
    xfailed: int = 0
    failed: int = 0
    skipped: int = 0
    time_s: float = 0.0

    @property
    def verdict(self) -> str:
        """``fail`` if any test failed, else ``xfail`` if any was a known miss, else ``pass``
        (``skip`` when every test was skipped)."""
        if self.failed:
            return "fail"
        if self.xfailed:
            return "xfail"
        return "pass" if self.passed else "skip"


def module_title(classname: str) -> str:
    """``benchmarks.test_exp3_rebalance_dip`` -> ``experiment 3 (test_exp3_rebalance_dip)``;
    other modules keep their file name."""
    module = classname.rsplit(".", 1)[-1]
    match = _EXPERIMENT.match(module + "_")
    return f"experiment {match.group(1)} ({module})" if match else module


def tally(junit_xml: Path) -> dict[str, Tally]:
    """``{module title: Tally}`` in the order the modules ran.

    Raises:
        FileNotFoundError: no such file; xml.etree.ElementTree.ParseError: not XML.
    """
    out: dict[str, Tally] = {}
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        row = out.setdefault(module_title(case.get("classname", "?")), Tally())
        row.time_s += float(case.get("time") or 0.0)
        if case.find("failure") is not None or case.find("error") is not None:
            row.failed += 1
        elif (skipped := case.find("skipped")) is not None:
            if skipped.get("type") == "pytest.xfail":
                row.xfailed += 1
            else:
                row.skipped += 1
        else:
            row.passed += 1
    return out


def render(rows: dict[str, Tally], *, scale: str, wall_s: float, exit_status: int,
           commit: str | None = None) -> str:
    """The Markdown table and a closing line (wall time in minutes and seconds)."""
    lines = ["| benchmark | verdict | passed | xfailed | failed | skipped | pytest time |",
             "|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        lines.append(f"| {name} | {row.verdict} | {row.passed} | {row.xfailed} | {row.failed} "
                     f"| {row.skipped} | {row.time_s / 60:.1f} min |")
    minutes, seconds = divmod(int(round(wall_s)), 60)
    where = f" at {commit}" if commit else ""
    lines += ["", f"Scale {scale}{where}: wall time {minutes} min {seconds} s, exit status "
                  f"{exit_status} ({'pass' if exit_status == 0 else 'fail'})."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_lagscale.experiment.acceptance",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("junit_xml", type=Path)
    parser.add_argument("--scale", choices=("ci", "full"), required=True)
    parser.add_argument("--wall-s", type=float, required=True)
    parser.add_argument("--exit-status", type=int, required=True)
    parser.add_argument("--commit", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        rows = tally(args.junit_xml)
    except (OSError, ET.ParseError) as exc:
        print(f"acceptance: cannot read {args.junit_xml}: {exc}", file=sys.stderr)
        return 2
    text = render(rows, scale=args.scale, wall_s=args.wall_s, exit_status=args.exit_status,
                  commit=args.commit)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
