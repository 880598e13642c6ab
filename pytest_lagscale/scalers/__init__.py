"""Scalers lagscale serves to KEDA (and to its own local controller) over KEDA's external scaler
gRPC protocol.

* :mod:`.externalscaler`: the protocol (``externalscaler.proto``, its generated stubs, a client);
* :mod:`.persistent_lag`: the persistent-lag scaler (``lagscale scaler serve``).

Nothing here is imported by the pytest plugin; grpcio and protobuf come with the ``scaler`` extra.
"""
