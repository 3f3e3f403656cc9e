"""Benchmark: DP-SGD accounting (Poisson-subsampled Gaussian) against dp_accounting and prv_accountant.

For every point of the grid q × σ × steps × δ, side by side in one process:

* dpcert: ``PoissonSampledGaussianProfile.epsilon_for(δ)`` (proven upper bound, interval 1e-4), cold
  (its single-step and composition caches cleared before each run);
* dp_accounting 0.6 ``PLDAccountant(ADD_OR_REMOVE_ONE, value_discretization_interval=1e-4)``
  (pessimistic connect-the-dots PLD, FFT round-off not bounded) ``.compose(event).get_epsilon(δ)``;
* dp_accounting ``RdpAccountant`` (default orders), and the RDP ε Opacus would report, computed from
  dp_accounting's subsampled-Gaussian RDP at Opacus's default orders with Opacus's conversion
  (Balle et al. 2020, as in ``opacus.accountants.analysis.rdp.get_privacy_spent``; torch is not
  installed here, so Opacus itself is not run);
* prv_accountant ``PRVAccountant(..., eps_error=0.01, delta_error=δ/1000).compute_epsilon`` (lower,
  estimate, upper), Gopi, Lee & Wutschitz 2021.

Times are process CPU seconds, the median of ``--repeats`` runs (dpcert and dp_accounting).  Run as
``python benchmarks/dp_sgd.py [--quick]``; prints the markdown section for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from dpcert.mechanisms import subsampled_gaussian as sampled_gaussian
from dpcert.mechanisms.subsampled_gaussian import PoissonSampledGaussianProfile

INTERVAL = 1e-4
SAMPLING = (1e-3, 1e-2, 0.1)
SIGMAS = (0.5, 0.8, 1.1, 2.0, 5.0)
STEPS = (100, 1_000, 10_000, 100_000)
DELTAS = (1e-5, 1e-8)
QUICK = [
    (1e-3, 1.1, 1_000),
    (1e-3, 0.8, 1_000),
    (1e-3, 0.5, 10_000),
    (1e-2, 1.1, 10_000),
    (0.1, 0.5, 100),
    (1e-3, 0.8, 100_000),
]
OPACUS_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))


def cpu_seconds(function: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    """The function's value and the median process CPU time of ``repeats`` runs."""
    times = []
    value = None
    for _ in range(repeats):
        start = time.process_time()
        value = function()
        times.append(time.process_time() - start)
    return value, statistics.median(times)


def dpcert_epsilon(q: float, sigma: float, steps: int, delta: float) -> float:
    sampled_gaussian.poisson_gaussian_loss_pmfs.cache_clear()
    sampled_gaussian._composed_curve.cache_clear()
    profile = PoissonSampledGaussianProfile({"sigma": sigma, "sampling_probability": q, "steps": steps})
    return profile.epsilon_for(delta)


def event(q: float, sigma: float, steps: int) -> Any:
    from dp_accounting import dp_event

    return dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps
    )


def dp_accounting_pld(q: float, sigma: float, steps: int, delta: float) -> float:
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.privacy_accountant import NeighboringRelation

    accountant = pld_privacy_accountant.PLDAccountant(
        NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=INTERVAL
    )
    return float(accountant.compose(event(q, sigma, steps)).get_epsilon(delta))


def dp_accounting_rdp(q: float, sigma: float, steps: int, delta: float) -> float:
    from dp_accounting.rdp import rdp_privacy_accountant

    return float(rdp_privacy_accountant.RdpAccountant().compose(event(q, sigma, steps)).get_epsilon(delta))


def opacus_rdp(q: float, sigma: float, steps: int, delta: float) -> float:
    """Opacus's ``get_privacy_spent`` applied to dp_accounting's RDP at Opacus's default orders."""
    import numpy as np
    from dp_accounting.rdp import rdp_privacy_accountant

    orders = np.array(OPACUS_ORDERS)
    rdp = steps * np.asarray(
        rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders)
    )
    eps = rdp - (np.log(delta) + np.log(orders)) / (orders - 1) + np.log((orders - 1) / orders)
    return float(np.nanmin(eps))


def prv_bounds(q: float, sigma: float, steps: int, delta: float) -> tuple[float, float, float]:
    from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant

    accountant = PRVAccountant(
        prvs=[PoissonSubsampledGaussianMechanism(sampling_probability=q, noise_multiplier=sigma)],
        max_self_compositions=[steps],
        eps_error=0.01,
        delta_error=delta / 1000,
    )
    low, estimate, high = accountant.compute_epsilon(delta, [steps])
    return float(low), float(estimate), float(high)


def attempt(function: Callable[[], Any]) -> Any:
    try:
        return function()
    except Exception as error:  # a reference library failing at a point is reported, not fatal
        return f"{type(error).__name__}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="six regression points instead of the grid")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sampling", type=float, nargs="+", default=SAMPLING, help="subset of q")
    parser.add_argument("--sigmas", type=float, nargs="+", default=SIGMAS, help="subset of σ")
    parser.add_argument("--steps", type=int, nargs="+", default=STEPS, help="subset of step counts")
    args = parser.parse_args()
    points = (
        QUICK if args.quick else [(q, s, k) for q in args.sampling for s in args.sigmas for k in args.steps]
    )
    load = os.getloadavg()
    print(f"command: `{' '.join([os.path.basename(sys.executable), *sys.argv])}`  ")
    machine = f"{platform.machine()} {_processor()}, {os.cpu_count()} cores"
    print(f"machine: {machine}, Python {platform.python_version()}  ")
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}  ")
    print()
    print(
        "| q | σ | steps | δ | dpcert ε | dp_accounting PLD ε | dpcert/PLD − 1 | prv [lower, upper] "
        "| RDP ε | Opacus RDP ε | dpcert s | dp_accounting s | speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    within = total = below_prv = 0
    ratios: list[float] = []
    ours_times: list[float] = []
    theirs_times: list[float] = []
    for q, sigma, steps in points:
        for delta in DELTAS:
            point = (q, sigma, steps, delta)
            ours, ours_time = cpu_seconds(partial(dpcert_epsilon, *point), args.repeats)
            theirs, theirs_time = cpu_seconds(
                partial(attempt, partial(dp_accounting_pld, *point)), args.repeats
            )
            rdp = attempt(partial(dp_accounting_rdp, *point))
            opacus = attempt(partial(opacus_rdp, *point))
            prv = attempt(partial(prv_bounds, *point))
            total += 1
            ours_times.append(ours_time)
            theirs_times.append(theirs_time)
            ratios.append(theirs_time / max(ours_time, 1e-9))
            if isinstance(theirs, float) and math.isfinite(theirs):
                gap = ours / theirs - 1.0 if theirs > 0 else math.inf
                close = abs(ours - theirs) <= max(0.01 * theirs, 0.005)
                within += close
                gap_text = f"{gap:+.2e}" + ("" if close else " **")
            else:
                gap_text = "n/a"
            if isinstance(prv, tuple):
                prv_text = f"[{prv[0]:.4f}, {prv[2]:.4f}]"
                if ours < prv[0]:
                    below_prv += 1
                    prv_text += " **below**"
            else:
                prv_text = str(prv)
            print(
                f"| {q:g} | {sigma:g} | {steps} | {delta:g} | {ours:.4f} | {_number(theirs)} | {gap_text} "
                f"| {prv_text} | {_number(rdp)} | {_number(opacus)} | {ours_time:.2f} | {theirs_time:.2f} "
                f"| {theirs_time / max(ours_time, 1e-9):.1f}× |",
                flush=True,
            )
    load = os.getloadavg()
    print()
    print(
        f"Summary: {within}/{total} points within 1 % (or 0.005) of dp_accounting's pessimistic PLD ε; "
        f"{below_prv} below prv_accountant's lower bound; median speed-up "
        f"{statistics.median(ratios):.1f}× (least {min(ratios):.1f}×); longest dpcert run "
        f"{max(ours_times):.2f} s, longest dp_accounting run {max(theirs_times):.2f} s; "
        f"load average at end {load[0]:.2f}."
    )


def _number(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _processor() -> str:
    name = platform.processor()
    if not name:
        try:
            with open("/proc/cpuinfo") as info:
                for line in info:
                    if line.startswith("model name"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
    return name


if __name__ == "__main__":
    main()
