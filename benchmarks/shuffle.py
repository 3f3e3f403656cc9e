"""Shuffle-model benchmark: paper calibrations against exact accounting, and accounting speed.

Run as ``python benchmarks/shuffle.py``; prints the markdown section for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import os
import statistics
import time

from dpcert.mechanisms.shuffle.binary_sum import hoeffding_noise_bits, least_noise_bits
from dpcert.mechanisms.shuffle.binomial_sum import (
    BitSumParameters,
    binomial_sum_certificate,
    calibrate_binomial_sum,
)
from dpcert.mechanisms.shuffle.pamp import calibrate_pamp
from dpcert.theory import binomial as binomial_accounting


def clear_caches() -> None:
    binomial_accounting.shifted_pair.cache_clear()
    binomial_accounting._loss_pmf.cache_clear()
    binomial_accounting._composed_pmfs.cache_clear()
    binomial_accounting._l2_loss_distributions.cache_clear()


def account(parameters: BitSumParameters, delta: float, repeats: int = 7) -> tuple[float, float]:
    """Exact ε at ``delta`` and the median wall time (ms) of one cold accounting (caches cleared)."""
    times = []
    for _ in range(repeats):
        clear_caches()
        start = time.perf_counter()
        certificate = binomial_sum_certificate(parameters, delta=delta)
        times.append(1000 * (time.perf_counter() - start))
    return certificate.epsilon, statistics.median(times)


def main() -> None:
    lines = ["## Shuffle-model mechanisms (benchmarks/shuffle.py)", ""]
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    lines.append(f"Command: `python benchmarks/shuffle.py`; load average (1, 5, 15 min) at start: {load}.")
    lines.append(
        "Accounting ms = median wall time of one cold `binomial_sum_certificate(parameters, delta)`."
    )
    lines.append("")
    lines.append("### Scalar sum, n = 1000 users, entries in [-1, 1], (epsilon, delta) = (1, 1e-5)")
    lines.append("")
    lines.append("| method | g | b | p | noise std of the sum | exact epsilon at delta | accounting ms |")
    lines.append("|---|---|---|---|---|---|---|")
    scalar = {}
    for method in ("paper", "exact"):
        result = calibrate_binomial_sum(1.0, 1e-5, users=1000, method=method)
        scalar[method] = result
        q = result.parameters
        label = (
            "paper (Li, Zhou & Ji 2022, Alg. 4, eq. 60)" if method == "paper" else "exact (p = 1/2, least b)"
        )
        epsilon, ms = account(q, 1e-5)
        lines.append(
            f"| {label} | {q.g} | {q.b} | {q.p:.6f} | {q.noise_std:.3f} | {epsilon:.4g} | {ms:.1f} |"
        )
    lines.append("")
    lines.append(f"Noise bits: paper / exact = {scalar['paper'].b / scalar['exact'].b:.1f}x.")
    lines.append("")
    lines.append(
        "### Chowdhury & Zhou 2022, P_Vec: vector + symmetric matrix, d = 5, B = 20 users per batch, "
        "delta = 0.1"
    )
    lines.append("")
    lines.append(
        "20 privatised coordinates (5 vector + 15 upper-triangle entries in [-1, 1]); exact accounting "
        "composes the 20 worst-case coordinates (pessimistic PLD): `entry` uses only the entry bounds, "
        "`l2` also the norms (vector l2 <= 1, matrix Frobenius <= 1)."
    )
    lines.append("")
    lines.append(
        "| epsilon | method | g | b | p | noise std per entry | bits/user | b ratio | exact epsilon | ms |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for epsilon in (0.2, 1.0, 10.0):
        results = {
            (m, norm): calibrate_binomial_sum(
                epsilon, 0.1, users=20, dimension=5, shape="vector+matrix", method=m, norm=norm
            )
            for m, norm in (("paper", "entry"), ("exact", "entry"), ("exact", "l2"))
        }
        for (method, norm), result in results.items():
            q = result.parameters
            ratio = results[("paper", "entry")].b / result.b
            method = f"{method}, {norm}"
            exact_epsilon, ms = account(q, 0.1, repeats=3)
            lines.append(
                f"| {epsilon:g} | {method} | {q.g} | {q.b} | {q.p:g} | {q.noise_std:.3f} | "
                f"{q.bits_per_user} | {ratio:.3g}x | {exact_epsilon:.4g} | {ms:.1f} |"
            )
    lines.append("")
    lines.append("### Vector sum, d = 5, entries of l2-bounded vectors (B = 1), (epsilon, delta) = (1, 1e-5)")
    lines.append("")
    lines.append(
        "| users | method | norm used | g | b | noise std per entry | exact epsilon | accounting ms |"
    )
    lines.append("|---|---|---|---|---|---|---|---|")
    for users in (20, 1000):
        for method, norm in (("paper", "entry"), ("exact", "entry"), ("exact", "l2")):
            result = calibrate_binomial_sum(1.0, 1e-5, users=users, dimension=5, method=method, norm=norm)
            q = result.parameters
            exact_epsilon, ms = account(q, 1e-5, repeats=3)
            row = f"| {users} | {method} | {norm} | {q.g} | {q.b} | {q.noise_std:.3f} | {exact_epsilon:.4g} |"
            lines.append(f"{row} {ms:.1f} |")
    lines.append("")
    lines.append(
        "### P_Amp (Chowdhury & Zhou 2022, Thm 3.2): Gaussian local sigma for the paper's proven guarantee"
    )
    lines.append("")
    paper = calibrate_pamp(0.05, 1e-5, users=1000, dimension=5, method="paper")
    target = paper.certificate.guarantee
    lines.append(
        f"Batch B = 1000, target epsilon = 0.05, delta = 1e-5: Lemma B.4 proves only "
        f"(eps, delta) = ({target.epsilon:.4g}, {target.delta:.3g}); the same guarantee needs:"
    )
    lines.append("")
    lines.append("| method | sigma | local epsilon0 | local delta0 |")
    lines.append("|---|---|---|---|")
    lines.append(f"| paper | {paper.sigma:.3f} | {paper.epsilon0:.4f} | {paper.delta0:.3g} |")
    for method in ("closed-form", "numeric"):
        result = calibrate_pamp(target.epsilon, target.delta, users=1000, dimension=5, method=method)
        lines.append(f"| {method} | {result.sigma:.3f} | {result.epsilon0:.4f} | {result.delta0:.3g} |")
    lines.append("")
    lines.append("### Tenenbaum et al. 2021, binary summation: least noise bits N")
    lines.append("")
    lines.append("| epsilon | delta | exact N | Hoeffding N_H |")
    lines.append("|---|---|---|---|")
    for epsilon, delta in ((1.0, 1e-6), (0.5, 1e-6), (0.1, 1e-6)):
        exact_n, hoeffding_n = least_noise_bits(epsilon, delta), hoeffding_noise_bits(epsilon, delta)
        lines.append(f"| {epsilon:g} | {delta:g} | {exact_n} | {hoeffding_n} |")
    lines.append("")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
