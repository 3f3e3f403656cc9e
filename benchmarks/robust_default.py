"""Robust elimination engine defaults: the filter's variance proxy chosen by client model, end to end.

Charisopoulos, Esfandiari & Mirrokni 2023; docs/PAPER_NOTES.md, PN-CEM-2.

Runs :func:`dpcert.bandits.algorithms.robust_elimination.robust_elimination` (M1, K = 50, d = 5, T = 100
000, tuned widths c_γ = 0.05, the instance of the reproduction) with the filter's λ from the pooled trimmed
second moment (the engine's earlier default) and from the per-arm one (``arm-moment``, the M1 default now),
against clipping only and plain least squares, without corruption and under the engine's targeted attack and
the in-range coordinated attack of :mod:`dpcert.bandits.algorithms.corruption`. Prints a Markdown table.

Usage: ``python benchmarks/robust_default.py --runs 10``
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from dpcert.bandits.algorithms.corruption import InRangeAdversary
from dpcert.bandits.algorithms.robust_elimination import (
    Adversary,
    LaplaceClients,
    LinearArms,
    robust_elimination,
)

HORIZON = 100_000
FAILURE = 0.05
ESTIMATORS = (
    ("filter, arm-moment λ (default)", "filter", "arm-moment"),
    ("filter, trimmed λ (earlier default)", "filter", "trimmed"),
    ("clip-only", "clip-only", None),
    ("least-squares", "least-squares", None),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    instance = LinearArms.random_sphere(50, 5, np.random.default_rng(0))
    delta = FAILURE / (50 * HORIZON**2)

    def in_range(epsilon: float) -> InRangeAdversary:
        return InRangeAdversary(
            0.05, instance.arms, instance.means, "coordinated", laplace_scale=2.0 / epsilon, delta=delta
        )

    settings = [
        ("none", 0.5, Adversary()),
        ("none", 1.0, Adversary()),
        ("targeted ±10⁶, α = 0.02", 1.0, Adversary(0.02, "targeted", 1e6)),
        ("in-range coordinated ±Ȳ, α = 0.05", 1.0, in_range(1.0)),
    ]
    print("| attack | ε | estimator | final regret (mean ± s.e.) | runs losing a* | points removed per run |")
    print("|---|---|---|---|---|---|")
    started = time.perf_counter()
    for label, epsilon, adversary in settings:
        for name, estimator, variance in ESTIMATORS:
            result = robust_elimination(
                instance,
                HORIZON,
                np.random.default_rng(7),
                clients=LaplaceClients("M1", epsilon),
                adversary=adversary,
                estimator=estimator,
                variance=variance,
                width_scale=0.05,
                failure_probability=FAILURE,
                runs=args.runs,
                keep_logs=True,
            )
            final = result.final_regret
            stderr = final.std(ddof=1) / math.sqrt(final.size)
            removed = sum(log.removed_points for run in result.logs for log in run) / args.runs
            print(
                f"| {label} | {epsilon:g} | {name} | {final.mean():,.0f} ± {stderr:,.0f} | "
                f"{int(result.best_arm_eliminated.sum())}/{args.runs} | {removed:.1f} |"
            )
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
