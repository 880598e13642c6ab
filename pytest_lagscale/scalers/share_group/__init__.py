"""The share-group scaler: KEDA's external scaler protocol over a share group's lag (KIP-932,
KIP-1226), so a real KEDA can scale a share-group consumer (KEDA has no share-group scaler).

One job per module:

* :mod:`.metadata`: the trigger metadata (``scalerMetadata``) -> :class:`ShareGroupSettings`;
* :mod:`.servicer`: the gRPC ``externalscaler.ExternalScaler`` servicer, served by
  ``lagscale scaler serve --kind share-group`` (the persistent-lag scaler's server and CLI).

Only :mod:`.metadata` is imported here (no grpc, no Kafka client).
"""

from .metadata import ShareGroupSettings, parse_metadata

__all__ = ["ShareGroupSettings", "parse_metadata"]
