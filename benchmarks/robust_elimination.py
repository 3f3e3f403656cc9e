"""Charisopoulos, Esfandiari & Mirrokni 2023 (robust, locally private batched elimination): experiments.

The paper has no experiments; this runs those of docs/PAPER_NOTES.md, PN-CEM-7 and prints the markdown
section for ``benchmarks/RESULTS.md``::

    python benchmarks/robust_elimination.py [--runs 10] [--horizon 100000]

* R0 — the single-phase robust least-squares table (λ as printed vs clean-side λ; PN-CEM-2);
* E1 — non-private regret vs T (slope); E2 — regret vs α, robust filter vs plain least squares, four
  adversaries; E3 — privacy cost in M1 vs ε; E4 — client model M1 vs M2 across T.

``--horizon`` is the T of E2/E3 (proposed: 10⁶; default 10⁵ to keep the run short on two cores); a subset of
E2 (constant-10⁶ and targeted-50 adversaries, α ∈ {0.01, 0.05}) also runs at ``--large-horizon`` (10⁶).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

from dpcert.bandits.algorithms.spectral_filter import least_squares, robust_least_squares, spectral_filter
from dpcert.bandits.design import near_g_optimal_design
from dpcert.bandits.figures.robust_elimination import (
    E2_ADVERSARIES,
    reproduce_seed003_e1,
    reproduce_seed003_e2,
    reproduce_seed003_e3,
    reproduce_seed003_e4,
)


def _cell(row: dict) -> str:
    return f"{row['regret']['mean']:,.0f} ± {row['regret']['stderr']:,.0f}"


def robust_regression_table(reps: int = 4) -> list[str]:
    """Single-phase table (docs/PAPER_NOTES.md, PN-CEM-7).

    d = 5, K = 40, FW design, n ≈ 4000, N(0,1) noise, targeted −c·sign.
    """
    rng = np.random.default_rng(0)
    arms = rng.standard_normal((40, 5))
    arms /= np.linalg.norm(arms, axis=1, keepdims=True)
    theta = rng.standard_normal(5)
    theta /= np.linalg.norm(theta)
    design = near_g_optimal_design(arms)
    counts = np.ceil(4000 * design.weights).astype(int)
    index = np.repeat(np.arange(40), counts)
    rows = arms[index]
    bound = 1.0 + math.sqrt(2.0 * math.log(2 * rows.shape[0] / 0.01))
    gram_values, gram_vectors = np.linalg.eigh(rows.T @ rows)
    inverse_root = (gram_vectors / np.sqrt(gram_values)) @ gram_vectors.T
    lines = [
        f"R0 (single phase, PN-CEM-7 table; n = {rows.shape[0]}, max_a |⟨a, θ̂ − θ*⟩|, mean of {reps} reps; "
        f"Ȳ = 1 + sqrt(2 log(2n/0.01)) = {bound:.2f}):",
        "",
        "| c | α | clean LS | filter, λ as printed | filter, trimmed λ | clip ±Ȳ + filter (trimmed λ) | "
        "plain LS |",
        "|---|---|---|---|---|---|---|",
    ]
    for magnitude in (5.0, 50.0, 1e6):
        for alpha in (0.01, 0.05, 0.2):
            errors = np.zeros(5)
            for rep in range(reps):
                local = np.random.default_rng([rep, int(magnitude), int(alpha * 100)])
                clean = rows @ theta + local.standard_normal(rows.shape[0])
                observed = np.where(
                    local.random(clean.size) < alpha, -magnitude * np.sign(rows @ theta), clean
                )
                printed_lambda = float(
                    np.max(np.einsum("ij,jk,ik->i", arms, np.linalg.inv(rows.T @ rows), arms))
                    * np.mean(observed**2)
                )
                printed = spectral_filter((rows @ inverse_root) * observed[:, None], printed_lambda, local)
                estimates = [
                    least_squares(rows, clean),
                    rows.shape[0] * inverse_root @ printed.mean,
                    robust_least_squares(rows, observed, local, alpha=alpha, reference_arms=arms).theta,
                    robust_least_squares(
                        rows,
                        observed,
                        local,
                        alpha=alpha,
                        value_bound=bound,
                        variance="trimmed",
                        clip_values=True,
                        reference_arms=arms,
                    ).theta,
                    least_squares(rows, observed),
                ]
                errors += [np.max(np.abs(arms @ (e - theta))) for e in estimates]
            errors /= reps
            lines.append(f"| {magnitude:g} | {alpha} | " + " | ".join(f"{e:.3g}" for e in errors) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--large-horizon", type=int, default=1_000_000, help="T of the E2 subset (proposed: 10⁶)"
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    r0 = robust_regression_table()
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory)
        e1 = reproduce_seed003_e1(args.runs, out, args.seed)
        e2 = reproduce_seed003_e2(args.runs, out, args.seed, horizon=args.horizon)
        e3 = reproduce_seed003_e3(args.runs, out, args.seed, horizon=args.horizon)
        e4 = reproduce_seed003_e4(args.runs, out, args.seed)
        large = (E2_ADVERSARIES[0], E2_ADVERSARIES[2])
        e2_large = reproduce_seed003_e2(
            args.runs, out, args.seed, horizon=args.large_horizon, alphas=(0.01, 0.05), adversaries=large
        )
    total = time.perf_counter() - started

    lines = [
        "## Charisopoulos, Esfandiari & Mirrokni 2023: robust, locally private batched elimination",
        "",
        f"Command: `python benchmarks/robust_elimination.py --runs {args.runs} --horizon {args.horizon}` "
        f"(load average at start: {load:.2f}; total {total:.0f} s).  "
        "Setting of docs/PAPER_NOTES.md, PN-CEM-7: d = 5, K = 50, "
        f"arms "
        "and θ* uniform on the sphere (one instance), rewards 2·Bernoulli((1+⟨a,θ*⟩)/2) − 1, δ' = 0.05 "
        "(δ = δ'/(KT²)), B = ⌈ln T⌉, width scale c_γ = 0.05 frozen, filter λ = Chernoff-trimmed, received "
        "values "
        f"clipped to the clean-side bound Ȳ; {args.runs} runs; final pseudo-regret mean ± s.e.",
        "",
        *r0,
        "",
        "E1 (non-private, α = 0):",
        "",
        "| T | regret | a* survived | batches used (≤ ⌈ln T⌉) | seconds |",
        "|---|---|---|---|---|",
    ]
    for horizon, row in e1["rows"].items():
        lines.append(
            f"| {int(horizon):,} | {_cell(row)} | {row['best_arm_survived']:.0%} | {row['max_batches']} "
            f"(≤ {row['batch_limit']}) | {row['seconds']:.2f} |"
        )
    lines += [
        "",
        f"E2 (non-private, T = {args.horizon:,}; regret of the robust filter / plain least squares, "
        "runs losing a* in brackets):",
        "",
        "| adversary | " + " | ".join(f"α = {a}" for a in (0.0, 0.005, 0.01, 0.02, 0.05)) + " |",
        "|---|---|---|---|---|---|",
    ]
    for label, _, _ in E2_ADVERSARIES:
        cells = []
        for alpha in (0.0, 0.005, 0.01, 0.02, 0.05):
            robust = e2["rows"][f"{label} | alpha={alpha} | robust"]
            plain = e2["rows"][f"{label} | alpha={alpha} | least-squares"]
            cells.append(
                f"{robust['regret']['mean']:,.0f} ({robust['best_arm_lost']}) / "
                f"{plain['regret']['mean']:,.0f} ({plain['best_arm_lost']})"
            )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    e2_seconds = sum(row["seconds"] for row in e2["rows"].values())
    lines += ["", f"E2 wall time: {e2_seconds:.1f} s for {len(e2['rows'])} cells.", ""]
    lines += [
        f"E2 at the proposed T = {args.large_horizon:,} "
        "(subset; robust / plain LS, runs losing a*, seconds):",
        "",
        "| adversary | α | robust | plain LS |",
        "|---|---|---|---|",
    ]
    for label, _, _ in (E2_ADVERSARIES[0], E2_ADVERSARIES[2]):
        for alpha in (0.01, 0.05):
            robust = e2_large["rows"][f"{label} | alpha={alpha} | robust"]
            plain = e2_large["rows"][f"{label} | alpha={alpha} | least-squares"]
            lines.append(
                f"| {label} | {alpha} | {_cell(robust)} ({robust['best_arm_lost']}; "
                f"{robust['seconds']:.1f} s) | "
                f"{_cell(plain)} ({plain['best_arm_lost']}; {plain['seconds']:.1f} s) |"
            )
    lines += [
        "",
        "",
        f"E3 (M1, α = 0, T = {args.horizon:,}): "
        + "; ".join(f"ε = {eps}: {_cell(row)} ({row['seconds']:.2f} s)" for eps, row in e3["rows"].items()),
        "",
        "E4 (α = 0; M1 = one Laplace report per reward, M2 = one report per action owner per batch):",
        "",
        "| ε | T | M1 (runs losing a*) | M2 (runs losing a*) | M2 client-level ε (composed over batches) "
        "| seconds M1 / M2 |",
        "|---|---|---|---|---|---|",
    ]
    for key, row in e4["rows"].items():
        model, eps, horizon = (part.strip() for part in key.split("|"))
        if model != "M1":
            continue
        other = e4["rows"][f"M2 | {eps} | {horizon}"]
        lines.append(
            f"| {eps.split('=')[1]} | {int(horizon.split('=')[1]):,} | {_cell(row)} "
            f"({row['best_arm_lost']}) | "
            f"{_cell(other)} ({other['best_arm_lost']}) | "
            f"{other['client_level_epsilon']:g} | {row['seconds']:.2f} / {other['seconds']:.2f} |"
        )

    # ---- claims
    horizons = np.array([int(h) for h in e1["rows"]])
    means = np.array([row["regret"]["mean"] for row in e1["rows"].values()])
    slope = e1["slope"]
    late_slope = float(np.polyfit(np.log(horizons[-3:]), np.log(means[-3:]), 1)[0])
    survived = min(row["best_arm_survived"] for row in e1["rows"].values())
    lines += [
        "",
        "Claims:",
        f"- Thm 1.3 / 3.4 at α = 0, ε = ∞ (regret Õ(√(dT))): log–log slope of regret vs T = {slope:.2f} over "
        f"10⁴–10⁶ ({late_slope:.2f} over the last three T).  The theorem is an upper bound: slope <= 0.5 "
        f"(+0.15 tolerance) **{'holds' if slope <= 0.65 else 'does not hold'}**; "
        "the expected band of PN-CEM-7 "
        f"0.35–0.65 is {'met' if 0.35 <= slope <= 0.65 else 'not met'} (on one fixed instance the regret "
        f"is gap-dependent and flattens once the near-optimal arms are eliminated); a* survived in "
        f"{survived:.0%} of runs.",
    ]
    constant_ratio = (
        e2["rows"]["constant 1e6 | alpha=0.01 | least-squares"]["regret"]["mean"]
        / e2["rows"]["constant 1e6 | alpha=0.01 | robust"]["regret"]["mean"]
    )
    lost_plain = sum(
        e2["rows"][f"{label} | alpha={a} | least-squares"]["best_arm_lost"]
        for label in ("constant 1e6",)
        for a in (0.005, 0.01, 0.02, 0.05)
    )
    lost_robust = sum(
        e2["rows"][f"{label} | alpha={a} | robust"]["best_arm_lost"]
        for label in ("constant 1e6",)
        for a in (0.005, 0.01, 0.02, 0.05)
    )
    lines.append(
        "- Robustness to large corruptions (PN-CEM-7: robust ≥ 10× better than plain LS under the "
        "constant-10⁶ "
        f"adversary at α = 0.01): ratio {constant_ratio:.1f}×; plain LS loses a* in {lost_plain} of "
        f"{4 * args.runs} runs at α > 0, the robust filter in {lost_robust} — "
        f"**{'holds' if constant_ratio >= 10 else 'holds qualitatively, the 10× factor does not'}** at "
        f"this T."
    )
    large_ratio = (
        e2_large["rows"]["constant 1e6 | alpha=0.01 | least-squares"]["regret"]["mean"]
        / e2_large["rows"]["constant 1e6 | alpha=0.01 | robust"]["regret"]["mean"]
    )
    lines.append(
        f"  At T = {args.large_horizon:,} the same ratio is {large_ratio:.1f}× "
        f"(**{'holds' if large_ratio >= 10 else 'does not hold'}**)."
    )
    robust_by_alpha = [
        e2["rows"][f"targeted 50 | alpha={a} | robust"]["regret"]["mean"]
        for a in (0.0, 0.005, 0.01, 0.02, 0.05)
    ]
    rho = stats.spearmanr([0.0, 0.005, 0.01, 0.02, 0.05], robust_by_alpha).statistic
    lines.append(
        "- Regret grows with α (theory: T·max{√(αd), αd} term; PN-CEM-7 asks Spearman ρ > 0.8), targeted-50 "
        f"adversary: ρ = {rho:.2f} — **{'holds' if rho > 0.8 else 'does not hold'}**.  Moderate corruptions "
        "that stay below the filter threshold (c = 5, 50) are not removed; they bias θ̂ by O(α·c), as the "
        "single-phase table shows (an unavoidable bias, PN-CEM-7)."
    )
    eps_keys = [k for k in e3["rows"] if k != "inf"]
    eps_values = np.array([float(k) for k in eps_keys])
    regrets = np.array([e3["rows"][k]["regret"]["mean"] for k in eps_keys])
    fit = np.polyfit(1.0 / eps_values, regrets, 1)
    residual = float(np.max(np.abs(np.polyval(fit, 1.0 / eps_values) - regrets) / regrets))
    lines.append(
        "- Privacy cost ∝ (1 + c/ε) (Thm 1.3): least-squares fit regret ≈ "
        f"{fit[1]:,.0f} + {fit[0]:,.0f}/ε over ε ∈ {{0.5, 1, 2, 5}}, max relative residual {residual:.0%}; "
        f"non-private {e3['rows']['inf']['regret']['mean']:,.0f} — "
        f"**{'holds' if residual < 0.2 else 'does not hold'}** (affine in 1/ε within 20%)."
    )
    m2_lost = sum(row["best_arm_lost"] for key, row in e4["rows"].items() if key.startswith("M2"))
    m1_lost = sum(row["best_arm_lost"] for key, row in e4["rows"].items() if key.startswith("M1"))
    m2_runs = sum(row["runs"] for key, row in e4["rows"].items() if key.startswith("M2"))
    m1_large = e4["rows"]["M1 | eps=0.5 | T=1000000"]["regret"]["mean"]
    m2_large = e4["rows"]["M2 | eps=0.5 | T=1000000"]["regret"]["mean"]
    lines.append(
        "- Thm 1.4 vs 1.3 (M2's privacy term does not grow with T, so M2 < M1 for large T and small ε): at "
        f"ε = 0.5, T = 10⁶: M1 {m1_large:,.0f} vs M2 {m2_large:,.0f} — "
        f"**{'holds' if m2_large < m1_large else 'does not hold'}**, but confounded: M1 carries the filter's "
        "α_eff = log(1/δ)/n width term (PN-CEM-4) that M2 at α = 0 omits (plain LS, PN-CEM-8), and most of "
        "M1's regret is that term (compare E1/E3); with c_γ = 0.05 and no corruption term M2 also loses a* "
        f"in {m2_lost} of {m2_runs} runs (M1: {m1_lost}), i.e. its frozen widths are too narrow at small T.  "
        "M2's guarantee is per reward; a client "
        "reporting in every batch spends the composed client-level ε shown in the table (not discussed by "
        "the paper)."
    )
    lines.append(
        "- Privacy: reports are clip(r) + Lap(2c_r/ε) (M1) or mean + Lap(2c_r/(n_a ε)) (M2), pure ε-LDP per "
        "reward only with the clipping the paper omits (PN-CEM-1); the printed λ = μ·mean(y²) on "
        "corrupted data gives no robustness (R0 column 2 equals plain LS for c = 10⁶)."
    )
    lines.append("")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
