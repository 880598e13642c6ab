"""The seeded open-model load generator (DESIGN.md "Data flow": profile -> load generator).

Modules, in the order data flows through them:

* :mod:`.schema`, :mod:`.profiles` -- traffic profile YAML -> validated ``Profile`` ->
  ``Profile.schedule()`` (a list of ``Step``; ``load_profile(path, overrides)``).
* :mod:`.schedule` -- ``Schedule``: record counts and the send time of every record.
* :mod:`.events` -- the 280-byte event layout (``EVENT_DTYPE``, ``EVENT_SIZE_BYTES``,
  ``encode_events``, ``decode_events``) and the seeded ``EventSource`` (Zipf keys, payloads).
* :mod:`.pacing` -- ``run_open_model``: sends on the wall clock whatever the consumers do.
* :mod:`.producer` -- the confluent-kafka sink, ``produce_profile``, ``write_run``.
* :mod:`.manifest`, :mod:`.report` -- ``manifest.json`` (acknowledged offsets per partition)
  and the per-step report (requested vs achieved rate, ``kept_up``).
* :mod:`.cli` -- ``lagscale produce``.

Nothing is imported here, so ``import pytest_lagscale.load`` stays free of numpy and
confluent-kafka.
"""
