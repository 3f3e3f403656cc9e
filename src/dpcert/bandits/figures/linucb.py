"""``dpcert reproduce`` entries for Chowdhury & Zhou 2022 (seed 002): Figure 1 and Appendix G.

:func:`figure_runs` runs the five LinUCB algorithms on the same instances (one vectorised pass per
batch size); :func:`reproduction` builds the entry that runs every panel under both calibrations.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dpcert.bandits.algorithms.linucb import ALGORITHMS, CALIBRATIONS, run_group
from dpcert.bandits.calibration.linucb import calibrate
from dpcert.bandits.environments.contextual import vaswani_instance
from dpcert.bandits.registry import (
    BanditRun,
    ReproductionSpec,
    register_reproduction,
)


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


def reproduction(
    name: str, epsilons: tuple[float, ...], dimensions: tuple[int, ...], horizon: int = 20_000
) -> Callable[..., dict[str, Any]]:
    """The ``dpcert reproduce`` entry for C&Z Figure 1 / Appendix G: every panel under both calibrations.

    Writes ``NAME.json`` (regret mean ± s.e., certificates) and the mean regret curves (``.npy``) to ``out``.
    """

    def reproduce(runs: int | None = None, out: Path | None = None, seed: int = 0) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "name": name,
            "runs": runs or 50,
            "horizon": horizon,
            "delta": 0.1,
            "panels": [],
        }
        for dimension in dimensions:
            for epsilon in epsilons:
                panel: dict[str, Any] = {"epsilon": epsilon, "dimension": dimension, "algorithms": {}}
                for calibration in CALIBRATIONS:
                    results = figure_runs(
                        epsilon,
                        runs=runs or 50,
                        horizon=horizon,
                        dimension=dimension,
                        calibration=calibration,
                        seed=seed,
                    )
                    for algorithm, run in results.items():
                        entry = panel["algorithms"].setdefault(algorithm, {})
                        entry[calibration] = run_summary(
                            run, out, f"{name}_d{dimension}_eps{epsilon}_{calibration}_{algorithm}"
                        )
                summary["panels"].append(panel)
        if out is not None:
            (out / f"{name}.json").write_text(json.dumps(summary, indent=2))
        return summary

    return reproduce


register_reproduction(
    ReproductionSpec(
        "cz2022-figure1",
        "Chowdhury & Zhou 2022, Figure 1: d=5, K=100, T=20000, delta=0.1, eps in {0.2, 1, 10}",
        reproduction("cz2022-figure1", (0.2, 1.0, 10.0), (5,)),
    )
)


register_reproduction(
    ReproductionSpec(
        "cz2022-figure2",
        "Chowdhury & Zhou 2022, Appendix G (Figure 2): eps=1, d in {10, 15}, tight and paper",
        reproduction("cz2022-figure2", (1.0,), (10, 15)),
    )
)
