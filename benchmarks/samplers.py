"""Integer-exact samplers against OpenDP, and the σ the discrete Gaussian needs: a RESULTS.md section.

Run as ``python benchmarks/samplers.py`` with OpenDP installed in the benchmark environment only
(``pip install opendp``; it is not a dependency of dpcert).  Throughput: 10^6 draws of N_Z(0, 10²) and of
the discrete Laplace with scale 10, dpcert and OpenDP timed alternately in the same process, best of
three.  OpenDP's ``make_gaussian`` / ``make_laplace`` on a vector of integers use its exact samplers
with operating-system randomness; dpcert is timed with ``secrets`` bits and with a seeded Generator.

Release time against the noise drawn (``python benchmarks/samplers.py timing`` for this part alone):
single releases of the secure Laplace (ε = 1) and Gaussian (ε = 1, δ = 1e-5) with ``secrets`` bits,
of the same Laplace release with the samplers as they were before the fixed-work change (loaded from
git, revision ``OLD_REVISION``), and of OpenDP's ``make_laplace`` / ``make_gaussian`` on floats at the
same scale, each timed with ``time.perf_counter_ns``, the contenders called in turn; the median time
of the quarter of releases with the largest |noise| over the quarter with the smallest.  Then timing
audits (``audit(..., timing=True)``, the joint view (output, release time)) of the secure Laplace and
Gaussian and of OpenDP's at 10^5 draws per input, and of the old loops at 2·10^4.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
import types
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np

from dpcert.audits.run import FewDrawsWarning, audit
from dpcert.mechanisms.discrete_gaussian import calibrate_discrete_gaussian
from dpcert.mechanisms.secure.noise import secure_gaussian, secure_laplace
from dpcert.mechanisms.secure.samplers import SecureRandom, sample_discrete_gaussian, sample_discrete_laplace
from dpcert.theory.gaussian import analytic_gaussian_sigma

DRAWS = 1_000_000
SCALE = 10
REPEATS = 3
CALIBRATED = calibrate_discrete_gaussian(1.0, 1e-5).sigma  # σ² has a 2^100-size denominator
OLD_REVISION = "8dc5ea5^"  # the samplers with loops whose trip count is the output
RELEASES = 20_000
AUDIT_DRAWS = 100_000
OLD_AUDIT_DRAWS = 20_000


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


def old_samplers() -> types.ModuleType:
    """``dpcert.mechanisms.secure.samplers`` as it was at ``OLD_REVISION`` (read with ``git show``)."""
    root = Path(__file__).resolve().parents[1]
    text = subprocess.run(
        ["git", "show", f"{OLD_REVISION}:src/dpcert/mechanisms/secure/samplers.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("exact_samplers_before")
    sys.modules[module.__name__] = module  # dataclasses look their module up by name
    exec(compile(text, f"exact_samplers.py@{OLD_REVISION}", "exec"), module.__dict__)
    return module


def release_contenders() -> dict[str, tuple[object, float]]:
    """name -> (single release f(value, rng) with value 0, centre to subtract from its output)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    laplace = secure_laplace(1.0)
    gaussian = secure_gaussian(1.0, 1e-5)
    old = old_samplers()
    scale = 1 / Fraction(laplace.noise_parameter)

    def old_laplace(value: float, rng: np.random.Generator) -> float:
        noise = old.sample_discrete_laplace(scale, 1, old.SecureRandom())
        return float(laplace.grid.from_units(laplace.grid.to_units(value) + noise)[0])

    opendp_laplace = dp.m.make_laplace(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), laplace.scale
    )
    opendp_gaussian = dp.m.make_gaussian(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), gaussian.real_sigma
    )
    return {
        f"dpcert secure_laplace(ε=1), fixed work (scale {laplace.scale:.4f})": (laplace, 0.0),
        "dpcert secure_laplace(ε=1), loops before the change": (old_laplace, 0.0),
        "OpenDP make_laplace (float, same scale)": (lambda value, rng: opendp_laplace(float(value)), 0.0),
        f"dpcert secure_gaussian(ε=1, δ=1e-5), fixed work (σ {gaussian.real_sigma:.4f})": (gaussian, 0.0),
        "OpenDP make_gaussian (float, same σ)": (lambda value, rng: opendp_gaussian(float(value)), 0.0),
    }


def release_times() -> list[tuple[str, float, float, float]]:
    """name, median µs, median µs of the smallest-|noise| quarter and of the largest-|noise| quarter."""
    contenders = release_contenders()
    rng = np.random.default_rng(0)
    times = {name: np.empty(RELEASES) for name in contenders}
    sizes = {name: np.empty(RELEASES) for name in contenders}
    for release, _ in contenders.values():
        for _ in range(100):  # warm-up
            release(0.0, rng)
    for i in range(RELEASES):  # the contenders in turn, so that load changes hit them alike
        for name, (release, centre) in contenders.items():
            start = time.perf_counter_ns()
            output = release(0.0, rng)
            times[name][i] = time.perf_counter_ns() - start
            sizes[name][i] = abs(float(output) - centre)
    rows = []
    for name in contenders:
        low, high = np.quantile(sizes[name], [0.25, 0.75])
        small = np.median(times[name][sizes[name] <= low]) / 1e3
        large = np.median(times[name][sizes[name] >= high]) / 1e3
        rows.append((name, float(np.median(times[name]) / 1e3), float(small), float(large)))
    return rows


def timing_audits() -> list[tuple[str, int, float, str, float, float, float]]:
    """name, draws, claimed δ, verdict, joint bound, bound of the outputs alone, seconds (claim ε = 1)."""
    contenders = release_contenders()
    names = list(contenders)
    runs = [
        (names[0], AUDIT_DRAWS, 0.0),
        (names[2], AUDIT_DRAWS, 0.0),
        (names[1], OLD_AUDIT_DRAWS, 0.0),
        (names[3], AUDIT_DRAWS, 1e-5),
        (names[4], AUDIT_DRAWS, 1e-5),
    ]
    rows = []
    for name, draws, delta in runs:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FewDrawsWarning)  # δ = 1e-5 at 10^5 draws: said in the text
            report = audit(contenders[name][0], 0.0, 1.0, 1.0, delta, samples=draws, seed=11, timing=True)
        alone = next(note for note in report.notes if note.startswith("outputs alone"))
        bound_alone = float(alone.split("epsilon >= ")[1].split()[0])
        seconds = time.perf_counter() - start
        rows.append((name, draws, delta, report.verdict, report.epsilon_lower_bound, bound_alone, seconds))
    return rows


def print_timing() -> None:
    load_start = os.getloadavg()
    rows = release_times()
    audits = timing_audits()
    load_end = os.getloadavg()
    print("## Release time against the noise drawn: fixed-work samplers, the old loops, OpenDP\n")
    print(
        "Command: `python benchmarks/samplers.py timing` (OpenDP 0.16 installed in the benchmark venv only)"
    )
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average at the start {', '.join(f'{x:.2f}' for x in load_start)}.\n"
    )
    print(
        f"{RELEASES} single releases of x = 0 per contender (`secrets` bits), contenders called in turn; "
        "times in µs; small/large = the quarter of releases with the smallest/largest |noise|:\n"
    )
    print("| release | median | median, small noise | median, large noise | large / small |")
    print("|---|---:|---:|---:|---:|")
    for name, median, small, large in rows:
        print(f"| {name} | {median:.1f} | {small:.1f} | {large:.1f} | {large / small:.2f} |")
    print(
        "\nTiming audits of the claim ε = 1 at the δ shown (x = 0 against x' = 1, confidence 0.95, wall "
        "clock): the joint view (output bin, release-time bin), and the outputs alone from the same draws "
        "(10^5 draws see little of δ = 1e-5, so those two bounds are weak):\n"
    )
    print(
        "| release | draws per input | claimed δ | verdict | ε lower bound, output and time | outputs alone "
        "| seconds |"
    )
    print("|---|---:|---:|---|---:|---:|---:|")
    for name, draws, delta, verdict, bound, alone, seconds in audits:
        print(f"| {name} | {draws} | {delta:g} | {verdict} | {bound:.3f} | {alone:.3f} | {seconds:.0f} |")
    print(f"\nLoad average at the end: {', '.join(f'{x:.2f}' for x in load_end)} (`uptime`).")


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
    if sys.argv[1:] == ["timing"]:
        print_timing()
    else:
        main()
        print()
        print_timing()
