"""Bad YAML input to every committed-manifest and profile reader: a repeated key, a binary or
non-UTF-8 file, an over-long path and an empty profile are one ConfigError line each, naming
the file and what is wrong (each failed differently before: the repeated
key silently won, the others ended in tracebacks or "None is a NoneType")."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.config._read import load_yaml
from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.load.profiles import load_profile

SCALED_OBJECT = """\
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: consumer}
spec:
  scaleTargetRef: {name: consumer}
  triggers:
    - type: kafka
      metadata:
        lagThreshold: "500"
        topic: events
        lagThreshold: "50000"
"""


def test_a_repeated_key_is_refused_with_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "so.yaml"
    path.write_text(SCALED_OBJECT)
    with pytest.raises(ConfigError) as info:
        load_policy_manifest(path)
    assert "found duplicate key 'lagThreshold' (first at line 9)" in str(info.value)
    assert "line 11" in str(info.value)


def test_a_repeated_profile_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("kind: steady\nduration_s: 10\nrate_per_s: 5\nduration_s: 20\n")
    with pytest.raises(ConfigError, match=r"found duplicate key 'duration_s' \(first at line 2\)"):
        load_profile(path)


def test_a_merge_key_may_be_overridden(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("base: &b {a: 1, b: 2}\nthis:\n  <<: *b\n  a: 3\n")
    assert load_yaml(path)["this"] == {"a": 3, "b": 2}


@pytest.mark.parametrize("reader", [load_yaml, load_profile], ids=["manifest", "profile"])
def test_a_binary_file_names_the_nul_byte(tmp_path: Path, reader) -> None:
    path = tmp_path / "b.yaml"
    path.write_bytes(b"kind: steady\n\x00\x01\x02")
    with pytest.raises(ConfigError, match=r"is a binary file \(a NUL byte at offset 13\)"):
        reader(path)


@pytest.mark.parametrize("reader", [load_yaml, load_profile], ids=["manifest", "profile"])
def test_a_non_utf8_file_names_the_byte_and_offset(tmp_path: Path, reader) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xe9 at offset 9\); "
                                          r"allowed: UTF-8 YAML text; save the file as UTF-8"):
        reader(path)


@pytest.mark.parametrize("reader", [load_yaml, load_profile], ids=["manifest", "profile"])
def test_an_over_long_path_is_one_short_line(tmp_path: Path, reader) -> None:
    path = tmp_path / ("x" * 5000 + ".yaml")
    with pytest.raises(ConfigError) as info:
        reader(path)
    assert "File name too long" in str(info.value)
    assert len(str(info.value)) < 600  # not the 5,000-character path twice


def test_an_empty_profile_says_it_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing yet\n")
    with pytest.raises(ConfigError, match=r"'.*empty.yaml': is empty; allowed: a YAML mapping "
                                          r"of profile keys"):
        load_profile(path)


def test_a_spike_starting_after_the_end_blames_spike_start_s() -> None:
    from pytest_lagscale.load.profiles import parse_profile

    raw = {"kind": "step", "duration_s": 100, "baseline_rate_per_s": 5, "spike_multiplier": 10,
           "spike_start_s": 150, "spike_hold_s": 10, "seed": 1, "partitions": 8}
    with pytest.raises(ConfigError) as info:
        parse_profile(raw)
    assert str(info.value).startswith("'spike_start_s': 150.0 starts the spike at or after "
                                      "duration_s 100.0")
    assert "spike_hold_s" not in str(info.value).split(";")[0]
