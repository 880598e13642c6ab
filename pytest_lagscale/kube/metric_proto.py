"""Decode the HPA controller's external-metrics answers in Kubernetes' protobuf encoding.

kube-controller-manager asks the metrics APIs for ``application/vnd.kubernetes.protobuf``
(client-go's preference for built-in clients), and the KEDA adapter answers in it. The metrics
tap must read the value the HPA got without changing what it gets, so it decodes that answer:
the 4-byte envelope ``k8s\\x00`` followed by a ``runtime.Unknown`` whose ``raw`` is an
``ExternalMetricValueList``. The message classes are built at import from descriptors of only
the fields read (field numbers as in the .proto files below); the others (list metadata,
labels, timestamp) are declared as bytes, which is the same wire type, and left undecoded.
Decoding is google.protobuf's.

Source: k8s.io/apimachinery pkg/runtime/serializer/protobuf/protobuf.go (the ``k8s\\x00``
prefix), pkg/runtime/generated.proto (``Unknown``: typeMeta 1, raw 2, contentEncoding 3,
contentType 4), pkg/api/resource/generated.proto (``Quantity``: string 1); k8s.io/metrics
pkg/apis/external_metrics/v1beta1/generated.proto (``ExternalMetricValueList``: items 2;
``ExternalMetricValue``: metricName 1, value 5) — all v0.36.3.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PROTOBUF_MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
ENVELOPE_PREFIX = b"k8s\x00"
_PACKAGE = "lagscale.kube.metricproto"

_F = descriptor_pb2.FieldDescriptorProto


def _field(name: str, number: int, kind: int, *, repeated: bool = False,
           type_name: str | None = None) -> dict:
    spec = {"name": name, "number": number, "type": kind,
            "label": _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL}
    if type_name:
        spec["type_name"] = f".{_PACKAGE}.{type_name}"
    return spec


def _messages() -> dict[str, type]:
    proto = descriptor_pb2.FileDescriptorProto(name="lagscale_metric_proto.proto",
                                               package=_PACKAGE, syntax="proto2")
    layout = {
        "Unknown": [_field("typeMeta", 1, _F.TYPE_BYTES), _field("raw", 2, _F.TYPE_BYTES),
                    _field("contentEncoding", 3, _F.TYPE_STRING),
                    _field("contentType", 4, _F.TYPE_STRING)],
        "Quantity": [_field("string", 1, _F.TYPE_STRING)],
        "ExternalMetricValue": [_field("metricName", 1, _F.TYPE_STRING),
                                _field("value", 5, _F.TYPE_MESSAGE, type_name="Quantity")],
        "ExternalMetricValueList": [_field("metadata", 1, _F.TYPE_BYTES),
                                    _field("items", 2, _F.TYPE_MESSAGE, repeated=True,
                                           type_name="ExternalMetricValue")],
    }
    for name, fields in layout.items():
        proto.message_type.add(name=name, field=[_F(**f) for f in fields])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
            for name in layout}


_MESSAGES = _messages()


def external_metric_values(body: bytes) -> list[tuple[str, str]]:
    """``[(metricName, value quantity string), ...]`` of a protobuf ExternalMetricValueList.

    Raises:
        ValueError: the body lacks the ``k8s\\x00`` envelope, or is not a valid message.
    """
    if not body.startswith(ENVELOPE_PREFIX):
        raise ValueError(f"not a Kubernetes protobuf body (starts {body[:4]!r}, expected "
                         f"{ENVELOPE_PREFIX!r})")
    from google.protobuf.message import DecodeError

    try:
        unknown = _MESSAGES["Unknown"].FromString(body[len(ENVELOPE_PREFIX):])
        listing = _MESSAGES["ExternalMetricValueList"].FromString(unknown.raw)
    except DecodeError as exc:
        raise ValueError(f"not an ExternalMetricValueList: {exc}") from exc
    return [(item.metricName, item.value.string) for item in listing.items]


def encode_external_metric_values(items: list[tuple[str, str]]) -> bytes:
    """The protobuf body an adapter answers for ``items`` (``[(metricName, quantity)]``); the
    inverse of :func:`external_metric_values`, for tests."""
    listing = _MESSAGES["ExternalMetricValueList"]()
    for name, value in items:
        item = listing.items.add()
        item.metricName = name
        item.value.string = value
    unknown = _MESSAGES["Unknown"](raw=listing.SerializeToString(), contentType="")
    return ENVELOPE_PREFIX + unknown.SerializeToString()
