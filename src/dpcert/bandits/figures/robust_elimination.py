"""``dpcert reproduce`` entries for seed 003 (robust, locally private batched elimination), spec 003 §4.

The paper has no experiments; E1–E4 of its spec: d = 5, K = 50 arms and θ* uniform on the sphere,
rewards ``2·Bernoulli((1+⟨a,θ*⟩)/2) − 1``, δ' = 0.05, width scale c_γ = 0.05 frozen.  Horizons are
reduced where the spec's would take long on two cores (stated in each summary).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpcert.bandits import registry
from dpcert.bandits.algorithms.robust_elimination import (
    SEED003_SETTING,
    Adversary,
    LaplaceClients,
    LinearArms,
    robust_elimination,
)
from dpcert.bandits.figures.common import result_row, save_summary

SEED003_RUNS = 10


E2_ADVERSARIES = (
    ("constant 1e6", "constant", 1e6),
    ("targeted 5", "targeted", 5.0),
    ("targeted 50", "targeted", 50.0),
    ("sign-flip x50", "sign-flip", 50.0),
)


def _seed003_instance(seed: int) -> LinearArms:
    return LinearArms.random_sphere(
        SEED003_SETTING["arms"], SEED003_SETTING["dimension"], np.random.default_rng([seed, 3])
    )


def _run003(instance: LinearArms, horizon: int, runs: int, rng_key: list[int], **kwargs: Any):
    started = time.perf_counter()
    result = robust_elimination(
        instance,
        horizon,
        np.random.default_rng(rng_key),
        runs=runs,
        width_scale=SEED003_SETTING["width_scale"],
        failure_probability=SEED003_SETTING["failure_probability"],
        **kwargs,
    )
    return result, time.perf_counter() - started


def reproduce_seed003_e1(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizons: tuple[int, ...] = (10_000, 30_000, 100_000, 300_000, 1_000_000),
) -> dict[str, Any]:
    """E1: non-private, α = 0; log–log slope of regret vs T (spec expects 0.35–0.65); a* survival."""
    runs = SEED003_RUNS if runs is None else runs
    instance = _seed003_instance(seed)
    rows, means = {}, []
    for index, horizon in enumerate(horizons):
        result, seconds = _run003(
            instance, horizon, runs, [seed, 1, index], clients=LaplaceClients(epsilon=None)
        )
        rows[str(horizon)] = result_row(
            result,
            seconds,
            best_arm_survived=float(1.0 - result.best_arm_eliminated.mean()),
            max_batches=int(result.batches.max()),
            batch_limit=math.ceil(math.log(horizon)),
        )
        means.append(result.final_regret.mean())
    slope = float(np.polyfit(np.log(horizons), np.log(means), 1)[0])
    summary = {
        "name": "seed003-e1-sanity",
        "setting": {**SEED003_SETTING, "runs": runs},
        "rows": rows,
        "slope": slope,
    }
    return save_summary(out, "seed003_e1", summary, {})


def reproduce_seed003_e2(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizon: int = 100_000,
    alphas: tuple[float, ...] = (0.0, 0.005, 0.01, 0.02, 0.05),
    adversaries: tuple[tuple[str, str, float], ...] = E2_ADVERSARIES,
) -> dict[str, Any]:
    """E2: robustness vs α, robust filter against plain least squares, four adversaries (non-private)."""
    runs = SEED003_RUNS if runs is None else runs
    instance = _seed003_instance(seed)
    rows: dict[str, Any] = {}
    for label, strategy, magnitude in adversaries:
        for alpha in alphas:
            for estimator in ("robust", "least-squares"):
                result, seconds = _run003(
                    instance,
                    horizon,
                    runs,
                    [seed, 2, int(alpha * 1000)],
                    clients=LaplaceClients(epsilon=None),
                    adversary=Adversary(alpha, strategy, magnitude),
                    estimator=estimator,
                )
                rows[f"{label} | alpha={alpha} | {estimator}"] = result_row(
                    result, seconds, best_arm_lost=int(result.best_arm_eliminated.sum())
                )
    summary = {
        "name": "seed003-e2-robustness",
        "setting": {**SEED003_SETTING, "runs": runs, "horizon": horizon, "spec_horizon": 1_000_000},
        "rows": rows,
    }
    return save_summary(out, "seed003_e2", summary, {})


def reproduce_seed003_e3(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizon: int = 100_000,
    epsilons: tuple[float | None, ...] = (0.5, 1.0, 2.0, 5.0, None),
) -> dict[str, Any]:
    """E3: privacy cost in M1 at α = 0: regret against ε (spec expects ∝ 1 + c/ε)."""
    runs = SEED003_RUNS if runs is None else runs
    instance = _seed003_instance(seed)
    rows = {}
    for epsilon in epsilons:
        result, seconds = _run003(
            instance, horizon, runs, [seed, 3], clients=LaplaceClients("M1", epsilon=epsilon)
        )
        rows["inf" if epsilon is None else str(epsilon)] = result_row(result, seconds)
    summary = {
        "name": "seed003-e3-privacy",
        "setting": {**SEED003_SETTING, "runs": runs, "horizon": horizon},
        "rows": rows,
    }
    return save_summary(out, "seed003_e3", summary, {})


def reproduce_seed003_e4(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizons: tuple[int, ...] = (10_000, 100_000, 1_000_000),
    epsilons: tuple[float, ...] = (0.5, 1.0),
) -> dict[str, Any]:
    """E4: client model M1 (one report per reward) against M2 (one aggregated report per action owner)."""
    runs = SEED003_RUNS if runs is None else runs
    instance = _seed003_instance(seed)
    rows = {}
    for epsilon in epsilons:
        for horizon in horizons:
            for model in ("M1", "M2"):
                result, seconds = _run003(
                    instance,
                    horizon,
                    runs,
                    [seed, 4, horizon],
                    clients=LaplaceClients(model, epsilon=epsilon),
                )
                rows[f"{model} | eps={epsilon} | T={horizon}"] = result_row(
                    result,
                    seconds,
                    client_level_epsilon=result.client_level_epsilon,
                    best_arm_lost=int(result.best_arm_eliminated.sum()),
                )
    summary = {"name": "seed003-e4-m1-vs-m2", "setting": {**SEED003_SETTING, "runs": runs}, "rows": rows}
    return save_summary(out, "seed003_e4", summary, {})


for _name, _description, _reproduce in (
    (
        "seed003-e1-sanity",
        "seed 003 E1: non-private regret vs T (slope), best-arm survival",
        reproduce_seed003_e1,
    ),
    (
        "seed003-e2-robustness",
        "seed 003 E2: regret vs corruption alpha, robust vs plain LS",
        reproduce_seed003_e2,
    ),
    ("seed003-e3-privacy", "seed 003 E3: regret vs epsilon in client model M1", reproduce_seed003_e3),
    ("seed003-e4-m1-vs-m2", "seed 003 E4: client models M1 vs M2 across T and epsilon", reproduce_seed003_e4),
):
    registry.register_reproduction(registry.ReproductionSpec(_name, _description, _reproduce))
