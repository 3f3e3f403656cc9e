"""Parameter sweeps (algorithms × ε × seeds) and figure reproductions on any scheduler.

Each point of a sweep is one ``dpcert bandit run`` (a :class:`~dpcert.bandits.registry.RunConfig`
with its own integer seed), so a sweep point equals the single run with the same seed whichever
scheduler computed it.  The Chowdhury & Zhou (2022) figure reproductions are split into one task per
(dimension, ε, calibration) panel; each panel seeds itself as ``dpcert reproduce`` does, so the
numbers equal the local reproduction's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpcert import _validation as check
from dpcert.bandits import registry
from dpcert.bandits.scheduler import check_scheduler, map_items, require_distributed
from dpcert.errors import InvalidParameter


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep: the run's configuration and its result."""

    algorithm: str
    privacy: str
    epsilon: float | None
    seed: int
    run: registry.BanditRun = field(repr=False)


def _progress_printer(total: int, label: str, show: bool) -> Callable[[int], None] | None:
    if not show:
        return None
    done = [0]

    def update(count: int) -> None:
        done[0] += count
        sys.stderr.write(f"{label}: {done[0]}/{total} tasks\n")

    return update


def _run_config(config: registry.RunConfig) -> registry.BanditRun:
    import dpcert.bandits  # noqa: F401  (registers every algorithm in a fresh worker)

    return registry.algorithm(config.algorithm).run(config)


def sweep(
    algorithms: Sequence[str | tuple[str, str]],
    epsilons: Sequence[float | None],
    seeds: Sequence[int],
    *,
    horizon: int = 10_000,
    runs: int = 1,
    delta: float | None = None,
    calibration: str = "tight",
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
    import dpcert.bandits  # noqa: F401  (registers every algorithm)

    scheduler = check_scheduler(scheduler)
    if scheduler == "dask":
        require_distributed()
    if not algorithms or not epsilons or not seeds:
        raise InvalidParameter("sweep", "empty", "at least one algorithm, one epsilon and one seed")
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
                        privacy=privacy,
                        epsilon=None if privacy == "none" else epsilon,
                        delta=delta,
                        horizon=check.positive_int("horizon", horizon),
                        runs=check.positive_int("runs", runs),
                        seed=check.positive_int("seed", seed, minimum=0),
                        calibration=calibration,
                        options=dict((options or {}).get(name, {})),
                    )
                )
    results = map_items(
        _run_config, configs, scheduler, on_done=_progress_printer(len(configs), "sweep", progress)
    )
    return [
        SweepPoint(c.algorithm, c.privacy, c.epsilon, c.seed, run)
        for c, run in zip(configs, results, strict=True)
    ]


@dataclass(frozen=True)
class FigurePanels:
    """The panels of a C&Z (2022) figure reproduction, as registered in
    :mod:`dpcert.bandits.algorithms.linucb`."""

    epsilons: tuple[float, ...]
    dimensions: tuple[int, ...]
    horizon: int = 20_000
    runs: int = 50
    delta: float = 0.1


SPLIT_REPRODUCTIONS: dict[str, FigurePanels] = {
    "cz2022-figure1": FigurePanels((0.2, 1.0, 10.0), (5,)),
    "cz2022-figure2": FigurePanels((1.0,), (10, 15)),
}
"""Reproductions split into one task per (dimension, ε, calibration) panel."""


def _figure_panel(task: tuple[float, int, str, int, int, int]) -> dict[str, registry.BanditRun]:
    from dpcert.bandits.figures import linucb

    epsilon, dimension, calibration, runs, horizon, seed = task
    return linucb.figure_runs(
        epsilon, runs=runs, horizon=horizon, dimension=dimension, calibration=calibration, seed=seed
    )


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
    :data:`SPLIT_REPRODUCTIONS`: every (dimension, ε, calibration) panel is one task, seeded as the
    local run seeds it, and the summary (and the curves written to ``out``) equal the local ones.
    ``horizon`` shortens the panels (tests and benchmarks; the figure's own T otherwise).
    """
    import dpcert.bandits  # noqa: F401  (registers every reproduction)

    scheduler = check_scheduler(scheduler)
    if scheduler == "local" and horizon is None:
        return dict(registry.reproduction(name).run(runs, out, seed))
    if scheduler == "dask":
        require_distributed()
    if name not in SPLIT_REPRODUCTIONS:
        raise InvalidParameter(
            "scheduler", scheduler, f"'local' for {name} (Dask runs: {', '.join(SPLIT_REPRODUCTIONS)})"
        )
    from dpcert.bandits.algorithms.linucb import CALIBRATIONS
    from dpcert.bandits.figures.linucb import run_summary

    panels = SPLIT_REPRODUCTIONS[name]
    runs = check.positive_int("runs", runs or panels.runs)
    horizon = check.positive_int("horizon", horizon or panels.horizon)
    tasks = [
        (epsilon, dimension, calibration, runs, horizon, seed)
        for dimension in panels.dimensions
        for epsilon in panels.epsilons
        for calibration in CALIBRATIONS
    ]
    results = map_items(
        _figure_panel, tasks, scheduler, on_done=_progress_printer(len(tasks), name, progress)
    )
    summary: dict[str, Any] = {
        "name": name,
        "runs": runs,
        "horizon": horizon,
        "delta": panels.delta,
        "panels": [],
    }
    by_task = dict(zip(tasks, results, strict=True))
    for dimension in panels.dimensions:
        for epsilon in panels.epsilons:
            panel: dict[str, Any] = {"epsilon": epsilon, "dimension": dimension, "algorithms": {}}
            for calibration in CALIBRATIONS:
                for algorithm, run in by_task[(epsilon, dimension, calibration, runs, horizon, seed)].items():
                    entry = panel["algorithms"].setdefault(algorithm, {})
                    entry[calibration] = run_summary(
                        run, out, f"{name}_d{dimension}_eps{epsilon}_{calibration}_{algorithm}"
                    )
            summary["panels"].append(panel)
    if out is not None:
        (out / f"{name}.json").write_text(json.dumps(summary, indent=2))
    return summary
