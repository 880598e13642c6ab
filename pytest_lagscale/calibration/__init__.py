"""The twin's calibration and fidelity: parameters from real runs, and real runs predicted.

Modules: :mod:`.facts` (a real run directory's event-level facts, :class:`~.facts.RunFacts`),
:mod:`.calibrate` (the fits: facts of real runs -> a calibration document, written as YAML),
:mod:`.fidelity` (a real run planned again, simulated and compared figure by figure and span
by span), :mod:`.cli` (``lagscale twin calibrate``) and :mod:`.predict_cli` (``lagscale twin
predict``). The calibration files themselves are package data (``data/twin/``) read by the
simulator, :mod:`pytest_lagscale.twin.params`.

Depends on the simulator (:mod:`pytest_lagscale.twin`), never the reverse. See docs/twin.md
("Calibration: `lagscale twin calibrate`", "Fidelity").
"""
