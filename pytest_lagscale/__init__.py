"""pytest-lagscale: prove how a Kafka consumer group behaves when autoscaled on consumer lag."""

__version__ = "0.1.0"
