"""Parameter sweeps (algorithms × ε × seeds) and figure reproductions on any scheduler.

Each point of a sweep is one ``dpcert bandit run`` (a :class:`~dpcert.bandits.registry.RunConfig`
with its own integer seed), so a sweep point equals the single run with the same seed whichever
scheduler computed it.  The Chowdhury & Zhou (2022) figure reproductions are split into one task per
(dimension, ε, calibration) panel; each panel seeds itself as ``dpcert reproduce`` does, so the
numbers equal the local reproduction's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpcert import _validation as check
from dpcert.bandits import registry
from dpcert.bandits.experiment import PlainProgress
from dpcert.bandits.privatizers import Calibration, calibration_from_label, trust_model_of
from dpcert.bandits.scheduler import check_scheduler, map_items, require_distributed
from dpcert.errors import InvalidParameter
from dpcert.reproductions import current_name
from dpcert.reproductions.chowdhury_zhou_2022 import FIGURES, reproduce_panels


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep: the run's configuration and its result."""

    algorithm: str
    privacy: str
    epsilon: float | None
    seed: int
    run: registry.BanditRun = field(repr=False)


def _progress_printer(total: int, label: str, show: bool) -> Callable[[int], None] | None:
    return PlainProgress(total, label, "tasks").update if show else None


def _run_config(config: registry.RunConfig) -> registry.BanditRun:
    return registry.algorithm(config.algorithm).run(config)


def sweep(
    algorithms: Sequence[str | tuple[str, str]],
    epsilons: Sequence[float | None],
    seeds: Sequence[int],
    *,
    horizon: int = 10_000,
    runs: int = 1,
    delta: float | None = None,
    calibration: Calibration | str = Calibration.LEAST_NOISE,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    scheduler: Any = "local",
    progress: bool = False,
) -> list[SweepPoint]:
    """Run every (algorithm, ε, seed) as one task on ``scheduler``; points in that (row-major) order.

    ``algorithms`` holds names (privacy: the algorithm's first privacy model) or ``(name, privacy)``
    pairs; ``options`` maps an algorithm name to its ``--option`` settings.  Point ``(a, ε, s)`` is
    ``dpcert bandit run a --epsilon ε --seed s`` with the same settings, bit for bit.
    ``progress=True`` prints ``done/total`` tasks on stderr.
    """
    scheduler = check_scheduler(scheduler)
    if scheduler == "dask":
        require_distributed()
    if not algorithms or not epsilons or not seeds:
        raise InvalidParameter("sweep", "empty", "at least one algorithm, one epsilon and one seed")
    mode = calibration_from_label(calibration)
    configs = []
    for entry in algorithms:
        name, privacy = (entry, None) if isinstance(entry, str) else entry
        spec = registry.algorithm(name)
        privacy = privacy or spec.privacy_models[0]
        if privacy not in spec.privacy_models:
            raise InvalidParameter("privacy", privacy, "one of " + ", ".join(spec.privacy_models))
        for epsilon in epsilons:
            if epsilon is not None:
                check.epsilon(epsilon)
            for seed in seeds:
                configs.append(
                    registry.RunConfig(
                        algorithm=name,
                        privacy=trust_model_of(privacy),
                        epsilon=None if privacy == "none" else epsilon,
                        delta=delta,
                        horizon=check.positive_int("horizon", horizon),
                        runs=check.positive_int("runs", runs),
                        seed=check.positive_int("seed", seed, minimum=0),
                        calibration=mode,
                        options=dict((options or {}).get(name, {})),
                    )
                )
    results = map_items(
        _run_config, configs, scheduler, on_done=_progress_printer(len(configs), "sweep", progress)
    )
    return [
        SweepPoint(c.algorithm, c.privacy_name, c.epsilon, c.seed, run)
        for c, run in zip(configs, results, strict=True)
    ]


def reproduce(
    name: str,
    runs: int | None = None,
    out: Path | None = None,
    seed: int = 0,
    *,
    scheduler: Any = "local",
    horizon: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """``dpcert reproduce NAME`` on ``scheduler``.

    With ``"local"`` the registered reproduction runs unchanged.  Otherwise ``name`` must be one of
    :data:`dpcert.reproductions.chowdhury_zhou_2022.FIGURES`: every (dimension, ε, calibration) panel is one
    task, seeded as the local run seeds it, and the summary (and the curves written to ``out``) equal
    the local ones.
    ``horizon`` shortens the panels (tests and benchmarks; the figure's own T otherwise).
    """
    name = current_name(name)
    scheduler = check_scheduler(scheduler)
    if scheduler == "local" and horizon is None:
        return dict(registry.reproduction(name).run(runs, out, seed))
    if scheduler == "dask":
        require_distributed()
    if name not in FIGURES:
        raise InvalidParameter(
            "scheduler", scheduler, f"'local' for {name} (Dask runs: {', '.join(FIGURES)})"
        )
    panels = FIGURES[name][1]
    if horizon is not None:
        panels = dataclasses.replace(panels, horizon=check.positive_int("horizon", horizon))
    runs = check.positive_int("runs", runs or panels.runs)

    def map_tasks(function: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
        return map_items(function, tasks, scheduler, on_done=_progress_printer(len(tasks), name, progress))

    return reproduce_panels(name, panels, runs, out, seed, map_tasks)
