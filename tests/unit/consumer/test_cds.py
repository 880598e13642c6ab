"""The CDS archive cache stays bounded: a new archive prunes all but the newest few."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spark_consumer.engine.cds import prune_archives


def _archive(directory: Path, name: str, mtime: float) -> Path:
    path = directory / name
    path.write_bytes(b"jsa")
    os.utime(path, (mtime, mtime))
    return path


def test_prune_keeps_the_newest_archives_and_nothing_else_is_touched(tmp_path: Path) -> None:
    paths = [_archive(tmp_path, f"spark-4.3.0-{i:016x}.jsa", 1_000.0 + i) for i in range(5)]
    other = tmp_path / "notes.txt"
    other.write_text("kept")
    removed = prune_archives(tmp_path, keep=3)
    assert sorted(removed) == sorted(paths[:2])
    assert sorted(tmp_path.iterdir()) == sorted([*paths[2:], other])


def test_prune_refuses_to_delete_every_archive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="keep: 0 is below 1"):
        prune_archives(tmp_path, keep=0)
