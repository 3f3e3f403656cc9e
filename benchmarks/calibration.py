"""Gaussian calibration: dpcert (analytic, exact profile) against dp_accounting's own calibration.

Run: ``python benchmarks/calibration.py``; prints the markdown table recorded in RESULTS.md.
For each target (ε, δ) it reports σ from dpcert and from
``dp_accounting.mechanism_calibration.calibrate_dp_mechanism`` with the PLD accountant (discretisation
1e-3, σ tolerance 1e-6) and the RDP accountant, their ratio, and the wall time of each (median of 5 runs).
"""

from __future__ import annotations

import importlib.metadata
import platform
import statistics
import time

from dp_accounting import dp_event
from dp_accounting.mechanism_calibration import ExplicitBracketInterval, calibrate_dp_mechanism
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from dpcert.mechanisms.gaussian import calibrate_gaussian

TARGETS = [(0.1, 1e-6), (1.0, 1e-5), (1.0, 1e-10), (4.0, 1e-5), (10.0, 1e-3)]


def timed(function, repeats: int = 5):
    times, value = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return value, statistics.median(times)


def dp_accounting_sigma(epsilon: float, delta: float, accountant: str) -> float:
    def make_accountant():
        if accountant == "pld":
            return pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
        return rdp_privacy_accountant.RdpAccountant()

    return calibrate_dp_mechanism(
        make_accountant,
        lambda sigma: dp_event.GaussianDpEvent(sigma),
        epsilon,
        delta,
        ExplicitBracketInterval(0.01, 1000.0),
        tol=1e-6,
    )


def main() -> None:
    print("## Gaussian calibration: dpcert vs dp_accounting\n")
    print(
        f"Machine: {platform.machine()}, Python {platform.python_version()}, "
        f"dp_accounting {importlib.metadata.version('dp-accounting')}. "
        "Command: `python benchmarks/calibration.py`. Times: median of 5 runs.\n"
    )
    print(
        "| ε | δ | σ dpcert | σ dp_accounting PLD | ratio PLD/dpcert | σ RDP | ratio RDP/dpcert "
        "| dpcert ms | PLD ms | RDP ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for epsilon, delta in TARGETS:
        ours, ours_time = timed(lambda e=epsilon, d=delta: calibrate_gaussian(e, d).sigma)
        pld, pld_time = timed(lambda e=epsilon, d=delta: dp_accounting_sigma(e, d, "pld"), repeats=1)
        rdp, rdp_time = timed(lambda e=epsilon, d=delta: dp_accounting_sigma(e, d, "rdp"), repeats=3)
        print(
            f"| {epsilon:g} | {delta:g} | {ours:.6f} | {pld:.6f} | {pld / ours:.5f} | {rdp:.6f} "
            f"| {rdp / ours:.4f} | {1000 * ours_time:.2f} | {1000 * pld_time:.0f} | {1000 * rdp_time:.0f} |"
        )


if __name__ == "__main__":
    main()
