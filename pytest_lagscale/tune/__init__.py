"""``lagscale tune``: search a ScaledObject's fields in the twin for the least replica-seconds
that meets every SLO.

Modules: :mod:`.space` (the search space: ``field=values`` axes, the grid, a point applied to
a manifest), :mod:`.slo` (``metric<=threshold`` SLOs), :mod:`.prepare` (the command's options
checked and turned into a :class:`~.search.TuneRequest`), :mod:`.search` (every point simulated
over its draws; the best point and the Pareto fronts), :mod:`.output` (the tuned manifest,
``tune.json``, the optional real confirmation run) and :mod:`.cli` (``lagscale tune``).

Depends on the simulator (:mod:`pytest_lagscale.twin`), never the reverse. See docs/twin.md
("lagscale tune").
"""
