"""The twin's producer: the seeded generator's exact keys, librdkafka's murmur2 partitioner."""

from __future__ import annotations

import numpy as np

from pytest_lagscale.load.events import EventSource
from pytest_lagscale.twin.load import murmur2_keys, partitions_of, record_entities

#: Records per partition acknowledged in the real spike-ci run of the CI run of 2026-11-23
#: (/tmp/check1/lagscale-runs/20261123T051559Z-spike-ci/manifest.json, per_partition count):
#: profile spike-ci, seed 20240611, P = 8, 210,000 records.
SPIKE_CI_MANIFEST_COUNTS = (28576, 16814, 21166, 46676, 36350, 20673, 17157, 22588)


def test_keys_are_the_event_sources_keys(spike_plan) -> None:
    expected = EventSource(spike_plan.profile.seed).take(20_000)["entity_id"]
    assert np.array_equal(record_entities(spike_plan.profile, 20_000), expected)


def test_murmur2_and_the_partitioner_match_the_reference() -> None:
    # Java Utils.murmur2 of the 8-byte big-endian keys 0 and 1 (what the Java client and
    # librdkafka's murmur2_random hash), computed by the reference algorithm byte by byte
    def reference(key: bytes) -> int:
        m, h = 0x5BD1E995, (0x9747B28C ^ len(key)) & 0xFFFFFFFF
        for i in range(0, len(key) - len(key) % 4, 4):
            k = int.from_bytes(key[i:i + 4], "little")
            k = (k * m) & 0xFFFFFFFF
            k ^= k >> 24
            k = (k * m) & 0xFFFFFFFF
            h = ((h * m) & 0xFFFFFFFF) ^ k
        h ^= h >> 13
        h = (h * m) & 0xFFFFFFFF
        return h ^ (h >> 15)

    ids = np.array([0, 1, 255, 4_999_999, 2**40 + 7, *range(2, 64)], dtype=np.uint64)
    hashes = [reference(int(i).to_bytes(8, "big")) for i in ids]
    assert murmur2_keys(ids).tolist() == hashes
    assert any(h & 0x80000000 for h in hashes)  # the sign bit matters for P = 3 below
    # librdkafka murmur2_random / Java: toPositive(murmur2) % P
    assert partitions_of(ids, 3).tolist() == [(h & 0x7FFFFFFF) % 3 for h in hashes]


def test_per_partition_input_equals_the_real_runs_manifest(spike_production) -> None:
    assert spike_production.counts() == SPIKE_CI_MANIFEST_COUNTS
    assert spike_production.total_records == 210_000


def test_production_follows_the_schedule(spike_production) -> None:
    per_tick = spike_production.cumulative.sum(axis=1)
    assert np.all(np.diff(per_tick) >= 0)
    # 200/s for the first 60 s, then 2,000/s: 12,000 by 60 s, 32,000 by 70 s
    at = lambda s: int(round(s / spike_production.tick_s))
    assert abs(int(per_tick[at(60)]) - 12_000) <= 1
    assert abs(int(per_tick[at(70)]) - 32_000) <= 1


def test_partitions_of_is_modulo_p() -> None:
    ids = np.arange(1000, dtype=np.uint64)
    assert partitions_of(ids, 1).tolist() == [0] * 1000
    assert set(partitions_of(ids, 8).tolist()) == set(range(8))


def test_expected_shares_follow_the_exact_mapping_and_never_decrease() -> None:
    import numpy as np

    from pytest_lagscale.config.bundled import resolve_profile
    from pytest_lagscale.load.profiles import load_profile
    from pytest_lagscale.twin.load import (
        expected_cumulative,
        partition_shares,
        partitions_of,
        record_entities,
    )

    profile = load_profile(resolve_profile("spike", "ci"))
    shares = partition_shares(profile)
    assert shares.shape == (profile.partitions,) and abs(shares.sum() - 1.0) < 1e-9
    # the record-exact shares of 200,000 seeded records agree within sampling noise
    exact = np.bincount(partitions_of(record_entities(profile, 200_000), profile.partitions),
                        minlength=profile.partitions) / 200_000
    assert np.abs(exact - shares).max() < 0.01
    due = np.array([0, 1, 7, 1000, 1001, 123_457], dtype=np.int64)
    cumulative = expected_cumulative(profile, due)
    short = due - cumulative.sum(axis=1)
    assert ((short >= 0) & (short < profile.partitions)).all()
    assert (np.diff(cumulative, axis=0) >= 0).all()
