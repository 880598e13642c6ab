"""Credentials of the lag sources: a Secret never shows its value; redact() cleans option maps."""

from __future__ import annotations

import copy
import json
import logging
import pickle

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.sources.credentials import REDACTED, Secret, is_secret_key, redact, secret_from_env


def test_a_secret_shows_stars_everywhere(caplog: pytest.LogCaptureFixture) -> None:
    secret = Secret("hunter2", origin="$CONFLUENT_API_SECRET")
    logging.getLogger("lagscale.test").warning("secret %s / %r / %s", secret, secret, [secret])
    shown = [str(secret), repr(secret), f"{secret}", json.dumps({"s": str(secret)}), caplog.text]
    assert all("hunter2" not in text for text in shown)
    assert repr(secret) == "Secret('***', origin='$CONFLUENT_API_SECRET')"
    assert secret.reveal() == "hunter2" and secret == Secret("hunter2") and secret != Secret("other")


def test_a_secret_is_not_pickled_but_copies_are_itself() -> None:
    secret = Secret("hunter2")
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(secret)
    assert copy.deepcopy(secret) is secret and copy.copy(secret) is secret


def test_secret_from_env() -> None:
    assert secret_from_env("K", "api_key_env", "src", {"K": "v"}).reveal() == "v"
    with pytest.raises(ConfigError) as info:
        secret_from_env("K", "api_key_env", "confluent lag source options", {"K": ""})
    assert info.value.problems == ["'api_key_env': got 'K', expected the name of a set, non-empty environment "
                                   "variable in confluent lag source options; export K=... before the run"]


@pytest.mark.parametrize(("key", "secret"), [
    pytest.param("api_secret", True, id="api_secret"),
    pytest.param("api_key", True, id="api_key"),
    pytest.param("awsSecretAccessKey", True, id="keda-awsSecretAccessKey"),
    pytest.param("awsAccessKeyID", True, id="keda-awsAccessKeyID"),
    pytest.param("password", True, id="password"),
    pytest.param("bearerToken", True, id="token"),
    pytest.param("api_secret_env", False, id="names-a-variable"),
    pytest.param("awsSecretAccessKeyFromEnv", False, id="keda-FromEnv-names-a-variable"),
    pytest.param("cluster_id", False, id="cluster_id"),
    pytest.param("query", False, id="query"),
])
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_redact_nested_options_for_json() -> None:
    options = {"cluster_id": "lkc-1", "api_secret": "s3cr3t", "api_key_env": "CONFLUENT_API_KEY",
               "nested": {"password": "pw", "user": "me"}, "held": Secret("x"), "api_key": ""}
    redacted = redact(options)
    assert redacted == {"cluster_id": "lkc-1", "api_secret": REDACTED, "api_key_env": "CONFLUENT_API_KEY",
                        "nested": {"password": REDACTED, "user": "me"}, "held": REDACTED, "api_key": ""}
    assert "s3cr3t" not in json.dumps(redacted) and options["api_secret"] == "s3cr3t"
