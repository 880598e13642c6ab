"""Local counterparts of the managed services the aggregated lag sources read (docs/lag-sources.md).

Started by the harness like every other part (``start()`` / ``stop()`` / ``with``), reused by
tests and by runs:

* :mod:`.moto_server`: moto's standalone server, a local AWS CloudWatch (a child process);
* :mod:`.lag_publisher`: the run's real lag put into it as MSK's ``SumOffsetLag`` every period
  (a thread);
* :mod:`.confluent_metrics`: a local Confluent Cloud Metrics API query endpoint answered from the
  run's Prometheus (a thread), with the request checks of :mod:`.confluent_query`.

Nothing here is imported by the plugin at start-up; boto3 is imported when a client is made.
"""
