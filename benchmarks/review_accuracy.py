"""Accuracy of the δ evaluations fixed in the privacy review, against high-precision references.

Prints the markdown section for benchmarks/RESULTS.md: for each case the exact δ (mpmath / integer
arithmetic), the relative error of the former evaluation (negative = below the exact value, i.e.
optimistic) and of the current one (must be >= 0), and the cost of the binomial log-PMF.
Run: ``python benchmarks/review_accuracy.py``.
"""

from __future__ import annotations

import math
import os
import platform
import time

import mpmath
import numpy as np
from scipy import stats
from scipy.special import gammaln, log_ndtr, logsumexp

from dpcert.mechanisms.shuffle.binary_sum import binary_sum_delta
from dpcert.theory.binomial import log_binomial_pmf
from dpcert.theory.gaussian import gaussian_delta


def exact_binary_sum(epsilon: float, noise_bits: int) -> mpmath.mpf:
    with mpmath.workdps(60):
        growth, total, previous, current = mpmath.exp(mpmath.mpf(epsilon)), mpmath.mpf(0), 0, 1
        for k in range(noise_bits + 2):
            term = current - growth * previous
            if term <= 0:
                break
            total += term
            previous, current = current, current * (noise_bits - k) // (k + 1)
        return total / mpmath.mpf(2) ** noise_bits


def former_binary_sum(epsilon: float, n: int) -> float:
    """The evaluation before the review: gammaln differences, 1e-12 relative allowance."""
    top = math.ceil((n + 1) / (1.0 + math.exp(epsilon))) - 1
    ks = np.arange(0, max(top, 0) + 1)
    log_p = gammaln(n + 1) - gammaln(ks + 1) - gammaln(n - ks + 1) - n * math.log(2.0)
    factor = np.ones(ks.shape)
    factor[1:] = 1.0 - math.exp(epsilon) * ks[1:] / (n - ks[1:] + 1.0)
    positive = factor > 0
    return min(1.0, float(np.exp(logsumexp(log_p[positive] + np.log(factor[positive])))) * (1 + 1e-12))


def exact_gaussian(epsilon: float, mu: float) -> mpmath.mpf:
    with mpmath.workdps(50):
        m, e = mpmath.mpf(mu), mpmath.mpf(epsilon)
        return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)


def former_gaussian(epsilon: float, mu: float) -> float:
    first = math.exp(float(log_ndtr(mu / 2.0 - epsilon / mu)))
    second = math.exp(epsilon + float(log_ndtr(-mu / 2.0 - epsilon / mu)))
    return min(1.0, max(0.0, first - second + 16 * np.finfo(float).eps * max(first, second)))


def relative(value: float, exact: mpmath.mpf) -> str:
    if exact == 0:
        return "n/a"
    return f"{float((mpmath.mpf(value) - exact) / exact):+.2e}"


def main() -> None:
    lines = [
        "## Privacy review: accuracy of the fixed delta evaluations",
        "",
        "Command: `python benchmarks/review_accuracy.py`",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average at the start {', '.join(f'{x:.2f}' for x in os.getloadavg())}.",
        "",
        "Relative error against 50-60 digit references (negative = below the exact delta: optimistic).",
        "",
        "| profile | parameters | exact delta | former | current |",
        "|---|---|---:|---:|---:|",
    ]
    for noise_bits, epsilon in ((1_000, 0.1), (20_000, 0.1), (100_000, 0.05), (100_000, 0.1)):
        exact = exact_binary_sum(epsilon, noise_bits)
        lines.append(
            f"| binary sum | N={noise_bits}, eps={epsilon} | {float(exact):.4e} | "
            f"{relative(former_binary_sum(epsilon, noise_bits), exact)} | "
            f"{relative(binary_sum_delta(epsilon, noise_bits), exact)} |"
        )
    lines.append(
        f"| binary sum | N=2000, eps=50 | 2^-2000 | {former_binary_sum(50.0, 2000):.1e} (claims pure DP) | "
        f"{binary_sum_delta(50.0, 2000):.1e} (>= 2^-2000) |"
    )
    for mu, epsilon in ((5.0, 50.0), (0.5, 10.0), (1.0, 5.0)):
        exact = exact_gaussian(epsilon, mu)
        lines.append(
            f"| Gaussian | mu={mu}, eps={epsilon} | {float(exact):.4e} | "
            f"{relative(former_gaussian(epsilon, mu), exact)} | "
            f"{relative(gaussian_delta(epsilon, mu), exact)} |"
        )
    lines.append(
        f"| Gaussian | mu=1, eps=60 | about 1e-400 | {former_gaussian(60.0, 1.0):.1e} (claims pure DP) | "
        f"{gaussian_delta(60.0, 1.0):.1e} |"
    )
    lines += [
        "",
        "| log-PMF of Bin(n, 1/2) | n | worst abs error of the log near the mean "
        "| seconds (min(n + 1, 8e5) outcomes) |",
    ]
    lines.append("|---|---:|---:|---:|")
    for trials in (10**5, 10**7, 10**9):
        ks = (
            np.arange(trials // 2 - 400_000, trials // 2 + 400_000)
            if trials > 10**6
            else np.arange(trials + 1)
        )
        probe = np.unique(np.round(trials / 2 + np.array([-5, -1, 0, 2, 5]) * math.sqrt(trials) / 2)).astype(
            int
        )
        with mpmath.workdps(40):
            reference = [mpmath.log(mpmath.binomial(trials, int(k))) - trials * mpmath.log(2) for k in probe]
        for name, function in (
            ("scipy.stats.binom.logpmf", lambda k, n=trials: stats.binom.logpmf(k, n, 0.5)),
            ("Loader (dpcert)", lambda k, n=trials: log_binomial_pmf(k, n, 0.5)),
        ):
            errors = [
                abs(float(mpmath.mpf(float(v)) - r)) for v, r in zip(function(probe), reference, strict=True)
            ]
            best = math.inf
            for _ in range(3):
                start = time.perf_counter()
                function(ks)
                best = min(best, time.perf_counter() - start)
            lines.append(f"| {name} | {trials:.0e} | {max(errors):.1e} | {best:.3f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
