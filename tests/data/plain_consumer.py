"""A consumer the harness knows nothing of: confluent-kafka, its own flags, no metrics, no
probe. Broker, topic and group come from the env the harness fills (KAFKA_BOOTSTRAP,
KAFKA_TOPIC, KAFKA_GROUP); ``--process-ms`` per record; commits after each poll (a commit
refused because the group rebalanced meanwhile is skipped: the partition's next owner reads
from the last commit); SIGTERM: stop polling, commit, leave the group (close)."""
import argparse, os, signal, time

from confluent_kafka import Consumer, KafkaError, KafkaException

REBALANCED = (KafkaError.ILLEGAL_GENERATION, KafkaError.REBALANCE_IN_PROGRESS,
              KafkaError.UNKNOWN_MEMBER_ID)

parser = argparse.ArgumentParser()
parser.add_argument("--process-ms", type=float, default=2.5)
args = parser.parse_args()
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
consumer = Consumer({"bootstrap.servers": os.environ["KAFKA_BOOTSTRAP"],
                     "group.id": os.environ["KAFKA_GROUP"], "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                     "partition.assignment.strategy": "cooperative-sticky"})
consumer.subscribe([os.environ["KAFKA_TOPIC"]])
while not stop:
    batch = consumer.consume(100, 0.5)
    for message in batch:
        time.sleep(args.process_ms / 1000)
    if batch:
        try:
            consumer.commit(asynchronous=False)
        except KafkaException as exc:
            if exc.args[0].code() not in REBALANCED:
                raise
consumer.close()
