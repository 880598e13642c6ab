"""The persistent-lag scaler: KEDA's external scaler protocol over a sliding window of lag.

One job per module:

* :mod:`.metadata`: the trigger metadata (``scalerMetadata``) -> :class:`PersistentLagSettings`;
* :mod:`.window`: the pure core (samples in, :class:`Assessment` out; the states and values);
* :mod:`.sampler`: one thread per ScaledObject trigger reading lag every samplingInterval;
* :mod:`.servicer`: the gRPC ``externalscaler.ExternalScaler`` servicer;
* :mod:`.server`: the gRPC server (start, stop);
* :mod:`.cli`: ``lagscale scaler serve``.

Only :mod:`.metadata` and :mod:`.window` are imported here (no grpc, no Kafka client).
"""

from .metadata import PersistentLagSettings, parse_metadata
from .window import STATES, Assessment, LagSample, PersistentLagWindow

__all__ = ["STATES", "Assessment", "LagSample", "PersistentLagSettings", "PersistentLagWindow", "parse_metadata"]
