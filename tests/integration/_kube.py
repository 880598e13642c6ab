"""The replica template the live kubernetes tests run (the committed ci Deployment on the arrow
engine: a replica ready in about a second, reading a fresh 4-partition topic and group), and
``lagscale kube up`` as a context manager."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.platform.local import template_from_deployment
from pytest_lagscale.process import RUN_ID_ENV, reap_run

K8S = Path(__file__).resolve().parents[2] / "k8s"
LAGSCALE = str(Path(sys.executable).parent / "lagscale")


def arrow_template(kafka_cluster: Any) -> Any:
    """A replica template on a new topic (4 partitions) and group of ``kafka_cluster``."""
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"events-{suffix}", f"enrich-{suffix}"
    KafkaAdmin(kafka_cluster.bootstrap_servers, kafka_cluster.client_config).create_topic(topic, 4)
    return template_from_deployment(
        load_deployment(K8S / "consumer-deployment-ci.yaml"), kafka_cluster.bootstrap_servers,
        flag_overrides={"--topic": topic, "--group": group, "--engine": "arrow"})


def wait_for(predicate: Any, within_s: float, what: str) -> Any:
    """``predicate()``'s first truthy value, polled every 0.2 s; AssertionError naming ``what``
    after ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {within_s:g} s: {what}")


def pods_of(platform: Any) -> list[dict]:
    """The pods of ``platform``'s namespace, as JSON-shaped dicts."""
    from kubernetes import client

    pods = client.CoreV1Api(platform.api).list_namespaced_pod(platform.namespace)
    return [platform.api.sanitize_for_serialization(p) for p in pods.items]


@contextlib.contextmanager
def kube_up_process(directory: Path, rid: str, *args: str, until: str,
            stop_within_s: float = 60.0) -> Iterator[dict[str, str]]:
    """``lagscale kube up --dir <directory>/kube [args]`` in its own session under run id
    ``rid``; yields what it printed (``key: value`` lines, up to the line whose key is
    ``until``). On exit it is sent SIGTERM and must end with 0 within ``stop_within_s``,
    leaving no process of its run id (asserted); on an error it is killed."""
    log = directory / "kube-up.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([LAGSCALE, "kube", "up", *args, "--dir", str(directory / "kube")],
                                env={**os.environ, RUN_ID_ENV: rid}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True)
    try:
        said: dict[str, str] = {}
        for line in proc.stdout:  # type: ignore[union-attr]
            key, _, value = line.partition(": ")
            said[key] = value.strip()
            if key == until:
                break
        assert until in said, f"kube up said {said} (rc {proc.poll()}):\n{log.read_text()}"
        yield said
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(stop_within_s) == 0, log.read_text()[-3000:]
        assert reap_run(rid) == [], "kube up left processes of its run id behind"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        reap_run(rid)
