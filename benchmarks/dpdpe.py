"""DP-DPE at T = 10⁶ (Li, Zhou & Ji 2022, Fig. 2 setting): regret, certified privacy and wall time per run.

Runs DPE and CDP/LDP/SDP-DPE under the ``paper`` and ``tight`` calibrations at (ε, δ) = (10, 0.25),
plus a tight-calibration ε sweep, and prints the markdown section for ``benchmarks/RESULTS.md``::

    python benchmarks/dpdpe.py [--runs R] [--horizon T] [--epsilons 1,3,10] [--sections models,dppe]

The ``dppe`` section times SDP-PE (DP-PE with the Alg. 4 shuffle sums, one protocol run per arm and
phase) with every group size calibrated exactly against the size grid of
:class:`~dpcert.bandits.privatizers.ShuffleBitSum` (``--dppe-runs`` runs each, fresh privatizer
per configuration so no calibration is reused from another row).

Setting: d = 20, k = 1000, σ = 0.1, α = 0.8, β = 1/(kT), B = 2.1 (the paper's Fig. 2
setting; docs/PAPER_NOTES.md, PN-LZJ-2 and PN-LZJ-7).  The ordering
the paper claims (LDP worst; central ≈ shuffle close to non-private) is checked with one-sided Welch
t-tests on the final regrets of the tight runs.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time

import numpy as np
from scipy import stats

from dpcert.bandits import registry
from dpcert.bandits.algorithms.elimination import EliminationSettings, run_elimination
from dpcert.bandits.environments.linear import sample_instances
from dpcert.bandits.privatizers import Calibration, ShuffleBitSum
from dpcert.bandits.runner import run_elimination_config
from dpcert.errors import DPCertError
from dpcert.session import PrivacySession

SETTING = {"dimension": 20, "arms": 1000, "heterogeneity": 0.1, "alpha": 0.8, "progress": False}
MODELS = (("DPE", "none"), ("CDP-DPE", "central"), ("LDP-DPE", "local"), ("SDP-DPE", "shuffle"))


def run(privacy: str, calibration: str, epsilon: float, runs: int, horizon: int, seed: int):
    config = registry.RunConfig(
        algorithm="dp-dpe",
        privacy=privacy,
        epsilon=None if privacy == "none" else epsilon,
        delta=None if privacy == "none" else 0.25,
        horizon=horizon,
        runs=runs,
        seed=seed,
        calibration=calibration,
        options=SETTING,
    )
    started = time.perf_counter()
    result = run_elimination_config(config)
    seconds = time.perf_counter() - started
    finals = np.asarray(result.cumulative_regret)[:, -1]
    return {
        "finals": finals,
        "seconds_per_run": seconds / runs,
        "epsilon": result.max_user_epsilon,
        "meets": result.target_met,
        "communication": result.extras["communication"]["mean"],
        "unit": result.extras["communication"]["unit"],
    }


def run_dppe_shuffle(
    epsilon: float, delta: float, calibration: str, size_grid: int | None, runs: int, horizon: int, seed: int
) -> dict:
    """SDP-PE runs (d = 20, k = 1000) timed end to end, including the worst user's certificate."""
    instances = sample_instances(20, 1000, runs, np.random.default_rng([seed, 0]), heterogeneity=0.0)
    mode = Calibration.LEAST_NOISE if calibration == "tight" else calibration
    privatizer = ShuffleBitSum(instances[0].reward_bound, epsilon, delta, mode, size_grid=size_grid)
    width = "paper" if calibration == "paper" else "exact"  # as ``dpcert bandit run`` chooses
    settings = EliminationSettings(horizon=horizon, variant="pe", width=width)
    started = time.perf_counter()
    finals, worst, charges = [], 0.0, 0
    for index in range(runs):
        session = PrivacySession(f"sdp-pe/{index}")
        result = run_elimination(
            instances[index], privatizer, settings, np.random.default_rng([seed, 1, index]), session=session
        )
        certificate = session.worst_user_certificate(delta)
        worst = max(worst, certificate.epsilon_for(delta))
        finals.append(result.final_regret[0])
        charges += len(session.certificates)
    return {
        "finals": np.asarray(finals),
        "seconds_per_run": (time.perf_counter() - started) / runs,
        "epsilon": worst,
        "calibrations": len(privatizer._cache),
        "charges_per_run": charges / runs,
    }


def dppe_section(runs: int, horizon: int, seed: int) -> list[str]:
    """Markdown rows: SDP-PE wall time with per-size calibration against the size grid."""
    lines = [
        "",
        f"SDP-PE (DP-PE, Alg. 4 shuffle sums per arm), T = {horizon:,}, d = 20, k = 1000, {runs} runs each:",
        "",
        "| (ε, δ) | calibration | group sizes | s/run | regret at T (mean ± s.e.) | certified ε | "
        "calibrations | charges/run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for epsilon, delta in ((10.0, 0.25), (1.0, 1e-3)):
        for calibration, size_grid, label in (
            ("tight", None, "each size exactly"),
            ("tight", 4, "grid, 4 per doubling"),
            ("paper", None, "each size (eq. 60)"),
        ):
            entry = run_dppe_shuffle(epsilon, delta, calibration, size_grid, runs, horizon, seed)
            print(
                f"# SDP-PE {calibration} {label} ({epsilon:g}, {delta:g}): "
                f"{entry['seconds_per_run']:.2f} s/run",
                file=sys.stderr,
            )
            lines.append(
                f"| ({epsilon:g}, {delta:g}) | {calibration} | {label} | {entry['seconds_per_run']:.2f} | "
                f"{fmt(entry)} | {entry['epsilon']:.4g} | {entry['calibrations']} | "
                f"{entry['charges_per_run']:.0f} |"
            )
    return lines


def p_greater(a: np.ndarray, b: np.ndarray) -> float:
    return float(stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)


def fmt(entry) -> str:
    finals = entry["finals"]
    stderr = finals.std(ddof=1) / math.sqrt(finals.size) if finals.size > 1 else 0.0
    return f"{finals.mean():,.0f} ± {stderr:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=1_000_000)
    parser.add_argument("--epsilons", default="1,3,10", help="tight-calibration sweep (comma-separated)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", default="none,central,local,shuffle", help="privacy models to run")
    parser.add_argument("--sections", default="models,dppe", help="models (DP-DPE table) and/or dppe")
    parser.add_argument("--dppe-runs", type=int, default=3, help="runs per SDP-PE timing row")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    if "models" not in sections:
        load = os.getloadavg()
        command = "python benchmarks/" + os.path.basename(__file__) + " " + " ".join(sys.argv[1:])
        print(f"Command: `{command.strip()}`; load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}.")
        print("\n".join(dppe_section(args.dppe_runs, args.horizon, args.seed)))
        return
    chosen = set(args.models.split(",")) | {"none"}
    rows = []
    results: dict[tuple[str, str, float], dict] = {}
    unavailable: dict[str, str] = {}
    for calibration in ("paper", "tight"):
        for label, privacy in MODELS:
            if (privacy == "none" and calibration == "paper") or privacy not in chosen:
                continue
            try:
                entry = run(privacy, calibration, 10.0, args.runs, args.horizon, args.seed)
            except DPCertError as exc:
                unavailable[f"{label} ({calibration})"] = str(exc)
                continue
            results[(label, calibration, 10.0)] = entry
            print(f"# {label} {calibration}: {fmt(entry)}", file=sys.stderr)
    sweep = [float(e) for e in args.epsilons.split(",") if e]
    for epsilon in sweep:
        if epsilon == 10.0:
            continue
        for label, privacy in MODELS[1:]:
            if privacy not in chosen:
                continue
            try:
                results[(label, "tight", epsilon)] = run(
                    privacy, "tight", epsilon, args.runs, args.horizon, args.seed
                )
            except DPCertError as exc:
                unavailable[f"{label} (tight, eps={epsilon:g})"] = str(exc)
    dpe = results[("DPE", "tight", 10.0)]
    ordered = sorted(
        ((key, entry) for key, entry in results.items() if key[2] == 10.0),
        key=lambda item: (item[0][0] != "DPE", item[0][1], [m for m, _ in MODELS].index(item[0][0])),
    )
    for (label, calibration, _), entry in ordered:
        name = label if label == "DPE" else f"{label} ({calibration})"
        certified = "—" if label == "DPE" else f"{entry['epsilon']:.4g}{'' if entry['meets'] else ' (> 10!)'}"
        rows.append(
            f"| {name} | {fmt(entry)} | {entry['finals'].mean() / dpe['finals'].mean():.2f} | {certified} | "
            f"{entry['communication']:.3g} {entry['unit']} | {entry['seconds_per_run']:.1f} |"
        )
    load = os.getloadavg()
    command = "python benchmarks/" + os.path.basename(__file__) + " " + " ".join(sys.argv[1:])
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    lines = [
        "## Bandits: DP-DPE at T = 10⁶ (Li, Zhou & Ji 2022, Fig. 2 setting)",
        "",
        f"Command: `{command.strip()}` (commit {commit}); load average {load[0]:.2f}, {load[1]:.2f}, "
        f"{load[2]:.2f} (2 shared cores, timings under load). d = 20, k = 1000, σ = 0.1, α = 0.8, "
        f"β = 1/(kT), B = 2.1, (ε, δ) = (10, 0.25), {args.runs} runs, T = {args.horizon:,}.",
        "",
        "| algorithm | regret at T (mean ± s.e.) | / DPE | certified ε at δ = 0.25 | communication | s/run |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    tight = {label: results.get((label, "tight", 10.0)) for label, _ in MODELS}
    tests = []
    for high, low in (("LDP-DPE", "CDP-DPE"), ("LDP-DPE", "SDP-DPE"), ("CDP-DPE", "DPE"), ("SDP-DPE", "DPE")):
        if tight[high] and tight[low]:
            p_value = p_greater(tight[high]["finals"], tight[low]["finals"])
            tests.append(f"{high} > {low}: p = {p_value:.2g}")
    if tight["SDP-DPE"] and tight["CDP-DPE"]:
        ratio = tight["SDP-DPE"]["finals"].mean() / tight["CDP-DPE"]["finals"].mean()
        two_sided = stats.ttest_ind(tight["SDP-DPE"]["finals"], tight["CDP-DPE"]["finals"], equal_var=False)
        tests.append(f"SDP/CDP = {ratio:.2f} (two-sided p = {two_sided.pvalue:.2g})")
    if tests:
        lines.append("Ordering (tight, ε = 10; one-sided Welch t-tests): " + "; ".join(tests) + ".")
    if len(sweep) > 1:
        lines += ["", "Tight calibration, regret at T against ε (δ = 0.25):", ""]
        header = "| ε | " + " | ".join(label for label, _ in MODELS[1:]) + " | DPE |"
        lines += [header, "|---" * (len(MODELS) + 1) + "|"]
        for epsilon in sorted(sweep):
            cells = []
            for label, _ in MODELS[1:]:
                entry = results.get((label, "tight", epsilon))
                cells.append(fmt(entry) if entry else "n/a")
            lines.append(f"| {epsilon:g} | " + " | ".join(cells) + f" | {fmt(dpe)} |")
    if unavailable:
        reasons = sorted(set(unavailable.values()))
        lines += ["", f"Not run: {', '.join(unavailable)} — " + "; ".join(reasons)]
    if "dppe" in sections:
        lines += dppe_section(args.dppe_runs, args.horizon, args.seed)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
