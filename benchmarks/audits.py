"""Speed and tightness of ``dpcert.audits``: prints the markdown section for benchmarks/RESULTS.md.

Run as ``python benchmarks/audits.py``.  Each timing covers the whole audit (sampling, selection,
evaluation) and is the best of three runs with different seeds; bounds are at confidence 0.95.
"""

from __future__ import annotations

import math
import os
import platform
import time

import numpy as np
from scipy import stats

from dpcert.accounting.calibration import calibrate_gaussian, calibrate_laplace
from dpcert.audits import audit
from dpcert.audits.floating_point import check_floating_point
from dpcert.audits.reference_mechanisms import gaussian_noise, laplace_noise, randomized_response
from dpcert.mechanisms.gaussian import gaussian_epsilon


def best_of_three(run):
    results = []
    for seed in range(3):
        start = time.perf_counter()
        report = run(seed)
        results.append((time.perf_counter() - start, report))
    seconds = min(t for t, _ in results)
    return seconds, results[0][1]


def main() -> None:
    rows = []
    correct = calibrate_laplace(1.0).mechanism()
    scenarios = [
        (
            "Laplace b=1, claim eps=1 (true 1)",
            1.0,
            lambda s: audit(correct, 0.0, 1.0, samples=1_000_000, seed=s),
        ),
        (
            "Laplace b=1, claim eps=1 (true 1), 10^7 draws",
            1.0,
            lambda s: audit(correct, 0.0, 1.0, samples=10_000_000, seed=s),
        ),
        (
            "Laplace b=0.5, claim eps=1 (true 2)",
            2.0,
            lambda s: audit(laplace_noise(0.5), 0.0, 1.0, 1.0, samples=10_000, seed=s),
        ),
    ]
    wrong_sigma = calibrate_gaussian(1.0, 1e-2).sigma
    scenarios.append(
        (
            "Gaussian sigma for (1, 1e-2), claim (1, 1e-5)",
            gaussian_epsilon(1e-5, 1.0 / wrong_sigma),
            lambda s: audit(gaussian_noise(wrong_sigma), 0.0, 1.0, 1.0, 1e-5, samples=400_000, seed=s),
        )
    )
    scenarios.append(
        (
            "randomized response keep 0.85, claim eps=1",
            math.log(0.85 / 0.15),
            lambda s: audit(randomized_response(0.85), 0, 1, 1.0, samples=50_000, seed=s),
        )
    )
    scenarios.append(
        (
            "4-d Laplace b=1, l1 distance 2, claim eps=1",
            2.0,
            lambda s: audit(
                laplace_noise(1.0), [0.0] * 4, [1.0, 1.0, 0.0, 0.0], 1.0, samples=200_000, seed=s
            ),
        )
    )
    scenarios.append(
        (
            "floating-point check, numpy Laplace b=1, claim eps=1",
            math.inf,
            lambda s: check_floating_point(laplace_noise(1.0), 0.0, 1.0, 1.0, samples=100_000, seed=s).audit,
        )
    )
    for name, true_epsilon, run in scenarios:
        seconds, report = best_of_three(run)
        rows.append(
            f"| {name} | {report.samples:,} | {true_epsilon:.3f} | {report.epsilon_lower_bound:.4f} | "
            f"{report.verdict} | {seconds:.3f} |"
        )

    # False-violation rate: 200 audits of correct mechanisms (the test suite's mix, 4,000 draws each).
    keep = math.exp(1) / (1 + math.exp(1))
    canonical = np.array([0.05, 0.95 * keep, 0.95 * (1 - keep), 0.0])

    def canonical_pair(value, rng, size):
        return rng.choice(4, size=size, p=canonical if value == 0 else canonical[::-1])

    mechanisms = [
        (canonical_pair, 0, 1, 0.05),
        (randomized_response(keep), 0, 1, 0.0),
        (laplace_noise(1.0), 0.0, 1.0, 0.0),
        (gaussian_noise(calibrate_gaussian(1.0, 1e-3).sigma), 0.0, 1.0, 1e-3),
    ]
    start = time.perf_counter()
    violations = sum(
        audit(m, a, b, 1.0, d, samples=4_000, seed=1000 + i, confidence=0.9).violated
        for i, (m, a, b, d) in ((i, mechanisms[i % 4]) for i in range(200))
    )
    fvr_seconds = time.perf_counter() - start
    pvalue = stats.binomtest(violations, 200, 0.1, alternative="greater").pvalue

    load = os.getloadavg()
    print("## Audits (dpcert.audits)")
    print()
    print("Command: `python benchmarks/audits.py`")
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average at the end {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} (`uptime`)."
    )
    print()
    print("Whole audit (sampling + selection on half the draws + Clopper-Pearson on the other half), best of")
    print("three seeds; bound = 95% lower confidence bound on epsilon (first seed's run).")
    print()
    print("| scenario | draws per input | true eps | eps lower bound | verdict | seconds |")
    print("|---|---:|---:|---:|---|---:|")
    for row in rows:
        print(row)
    print()
    print(
        f"False violations over 200 seeded audits of correct mechanisms at alpha = 0.1 (4,000 draws each): "
        f"{violations}/200; one-sided binomial test of rate <= 0.1: p = {pvalue:.3g}; {fvr_seconds:.1f} s."
    )


if __name__ == "__main__":
    main()
