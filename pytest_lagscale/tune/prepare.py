"""From ``lagscale tune``'s options to a checked :class:`~.tune.TuneRequest`: every problem of
every option reported at once, before anything is simulated."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from ..contract.errors import ConfigError
from .search import DEFAULT_BUDGET, MAX_DRAWS, TuneRequest


@dataclass(frozen=True)
class TuneOptions:
    """The command's options as given.

    Attributes:
        profile, policy: bundled names or YAML paths (as ``lagscale run``).
        space: ``--space`` values (:mod:`.space`).
        slos: ``--slo`` values (:mod:`.slo`).
        partitions: overrides the profile's partition count, or None.
        engine: overrides the Deployment's engine (``spark``, ``arrow``), or None.
        draws: draws per point (1..1000).
        seed: the draws' seed (>= 0).
        budget: most grid points (>= 1).
    """

    profile: str
    policy: str
    space: Sequence[str]
    slos: Sequence[str]
    partitions: int | None = None
    engine: str | None = None
    draws: int = 30
    seed: int = 0
    budget: int = DEFAULT_BUDGET

    def settings(self) -> Any:
        """The input run's :class:`~pytest_lagscale.experiment.settings.RunSettings`."""
        from ..experiment.settings import RunSettings

        return RunSettings(profile=self.profile, policy=self.policy, partitions=self.partitions,
                           engine=self.engine)


def check_numbers(options: TuneOptions) -> list[str]:
    """Problem lines for ``--draws``, ``--seed``, ``--budget`` and ``--engine``."""
    from ..twin.params import ENGINES

    problems = []
    if not 1 <= options.draws <= MAX_DRAWS:
        problems.append(f"--draws: got {options.draws!r}, expected an integer in [1, "
                        f"{MAX_DRAWS}]; give a count in the range")
    if options.seed < 0:
        problems.append(f"--seed: got {options.seed!r}, expected an integer >= 0; give a "
                        "non-negative seed")
    if options.budget < 1:
        problems.append(f"--budget: got {options.budget!r}, expected an integer >= 1 (grid "
                        "points); give a positive count")
    if options.engine is not None and options.engine not in ENGINES:
        problems.append(f"--engine: got {options.engine!r}, expected one of "
                        f"{', '.join(ENGINES)} (the engines the twin has a calibration for); "
                        "pick one of them")
    return problems


def _budget_problem(axes: Sequence[Any], budget: int) -> list[str]:
    size = math.prod(len(a.values) for a in axes)
    if size <= budget:
        return []
    shape = " x ".join(f"{len(a.values)} {a.key}" for a in axes)
    return [f"--budget: the space has {size} points ({shape}), expected at most {budget}; "
            f"raise --budget to {size} or give fewer values per key (KEY=LO..HI:N)"]


def _plan(options: TuneOptions) -> tuple[Any, Any, Any]:
    """The input run's plan, twin parameters and policy manifest as loaded (a ConfigError
    carries every problem of the settings, files and twin refusals)."""
    from ..config import _read
    from ..twin.run import params_for, plan_of

    plan = plan_of(options.settings())
    if plan.policy_config.kind != "ScaledObject":
        raise ConfigError(f"--policy: {plan.policy_config.source!r} is a "
                          f"{plan.policy_config.kind}, expected a ScaledObject; tune a "
                          "ScaledObject with a kafka trigger")
    return plan, params_for(plan), _read.load_yaml(plan.policy_config.source)


def prepare(options: TuneOptions) -> TuneRequest:
    """Check every option and read the inputs.

    Raises:
        ConfigError: every problem at once, one line each (option, value, allowed range or
            set): ``--draws``/``--seed``/``--budget``/``--engine``, ``--slo``, the run's
            settings and files, the twin's refusals, ``--space`` (checked against the input
            manifest once it is read) and the grid's size against ``--budget``.
    """
    from .slo import parse_slos
    from .space import parse_space

    problems = check_numbers(options)
    slos = axes = plan = params = doc = None
    try:
        slos = parse_slos(options.slos)
    except ConfigError as exc:
        problems += exc.problems
    try:
        plan, params, doc = _plan(_known_engine(options))
        axes = parse_space(options.space, doc, plan.policy_config.source)
    except ConfigError as exc:
        problems += exc.problems
    if axes is not None:
        problems += _budget_problem(axes, options.budget)
    if problems:
        raise ConfigError(problems)
    return TuneRequest(plan=plan, doc=doc, axes=axes, slos=slos, params=params,
                       draws=options.draws, seed=options.seed)


def _known_engine(options: TuneOptions) -> TuneOptions:
    """``options`` without an engine the twin has no calibration for (reported already)."""
    from dataclasses import replace

    from ..twin.params import ENGINES

    return options if options.engine in (None, *ENGINES) else replace(options, engine=None)


__all__ = ["TuneOptions", "check_numbers", "prepare"]
