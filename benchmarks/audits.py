"""Speed and tightness of ``dpcert.audits``: prints the markdown section for benchmarks/RESULTS.md.

Run as ``python benchmarks/audits.py``.  Each timing covers the whole audit (sampling, selection,
evaluation) and is the best of three runs with different seeds; bounds are at confidence 0.95.
"""

from __future__ import annotations

import math
import os
import platform
import time
import warnings

import numpy as np
from scipy import stats

from dpcert.audits import audit
from dpcert.audits.floating_point import check_floating_point
from dpcert.audits.reference_mechanisms import gaussian_noise, laplace_noise, randomized_response
from dpcert.mechanisms.gaussian import calibrate_gaussian
from dpcert.mechanisms.laplace import calibrate_laplace
from dpcert.theory.gaussian import gaussian_epsilon


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


# --------------------------------------------------------------------------- search and stable bounds
SEEDS = 40


def _distribution(bounds: list[float]) -> str:
    values = np.asarray(bounds)
    return (
        f"{np.median(values):.4f} | {np.percentile(values, 5):.4f} | {values.min():.4f} | "
        f"{values.mean():.4f} | {values.max():.4f}"
    )


def _bounds(run, caution: float) -> tuple[list[float], float]:
    """40 seeded bounds with the selection caution set to ``caution`` (0 is the previous selection)."""
    from dpcert.audits import selection

    saved = selection.SELECTION_CAUTION
    selection.SELECTION_CAUTION = caution
    try:
        start = time.perf_counter()
        bounds = [run(seed).epsilon_lower_bound for seed in range(SEEDS)]
        return bounds, (time.perf_counter() - start) / SEEDS
    finally:
        selection.SELECTION_CAUTION = saved


def _old_asymptotic_variance_pvalue(draws: np.ndarray, claimed: float) -> float:
    """The previous ``asymptotic`` variance test (z test of the mean squared deviation), as the anchor."""
    from statsmodels.stats.weightstats import DescrStatsW

    n = draws.shape[0]
    squared = (draws - draws.mean()) ** 2 * (n / (n - 1))
    return float(DescrStatsW(squared).ztest_mean(claimed)[1])


def search_and_stability() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from audit_search_targets import BUGGY, CORRECT

    from dpcert.audits.delta_lower_bound import audit_delta
    from dpcert.audits.search import VectorSearch
    from dpcert.audits.unbiased import check_variance

    print("## Audits: search and stable bounds")
    print()
    print("Command: `python benchmarks/audits.py --search-section`")
    print()
    print(f"### Lower bounds of correct mechanisms over {SEEDS} seeds (95 % confidence)")
    print()
    print(
        "Before = the previous rejection-set selection (plug-in forecast, caution 0); after = the forecast "
        "with the selection counts moved 2 standard deviations against each candidate set."
    )
    print()
    print(
        "| mechanism, claim | draws per input | selection | median | 5th pct | min | mean | max | s/audit |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    sigma = calibrate_gaussian(1.0, 1e-5).sigma
    cases = [
        (
            "Laplace b=1, eps=1 (achievable ~0.99)",
            1_000_000,
            lambda n: lambda s: audit(laplace_noise(1.0), 0.0, 1.0, 1.0, samples=n, seed=s),
        )
    ]
    for n in (200_000, 500_000, 1_000_000, 2_000_000):
        cases.append(
            (
                f"Gaussian (1, 1e-5), sigma={sigma:.3f}",
                n,
                lambda n: lambda s: audit(gaussian_noise(sigma), 0.0, 1.0, 1.0, 1e-5, samples=n, seed=s),
            )
        )
    for name, n, make in cases:
        for label, caution in (("before", 0.0), ("after", 2.0)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bounds, seconds = _bounds(make(n), caution)
            print(f"| {name} | {n:,} | {label} | {_distribution(bounds)} | {seconds:.2f} |")
    print()
    print("### Neighbour search from an all-zeros start (claim eps = 1, 10^6 draws per input in all)")
    print()
    print("| mechanism | length | verdict | eps lower bound | pair found | candidates | seconds |")
    print("|---|---:|---|---:|---|---:|---:|")
    for length in (5, 10):
        for name, mechanism in list(BUGGY.items()) + list(CORRECT.items()):
            if "sparse" in name and length == 10:
                continue  # 2^10 output cells exceed the cell limit; the SVT cases run at length 5
            start = time.perf_counter()
            report = audit(
                mechanism, epsilon=1.0, samples=1_000_000, seed=1, search=VectorSearch(length, 1.0)
            )
            seconds = time.perf_counter() - start
            pair = report.search["pair"]
            print(
                f"| {name} | {length} | {report.verdict} | {report.epsilon_lower_bound:.3f} | "
                f"{pair['pattern']}: {pair['neighbour']} | {report.search['candidates']} | {seconds:.1f} |"
            )
    print()
    audits = 210
    start = time.perf_counter()
    alarms = 0
    correct = list(CORRECT.values())
    for index in range(audits):
        report = audit(
            correct[index % len(correct)],
            epsilon=1.0,
            samples=50_000,
            seed=10_000 + index,
            search=VectorSearch(5, 1.0),
        )
        alarms += report.violated
    seconds = time.perf_counter() - start
    pvalue = stats.binomtest(alarms, audits, 0.05, alternative="greater").pvalue
    print(
        f"False alarms with search: {alarms}/{audits} seeded audits of the three correct mechanisms "
        f"(length 5, 50,000 draws per input, alpha = 0.05); one-sided binomial test of rate <= 0.05: "
        f"p = {pvalue:.3g}; {seconds:.0f} s in all."
    )
    print()
    print("### delta lower bound at fixed epsilon")
    print()
    truth = 1.0 - math.exp(-0.5)
    print(
        f"Laplace b = 1/2 on neighbours 0 and 1 at eps = 1: true delta = 1 - e^(-1/2) = {truth:.4f} "
        "(DP-Auditorium's tester: 0.388)."
    )
    print()
    print("| draws per input | median delta lower bound (5 seeds) | min | seconds |")
    print("|---:|---:|---:|---:|")
    for n in (100_000, 1_000_000):
        start = time.perf_counter()
        values = [
            audit_delta(laplace_noise(0.5), 0.0, 1.0, 1.0, samples=n, seed=s).delta_lower_bound
            for s in range(5)
        ]
        seconds = (time.perf_counter() - start) / 5
        print(f"| {n:,} | {np.median(values):.4f} | {min(values):.4f} | {seconds:.2f} |")
    print()
    print("### Variance test false alarms (alpha = 0.05, 2,000 seeded Laplace(1) samples each)")
    print()
    print("| draws | previous asymptotic | asymptotic (Bonett) | chi2 (guarded) |")
    print("|---:|---:|---:|---:|")
    rng = np.random.default_rng(7)
    for n in (100, 500):
        old = new = chi = 0
        for _ in range(2_000):
            draws = rng.laplace(0.0, 1.0, n)
            old += _old_asymptotic_variance_pvalue(draws, 2.0) <= 0.05
            new += check_variance(draws, 2.0, method="asymptotic").rejected
            chi += check_variance(draws, 2.0).rejected
        print(f"| {n} | {old / 2000:.3f} | {new / 2000:.3f} | {chi / 2000:.3f} |")
    load = os.getloadavg()
    print()
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average at the end {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} (`uptime`)."
    )


def power_before_and_after() -> None:
    """Catch rates of the bug-catching scenarios of the test suite, 20 seeds, before and after."""
    seeds = 20
    wrong_sigma = calibrate_gaussian(1.0, 1e-2).sigma
    scenarios = [
        (
            "Laplace b=0.5, claim 1, 10^4 draws",
            lambda s: audit(laplace_noise(0.5), 0.0, 1.0, 1.0, samples=10_000, seed=s),
        ),
        (
            "Gaussian for (1, 1e-2), claim (1, 1e-5), 4*10^5 draws",
            lambda s: audit(gaussian_noise(wrong_sigma), 0.0, 1.0, 1.0, 1e-5, samples=400_000, seed=s),
        ),
        (
            "randomized response keep 0.85, claim 1, 5*10^4 draws",
            lambda s: audit(randomized_response(0.85), 0, 1, 1.0, samples=50_000, seed=s),
        ),
        (
            "4-d Laplace, l1 distance 2, claim 1, 2*10^5 draws",
            lambda s: audit(
                laplace_noise(1.0), [0.0] * 4, [1.0, 1.0, 0.0, 0.0], 1.0, samples=200_000, seed=s
            ),
        ),
        (
            "Laplace b=0.8 (true 1.25), claim 1, 10^5 draws",
            lambda s: audit(laplace_noise(0.8), 0.0, 1.0, 1.0, samples=100_000, seed=s),
        ),
    ]
    print(f"### Bug-catching scenarios: violations found in {seeds} seeds, previous vs cautious selection")
    print()
    print("| scenario | before: caught | before: median bound | after: caught | after: median bound |")
    print("|---|---:|---:|---:|---:|")
    for name, run in scenarios:
        cells = []
        for caution in (0.0, 2.0):
            from dpcert.audits import selection

            saved = selection.SELECTION_CAUTION
            selection.SELECTION_CAUTION = caution
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    reports = [run(seed + 100) for seed in range(seeds)]
            finally:
                selection.SELECTION_CAUTION = saved
            caught = sum(r.violated for r in reports)
            cells.append(f"{caught}/{seeds} | {np.median([r.epsilon_lower_bound for r in reports]):.3f}")
        print(f"| {name} | {cells[0]} | {cells[1]} |")


def sparse_vector_at_length_ten() -> None:
    """The sparse-vector cases at length 10, whose 2^10 output cells need ``max_cells=2048``."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from audit_search_targets import BUGGY, CORRECT

    from dpcert.audits.search import VectorSearch

    print("| mechanism | length | verdict | eps lower bound | pair found | seconds |")
    print("|---|---:|---|---:|---|---:|")
    cases = {k: v for k, v in (BUGGY | CORRECT).items() if "sparse" in k}
    for name, mechanism in cases.items():
        start = time.perf_counter()
        report = audit(
            mechanism, epsilon=1.0, samples=1_000_000, seed=1, search=VectorSearch(10, 1.0), max_cells=2048
        )
        pair = report.search["pair"]
        print(
            f"| {name} | 10 | {report.verdict} | {report.epsilon_lower_bound:.3f} | "
            f"{pair['pattern']}: {pair['neighbour']} | {time.perf_counter() - start:.1f} |"
        )


if __name__ == "__main__":
    import sys

    if "--search-section" in sys.argv:
        search_and_stability()
    elif "--power-section" in sys.argv:
        power_before_and_after()
    elif "--sparse-vector-10" in sys.argv:
        sparse_vector_at_length_ten()
    else:
        main()
