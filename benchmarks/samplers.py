"""Integer-exact samplers against OpenDP, and the σ the discrete Gaussian needs: a RESULTS.md section.

Run as ``python benchmarks/samplers.py`` with OpenDP installed in the benchmark environment only
(``pip install opendp``; it is not a dependency of dpcert).  Throughput: 10^6 draws of N_Z(0, 10²) and of
the discrete Laplace with scale 10, dpcert and OpenDP timed alternately in the same process, best of
three.  OpenDP's ``make_gaussian`` / ``make_laplace`` on a vector of integers use its exact samplers
with operating-system randomness; dpcert is timed with ``secrets`` bits and with a seeded Generator.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np

from dpcert.accounting.calibration import analytic_gaussian_sigma
from dpcert.mechanisms.discrete_gaussian import calibrate_discrete_gaussian
from dpcert.mechanisms.exact_samplers import SecureRandom, sample_discrete_gaussian, sample_discrete_laplace
from dpcert.mechanisms.secure_noise import secure_gaussian

DRAWS = 1_000_000
SCALE = 10
REPEATS = 3
CALIBRATED = calibrate_discrete_gaussian(1.0, 1e-5).sigma  # σ² has a 2^100-size denominator


def opendp_measurements():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=int), size=DRAWS)
    gaussian = dp.m.make_gaussian(domain, dp.l2_distance(T=int), scale=float(SCALE))
    laplace = dp.m.make_laplace(domain, dp.l1_distance(T=int), scale=float(SCALE))
    return gaussian, laplace


def timed(run) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, np.asarray(out)


def throughput() -> list[tuple[str, str, float, float]]:
    opendp_gaussian, opendp_laplace = opendp_measurements()
    zeros = [0] * DRAWS
    contenders = {
        ("discrete Gaussian σ=10", "dpcert, secrets bits"): lambda: sample_discrete_gaussian(
            SCALE**2, DRAWS, SecureRandom()
        ),
        ("discrete Gaussian σ=10", "dpcert, seeded Generator"): lambda: sample_discrete_gaussian(
            SCALE**2, DRAWS, np.random.default_rng(1)
        ),
        ("discrete Gaussian σ=10", "OpenDP make_gaussian (int)"): lambda: opendp_gaussian(zeros),
        ("discrete Gaussian σ=3.7405 (calibrated float)", "dpcert, secrets bits"): lambda: (
            sample_discrete_gaussian(CALIBRATED**2, DRAWS, SecureRandom())
        ),
        ("discrete Laplace scale 10", "dpcert, secrets bits"): lambda: sample_discrete_laplace(
            SCALE, DRAWS, SecureRandom()
        ),
        ("discrete Laplace scale 10", "OpenDP make_laplace (int)"): lambda: opendp_laplace(zeros),
        ("float reference", "numpy Generator.normal (not exact)"): lambda: np.random.default_rng(1).normal(
            0.0, SCALE, DRAWS
        ),
    }
    best: dict[tuple[str, str], float] = {}
    spread: dict[tuple[str, str], float] = {}
    for _ in range(REPEATS):  # alternate the contenders so that load changes hit them alike
        for key, run in contenders.items():
            seconds, out = timed(run)
            best[key] = min(best.get(key, float("inf")), seconds)
            spread[key] = float(np.var(out.astype(float)))
    return [(kind, who, best[(kind, who)], spread[(kind, who)]) for kind, who in contenders]


def sigma_table() -> list[tuple[float, float, float, float, float]]:
    rows = []
    for epsilon in (0.25, 0.5, 1.0, 2.0, 4.0):
        for delta in (1e-5, 1e-9):
            continuous = analytic_gaussian_sigma(epsilon, delta)
            discrete = calibrate_discrete_gaussian(epsilon, delta).sigma
            secure = secure_gaussian(epsilon, delta, bits="rng").real_sigma
            rows.append((epsilon, delta, continuous, discrete, secure))
    return rows


def main() -> None:
    load_start = os.getloadavg()
    speed = throughput()
    sigmas = sigma_table()
    load_end = os.getloadavg()
    print("## Secure sampling: integer-exact samplers and the discrete Gaussian\n")
    print("Command: `python benchmarks/samplers.py` (OpenDP 0.16 installed in the benchmark venv only)")
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average at the start {', '.join(f'{x:.2f}' for x in load_start)}.\n"
    )
    print(f"10^6 draws, best of {REPEATS}, contenders alternated in one process:\n")
    print("| distribution | sampler | seconds | draws/s | sample variance |")
    print("|---|---|---:|---:|---:|")
    for kind, who, seconds, variance in speed:
        print(f"| {kind} | {who} | {seconds:.2f} | {DRAWS / seconds:,.0f} | {variance:.2f} |")
    ours = {who: s for kind, who, s, _ in speed if kind == "discrete Gaussian σ=10"}
    ratio = ours["OpenDP make_gaussian (int)"] / ours["dpcert, secrets bits"]
    print(
        f"\ndpcert's discrete Gaussian with `secrets` bits: {ratio:.1f}x OpenDP's throughput on this batch.\n"
    )
    print("σ needed for (ε, δ) at sensitivity 1: the continuous analytic Gaussian (Balle & Wang 2018), the")
    print("discrete Gaussian on the integers (least σ by the exact profile), and the secure Gaussian")
    print("(discrete Gaussian on the default grid 2^(⌊log2 σ⌋−13), rounding charged; σ in real units):\n")
    print("| ε | δ | continuous σ | discrete σ (integers) | ratio | secure σ (grid) | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for epsilon, delta, continuous, discrete, secure in sigmas:
        print(
            f"| {epsilon:g} | {delta:g} | {continuous:.4f} | {discrete:.4f} | {discrete / continuous:.4f} "
            f"| {secure:.4f} | {secure / continuous:.5f} |"
        )
    print(f"\nLoad average at the end: {', '.join(f'{x:.2f}' for x in load_end)} (`uptime`).")


if __name__ == "__main__":
    main()
