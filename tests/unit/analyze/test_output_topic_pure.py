"""The pure parts of the output-topic reconciliation: the header contract and the pinned jars."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_lagscale.analyze import spark_kafka_jars
from pytest_lagscale.analyze.spark_kafka_jars import JARS, PinnedJar, resolve
from pytest_lagscale.contract.errors import LagscaleError
from pytest_lagscale.contract.output_topic import (INPUT_OFFSET_HEADER, INPUT_PARTITION_HEADER,
                                                   input_headers, parse_input_headers)


def test_headers_round_trip_and_match_the_example_consumers_names() -> None:
    main_go = Path(__file__).parents[3] / "examples" / "franz-go-consumer" / "main.go"
    text = main_go.read_text()
    assert f'"{INPUT_PARTITION_HEADER}"' in text and f'"{INPUT_OFFSET_HEADER}"' in text
    assert parse_input_headers(input_headers(23, 2**40)) == (23, 2**40)


@pytest.mark.parametrize("headers, expected", [
    (None, None),
    ([], None),
    ([(INPUT_PARTITION_HEADER, b"1")], None),                             # offset missing
    ([(INPUT_OFFSET_HEADER, b"1")], None),                                # partition missing
    ([(INPUT_PARTITION_HEADER, None), (INPUT_OFFSET_HEADER, b"1")], None),  # no value
    ([(INPUT_PARTITION_HEADER, b"1"), (INPUT_OFFSET_HEADER, b"1.5")], None),
    ([(INPUT_PARTITION_HEADER, b"1"), (INPUT_OFFSET_HEADER, b"1_000")], None),
    ([(INPUT_PARTITION_HEADER, b"\xff"), (INPUT_OFFSET_HEADER, b"1")], None),
    ([(INPUT_PARTITION_HEADER, b" 2 "), (INPUT_OFFSET_HEADER, b"+7")], (2, 7)),
    ([("other", b"x"), (INPUT_OFFSET_HEADER, b"9"), (INPUT_PARTITION_HEADER, b"0"),
      (INPUT_OFFSET_HEADER, b"10")], (0, 9)),                              # first one counts
])
def test_parse_input_headers(headers, expected) -> None:
    assert parse_input_headers(headers) == expected


def test_pins_name_maven_central_jars_with_sha256() -> None:
    assert [j.artifact for j in JARS] == ["spark-sql-kafka-0-10_2.13",
                                          "spark-token-provider-kafka-0-10_2.13",
                                          "kafka-clients", "commons-pool2"]
    assert all(len(j.sha256) == 64 and int(j.sha256, 16) >= 0 for j in JARS)
    assert JARS[0].url == ("https://repo1.maven.org/maven2/org/apache/spark/"
                           "spark-sql-kafka-0-10_2.13/4.2.0/spark-sql-kafka-0-10_2.13-4.2.0.jar")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file:// 'Maven Central' holding one jar pinned as JARS, and an empty cache."""
    central = tmp_path / "central"
    jar = PinnedJar("org.example", "thing", "1.0", "")
    path = central / "org" / "example" / "thing" / "1.0" / jar.file_name
    path.parent.mkdir(parents=True)
    path.write_bytes(b"jar bytes")
    pinned = PinnedJar("org.example", "thing", "1.0", hashlib.sha256(b"jar bytes").hexdigest())
    monkeypatch.setattr(spark_kafka_jars, "MAVEN_CENTRAL", central.as_uri())
    monkeypatch.setattr(spark_kafka_jars, "JARS", (pinned,))
    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path / "cache"))
    return path


def test_resolve_downloads_checks_and_reuses(repo: Path, tmp_path: Path) -> None:
    cached = tmp_path / "cache" / "spark-kafka" / "thing-1.0.jar"
    with pytest.raises(LagscaleError, match="run scripts/fetch-spark-kafka"):
        resolve(fetch=False)
    assert resolve() == [cached] and cached.read_bytes() == b"jar bytes"
    repo.unlink()  # present and intact: no download
    assert resolve(fetch=False) == [cached]
    cached.write_bytes(b"damaged")
    with pytest.raises(LagscaleError, match="missing or damaged"):
        resolve(fetch=False)


def test_resolve_refuses_a_download_whose_digest_differs(repo: Path, tmp_path: Path) -> None:
    repo.write_bytes(b"tampered")
    with pytest.raises(LagscaleError, match="has SHA-256 .* pinned .*damaged or the pin"):
        resolve()
    assert [p.name for p in (tmp_path / "cache" / "spark-kafka").iterdir()] == [".lock"]
