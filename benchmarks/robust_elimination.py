"""Charisopoulos, Esfandiari & Mirrokni 2023 (robust, locally private batched elimination): the single-phase
robust least-squares table R0 of docs/PAPER_NOTES.md, PN-CEM-7 (λ as printed vs clean-side λ; PN-CEM-2)::

    python benchmarks/robust_elimination.py [--reps 4]

The end-to-end experiments E1–E4 are reproductions with their own figures, tables and claims:
``dpcert reproduce charisopoulos-2023-e1`` … ``charisopoulos-2023-e4`` (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from dpcert.bandits.algorithms.spectral_filter import least_squares, robust_least_squares, spectral_filter
from dpcert.bandits.design import near_g_optimal_design


def _cell(row: dict) -> str:
    return f"{row['regret']['mean']:,.0f} ± {row['regret']['stderr']:,.0f}"


def robust_regression_table(reps: int = 4) -> list[str]:
    """Single-phase table (docs/PAPER_NOTES.md, PN-CEM-7).

    d = 5, K = 40, FW design, n ≈ 4000, N(0,1) noise, targeted −c·sign.
    """
    rng = np.random.default_rng(0)
    arms = rng.standard_normal((40, 5))
    arms /= np.linalg.norm(arms, axis=1, keepdims=True)
    theta = rng.standard_normal(5)
    theta /= np.linalg.norm(theta)
    design = near_g_optimal_design(arms)
    counts = np.ceil(4000 * design.weights).astype(int)
    index = np.repeat(np.arange(40), counts)
    rows = arms[index]
    bound = 1.0 + math.sqrt(2.0 * math.log(2 * rows.shape[0] / 0.01))
    gram_values, gram_vectors = np.linalg.eigh(rows.T @ rows)
    inverse_root = (gram_vectors / np.sqrt(gram_values)) @ gram_vectors.T
    lines = [
        f"R0 (single phase, PN-CEM-7 table; n = {rows.shape[0]}, max_a |⟨a, θ̂ − θ*⟩|, mean of {reps} reps; "
        f"Ȳ = 1 + sqrt(2 log(2n/0.01)) = {bound:.2f}):",
        "",
        "| c | α | clean LS | filter, λ as printed | filter, trimmed λ | clip ±Ȳ + filter (trimmed λ) | "
        "plain LS |",
        "|---|---|---|---|---|---|---|",
    ]
    for magnitude in (5.0, 50.0, 1e6):
        for alpha in (0.01, 0.05, 0.2):
            errors = np.zeros(5)
            for rep in range(reps):
                local = np.random.default_rng([rep, int(magnitude), int(alpha * 100)])
                clean = rows @ theta + local.standard_normal(rows.shape[0])
                observed = np.where(
                    local.random(clean.size) < alpha, -magnitude * np.sign(rows @ theta), clean
                )
                printed_lambda = float(
                    np.max(np.einsum("ij,jk,ik->i", arms, np.linalg.inv(rows.T @ rows), arms))
                    * np.mean(observed**2)
                )
                printed = spectral_filter((rows @ inverse_root) * observed[:, None], printed_lambda, local)
                estimates = [
                    least_squares(rows, clean),
                    rows.shape[0] * inverse_root @ printed.mean,
                    robust_least_squares(rows, observed, local, alpha=alpha, reference_arms=arms).theta,
                    robust_least_squares(
                        rows,
                        observed,
                        local,
                        alpha=alpha,
                        value_bound=bound,
                        variance="trimmed",
                        clip_values=True,
                        reference_arms=arms,
                    ).theta,
                    least_squares(rows, observed),
                ]
                errors += [np.max(np.abs(arms @ (e - theta))) for e in estimates]
            errors /= reps
            lines.append(f"| {magnitude:g} | {alpha} | " + " | ".join(f"{e:.3g}" for e in errors) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=4, help="repetitions per cell")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    r0 = robust_regression_table(args.reps)
    total = time.perf_counter() - started
    lines = [
        "### Single-phase table R0",
        "",
        f"Command: `python benchmarks/robust_elimination.py --reps {args.reps}` (load average at start: "
        f"{load:.2f}; {total:.0f} s).",
        "",
        *r0,
        "",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
