"""Maler's rate claims as experiments (Wang, Lu & Zhang 2019: O(√T) convex, O(log T) strongly convex).

Two online problems on the ball ``{‖θ‖ ≤ 1}`` (D = 2), vectorised over ``runs`` seeded runs, d = 2:

* strongly convex: ``f_t(θ) = ½λ‖θ − z_t‖²`` with λ = 1, ``z_t ~ N(0, 0.6²I)`` clipped to norm 0.8; the
  comparator is the closed form ``argmin Σ f_t = mean(z_t)``; ``G = 1.8λ``;
* linear (merely convex): ``f_t(θ) = ⟨v_t, θ⟩``, ``v_t = (0.05, 0) + N(0, 0.5²I)`` clipped to norm 1;
  comparator ``−S/‖S‖`` with ``S = Σ v_t``; ``G = 1``.

Learners: Maler told each T of the grid (a fresh run per T); Maler told ``T_max`` (the largest T) with
its regret read at every prefix T of the grid; the anytime (doubling) Maler; OGD with ``1/(λt)`` steps
(knows λ) and OGD with ``D/(G√t)`` steps.  Prints Markdown tables and writes ``benchmarks/maler.png``.

Run: ``.venv/bin/python benchmarks/maler.py [--runs 8] [--horizon 16000]``
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from dpcert.bandits.algorithms.maler import AnytimeMaler, Maler, OnlineGradientDescent

COLOURS = {
    "Maler (told each T)": "tab:purple",
    "Maler (told T_max)": "tab:blue",
    "Maler anytime (doubling)": "tab:orange",
    "OGD 1/(λt)": "tab:green",
    "OGD D/(G√t)": "tab:red",
}


def clip_rows(points: np.ndarray, bound: float) -> np.ndarray:
    norms = np.linalg.norm(points, axis=-1, keepdims=True)
    return points * np.minimum(1.0, bound / np.maximum(norms, 1e-300))


def run(problem: str, runs: int, horizon: int, grid: list[int], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    d, lam = 2, 1.0
    if problem == "strongly convex":
        targets = clip_rows(rng.normal(0.0, 0.6, (runs, horizon, d)), 0.8)
        G = 1.8 * lam
    else:
        targets = clip_rows(np.array([0.05, 0.0]) + rng.normal(0.0, 0.5, (runs, horizon, d)), 1.0)
        G = 1.0
    learners = {
        "Maler (told T_max)": Maler(d, horizon, gradient_bound=G, runs=runs),
        "Maler anytime (doubling)": AnytimeMaler(d, gradient_bound=G, runs=runs),
        "OGD 1/(λt)": OnlineGradientDescent(d, gradient_bound=G, modulus=lam, runs=runs),
        "OGD D/(G√t)": OnlineGradientDescent(d, gradient_bound=G, runs=runs),
    }
    if problem != "strongly convex":
        del learners["OGD 1/(λt)"]
    regret = play(problem, learners, targets, grid, lam)
    told_each = np.zeros((runs, len(grid)))
    for column, T in enumerate(grid):  # a fresh Maler told exactly this T
        fresh = {"m": Maler(d, T, gradient_bound=G, runs=runs)}
        told_each[:, column] = play(problem, fresh, targets[:, :T], [T], lam)["m"][:, 0]
    regret["Maler (told each T)"] = told_each
    return regret


def play(
    problem: str, learners: dict, targets: np.ndarray, grid: list[int], lam: float
) -> dict[str, np.ndarray]:
    """Feed the losses to every learner; regret against the closed-form best point at each T in grid."""
    runs, horizon = targets.shape[:2]
    losses = {name: np.zeros(runs) for name in learners}
    regret = {name: np.zeros((runs, len(grid))) for name in learners}
    for t in range(horizon):
        z = targets[:, t]
        for name, learner in learners.items():
            theta = learner.predict()
            if problem == "strongly convex":
                losses[name] += 0.5 * lam * np.sum((theta - z) ** 2, axis=1)
                learner.update(lam * (theta - z))
            else:
                losses[name] += np.sum(theta * z, axis=1)
                learner.update(z)
        if t + 1 in grid:
            column = grid.index(t + 1)
            seen = targets[:, : t + 1]
            if problem == "strongly convex":
                best = 0.5 * lam * np.sum((seen - seen.mean(axis=1, keepdims=True)) ** 2, axis=(1, 2))
            else:
                best = -np.linalg.norm(seen.sum(axis=1), axis=1)
            for name in learners:
                regret[name][:, column] = losses[name] - best
    return regret


def slope(grid: list[int], values: np.ndarray) -> float:
    """Least-squares slope of log(regret) against log(T)."""
    return float(np.polyfit(np.log(grid), np.log(np.maximum(values, 1e-12)), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--horizon", type=int, default=16000)
    parser.add_argument("--seed", type=int, default=2019)
    parser.add_argument("--figure", default=str(Path(__file__).with_suffix(".png")))
    args = parser.parse_args()
    grid = [T for T in (500, 1000, 2000, 4000, 8000, 16000, 32000, 64000) if T <= args.horizon]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}")
    print(f"load before: {os.getloadavg()}")
    results = {}
    for problem in ("strongly convex", "linear"):
        start = time.perf_counter()
        results[problem] = run(problem, args.runs, args.horizon, grid, args.seed)
        print(f"{problem}: {time.perf_counter() - start:.1f} s for {args.horizon} rounds x {args.runs} runs")
    for problem, regret in results.items():
        print(f"\n### {problem}: mean regret ± standard error over {args.runs} runs\n")
        print(
            "| learner | "
            + " | ".join(f"T = {T}" for T in grid)
            + " | log-log slope | R(T)/log T, last/first |"
        )
        print("|---|" + "---:|" * (len(grid) + 2))
        for name, values in regret.items():
            mean = values.mean(axis=0)
            err = values.std(axis=0, ddof=1) / np.sqrt(values.shape[0])
            cells = " | ".join(f"{m:.2f} ± {e:.2f}" for m, e in zip(mean, err, strict=True))
            per_log = (mean[-1] / np.log(grid[-1])) / (mean[0] / np.log(grid[0]))
            print(f"| {name} | {cells} | {slope(grid, mean):.2f} | {per_log:.2f} |")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for axis, (problem, regret) in zip(axes, results.items(), strict=True):
        for name, values in regret.items():
            mean = values.mean(axis=0)
            err = values.std(axis=0, ddof=1) / np.sqrt(values.shape[0])
            told_each = name == "Maler (told each T)"
            axis.errorbar(
                grid,
                mean,
                yerr=err,
                marker="s" if told_each else "o",
                markerfacecolor="none" if told_each else None,
                linestyle="--" if told_each else "-",
                capsize=3,
                label=name,
                color=COLOURS[name],
            )
        reference = regret["Maler (told T_max)"].mean(axis=0)[0]
        ts = np.array(grid, dtype=float)
        axis.plot(
            ts, reference * np.sqrt(ts / ts[0]), "k--", lw=1, label="∝ √T (through Maler's first point)"
        )
        axis.plot(ts, reference * np.log(ts) / np.log(ts[0]), "k:", lw=1, label="∝ log T (same point)")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("rounds T")
        axis.set_ylabel("regret against the best fixed point")
        axis.yaxis.set_major_locator(matplotlib.ticker.FixedLocator([1, 2, 5, 10, 20, 50, 100, 200, 500]))
        axis.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        axis.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        axis.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(grid))
        axis.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%d"))
        axis.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        axis.set_title(f"{problem} losses ({args.runs} runs, ± s.e.)")
        axis.legend(fontsize=7)
    fig.suptitle("Maler (Wang, Lu & Zhang 2019) vs OGD: regret against T", fontsize=11)
    fig.tight_layout()
    fig.savefig(args.figure, dpi=120)
    print(f"\nfigure: {args.figure}")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
