"""``dpcert reproduce`` entries for Chowdhury & Zhou 2022 (seed 002): Figure 1 and Appendix G.

:func:`figure_runs` runs the five LinUCB algorithms on the same instances (one vectorised pass per
batch size); :func:`reproduction` builds the entry that runs every panel under both calibrations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpcert.bandits.algorithms.linucb import ALGORITHMS, CALIBRATIONS, run_group
from dpcert.bandits.calibration.linucb import calibrate
from dpcert.bandits.environments.contextual import vaswani_instance
from dpcert.bandits.registry import BanditRun, ReproductionSpec, register_reproduction


def figure_runs(
    epsilon: float,
    *,
    runs: int = 50,
    horizon: int = 20_000,
    dimension: int = 5,
    arms: int = 100,
    delta: float = 0.1,
    shuffle_batch: int = 20,
    calibration: str = "tight",
    seed: int = 0,
    radius: str = "experiment",
    index_dtype: str = "float32",
) -> dict[str, BanditRun]:
    """C&Z Figure 1 (and Appendix G): the five algorithms on the same R instances, vectorised.

    The three per-round algorithms share one pass, the two shuffle ones another.
    """
    rng = np.random.default_rng([seed, 2])
    env = vaswani_instance(runs, dimension, arms, rng)
    common = {"epsilon": epsilon, "delta": delta, "horizon": horizon, "dimension": dimension}
    per_round = [calibrate(name, batch_size=1, calibration=calibration, **common) for name in ALGORITHMS[:3]]
    amp = calibrate("linucb-sdp-amp", batch_size=shuffle_batch, calibration=calibration, **common)
    vec = calibrate("linucb-sdp-vec", batch_size=shuffle_batch, calibration=calibration, **common)
    results = run_group(
        env, per_round, horizon=horizon, batch_size=1, rng=rng, radius=radius, index_dtype=index_dtype
    )
    results += run_group(
        env,
        [amp, vec],
        horizon=horizon,
        batch_size=shuffle_batch,
        rng=rng,
        radius=radius,
        index_dtype=index_dtype,
    )
    return {run.algorithm: run for run in results}


def run_summary(run: BanditRun, out: Path | None = None, stem: str = "") -> dict[str, Any]:
    """JSON-ready summary of one algorithm's runs; with ``out``, the mean regret curve goes to STEM.npy."""
    mean, stderr = run.final_regret()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        np.save(out / f"{stem}.npy", np.asarray(run.cumulative_regret).mean(axis=0))
    return {
        "regret": {"mean": mean, "stderr": stderr},
        "certificate": run.certificate.to_dict() if run.certificate else None,
        "claim_met": run.target_met,
        "calibration_used": run.extras.get("calibration"),
        "noise": run.extras.get("noise"),
        "seconds": run.seconds,
    }


@dataclass(frozen=True)
class FigurePanels:
    """The panels of a C&Z (2022) figure: every (dimension, ε) under both calibrations."""

    epsilons: tuple[float, ...]
    dimensions: tuple[int, ...]
    horizon: int = 20_000
    runs: int = 50
    delta: float = 0.1


FIGURES: dict[str, tuple[str, FigurePanels]] = {
    "cz2022-figure1": (
        "Chowdhury & Zhou 2022, Figure 1: d=5, K=100, T=20000, delta=0.1, eps in {0.2, 1, 10}",
        FigurePanels((0.2, 1.0, 10.0), (5,)),
    ),
    "cz2022-figure2": (
        "Chowdhury & Zhou 2022, Appendix G (Figure 2): eps=1, d in {10, 15}, tight and paper",
        FigurePanels((1.0,), (10, 15)),
    ),
}
"""The registered reproductions: description and panels (each panel seeds itself from ``seed``)."""


def panel_runs(task: tuple[float, int, str, int, int, int, float]) -> dict[str, BanditRun]:
    """One panel under one calibration, ``task = (ε, dimension, calibration, runs, horizon, seed, δ)``."""
    epsilon, dimension, calibration, runs, horizon, seed, delta = task
    return figure_runs(
        epsilon,
        runs=runs,
        horizon=horizon,
        dimension=dimension,
        delta=delta,
        calibration=calibration,
        seed=seed,
    )


def reproduce_panels(
    name: str,
    panels: FigurePanels,
    runs: int,
    out: Path | None,
    seed: int,
    map_tasks: Callable[..., Iterable[dict[str, BanditRun]]] = map,
) -> dict[str, Any]:
    """Every panel of ``panels`` under both calibrations; ``NAME.json`` and mean curves (``.npy``) to ``out``.

    ``map_tasks(panel_runs, tasks)`` computes the panels (default: one after the other, here); the
    panels seed themselves, so any scheduler gives the same numbers.
    """
    tasks = [
        (epsilon, dimension, calibration, runs, panels.horizon, seed, panels.delta)
        for dimension in panels.dimensions
        for epsilon in panels.epsilons
        for calibration in CALIBRATIONS
    ]
    results = iter(map_tasks(panel_runs, tasks))  # in task order: dimension, ε, calibration
    summary: dict[str, Any] = {
        "name": name,
        "runs": runs,
        "horizon": panels.horizon,
        "delta": panels.delta,
        "panels": [],
    }
    for dimension in panels.dimensions:
        for epsilon in panels.epsilons:
            panel: dict[str, Any] = {"epsilon": epsilon, "dimension": dimension, "algorithms": {}}
            for calibration in CALIBRATIONS:
                for algorithm, run in next(results).items():
                    entry = panel["algorithms"].setdefault(algorithm, {})
                    entry[calibration] = run_summary(
                        run, out, f"{name}_d{dimension}_eps{epsilon}_{calibration}_{algorithm}"
                    )
            summary["panels"].append(panel)
    if out is not None:
        (out / f"{name}.json").write_text(json.dumps(summary, indent=2))
    return summary


def reproduction(
    name: str, epsilons: tuple[float, ...], dimensions: tuple[int, ...], horizon: int = 20_000
) -> Callable[..., dict[str, Any]]:
    """The ``dpcert reproduce`` entry for C&Z Figure 1 / Appendix G: every panel under both calibrations."""
    panels = FigurePanels(epsilons, dimensions, horizon)

    def reproduce(runs: int | None = None, out: Path | None = None, seed: int = 0) -> dict[str, Any]:
        return reproduce_panels(name, panels, runs or panels.runs, out, seed)

    return reproduce


for _name, (_description, _panels) in FIGURES.items():
    register_reproduction(
        ReproductionSpec(_name, _description, reproduction(_name, _panels.epsilons, _panels.dimensions))
    )
