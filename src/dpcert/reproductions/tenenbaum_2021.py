"""``dpcert reproduce tenenbaum-2021-mab``: shuffle-model MAB of Tenenbaum et al. 2021.

The paper reports no experiment; the reproduction runs dpcert's (docs/PAPER_NOTES.md, PN-TKMS-7):
k = 10 Bernoulli arms with means (0.9, 0.8×3, 0.6×3, 0.3×3), T = 10⁶, δ = 1e-6,
ε ∈ {2, 1, 0.5, 0.25, 0.1}, 20 runs.  Per ε: SDP-AE (m = ⌈σ²⌉, Alg. 1) and VB-SDP-AE (batches 2^t,
Alg. 2), both with T known, SDP-AE without knowing T (the doubling trick of the paper's footnote 10),
VB-SDP-AE on rewards valued in [0, 1] (Beta arms, footnote 12), and two of dpcert's own comparators
(not the algorithms of the paper's Table 1): a central ε-DP elimination (Laplace noise on each batch
sum) and a local ε-DP elimination (randomized response per user), both with doubling batches; the
non-private elimination (m = 1 and doubling batches); and DP-SE (Sajed & Sheffet 2019, dpcert's
``dp-se`` with the authors' constants), the strongest central baseline dpcert has on this instance
(DP-UCB, Mishra & Thakurta 2015, regrets several times more: ``benchmarks/private_mab_baselines.py``),
against which the "shuffle ≈ central" claim is also judged.  The DP-SE rows come after all others, so
the other rows keep their seed streams.

Writes, in ``--out``: ``tenenbaum_2021_mab.json`` (every row with its certificate), the report of
:mod:`dpcert.reproductions.report` (``tenenbaum_2021_mab.md``, ``tenenbaum_2021_mab_curves.npz``,
one PNG per ε) and ``tenenbaum_2021_mab_claims.md`` (the paper's claims this experiment tests).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import provenance
from dpcert.bandits import registry
from dpcert.bandits.algorithms.dp_se import dp_se
from dpcert.bandits.algorithms.mab import (
    BatchSchedule,
    ExactSum,
    batched_arm_elimination,
    central_dp_se,
    local_dp_se,
    sdp_ae,
    shuffle_binary_sum,
    successive_elimination,
    vb_sdp_ae,
)
from dpcert.bandits.environments.mab import SPEC_001_MEANS, MultiArmedBandit
from dpcert.bandits.results import RunResult
from dpcert.reproductions.claims import (
    ADDITIVE_MARGIN,
    DOES_NOT_HOLD,
    HOLDS,
    Claim,
    PairedVerdict,
    additive_cost,
    all_hold,
    claims_footer,
    few_runs_warning,
    paired_verdict,
    verdict,
    with_record,
)
from dpcert.reproductions.claims import claims_table as markdown_claims
from dpcert.reproductions.common import mean_se
from dpcert.reproductions.report import Curve, write_report

EPSILONS = (2.0, 1.0, 0.5, 0.25, 0.1)
DELTA = 1e-6
HORIZON = 1_000_000
RUNS = 20
STEM = "tenenbaum_2021_mab"
NAME = "tenenbaum-2021-mab"

#: Row labels (also the JSON keys and the legend labels).
NONPRIVATE_SE = "non-private SE (m=1)"
NONPRIVATE_VB = "non-private VB (sigma=0)"
CENTRAL = "dpcert central elimination (Laplace)"
LOCAL = "dpcert local elimination (RR)"
SDP_UNKNOWN = "SDP-AE, unknown T (doubling)"
VB_BETA = "VB-SDP-AE, [0,1] rewards (Beta)"
DP_SE = "DP-SE (Sajed & Sheffet 2019, central)"
COMPARATORS = {
    CENTRAL: "dpcert's own central ε-DP elimination: the server adds Laplace(1/ε) to each batch sum of "
    "doubling batches (not an algorithm of the paper's Table 1)",
    LOCAL: "dpcert's own local ε-DP elimination: binary randomized response (RR) per user, debiased sums of "
    "doubling batches (not an algorithm of the paper's Table 1)",
    DP_SE: "central ε-DP successive elimination of Sajed & Sheffet 2019 (dpcert's dp-se: Laplace(1/ε) on "
    "each arm's epoch sum, the authors' constants, β = 0.1); the strongest central baseline dpcert has on "
    "this instance (not an algorithm of the paper's Table 1)",
}
SEED_STREAMS = {
    "row n": "numpy.random.default_rng([seed, n]) for the n-th entry of the JSON's rows (0-based, in "
    "order); its R runs in lockstep"
}
ZERO_SPREAD_NOTE = (
    "Rows with s.d. 0 are exact, not a defect: the pseudo-regret Σ_a pulls_a·Δ_a depends only on the "
    "phase in which each arm is eliminated, and with doubling batches and a radius dominated by the "
    "privacy noise every run eliminates every arm in the same phase (`distinct_pull_vectors` = 1 in the "
    "JSON). The paper defines regret as an expectation and has no experiment, so the runs vary only what "
    "it randomises: rewards and noise."
)


def row_label(label: str, epsilon: float | None) -> str:
    return label if epsilon is None else f"{label} eps={epsilon}"


def _certified(result: RunResult, delta: float) -> tuple[float, float] | None:
    certificate = result.certificate
    if certificate is None:
        return None
    guarantee_delta = 0.0 if certificate.delta == 0.0 else delta
    return float(certificate.epsilon_for(guarantee_delta)), guarantee_delta


def reproduce_mab(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizon: int | None = None,
    epsilons: tuple[float, ...] = EPSILONS,
) -> dict[str, Any]:
    """Final regret, certificates, figures and the claims table of the experiment above."""
    runs = RUNS if runs is None else runs
    horizon = HORIZON if horizon is None else horizon
    out = Path(out)
    few_runs_warning(NAME, runs)
    recorder = provenance.reproduction(
        NAME, runs, out, seed, SEED_STREAMS, horizon=horizon, epsilons=epsilons
    )
    bandit = MultiArmedBandit(np.asarray(SPEC_001_MEANS))
    beta_bandit = MultiArmedBandit(np.asarray(SPEC_001_MEANS), "beta")
    rows: dict[str, Any] = {}
    curves: list[Curve] = []

    def timed(
        label: str,
        target: float | None,
        call: Callable[[np.random.Generator], RunResult],
        panels: tuple[str, ...],
        **extra: Any,
    ) -> None:
        key = row_label(label, target)
        sys.stderr.write(f"{NAME}: running {key} ({runs} runs, T = {horizon:,})\n")
        started = time.perf_counter()
        result = call(np.random.default_rng([seed, len(rows)]))
        seconds = time.perf_counter() - started
        certified = _certified(result, DELTA)
        distinct = len({tuple(row) for row in result.pulls.tolist()})
        spread = float(np.std(result.final_regret, ddof=1)) if runs > 1 else 0.0
        rows[key] = {
            "regret": {**mean_se(result.final_regret), "sd": spread},
            "final_regret": [float(value) for value in result.final_regret],
            "seconds": seconds,
            "runs": runs,
            "good_event_violations": int(result.good_event_violated.sum()),
            "best_arm_eliminated": int(result.best_arm_eliminated.sum()),
            "certificate": None if result.certificate is None else result.certificate.summary(),
            "certified": certified is not None,
            "certified_epsilon": None if certified is None else certified[0],
            "certified_delta": None if certified is None else certified[1],
            "distinct_pull_vectors": distinct,
            # identical pull counts give identical pseudo-regret (up to float rounding in the sums)
            "zero_spread": runs > 1
            and (distinct == 1 or spread <= 1e-9 * abs(mean_se(result.final_regret)["mean"])),
            **({"comparator": COMPARATORS[label]} if label in COMPARATORS else {}),
            **extra,
        }
        for panel in panels:
            curves.append(Curve(key, result.checkpoints, result.regret_curve, certified, panel))

    every_panel = ("non-private baselines",)
    timed(
        NONPRIVATE_SE,
        None,
        lambda rng: successive_elimination(bandit, horizon, rng, runs=runs),
        every_panel,
    )
    timed(
        NONPRIVATE_VB,
        None,
        lambda rng: batched_arm_elimination(
            bandit, horizon, ExactSum(), BatchSchedule("doubling"), rng, runs=runs
        ),
        every_panel,
    )
    for epsilon in epsilons:
        panel = (_panel(epsilon),)
        n = shuffle_binary_sum(epsilon, DELTA).noise_bits
        info = {"epsilon": epsilon, "noise_bits": n, "sigma2": n / 4}
        shuffle: dict[str, Any] = {"epsilon": epsilon, "delta": DELTA, "runs": runs}
        timed("SDP-AE", epsilon, partial(sdp_ae, bandit, horizon, **shuffle), panel, **info)
        timed(
            SDP_UNKNOWN,
            epsilon,
            partial(sdp_ae, bandit, horizon, horizon_mode="unknown", **shuffle),
            panel,
            **info,
        )
        timed("VB-SDP-AE", epsilon, partial(vb_sdp_ae, bandit, horizon, **shuffle), panel, **info)
        timed(
            VB_BETA,
            epsilon,
            partial(vb_sdp_ae, beta_bandit, horizon, **shuffle),
            panel,
            **info,
        )
        timed(
            CENTRAL,
            epsilon,
            partial(central_dp_se, bandit, horizon, epsilon=epsilon, runs=runs),
            panel,
            epsilon=epsilon,
        )
        timed(
            LOCAL,
            epsilon,
            partial(local_dp_se, bandit, horizon, epsilon=epsilon, runs=runs),
            panel,
            epsilon=epsilon,
        )
    for epsilon in epsilons:  # after every other row: those keep their seed streams
        timed(
            DP_SE,
            epsilon,
            partial(dp_se, bandit, horizon, epsilon=epsilon, runs=runs),
            (_panel(epsilon),),
            epsilon=epsilon,
        )
    title = (
        f"Tenenbaum et al. 2021, shuffle MAB (k = 10, T = {horizon:,})\nprivate curves certify their "
        f"target ε (δ = {DELTA:g} shuffle, 0 central/local)"
    )
    zero = sorted(key for key, row in rows.items() if row["zero_spread"])
    note = "\n" + ZERO_SPREAD_NOTE + " Here: " + ", ".join(zero) + ".\n" if zero else ""
    report = write_report(curves, out, STEM, title, recorder=recorder, note=note)
    command = f"dpcert reproduce {NAME} --runs {runs} --seed {seed}" + (
        "" if horizon == HORIZON else f" (T = {horizon:,} through the Python API)"
    )
    claims = claims_table(rows, epsilons, horizon, command)
    claims_file = out / f"{STEM}_claims.md"
    claims_file.write_text(
        f"# Claims of Tenenbaum et al. 2021 tested by `{NAME}`\n\n{claims}{claims_footer(recorder)}"
    )
    summary = {
        "name": NAME,
        "setting": {"means": list(SPEC_001_MEANS), "horizon": horizon, "delta": DELTA, "runs": runs},
        "rows": rows,
        "comparators": COMPARATORS,
        "zero_spread_rows": zero,
        "zero_spread_note": ZERO_SPREAD_NOTE,
        "claims": claims,
        "claims_file": str(claims_file),
        **report,
    }
    with_record(summary, recorder)
    (out / f"{STEM}.json").write_text(json.dumps(summary, indent=2, allow_nan=False))
    return summary


def _ratio(numerator: float, denominator: float) -> str:
    """``numerator / denominator`` to two decimals; "n/a" when the denominator is 0 (a run too short
    for any elimination spends it on the first arm, the best here)."""
    return "n/a" if denominator == 0.0 else f"{numerator / denominator:.2f}"


def _panel(epsilon: float) -> str:
    return f"target epsilon={epsilon:g}"


EQUIVALENCE_MARGIN = 0.25
"""Relative margin of the "≈" claims (shuffle ≈ central, [0, 1] rewards ≈ Bernoulli): ±25 % of the
second arm's mean regret, decided by two one-sided tests."""


def claims_table(rows: dict[str, Any], epsilons: tuple[float, ...], horizon: int, command: str) -> str:
    """``| claim | holds? | numbers | command |`` for the claims of Tenenbaum et al. 2021 tested here.

    Comparative claims are decided by :func:`dpcert.reproductions.claims.paired_verdict` on the final
    regrets of the runs (run i of one row against run i of the other; the rows draw independent
    streams, so the differences are independent and identically distributed), bounds by the same test
    against the bound; the privacy and good-event rows are exact counts.
    """

    def finals(label: str, epsilon: float | None = None) -> np.ndarray:
        return np.asarray(rows[row_label(label, epsilon)]["final_regret"], dtype=float)

    def mean(label: str, epsilon: float | None = None) -> float:
        return float(finals(label, epsilon).mean())

    def below(values: np.ndarray, bound: np.ndarray | float, names: tuple[str, str]) -> PairedVerdict:
        return paired_verdict(values, np.broadcast_to(bound, values.shape), "first < second", labels=names)

    def decided(tests: list[PairedVerdict]) -> str:
        return all_hold([test.holds for test in tests])

    def detail(tests: list[PairedVerdict], where: list[str]) -> str:
        return "; ".join(f"{w}: {t.holds}, {t.numbers}" for w, t in zip(where, tests, strict=True))

    log_t = math.log(horizon)
    means = np.asarray(SPEC_001_MEANS)
    gaps = (means.max() - means)[means < means.max()]
    k = means.size
    at = [f"ε = {e:g}" for e in epsilons]
    claims: list[Claim] = []

    def add(claim: str, holds: str, numbers: str) -> None:
        claims.append(Claim(claim, holds, numbers, command))

    private = [row for row in rows.values() if "epsilon" in row]
    all_certified = all(row["certified"] for row in private)
    shuffle_ok = all(
        row["certified_epsilon"] <= row["epsilon"] * (1 + 1e-9)
        for row in private
        if row["certified_epsilon"] is not None
    )
    add(
        "Privacy (§2.2): each run is (ε, δ)-SDP; one summation's guarantee, no composition over "
        "batches, phases, arms or doubling epochs (PN-TKMS-4)",
        verdict(all_certified and shuffle_ok),
        f"{len(private)} private rows, all carry a certificate; certified ε <= target ε in every row",
    )
    violations = sum(int(row["good_event_violations"]) for row in rows.values())
    lost = sum(int(row["best_arm_eliminated"]) for row in rows.values())
    total = sum(int(row["runs"]) for row in rows.values())
    add(
        "Good event (Thm 3.1 proof): |μ̂ − μ| <= I at every phase end, best arm never eliminated",
        verdict(violations == 0 and lost == 0),
        f"violated in {violations} of {total} runs; best arm eliminated in {lost}",
    )
    sdp_tests, vb_tests = [], []
    for epsilon in epsilons:
        sigma2 = rows[row_label("SDP-AE", epsilon)]["sigma2"]
        m = math.ceil(sigma2)
        sdp_bound = float(np.sum(128 * log_t / gaps + 512 * sigma2 * log_t / (m * gaps) + m * gaps))
        vb_bound = float(np.sum(256 * log_t / gaps + 54.4 * math.sqrt(sigma2) * log_t + 2 * gaps))
        sdp_tests.append(below(finals("SDP-AE", epsilon), sdp_bound, ("SDP-AE", f"bound ({sdp_bound:,.0f})")))
        vb_tests.append(
            below(finals("VB-SDP-AE", epsilon), vb_bound, ("VB-SDP-AE", f"bound ({vb_bound:,.0f})"))
        )
    add(
        "Thm 3.1 (SDP-AE) with the explicit constants of PN-TKMS-6: regret below the bound",
        decided(sdp_tests),
        detail(sdp_tests, at),
    )
    sigma2s = [float(rows[row_label("SDP-AE", e)]["sigma2"]) for e in epsilons]
    nonprivate = finals(NONPRIVATE_SE)
    ratios = ", ".join(f"{mean('SDP-AE', e) / nonprivate.mean():.1f}" for e in epsilons)
    if len(epsilons) >= 2:
        low, high = int(np.argmin(epsilons)), int(np.argmax(epsilons))
        growth = k * (sigma2s[low] - sigma2s[high])
        step = below(
            finals("SDP-AE", epsilons[low]) - finals("SDP-AE", epsilons[high]),
            growth,
            (f"SDP-AE(ε = {epsilons[low]:g}) − SDP-AE(ε = {epsilons[high]:g})", f"k·Δσ² ({growth:,.0f})"),
        )
        add(
            "Cor. 3.2 and §1 (SDP-AE, m = ⌈σ²⌉): the regret does not scale with σ² (∝ 1/ε²) — "
            f"from ε = {epsilons[high]:g} to ε = {epsilons[low]:g} the regret grows by less than the "
            "additive term k·σ² does (a multiplicative dependence would scale the regret with σ²)",
            step.holds,
            f"{step.numbers}; σ² goes {sigma2s[high]:,.1f} → {sigma2s[low]:,.1f}",
        )
    sdp_cost = additive_cost(
        [finals("SDP-AE", e) for e in epsilons],
        nonprivate,
        sigma2s,
        ("SDP-AE", "non-private SE"),
        variable="σ²",
    )
    add(
        "Cor. 3.2 (SDP-AE, m = ⌈σ²⌉): the privacy cost is additive, O(Σ log T/Δ + k log(1/δ)/ε²) — "
        "SDP-AE − non-private grows as c·σ² (σ² ∝ log(1/δ)/ε²) and vanishes as σ² → 0 (tested: the "
        "intercept of each run's least-squares line of SDP-AE − non-private against σ² over ε, i.e. the "
        f"cost not explained by σ², is 0 within ±{ADDITIVE_MARGIN:.0%} of the non-private regret, TOST; "
        "a multiplicative cost leaves an intercept of (ratio − 1) × non-private)",
        sdp_cost.verdict.holds,
        f"SDP-AE / non-private = {ratios} at ε = {', '.join(f'{e:g}' for e in epsilons)}; "
        + sdp_cost.text
        + "; Alg. 1's radius (2√t σ/N + 1/√N)·√(2 log T) is at m = ⌈σ²⌉ up to 3× the non-private one "
        "(up to 9× the pulls at every ε): a constant factor that Cor. 3.2's O(·) hides",
    )
    sigmas = np.array([math.sqrt(s2) for s2 in sigma2s])
    vb_cost = additive_cost(
        [finals("VB-SDP-AE", e) for e in epsilons],
        finals(NONPRIVATE_VB),
        list(sigmas),
        ("VB-SDP-AE", "non-private VB"),
        variable="σ",
    )
    add(
        "Thm 3.3 (VB-SDP-AE): the privacy cost is additive, O(kσ log T) with σ ∝ √log(1/δ)/ε added to the "
        "non-private term (tested: the intercept of each run's least-squares line of VB-SDP-AE − "
        f"non-private VB against σ over ε is 0 within ±{ADDITIVE_MARGIN:.0%} of the non-private regret, "
        "TOST)",
        vb_cost.verdict.holds,
        vb_cost.text,
    )
    if len(epsilons) >= 3:
        order = np.argsort(sigmas)
        grows = [
            paired_verdict(
                finals("VB-SDP-AE", epsilons[j]),
                finals("VB-SDP-AE", epsilons[i]),
                "first > second",
                labels=(f"ε = {epsilons[j]:g}", f"ε = {epsilons[i]:g}"),
            )
            for i, j in zip(order[:-1], order[1:], strict=True)
        ]
        steps = [f"σ {sigmas[i]:.3g} → {sigmas[j]:.3g}" for i, j in zip(order[:-1], order[1:], strict=True)]
        slope_bound = 54.4 * k * log_t
        slope_test = below(
            vb_cost.slopes, slope_bound, ("per-run slope", f"54.4·k·log T ({slope_bound:,.0f})")
        )
        add(
            "Thm 3.3 (VB-SDP-AE): O(kσ log T) privacy cost, below the explicit bound of PN-TKMS-6 — regret "
            "grows with σ, the per-run slope against σ is below 54.4·k·log T, the regret below the bound",
            all_hold([*(t.holds for t in grows), slope_test.holds, *(t.holds for t in vb_tests)]),
            "regret grows with σ at every step — "
            + detail(grows, steps)
            + f"; slope: {slope_test.holds}, {slope_test.numbers}; below the bound: "
            + detail(vb_tests, at),
        )
    local_tests = [
        paired_verdict(
            finals(LOCAL, e), finals("VB-SDP-AE", e), "first > second", labels=("local", "VB-SDP-AE")
        )
        for e in epsilons
    ]
    add(
        "Table 1 / §1: shuffle beats local (local cost multiplicative in 1/ε²); compared with dpcert's "
        "local elimination, not the paper's local algorithm",
        decided(local_tests),
        "local / VB-SDP-AE = "
        + ", ".join(f"{mean(LOCAL, e) / mean('VB-SDP-AE', e):.1f}" for e in epsilons)
        + "; "
        + detail(local_tests, at),
    )
    central_tests = [
        paired_verdict(
            finals("VB-SDP-AE", e),
            finals(CENTRAL, e),
            "first ≈ second",
            margin=EQUIVALENCE_MARGIN,
            labels=("VB-SDP-AE", "central"),
        )
        for e in epsilons
    ]
    add(
        f"§1: shuffle summation error Θ̃(1/ε) like central — VB-SDP-AE within {EQUIVALENCE_MARGIN:.0%} of "
        "dpcert's central elimination",
        decided(central_tests),
        "VB-SDP-AE / central = "
        + ", ".join(f"{mean('VB-SDP-AE', e) / mean(CENTRAL, e):.2f}" for e in epsilons)
        + "; "
        + detail(central_tests, at),
    )
    if all(row_label(DP_SE, e) in rows for e in epsilons):
        strongest = [CENTRAL if mean(CENTRAL, e) < mean(DP_SE, e) else DP_SE for e in epsilons]
        names = {CENTRAL: "dpcert central elimination", DP_SE: "DP-SE"}
        strongest_tests = [
            paired_verdict(
                finals("VB-SDP-AE", e),
                finals(label, e),
                "first ≈ second",
                margin=EQUIVALENCE_MARGIN,
                labels=("VB-SDP-AE", names[label]),
            )
            for e, label in zip(epsilons, strongest, strict=True)
        ]
        add(
            f"§1: shuffle ≈ central, against dpcert's strongest central baseline — VB-SDP-AE within "
            f"{EQUIVALENCE_MARGIN:.0%} of the lower-regret of DP-SE (Sajed & Sheffet 2019) and dpcert's "
            "central elimination at each ε (same instance, runs paired by index)",
            decided(strongest_tests),
            "strongest central: "
            + ", ".join(f"{names[label]} (ε = {e:g})" for e, label in zip(epsilons, strongest, strict=True))
            + "; VB-SDP-AE / strongest = "
            + ", ".join(
                _ratio(mean("VB-SDP-AE", e), mean(label, e))
                for e, label in zip(epsilons, strongest, strict=True)
            )
            + "; "
            + detail(strongest_tests, at),
        )
    within_two = [
        below(finals(SDP_UNKNOWN, e), 2 * finals("SDP-AE", e), ("unknown T", "2 × known T")) for e in epsilons
    ]
    within_log = [
        below(finals(SDP_UNKNOWN, e), log_t * finals("SDP-AE", e), ("unknown T", "ln T × known T"))
        for e in epsilons
    ]
    two, logarithmic = decided(within_two), decided(within_log)
    if two == HOLDS:
        doubling = HOLDS
    elif two == DOES_NOT_HOLD and logarithmic == HOLDS:
        doubling = "partly (within ln T, not within 2×)"
    else:
        doubling = all_hold([two, logarithmic])
    add(
        "Footnote 10: unknown T by doubling gives roughly the same results (holds: within 2× of known-T "
        "SDP-AE; partly: within the doubling bound's extra factor ln T only)",
        doubling,
        "unknown / known T = "
        + ", ".join(f"{mean(SDP_UNKNOWN, e) / mean('SDP-AE', e):.2f}" for e in epsilons)
        + f" (ln T = {log_t:.1f}; every epoch restarts elimination from scratch); within 2×: "
        + detail(within_two, at),
    )
    beta_tests = [
        paired_verdict(
            finals(VB_BETA, e),
            finals("VB-SDP-AE", e),
            "first ≈ second",
            margin=EQUIVALENCE_MARGIN,
            labels=("Beta", "Bernoulli"),
        )
        for e in epsilons
    ]
    add(
        "Footnote 12: the algorithms extend to rewards in [0, 1] (randomized rounding to bits; same "
        f"means, same guarantee) — regret within {EQUIVALENCE_MARGIN:.0%} of Bernoulli rewards",
        decided(beta_tests),
        "Beta / Bernoulli (VB-SDP-AE) = "
        + ", ".join(f"{mean(VB_BETA, e) / mean('VB-SDP-AE', e):.2f}" for e in epsilons)
        + "; "
        + detail(beta_tests, at),
    )
    return markdown_claims(claims)


registry.register_reproduction(
    registry.ReproductionSpec(
        NAME,
        "Tenenbaum et al. 2021: SDP-AE / VB-SDP-AE (known and unknown T, Bernoulli and [0,1] rewards) vs "
        "non-private, dpcert's central / local eliminations and DP-SE (Sajed & Sheffet 2019)",
        reproduce_mab,
    )
)
