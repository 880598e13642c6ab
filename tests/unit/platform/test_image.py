"""The local platform's image build step: which engine a template runs, and when it is skipped."""

from __future__ import annotations

import sys

import pytest

from pytest_lagscale.platform.image import prepare_image, template_engine

REPLICA = (sys.executable, "-m", "spark_consumer", "--topic=events")


@pytest.mark.parametrize("argv,env,engine", [
    (REPLICA, {}, "spark"),  # the flag table's default
    ((*REPLICA, "--engine=arrow"), {}, "arrow"),
    ((*REPLICA, "--engine", "arrow"), {}, "arrow"),
    (REPLICA, {"LAGSCALE_ENGINE": "arrow"}, "arrow"),
    ((*REPLICA, "--engine=spark"), {"LAGSCALE_ENGINE": "arrow"}, "spark"),  # flag wins
])
def test_template_engine_follows_the_replica_flag_precedence(argv, env, engine) -> None:
    assert template_engine(argv, env) == engine


def test_no_step_for_an_engine_without_a_jvm(tmp_path) -> None:
    image = prepare_image((*REPLICA, "--engine=arrow"), {}, tmp_path / "image-build.log")
    assert (image.engine, image.cds_archive, image.duration_s) == ("arrow", None, 0.0)
    assert not (tmp_path / "image-build.log").exists()


def test_no_step_for_a_command_that_is_not_the_replica(tmp_path) -> None:
    image = prepare_image(("/bin/true",), {}, tmp_path / "image-build.log")
    assert image.cds_archive is None and image.duration_s == 0.0
