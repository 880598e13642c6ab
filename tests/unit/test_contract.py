"""The contract layer: what the replica and the harness may import, and the one flag table."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from pytest_lagscale.config._problems import Problems, show
from pytest_lagscale.config.deployment import parse_deployment
from pytest_lagscale.config.replica_args import collect_replica_args
from pytest_lagscale.contract import flags
from pytest_lagscale.contract.errors import ConfigError
from spark_consumer.options import parse_options

from .config._helpers import committed, edited

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "pyarrow", "confluent_kafka", "pyspark", "py4j", "prometheus_client", "yaml",
         "typer", "rich")
REPLICA_IMPORTS = """
import importlib, json, pkgutil, sys
import spark_consumer, spark_consumer.__main__
import spark_consumer.engine
for info in pkgutil.walk_packages(spark_consumer.__path__, "spark_consumer."):
    importlib.import_module(info.name)
print(json.dumps(sorted(sys.modules)))
"""
CONTRACT_IMPORTS = """
import importlib, json, pkgutil, sys
import pytest_lagscale.contract as contract
for info in pkgutil.iter_modules(contract.__path__, "pytest_lagscale.contract."):
    importlib.import_module(info.name)
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(code: str) -> list[str]:
    """``sys.modules`` of a fresh interpreter (run from the repository root) after ``code``."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def _outside_contract(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith("pytest_lagscale.")
            and m != "pytest_lagscale.contract" and not m.startswith("pytest_lagscale.contract.")]


def test_the_replica_loads_only_the_contract_of_the_harness() -> None:
    loaded = _modules_after(REPLICA_IMPORTS)
    assert "spark_consumer.engine.spark" in loaded and "pytest_lagscale.contract.flags" in loaded
    assert _outside_contract(loaded) == []


def test_the_contract_loads_nothing_heavy_and_nothing_else_of_the_harness() -> None:
    loaded = _modules_after(CONTRACT_IMPORTS)
    assert "pytest_lagscale.contract.jvm" in loaded
    assert _outside_contract(loaded) == []
    assert [m for m in loaded if m.split(".")[0] in HEAVY] == []


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports by absolute name, at any depth of the file."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update([node.module, *(f"{node.module}.{a.name}" for a in node.names)])
    return names


def _offending_imports(package: str, allowed: Callable[[str], bool]) -> list[str]:
    return [f"{path.relative_to(ROOT)}: {name}"
            for path in sorted((ROOT / package).rglob("*.py"))
            for name in sorted(_imported(path)) if not allowed(name)]


def test_no_harness_module_imports_the_replica() -> None:
    assert _offending_imports("pytest_lagscale", lambda name: name.split(".")[0] != "spark_consumer") == []


def test_the_replica_imports_the_harness_only_through_the_contract() -> None:
    def allowed(name: str) -> bool:
        return name.split(".")[0] != "pytest_lagscale" or name.startswith("pytest_lagscale.contract")

    assert _offending_imports("spark_consumer", allowed) == []


def test_the_harness_package_init_stays_tiny() -> None:
    assert len((ROOT / "pytest_lagscale" / "__init__.py").read_text().splitlines()) <= 5


def _every_flag(balancer: str) -> list[str]:
    """Every flag of the table at its example value, with ``balancer`` (minus its conflicts)."""
    values = {f.option: f.example for f in flags.FLAGS}
    values["--balancer"] = balancer
    for conflict in flags.conflicts(values, balancer):
        del values[conflict.option]
    return [f"{option}={value}" for option, value in values.items()]


@pytest.mark.parametrize("balancer", [pytest.param("range", id="classic-without-remote-assignor"),
                                      pytest.param("consumer", id="kip848-without-session-timeout")])
def test_a_deployment_with_every_replica_flag_validates(balancer: str) -> None:
    args = _every_flag(balancer)
    doc = edited(committed("consumer-deployment.yaml"),
                 (("spec", "template", "spec", "containers", 0, "args"), args))
    replica = parse_deployment(doc, source="deploy.yaml").replica
    assert "--max-batch" in replica.flags and len(replica.flags) == len(flags.FLAGS) - 1
    assert (replica.balancer, replica.inflight, replica.instance_id) == (balancer, 500, "$(POD_NAME)")


@pytest.mark.parametrize("balancer", ["range", "consumer"])
def test_the_replica_starts_with_every_example_value(balancer: str) -> None:
    argv = [a for a in _every_flag(balancer) if "$(" not in a]
    opts = parse_options(argv, env={})
    assert (opts.max_batch, opts.balancer, opts.log_batches) == (5000, balancer, True)


def _rejected_values(flag: flags.Flag) -> list[str]:
    """Values just outside ``flag``'s range, or not among its choices."""
    if flag.type in (int, float):
        below = flag.lo if flag.lo_open else flag.lo - 1
        return [str(flag.type(below)), str(flag.type(flag.hi + 1)), "x"]
    if flag.choices:
        return ["bogus", flag.choices[0].upper()]
    if flag.pattern is not None:
        return ["-starts-with-dash", "a" * 65]
    if flag.type is bool:
        return ["maybe"]
    return [" "]


@pytest.mark.parametrize("flag", flags.FLAGS, ids=lambda f: f.option)
def test_harness_and_replica_reject_the_same_values(flag: flags.Flag) -> None:
    for value in _rejected_values(flag):
        p = Problems("deploy.yaml")
        argv = ["python", "-m", "spark_consumer", f"{flag.option}={value}"]
        collect_replica_args(argv, "args", p)
        mine = [line for line in p.lines if line.startswith(f"'args[{flag.option}]'")]
        assert mine == [f"'args[{flag.option}]': got {show(value)}, expected {flag.allowed} in "
                        f"deploy.yaml; write e.g. '{flag.option}={flag.example}'"]
        with pytest.raises(ConfigError) as info:
            parse_options(["--bootstrap=b:1", "--store=/s", f"{flag.option}={value}"], env={})
        assert [line for line in info.value.problems if line.startswith(flag.option)][0].startswith(
            f"{flag.option}: {value!r} is not {flag.allowed}; pass ")


def test_the_table_declares_each_flag_once_with_env_and_help() -> None:
    assert len({f.name for f in flags.FLAGS}) == len(flags.FLAGS)
    for flag in flags.FLAGS:
        assert flag.env == "LAGSCALE_" + flag.dest.upper()
        assert flag.help.endswith(")") and ("(default: " in flag.help or "(required)" in flag.help)
    assert set(flags.PLATFORM_FLAGS) == {"--replica-id", "--metrics-port", "--event-log", "--store"}
