"""Docs a maintainer can open: what the package's sources cite, and how long module docstrings are.

A citation must name something in this repository (a docs/*.md section, a module) or an upstream
source with its path and version ("kedacore/keda v2.20.2 pkg/scalers/kafka_scaler.go
getTotalLag"); the KEDA and HPA rules the controller implements are in docs/semantics.md. A module
docstring says what the module is for and how to use it; measurements and long notes live in
docs/ (docs/experiments.md, "Notes moved from module docstrings").
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pytest_lagscale", "spark_consumer")
#: The longest module docstring allowed, in source lines from the opening to the closing quotes.
MAX_MODULE_DOCSTRING_LINES = 30
#: Citations a maintainer cannot open: the workplace's notes outside the repository, and
#: issue numbers of a tracker the repository does not carry.
FORBIDDEN = {
    "a file under specs/ (not in this repository)": re.compile(r"(?<![\w/.-])specs/[\w./-]+"),
    "a path under ../shared (not in this repository)": re.compile(r"\.\./shared\b"),
    "an issue number": re.compile(r"\b[Ii]ssues? #?\d+"),
}


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
                  if "__pycache__" not in p.parts)


def _module_docstring_lines(path: Path) -> int:
    """Source lines of the module docstring (0 without one)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    if ast.get_docstring(tree, clean=False) is None:
        return 0
    node = tree.body[0]
    return node.end_lineno - node.lineno + 1


def test_the_sources_are_found():
    sources = _sources()
    assert any(p.name == "controller.py" for p in sources)
    assert any(p.parts[-3:] == ("spark_consumer", "engine", "spark.py") for p in sources)


def test_no_source_cites_a_file_outside_the_repository_or_an_issue_number():
    found = []
    for path in _sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for what, pattern in FORBIDDEN.items():
                match = pattern.search(line)
                if match:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {what}: {match.group(0)!r}")
    assert not found, ("cite the upstream source with its path and version, or a section of "
                       "docs/*.md (docs/semantics.md for KEDA and HPA rules):\n" + "\n".join(found))


@pytest.mark.parametrize("text, what", [
    ("Source: specs/keda-hpa-semantics.md §3.2", "a file under specs/ (not in this repository)"),
    ("see ../shared/specs/platform-notes.md", "a path under ../shared (not in this repository)"),
    ("the recipe (issue 15)", "an issue number"),
    ("Issue #16: loopback only", "an issue number"),
])
def test_the_patterns_catch_what_they_are_for(text, what):
    assert FORBIDDEN[what].search(text)


@pytest.mark.parametrize("text", [
    "docs/semantics.md §3.2",
    "kedacore/keda v2.20.2 pkg/scalers/kafka_scaler.go getTotalLag",
    "the 2x cap cites kubernetes/kubernetes#32304",
    "pytest_lagscale/data/specs/x.yaml",
])
def test_the_patterns_let_repository_and_upstream_citations_pass(text):
    assert not any(pattern.search(text) for pattern in FORBIDDEN.values())


def test_module_docstrings_are_short():
    long_ones = [f"{path.relative_to(ROOT)}: {n} lines" for path in _sources()
                 if "_pb2" not in path.name
                 and (n := _module_docstring_lines(path)) > MAX_MODULE_DOCSTRING_LINES]
    assert not long_ones, (f"module docstrings over {MAX_MODULE_DOCSTRING_LINES} lines: say what "
                           "the module is for and how to use it, and move measurements and long "
                           "notes to docs/:\n" + "\n".join(long_ones))
