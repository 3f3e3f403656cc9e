"""Every contextual linear algorithm of dpcert on real choices: the travel-mode bandit.

Run as ``python benchmarks/travel_mode_choice.py [--runs R] [--horizon T] [--epsilon E] [--figure PATH]``;
prints a markdown section (table, claims decided by the measured regrets, machine and load) and draws the
figure (default ``docs/images/travel_mode_choice.png``).

Environment: :class:`dpcert.bandits.environments.choice_data.TravelModeBandit` (Greene & Hensher's 210
travellers, four modes, reward 1 for the traveller's own choice; Dudík, Langford & Li 2011's conversion),
arriving i.i.d. and sorted by household income.  Algorithms, each with its certificate at the target
(ε, δ): non-private LinUCB, JDP-LinUCB (central), SDP-LinUCB with P_Amp and P_Vec (shuffle, B = 20) and
LDP-LinUCB (local) of Chowdhury & Zhou 2022, and OnlineUCB (local; Maler with the Lemma 3.3 radius, and
the OGD variant) of Improved-rate LDP linear bandits.  Uniform play has regret 3/4 per round.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from dpcert import __version__
from dpcert.bandits.algorithms.ldp_linear import ONLINE_UCB, PAPER_LEARNER, PAPER_ONLINE_UCB, run_ldp_linear
from dpcert.bandits.algorithms.linucb import ALGORITHMS, run_group
from dpcert.bandits.calibration.ldp_linear import calibrate_randomizer
from dpcert.bandits.calibration.linucb import calibrate
from dpcert.bandits.environments.choice_data import DIMENSION, TravelModeBandit
from dpcert.reproductions.improved_ldp_linear import LABELS
from dpcert.session import PrivacySession

SHUFFLE_BATCH = 20


def run_all(order: str, runs: int, horizon: int, epsilon: float, delta: float, seed: int):
    """Final regrets (runs,), mean curves (horizon,) and certified (ε, δ) of every algorithm."""
    rng = np.random.default_rng([seed, 0 if order == "iid" else 1])
    env = TravelModeBandit.draw(runs, rng, order=order)
    common = {"epsilon": epsilon, "delta": delta, "horizon": horizon, "dimension": DIMENSION}
    per_round = [calibrate(name, batch_size=1, **common) for name in ALGORITHMS[:3]]
    shuffle = [calibrate(name, batch_size=SHUFFLE_BATCH, **common) for name in ALGORITHMS[3:]]
    out: dict[str, tuple[np.ndarray, np.ndarray, str, float]] = {}
    for group, batch in ((per_round, 1), (shuffle, SHUFFLE_BATCH)):
        start = time.process_time()
        results = run_group(env.restarted(), group, horizon=horizon, batch_size=batch, rng=rng)
        seconds = (time.process_time() - start) / len(group)
        for run in results:
            regret = np.asarray(run.cumulative_regret)
            cert = "none" if run.certificate is None else f"({run.max_user_epsilon:.3g}, {delta:g})"
            out[run.algorithm] = (regret[:, -1], regret.mean(axis=0), cert, seconds)
    local = calibrate_randomizer(epsilon, delta)
    for name, learner, kind in (
        ("online-ucb", PAPER_ONLINE_UCB, PAPER_LEARNER),
        ("online-ucb-ogd", ONLINE_UCB, "ogd"),
    ):
        start = time.process_time()
        session = PrivacySession(f"{name}/r")
        result = run_ldp_linear(
            env.restarted(), [learner], horizon=horizon, sigma=local.sigma, epsilon=epsilon, delta=delta,
            rng=rng, session=session, certificate=local.certificate, learner=kind,
        )  # fmt: skip
        worst = session.worst_user_certificate(delta)  # every user's composed charges, the worst one
        cert = "none" if worst is None else f"({worst.epsilon_for(delta):.3g}, {delta:g})"
        regret = result.regret_curve
        out[name] = (regret[:, -1], regret.mean(axis=0), cert, time.process_time() - start)
    return out


def paired(a: np.ndarray, b: np.ndarray, alternative: str = "two-sided") -> tuple[float, float, float]:
    """Mean of a − b, its standard error and the paired t-test p-value (the runs share instances)."""
    from scipy import stats

    diff = a - b
    se = float(diff.std(ddof=1) / math.sqrt(diff.size))
    if se == 0:
        return float(diff.mean()), se, 1.0 if diff.mean() == 0 else 0.0
    return float(diff.mean()), se, float(stats.ttest_1samp(diff, 0.0, alternative=alternative).pvalue)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--horizon", type=int, default=5000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", type=Path, default=Path("docs/images/travel_mode_choice.png"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    results = {order: run_all(order, args.runs, args.horizon, args.epsilon, args.delta, args.seed)
               for order in ("iid", "by-income")}  # fmt: skip
    load_after = os.getloadavg()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 5.4), sharey=True)
    rounds = np.arange(1, args.horizon + 1)
    for axis, (order, out) in zip(axes, results.items(), strict=True):
        for name, (_, curve, cert, _) in out.items():
            style = "--" if name.startswith("online") else "-"
            axis.plot(rounds, curve / rounds, style, label=f"{LABELS[name]}, certified {cert}")
        axis.axhline(0.75, color="grey", lw=0.8, ls=":", label="uniform play (3/4)")
        axis.set_title(f"travellers arrive {'i.i.d.' if order == 'iid' else 'sorted by income'}")
        axis.set_xlabel("round t")
        axis.set_xscale("log")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("regret per round R(t)/t (vs knowing each choice)")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    figure.suptitle(
        f"Travel-mode choice (Greene & Hensher; 210 travellers, 4 modes, d = {DIMENSION}): "
        f"ε = {args.epsilon:g}, δ = {args.delta:g}, mean of {args.runs} runs"
    )
    figure.tight_layout(rect=(0, 0.14, 1, 1))
    args.figure.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.figure, dpi=110)

    command = "python benchmarks/travel_mode_choice.py " + " ".join(sys.argv[1:])
    lines = [f"## Contextual linear algorithms on real choices (travel-mode data), ε = {args.epsilon:g}", ""]
    lines.append(
        f"Command: `{command.strip()}` (dpcert {__version__}, seed {args.seed}, numpy {np.__version__}; "
        f"{platform.machine()}, {os.cpu_count()} cores, load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after).  Figure: `{args.figure}`."
    )
    lines += [
        "",
        "| arrival | algorithm | certified (ε, δ) | regret at T (mean ± s.e.) | per round | CPU s |",
    ]
    lines.append("|---|---|---|---|---|---|")
    for order, out in results.items():
        for name, (finals, _, cert, seconds) in out.items():
            se = finals.std(ddof=1) / math.sqrt(finals.size)
            lines.append(
                f"| {order} | {LABELS[name]} | {cert} | {finals.mean():,.0f} ± {se:,.0f} | "
                f"{finals.mean() / args.horizon:.3f} | {seconds:.1f} |"
            )
    lines += ["", "Claims, each decided by a one-sided paired t-test over the runs (α = 0.05):", ""]
    for order, out in results.items():
        uniform = np.full(args.runs, 0.75 * args.horizon)
        for name, (finals, _, _, _) in out.items():
            mean, se, p = paired(finals, uniform, "less")
            lines.append(
                f"- {order}: {LABELS[name]} does better than uniform play (3/4 per round): "
                f"**{'yes' if p < 0.05 else 'no'}** (R(T) − 3T/4 = {mean:,.0f} ± {se:,.0f}, p = {p:.2g})"
            )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
