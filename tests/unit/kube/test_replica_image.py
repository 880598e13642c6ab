"""The replica image's cache keys: what decides a rebuild of its base and of its top layer, and
the source stamp that skips the wheels' build when nothing changed."""

from __future__ import annotations

from pathlib import Path

from pytest_lagscale.kube import replica_image as ri


def _wheel(tmp_path: Path, name: str, body: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(body)
    return path


def test_the_key_follows_the_recipe_the_wheels_and_the_suite_not_their_order(tmp_path) -> None:
    a = _wheel(tmp_path, "a-1.0-py3-none-any.whl", b"A")
    b = _wheel(tmp_path, "b-2.0-py3-none-any.whl", b"B")
    key = ri.image_key(b"recipe", [a, b])
    assert key == ri.image_key(b"recipe", [b, a]) and len(key) == 16
    assert key != ri.image_key(b"recipe 2", [a, b])
    assert key != ri.image_key(b"recipe", [a, b], suite="trixie")
    b.write_bytes(b"B changed")
    assert key != ri.image_key(b"recipe", [a, b])


def test_the_image_reference_is_local_and_carries_the_version() -> None:
    assert ri.image_ref("0.1.0") == "lagscale.local/lagscale-replica:0.1.0"


def test_an_unchanged_source_tree_finds_its_archive_without_building_wheels(tmp_path) -> None:
    stamp = ri.source_stamp()
    assert stamp is not None and len(stamp) == 16 and stamp == ri.source_stamp()
    archive = tmp_path / "replica-a-b.tar"
    assert ri._stamped_archive(tmp_path, stamp) is None  # nothing recorded
    archive.write_bytes(b"oci")
    ri._write_stamp(tmp_path, stamp, archive)
    assert ri._stamped_archive(tmp_path, stamp) == archive
    assert ri._stamped_archive(tmp_path, "0" * 16) is None  # the tree changed
    archive.unlink()
    assert ri._stamped_archive(tmp_path, stamp) is None  # the archive went (pruned)
