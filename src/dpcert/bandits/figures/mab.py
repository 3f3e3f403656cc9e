"""``dpcert reproduce`` entry for seed 001 (shuffle-model MAB, Tenenbaum et al. 2021).

The paper has no experiments; the reproduction runs the one proposed in its spec:

* ``seed001-shuffle-mab`` (spec 001 §7): k = 10 arms with means (0.9, 0.8×3, 0.6×3, 0.3×3), T = 10⁶,
  δ = 1e-6, ε ∈ {2, 1, 0.5, 0.25, 0.1}, 20 runs; SDP-AE (m = ⌈σ²⌉) and VB-SDP-AE against the non-private
  elimination (m = 1 and doubling), central ε-DP elimination (Laplace) and local ε-DP elimination
  (randomized response).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dpcert.bandits import registry
from dpcert.bandits.algorithms.mab import (
    BatchSchedule,
    EliminationResult,
    ExactSum,
    batched_arm_elimination,
    central_dp_se,
    local_dp_se,
    sdp_ae,
    shuffle_binary_sum,
    successive_elimination,
    vb_sdp_ae,
)
from dpcert.bandits.environments.mab import SPEC_001_MEANS, MultiArmedBandit
from dpcert.bandits.figures.common import result_row, save_summary

SEED001_EPSILONS = (2.0, 1.0, 0.5, 0.25, 0.1)
SEED001_DELTA = 1e-6
SEED001_HORIZON = 1_000_000
SEED001_RUNS = 20


# =========================================================================== shared helpers


# =========================================================================== seed 001 algorithms


# =========================================================================== seed 003 algorithm


# =========================================================================== reproductions


def reproduce_seed001(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizon: int = SEED001_HORIZON,
    epsilons: tuple[float, ...] = SEED001_EPSILONS,
) -> dict[str, Any]:
    """Spec 001 §7: regret (mean ± s.e.) and wall time of SDP-AE, VB-SDP-AE and the baselines."""
    runs = SEED001_RUNS if runs is None else runs
    bandit = MultiArmedBandit(np.asarray(SPEC_001_MEANS))
    rows: dict[str, Any] = {}
    curves: dict[str, np.ndarray] = {}

    def timed(label: str, call: Callable[[np.random.Generator], EliminationResult], **extra: Any) -> None:
        started = time.perf_counter()
        result = call(np.random.default_rng([seed, len(rows)]))
        seconds = time.perf_counter() - started
        rows[label] = result_row(
            result,
            seconds,
            good_event_violations=int(result.good_event_violated.sum()),
            best_arm_eliminated=int(result.best_arm_eliminated.sum()),
            certificate=None if result.certificate is None else result.certificate.summary(),
            **extra,
        )
        curves[f"{label}|regret"] = result.regret_curve
        curves[f"{label}|checkpoints"] = result.checkpoints

    timed("non-private SE (m=1)", lambda rng: successive_elimination(bandit, horizon, rng, runs=runs))
    timed(
        "non-private VB (sigma=0)",
        lambda rng: batched_arm_elimination(
            bandit, horizon, ExactSum(), BatchSchedule("doubling"), rng, runs=runs
        ),
    )
    for epsilon in epsilons:
        summation = shuffle_binary_sum(epsilon, SEED001_DELTA)
        certified = summation.certificate is not None
        n = summation.noise_bits
        info = {"epsilon": epsilon, "noise_bits": n, "sigma2": n / 4, "certified": certified}
        timed(
            f"SDP-AE eps={epsilon}",
            lambda rng, n=n: sdp_ae(bandit, horizon, rng, noise_bits=n, runs=runs),
            **info,
        )
        timed(
            f"VB-SDP-AE eps={epsilon}",
            lambda rng, n=n: vb_sdp_ae(bandit, horizon, rng, noise_bits=n, runs=runs),
            **info,
        )
        timed(
            f"central DP-SE eps={epsilon}",
            lambda rng, e=epsilon: central_dp_se(bandit, horizon, rng, epsilon=e, runs=runs),
            epsilon=epsilon,
        )
        timed(
            f"local DP-SE eps={epsilon}",
            lambda rng, e=epsilon: local_dp_se(bandit, horizon, rng, epsilon=e, runs=runs),
            epsilon=epsilon,
        )
    summary = {
        "name": "seed001-shuffle-mab",
        "setting": {"means": list(SPEC_001_MEANS), "horizon": horizon, "delta": SEED001_DELTA, "runs": runs},
        "rows": rows,
    }
    return save_summary(out, "seed001_shuffle_mab", summary, curves)


for _name, _description, _reproduce in (
    (
        "seed001-shuffle-mab",
        "seed 001 (spec §7): SDP-AE / VB-SDP-AE vs non-private, central, local",
        reproduce_seed001,
    ),
):
    registry.register_reproduction(registry.ReproductionSpec(_name, _description, _reproduce))
