"""The external scaler protocol: KEDA's names and field numbers, and stubs that match the .proto."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pb2 = pytest.importorskip("pytest_lagscale.scalers.externalscaler.externalscaler_pb2",
                          reason="grpcio/protobuf missing: pip install -e '.[scaler]'")

REPO = Path(__file__).resolve().parents[3]
PROTO = "pytest_lagscale/scalers/externalscaler/externalscaler.proto"

# kedacore/keda pkg/scalers/externalscaler/externalscaler.proto (v2.20.2; main 2026-11 the same
# for these); docs/semantics.md §2.6
KEDA_FIELDS = {
    "ScaledObjectRef": {"name": (1, "string"), "namespace": (2, "string"), "scalerMetadata": (3, "map")},
    "IsActiveResponse": {"result": (1, "bool")},
    "GetMetricSpecResponse": {"metricSpecs": (1, "MetricSpec[]")},
    "MetricSpec": {"metricName": (1, "string"), "targetSize": (2, "int64"), "targetSizeFloat": (3, "double")},
    "GetMetricsRequest": {"scaledObjectRef": (1, "ScaledObjectRef"), "metricName": (2, "string")},
    "GetMetricsResponse": {"metricValues": (1, "MetricValue[]")},
    "MetricValue": {"metricName": (1, "string"), "metricValue": (2, "int64"), "metricValueFloat": (3, "double")},
}
KEDA_METHODS = {
    "IsActive": ("ScaledObjectRef", "IsActiveResponse", False),
    "StreamIsActive": ("ScaledObjectRef", "IsActiveResponse", True),
    "GetMetricSpec": ("ScaledObjectRef", "GetMetricSpecResponse", False),
    "GetMetrics": ("GetMetricsRequest", "GetMetricsResponse", False),
}


def _kind(f) -> str:  # type: ignore[no-untyped-def]
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        return "map"
    names = {f.TYPE_STRING: "string", f.TYPE_BOOL: "bool", f.TYPE_INT64: "int64", f.TYPE_DOUBLE: "double"}
    kind = f.message_type.name if f.message_type is not None else names[f.type]
    return kind + ("[]" if f.is_repeated and kind != "map" else "")


def test_messages_have_kedas_field_names_numbers_and_types() -> None:
    assert pb2.DESCRIPTOR.package == "externalscaler"
    got = {name: {f.name: (f.number, _kind(f)) for f in msg.fields}
           for name, msg in pb2.DESCRIPTOR.message_types_by_name.items()}
    assert got == KEDA_FIELDS


def test_service_has_kedas_methods() -> None:
    service = pb2.DESCRIPTOR.services_by_name["ExternalScaler"]
    assert service.full_name == "externalscaler.ExternalScaler"
    got = {m.name: (m.input_type.name, m.output_type.name, m.server_streaming) for m in service.methods}
    assert got == KEDA_METHODS


def test_committed_stubs_are_the_generator_output(tmp_path: Path) -> None:
    """scripts/gen-protos's command on the committed .proto gives the committed stubs."""
    protoc = pytest.importorskip("grpc_tools.protoc", reason="grpcio-tools missing: pip install -e '.[protos]'")
    (tmp_path / PROTO).parent.mkdir(parents=True)
    shutil.copy(REPO / PROTO, tmp_path / PROTO)
    code = protoc.main(["grpc_tools.protoc", f"-I{tmp_path}", f"--python_out={tmp_path}",
                        f"--grpc_python_out={tmp_path}", str(tmp_path / PROTO)])
    assert code == 0
    for stub in ("externalscaler_pb2.py", "externalscaler_pb2_grpc.py"):
        generated = (tmp_path / PROTO).with_name(stub).read_text()
        assert generated == (REPO / PROTO).with_name(stub).read_text(), f"{stub} is stale: run scripts/gen-protos"
