"""KEDA's external scaler protocol (package ``externalscaler``, service ``ExternalScaler``).

``externalscaler.proto`` is written from KEDA's documented interface with KEDA's field numbers;
``externalscaler_pb2.py`` and ``externalscaler_pb2_grpc.py`` are generated from it by
``scripts/gen-protos`` (grpcio-tools, the ``protos`` extra) and committed. :mod:`.client` is the
caller's side as KEDA implements it (the local controller's gRPC client).

Source: kedacore/keda pkg/scalers/externalscaler/externalscaler.proto, pkg/scalers/external_scaler.go
v2.20.2; docs/semantics.md §2.6
"""
