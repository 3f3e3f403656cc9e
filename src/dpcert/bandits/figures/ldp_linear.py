"""``dpcert reproduce seed004-figure1``: OnlineUCB (seed 004) against the LinUCB family, three panels."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpcert.accounting.session import PrivacySession
from dpcert.bandits.algorithms.ldp_linear import ONLINE_UCB, bandit_run, default_learner_grid, run_ldp_linear
from dpcert.bandits.calibration.ldp_linear import calibrate_randomizer
from dpcert.bandits.environments.contextual import vaswani_instance
from dpcert.bandits.figures.linucb import figure_runs as linucb_figure_runs
from dpcert.bandits.figures.linucb import run_summary
from dpcert.bandits.registry import BanditRun, ReproductionSpec, register_reproduction


def figure_runs(
    epsilon: float,
    *,
    runs: int = 50,
    horizon: int = 20_000,
    dimension: int = 5,
    arms: int = 100,
    delta: float = 0.1,
    calibration: str = "analytic_joint",
    seed: int = 0,
    combiner: bool = False,
) -> dict[str, BanditRun]:
    """Seed 004, Figure 1: OnlineUCB against the four LinUCB baselines on the same instances.

    The baselines come from :func:`dpcert.bandits.figures.linucb.figure_runs` (tight calibrations);
    δ = 0.1 and B = 20 as in the C&Z script (spec §4.1).
    """
    baseline = linucb_figure_runs(
        epsilon, runs=runs, horizon=horizon, dimension=dimension, arms=arms, delta=delta, seed=seed
    )
    rng = np.random.default_rng([seed, 2])
    env = vaswani_instance(runs, dimension, arms, rng)  # the same instances as the baselines
    local = calibrate_randomizer(epsilon, delta, calibration)
    names = {"online-ucb": [ONLINE_UCB]}
    if combiner:
        names["online-ucb-combiner"] = default_learner_grid(horizon)
    for name, learners in names.items():
        start = time.perf_counter()
        session = PrivacySession(f"{name}/r")
        result = run_ldp_linear(
            env, learners, horizon=horizon, sigma=local.sigma, epsilon=epsilon, delta=delta, rng=rng,
            session=session, certificate=local.certificate,
        )  # fmt: skip
        extras = {
            "calibration": local.calibration,
            "noise": {"sigma": local.sigma},
            "clipped_fraction": result.clipped_fraction,
        }
        baseline[name] = bandit_run(name, result, session, local, time.perf_counter() - start, extras)
    return baseline


def reproduce(
    runs: int | None = None, out: Path | None = None, seed: int = 0, horizon: int = 20_000
) -> dict[str, Any]:
    """``dpcert reproduce seed004-figure1``: the three panels; JSON summary and mean curves to ``out``."""
    summary: dict[str, Any] = {
        "name": "seed004-figure1",
        "runs": runs or 50,
        "horizon": horizon,
        "panels": [],
    }
    for epsilon in (0.2, 1.0, 10.0):
        results = figure_runs(epsilon, runs=runs or 50, seed=seed, horizon=horizon)
        panel = {"epsilon": epsilon, "delta": 0.1, "algorithms": {}}
        for name, run in results.items():
            panel["algorithms"][name] = run_summary(run, out, f"seed004_eps{epsilon}_{name}")
        summary["panels"].append(panel)
    if out is not None:
        (out / "seed004-figure1.json").write_text(json.dumps(summary, indent=2))
    return summary


register_reproduction(
    ReproductionSpec(
        "seed004-figure1",
        "seed 004, Figure 1: OnlineUCB vs LinUCB, JDP, SDP, LDP; d=5, K=100, T=20000, delta=0.1",
        reproduce,
    )
)
