"""Secure (integer-exact) LinUCB noise against the float Gaussian at the same target.

For LDP-LinUCB and JDP-LinUCB at (ε, δ) = (1, 1e-5), T = 20,000, 10 runs (d = 5, K = 100, tight
calibration, seed 0): the float run (exact Gaussian profile, Balle & Wang 2018), the secure run
(ℓ2 discrete Gaussian by zCDP, rounded to the grid) and the float run at the secure run's σ.  Each
row is what ``dpcert bandit run ALGORITHM --privacy P --epsilon 1 --delta 1e-5 --horizon 20000
--runs 10 [--secure | --option sigma=S] --json`` computes.

Usage: ``python benchmarks/secure_linucb.py [--horizon 20000] [--runs 10]``
"""

from __future__ import annotations

import argparse
import math
import time

from dpcert.bandits.registry import RunConfig
from dpcert.bandits.runner import run_linucb_config

SETTINGS = (("linucb-ldp", "local"), ("linucb-jdp", "central"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| algorithm | noise | sigma | sigma / float sigma | epsilon at delta = 1e-5 | final regret "
          "| seconds |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|")
    for algorithm, privacy in SETTINGS:
        rows = []
        common = {"horizon": args.horizon, "runs": args.runs, "seed": args.seed}
        for label, options in (("float", {}), ("secure", {"secure": True})):
            start = time.perf_counter()
            run = run_linucb_config(RunConfig(algorithm, privacy, 1.0, 1e-5, options=options, **common))
            rows.append((label, run, time.perf_counter() - start))
        secure_sigma = rows[1][1].extras["noise"]["sigma"]
        start = time.perf_counter()
        matched = run_linucb_config(
            RunConfig(algorithm, privacy, 1.0, 1e-5, options={"sigma": secure_sigma}, **common)
        )
        rows.append(("float at the secure sigma", matched, time.perf_counter() - start))
        float_sigma = rows[0][1].extras["noise"]["sigma"]
        for label, run, seconds in rows:
            final = run.cumulative_regret[:, -1]
            stderr = final.std(ddof=1) / math.sqrt(final.size)
            sigma = run.extras["noise"]["sigma"]
            print(
                f"| {algorithm} | {label} | {sigma:.4f} | {sigma / float_sigma:.4f} | "
                f"{run.certificate.epsilon_for(1e-5):.4f} | {final.mean():,.0f} ± {stderr:,.0f} | "
                f"{seconds:.1f} |"
            )


if __name__ == "__main__":
    main()
