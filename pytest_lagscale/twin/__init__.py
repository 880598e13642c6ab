"""A digital twin of one run: a deterministic, seeded, fixed-step simulation of the producer,
the partitions, batch-level replicas, their cold starts and the group protocol, driving the
REAL scaling policy of :mod:`pytest_lagscale.control` and scored by :mod:`pytest_lagscale.analyze`.

Modules: :mod:`.params` (calibration files -> :class:`~.params.TwinParams`), :mod:`.load` (the
producer's exact per-partition input), :mod:`.world` (partitions, replicas, Deployment),
:mod:`.group` + :mod:`.assign` (rebalances per protocol), :mod:`.driver` (the policy on the
simulated clock; the timeline and event tables), :mod:`.run` (``simulate``, draws, the run
directory), :mod:`.cli` (``lagscale simulate``). See docs/twin.md.

Calibration and fidelity (:mod:`pytest_lagscale.calibration`) and ``lagscale tune``
(:mod:`pytest_lagscale.tune`) import this package; it imports neither.
"""
