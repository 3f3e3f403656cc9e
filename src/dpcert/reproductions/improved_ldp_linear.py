"""``dpcert reproduce improved-ldp-linear-*``: OnlineUCB (Improved-rate LDP linear bandits) against the
LinUCB family.

* ``improved-ldp-linear-fig1``: the paper's Figure 1, three panels (ε ∈ {0.2, 1, 10}, δ = 0.1, d = 5, K = 100,
  T = 20 000): OnlineUCB as the paper states it (Algorithm 1 with Maler and the radius of Lemma 3.3,
  docs/PAPER_NOTES.md, PN-IRL-5) against non-private LinUCB, JDP-, SDP- and LDP-LinUCB (Chowdhury & Zhou
  2022) on the same instances, with dpcert's tuned variant (OGD, radius 0.5·√log(t + 1)) drawn as a
  labelled variant.
* ``improved-ldp-linear-radius-study``: the paper gives no confidence radius for OnlineUCB's index;
  dpcert uses ``rad_t = 0.5·√log(t + 1)`` (docs/PAPER_NOTES.md, PN-IRL-4).  This study scales that
  radius by a grid of multipliers at every ε with valid (certified) noise, and once with the paper's
  own σ at ε = 10, which certifies ε ≈ 27 only (PN-IRL-1), and tests the paper's Figure 1 claims at
  every multiplier.

Both write, through :func:`dpcert.reproductions.report.write_report`, one PNG per panel, the Markdown
table of final regret with each curve's certified (ε, δ), every run's curves (NPZ), a claims table and
the JSON summary.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert import provenance
from dpcert.bandits.algorithms.ldp_linear import (
    ONLINE_UCB,
    PAPER_LEARNER,
    PAPER_ONLINE_UCB,
    BaseLearner,
    bandit_run,
    default_learner_grid,
    run_ldp_linear,
)
from dpcert.bandits.calibration.ldp_linear import LocalCalibration, calibrate_randomizer
from dpcert.bandits.environments.contextual import vaswani_instance
from dpcert.bandits.privatizers import Calibration
from dpcert.bandits.registry import BanditRun, ReproductionSpec, register_reproduction
from dpcert.errors import InvalidParameter
from dpcert.reproductions.chowdhury_zhou_2022 import SEED_STREAMS as LINUCB_STREAMS
from dpcert.reproductions.chowdhury_zhou_2022 import figure_runs as linucb_figure_runs
from dpcert.reproductions.chowdhury_zhou_2022 import run_summary
from dpcert.reproductions.claims import (
    DOES_NOT_HOLD,
    HOLDS,
    NOT_RESOLVED,
    Claim,
    PairedVerdict,
    all_hold,
    changed_options,
    command_line,
    few_runs_warning,
    mean_sd_se,
    paired_verdict,
    progress,
    with_record,
    write_claims,
)
from dpcert.reproductions.report import Curve, write_report
from dpcert.session import PrivacySession

EPSILONS = (0.2, 1.0, 10.0)
DELTA = 0.1
RUNS = 50
HORIZON = 20_000
CURVE_POINTS = 200
LABELS = {
    "linucb": "LinUCB (non-private)",
    "linucb-jdp": "JDP-LinUCB (central)",
    "linucb-sdp-amp": "SDP-LinUCB, P_Amp (shuffle)",
    "linucb-sdp-vec": "SDP-LinUCB, P_Vec (shuffle)",
    "linucb-ldp": "LDP-LinUCB (local)",
    "online-ucb": "OnlineUCB, Maler + Lemma 3.3 radius (local)",
    "online-ucb-ogd": "OnlineUCB variant: OGD + 0.5·√log(t+1) radius (local)",
    "online-ucb-combiner": "OnlineUCB + combiner, Alg. 2 (local)",
}
SEED_STREAMS = {
    **{f"every ε, LinUCB baselines: {k}": v for k, v in LINUCB_STREAMS.items()},
    "every ε, OnlineUCB": "numpy.random.default_rng([seed, 2]) anew: the baselines' R instances, then "
    "OnlineUCB's runs in lockstep (Maler with the Lemma 3.3 radius, then the OGD variant, then the "
    "combiner's, if asked for; in the radius study, anew for every noise and radius multiplier)",
}
"""How the reproductions derive their random streams from ``seed``."""
COMPARED = ("linucb-ldp", "linucb-sdp-amp", "linucb-sdp-vec", "linucb-jdp")
"""The private baselines the paper's Figure 1 claims are about."""


def _online_ucb(
    env: Any,
    learners: Sequence[BaseLearner],
    local: LocalCalibration,
    epsilon: float,
    *,
    name: str,
    horizon: int,
    rng: np.random.Generator,
    learner: str = "ogd",
) -> BanditRun:
    """One OnlineUCB configuration on ``env`` with the randomizer of ``local`` and online ``learner``."""
    start = time.perf_counter()
    session = PrivacySession(f"{name}/r")
    result = run_ldp_linear(
        env, list(learners), horizon=horizon, sigma=local.sigma, epsilon=epsilon, delta=DELTA, rng=rng,
        session=session, certificate=local.certificate, learner=learner,
    )  # fmt: skip
    extras = {
        "calibration": local.calibration,
        "noise": {"sigma": local.sigma},
        "clipped_fraction": result.clipped_fraction,
        "online_learner": learner,
        "radius": [
            {"kind": lr.radius, "scale": lr.radius_scale, "lambda_min": lr.lambda_min} for lr in learners
        ],
        "gradient_bounds": result.parameters["gradient_bounds"],
    }
    return bandit_run(name, result, session, local, time.perf_counter() - start, extras)


def figure_runs(
    epsilon: float,
    *,
    runs: int = RUNS,
    horizon: int = HORIZON,
    dimension: int = 5,
    arms: int = 100,
    delta: float = DELTA,
    calibration: Calibration | str = Calibration.LEAST_NOISE,
    seed: int = 0,
    combiner: bool = False,
) -> dict[str, BanditRun]:
    """Figure 1 of Improved-rate LDP linear bandits: OnlineUCB against the LinUCB baselines.

    ``online-ucb`` is the paper's configuration (:data:`PAPER_ONLINE_UCB` with Maler), ``online-ucb-ogd``
    dpcert's tuned variant (:data:`ONLINE_UCB` with OGD).  The baselines come from
    :func:`dpcert.reproductions.chowdhury_zhou_2022.figure_runs` (tight calibrations) on the same
    instances; δ = 0.1 and shuffle batch B = 20 as in Chowdhury & Zhou 2022's script.
    """
    baseline = linucb_figure_runs(
        epsilon, runs=runs, horizon=horizon, dimension=dimension, arms=arms, delta=delta, seed=seed
    )
    rng = np.random.default_rng([seed, 2])
    env = vaswani_instance(runs, dimension, arms, rng)  # the same instances as the baselines
    local = calibrate_randomizer(epsilon, delta, calibration)
    names = {"online-ucb": ([PAPER_ONLINE_UCB], PAPER_LEARNER), "online-ucb-ogd": ([ONLINE_UCB], "ogd")}
    if combiner:
        names["online-ucb-combiner"] = (default_learner_grid(horizon), "ogd")
    for name, (learners, learner) in names.items():
        baseline[name] = _online_ucb(
            env, learners, local, epsilon, name=name, horizon=horizon, rng=rng, learner=learner
        )
    return baseline


def certified_of(run: BanditRun) -> tuple[float, float] | None:
    """The (ε, δ) the run's certificate states for the worst user at the target δ (``None``: non-private)."""
    if run.certificate is None or run.target is None:
        return None
    return float(run.max_user_epsilon), float(run.target.delta)


def to_curve(run: BanditRun, label: str, panel: str) -> Curve:
    """The run's cumulative regret at :data:`CURVE_POINTS` rounds from t = 1 to T, as a report curve."""
    regret = np.asarray(run.cumulative_regret)
    horizon = regret.shape[1]
    rounds = np.unique(np.linspace(1, horizon, min(CURVE_POINTS, horizon)).round().astype(int))
    return Curve(label, rounds, regret[:, rounds - 1], certified_of(run), panel)


def _finals(run: BanditRun) -> np.ndarray:
    return np.asarray(run.cumulative_regret)[:, -1]


def _text(values: np.ndarray) -> str:
    mean, _, se = mean_sd_se(values)
    return f"{mean:,.0f} ± {se:,.0f}"


COMPARABLE_MARGIN = 0.10
"""Equivalence margin of "comparable to SDP-LinUCB": within ±10 % of SDP-LinUCB's mean regret (TOST)."""


def _either(first: str, second: str) -> str:
    """The verdict of "A or B": holds if one holds, does not hold if both do not, else not resolved."""
    if HOLDS in (first, second):
        return HOLDS
    if first == second == DOES_NOT_HOLD:
        return DOES_NOT_HOLD
    return next((v for v in (first, second) if v.startswith(NOT_RESOLVED)), NOT_RESOLVED)


def figure1_claims(
    epsilon: float, online: np.ndarray, baselines: dict[str, np.ndarray], command: str, where: str = ""
) -> list[Claim]:
    """The paper's Figure 1 claims at one ε for one OnlineUCB configuration (``where`` names it), each
    decided by paired tests on the per-run final regrets (OnlineUCB and the baselines run on the same
    instances; :func:`~dpcert.reproductions.claims.paired_verdict`)."""

    def versus(name: str, claim: str, **kwargs: Any) -> PairedVerdict:
        return paired_verdict(
            online, baselines[name], claim, labels=("OnlineUCB", LABELS[name].split(" (")[0]), **kwargs
        )

    if epsilon < 1.0:
        ldp = versus("linucb-ldp", "first < second")
        amp = versus("linucb-sdp-amp", "first ≈ second", margin=COMPARABLE_MARGIN)
        vec = versus("linucb-sdp-vec", "first ≈ second", margin=COMPARABLE_MARGIN)
        holds = all_hold([ldp.holds, _either(amp.holds, vec.holds)])
        text = (
            f"ε = {epsilon:g}: OnlineUCB{where} beats LDP-LinUCB and is comparable to SDP-LinUCB "
            f"(P_Amp or P_Vec, within ±{COMPARABLE_MARGIN:.0%})"
        )
        numbers = "; ".join(f"{v.numbers} → {v.holds}" for v in (ldp, amp, vec))
        return [Claim(text, holds, numbers, command)]
    tests = [versus(name, "first < second") for name in COMPARED if name in baselines]
    text = f"ε = {epsilon:g}: OnlineUCB{where} significantly outperforms LDP, SDP and JDP"
    numbers = "; ".join(f"{v.numbers} → {v.holds}" for v in tests)
    return [Claim(text, all_hold([v.holds for v in tests]), numbers, command)]


def decreasing_claim(statement: str, finals: Sequence[np.ndarray], epsilons: Sequence[float], command: str):
    """ "Regret falls as ε grows": for each pair of consecutive ε, the larger ε's per-run regret is lower
    (paired over the same instances); holds when every step does."""
    steps = [
        paired_verdict(finals[i + 1], finals[i], "first < second", labels=(f"ε = {high:g}", f"ε = {low:g}"))
        for i, (low, high) in enumerate(zip(epsilons, epsilons[1:], strict=False))
    ]
    if not steps:
        return Claim(statement, "not tested (one ε)", "", command)
    numbers = "; ".join(f"{v.numbers} → {v.holds}" for v in steps)
    return Claim(statement, all_hold([v.holds for v in steps]), numbers, command)


# =========================================================================== improved-ldp-linear-fig1
FIGURE1_DEFAULTS: dict[str, Any] = {"horizon": HORIZON, "combiner": False}


def reproduce(
    runs: int | None = None,
    out: Path | None = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizon: int = HORIZON,
    combiner: bool = False,
) -> dict[str, Any]:
    """``dpcert reproduce improved-ldp-linear-fig1``: the three panels, report, claims and JSON summary to
    ``out``."""
    name = "improved-ldp-linear-fig1"
    runs = RUNS if runs is None else check.positive_int("runs", runs)
    few_runs_warning(name, runs)
    horizon = check.positive_int("horizon", horizon, minimum=10)
    out = Path("dpcert-reproduce") if out is None else Path(out)
    summary: dict[str, Any] = {"name": name, "runs": runs, "horizon": horizon, "delta": DELTA, "panels": []}
    curves: list[Curve] = []
    command = command_line(name, runs, seed, changed_options({"horizon": horizon, "combiner": combiner},
                                                             FIGURE1_DEFAULTS))  # fmt: skip
    recorder = provenance.reproduction(
        name, runs, out, seed, SEED_STREAMS, horizon=horizon, combiner=combiner
    )
    claims: list[Claim] = []
    variants = {"online-ucb": "", "online-ucb-ogd": " (variant: OGD, radius 0.5·√log(t+1))"}
    online_finals: dict[str, list[np.ndarray]] = {key: [] for key in variants}
    for epsilon in EPSILONS:
        progress(
            name, f"target ε = {epsilon:g}: LinUCB family, OnlineUCB" + (", combiner" if combiner else "")
        )
        results = figure_runs(epsilon, runs=runs, seed=seed, horizon=horizon, combiner=combiner)
        algorithms: dict[str, Any] = {}
        panel = {"epsilon": epsilon, "delta": DELTA, "algorithms": algorithms}
        for algorithm, run in results.items():
            algorithms[algorithm] = run_summary(run)
            for field in ("online_learner", "radius", "gradient_bounds"):  # OnlineUCB's configuration
                if field in run.extras:
                    algorithms[algorithm][field] = run.extras[field]
            curves.append(to_curve(run, LABELS[algorithm], f"target ε = {epsilon:g}, δ = {DELTA:g}"))
        summary["panels"].append(panel)
        finals = {algorithm: _finals(run) for algorithm, run in results.items()}
        for key, where in variants.items():
            claims += figure1_claims(epsilon, finals[key], finals, command, where)
            online_finals[key].append(finals[key])
    for key, where in variants.items():
        claims.append(
            decreasing_claim(
                f"OnlineUCB{where}: regret falls as ε grows", online_finals[key], EPSILONS, command
            )
        )
    claims += _privacy_claims(command)
    title = f"Improved-rate LDP linear bandits, Figure 1 (d = 5, K = 100, T = {horizon:,})"
    summary.update(write_report(curves, out, "improved_ldp_linear_fig1", title, recorder=recorder))
    summary.update(write_claims(claims, out, "improved_ldp_linear_fig1", title, recorder=recorder))
    with_record(summary, recorder)
    (out / "improved-ldp-linear-fig1.json").write_text(json.dumps(summary, indent=2, allow_nan=False))
    return summary


def _privacy_claims(command: str) -> list[Claim]:
    """Thm 3.2 with the paper's σ = 2√(2 ln(1.25/δ))/ε: the exact guarantee of the released pair."""
    parts: list[str] = []
    met: list[str] = []
    failed: list[str] = []
    for epsilon in EPSILONS:
        paper = calibrate_randomizer(epsilon, DELTA, "paper")
        certified = paper.certificate.epsilon_for(DELTA)
        (met if paper.claim_met else failed).append(f"{epsilon:g}")
        verdict_text = "meets" if paper.claim_met else "fails"
        parts.append(
            f"ε = {epsilon:g}: σ = {paper.sigma:.4g}, exact ε of the pair at δ = {DELTA:g}: {certified:.4g} "
            f"({verdict_text} the claim)"
        )
    return [
        Claim(
            "Thm 3.2: Algorithm 1 with σ = 2√(2 ln(1.25/δ))/ε is (ε, δ)-LDP (the pair (x̃, ỹ), PN-IRL-1)",
            "holds"
            if not failed
            else f"holds at ε = {', '.join(met) or 'none'}; fails at ε = {', '.join(failed)}",
            "; ".join(parts) + "; the runs above use the least σ certifying the target (analytic_joint)",
            command,
        )
    ]


# =========================================================================== improved-ldp-linear-radius-study
RADIUS_DEFAULTS: dict[str, Any] = {
    "horizon": HORIZON,
    "multipliers": (0.1, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0),
    "epsilons": EPSILONS,
    "paper_noise_epsilon": 10.0,
}
BASE_RADIUS_SCALE = ONLINE_UCB.radius_scale


def _plot_radius(
    rows: dict[str, dict[str, Any]], epsilons: Sequence[float], multipliers: Sequence[float], path: Path
) -> Path:
    """Final regret (mean ± 1 s.d.) against the radius multiplier (log x), one subplot per ε, with the
    LinUCB baselines as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(epsilons), figsize=(4.6 * len(epsilons), 4.0), squeeze=False)
    baseline_styles = {"linucb-jdp": ("tab:green", "--"), "linucb-sdp-amp": ("tab:purple", "-."),
                       "linucb-sdp-vec": ("tab:brown", (0, (3, 1, 1, 1))), "linucb-ldp": ("tab:gray", ":"),
                       "linucb": ("black", (0, (1, 3)))}  # fmt: skip
    for axis, epsilon in zip(axes.flat, epsilons, strict=True):
        panel = rows[f"{epsilon:g}"]
        for key, colour, marker, label in (
            ("valid", "tab:blue", "o", "OnlineUCB, certified σ"),
            ("paper", "tab:red", "s", "OnlineUCB, paper σ"),
        ):
            if key not in panel:
                continue
            stats = [panel[key][f"{m:g}"] for m in multipliers]
            certified = stats[0]["certified_epsilon"]
            if key == "valid":
                label += " (certifies the target ε)"
            else:
                label += f" (certifies only ε = {certified:.3g} at δ = {DELTA:g})"
            axis.errorbar(
                multipliers, [s["mean"] for s in stats], yerr=[s["sd"] for s in stats], color=colour,
                marker=marker, ms=4, capsize=2, label=label,
            )  # fmt: skip
        for name, (colour, line) in baseline_styles.items():
            if name in panel["baselines"]:
                axis.axhline(
                    panel["baselines"][name]["mean"], color=colour, ls=line, lw=1.2, label=LABELS[name]
                )
        axis.set_xscale("log")
        axis.set_xlabel(f"radius multiplier (× {BASE_RADIUS_SCALE:g}·√log(t+1))")
        axis.set_ylabel("final pseudo-regret")
        axis.set_title(f"target ε = {epsilon:g}, δ = {DELTA:g}", fontsize=10)
        axis.grid(alpha=0.3, which="both")
        axis.set_ylim(bottom=0)
    handles: dict[str, Any] = {}
    for axis in axes.flat:
        for handle, label in zip(*axis.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    figure.legend(list(handles.values()), list(handles), loc="upper center", ncol=4, fontsize=8,
                  frameon=False, bbox_to_anchor=(0.5, 0.0))  # fmt: skip
    runs = next(iter(rows.values()))["runs"]
    figure.suptitle(
        f"OnlineUCB: final regret vs confidence-radius multiplier (mean ± 1 s.d. over {runs} runs); "
        "horizontal lines: LinUCB family means on the same instances",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path


def reproduce_radius_study(
    runs: int | None = None,
    out: Path | None = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizon: int = RADIUS_DEFAULTS["horizon"],
    multipliers: Sequence[float] = RADIUS_DEFAULTS["multipliers"],
    epsilons: Sequence[float] = RADIUS_DEFAULTS["epsilons"],
    paper_noise_epsilon: float | None = RADIUS_DEFAULTS["paper_noise_epsilon"],
) -> dict[str, Any]:
    """OnlineUCB's final regret over radius multipliers at every ε (certified σ), the paper's σ at
    ``paper_noise_epsilon`` (``None``: skip) and the LinUCB baselines on the same instances; 10 runs by
    default (the paper's figure has 50: ``--runs 50``)."""
    name = "improved-ldp-linear-radius-study"
    runs = 10 if runs is None else check.positive_int("runs", runs)
    few_runs_warning(name, runs)
    horizon = check.positive_int("horizon", horizon, minimum=10)
    grid = list(multipliers) if isinstance(multipliers, (list, tuple)) else [multipliers]
    if not grid:
        raise InvalidParameter("multipliers", multipliers, "a non-empty list of positive numbers")
    multipliers = tuple(sorted(check.positive_finite("multipliers", m) for m in grid))
    chosen = list(epsilons) if isinstance(epsilons, (list, tuple)) else [epsilons]
    epsilons = tuple(check.epsilon(e) for e in chosen)
    if not epsilons:
        raise InvalidParameter("epsilons", epsilons, "a non-empty list of positive numbers")
    if paper_noise_epsilon is not None:
        paper_noise_epsilon = check.epsilon(paper_noise_epsilon)
        if paper_noise_epsilon not in epsilons:
            raise InvalidParameter("paper_noise_epsilon", paper_noise_epsilon, "one of the epsilons, or null")
    out = Path("dpcert-reproduce") if out is None else Path(out)
    given = {"horizon": horizon, "multipliers": multipliers, "epsilons": epsilons,
             "paper_noise_epsilon": paper_noise_epsilon}  # fmt: skip
    command = command_line(name, runs, seed, changed_options(given, RADIUS_DEFAULTS))
    recorder = provenance.reproduction(name, runs, out, seed, SEED_STREAMS, **given)
    rows: dict[str, dict[str, Any]] = {}
    curves: list[Curve] = []
    claims: list[Claim] = []
    valid_finals: dict[tuple[float, float], np.ndarray] = {}
    for epsilon in epsilons:
        progress(name, f"target ε = {epsilon:g}: LinUCB baselines")
        baselines = linucb_figure_runs(epsilon, runs=runs, horizon=horizon, delta=DELTA, seed=seed)
        base_finals = {algorithm: _finals(run) for algorithm, run in baselines.items()}
        panel: dict[str, Any] = {"epsilon": epsilon, "runs": runs, "baselines": {}}
        panel_name = f"target ε = {epsilon:g}, certified σ"
        for algorithm in ("linucb", *COMPARED):
            mean, sd, se = mean_sd_se(base_finals[algorithm])
            certified = certified_of(baselines[algorithm])
            epsilon_used = None if certified is None else certified[0]
            panel["baselines"][algorithm] = {
                "mean": mean,
                "sd": sd,
                "se": se,
                "certified_epsilon": epsilon_used,
            }
        later: list[Curve] = []  # the paper-σ panel follows the certified panel and its baselines
        calibrations: list[tuple[str, Calibration | str]] = [("valid", Calibration.LEAST_NOISE)]
        if epsilon == paper_noise_epsilon:
            calibrations.append(("paper", "paper"))
        for key, calibration in calibrations:
            local = calibrate_randomizer(epsilon, DELTA, calibration)
            finals_by_multiplier: dict[float, np.ndarray] = {}
            panel[key] = {}
            for multiplier in multipliers:
                learner = BaseLearner(ONLINE_UCB.lambda_min, ONLINE_UCB.perturbation_variance,
                                      radius="log", radius_scale=BASE_RADIUS_SCALE * multiplier)  # fmt: skip
                noise = "certified σ" if key == "valid" else "paper σ"
                progress(
                    name, f"target ε = {epsilon:g}, {noise} = {local.sigma:.4g}, radius × {multiplier:g}"
                )
                rng = np.random.default_rng([seed, 2])
                env = vaswani_instance(runs, 5, 100, rng)  # the baselines' instances
                run = _online_ucb(env, [learner], local, epsilon, name="online-ucb", horizon=horizon, rng=rng)
                finals = _finals(run)
                finals_by_multiplier[multiplier] = finals
                if key == "valid":
                    valid_finals[(epsilon, multiplier)] = finals
                mean, sd, se = mean_sd_se(finals)
                certified = certified_of(run)
                if certified is None:
                    raise RuntimeError("a private OnlineUCB run returned no certificate")
                panel[key][f"{multiplier:g}"] = {
                    "mean": mean, "sd": sd, "se": se, "sigma": local.sigma,
                    "certified_epsilon": certified[0], "certified_delta": certified[1],
                    "claim_met": run.target_met,
                }  # fmt: skip
                if key == "paper":
                    title_panel = f"target ε = {epsilon:g}, paper σ (certifies ε = {certified[0]:.3g})"
                else:
                    title_panel = panel_name
                target = curves if key == "valid" else later
                target.append(to_curve(run, f"OnlineUCB, radius × {multiplier:g}", title_panel))
            claims += _radius_claims(epsilon, key, finals_by_multiplier, base_finals, panel[key], command)
        for algorithm in COMPARED:
            family = f"target ε = {epsilon:g}, LinUCB family"
            curves.append(to_curve(baselines[algorithm], LABELS[algorithm], family))
        curves += later
        rows[f"{epsilon:g}"] = panel
    claims += [
        decreasing_claim(
            f"OnlineUCB (certified σ, radius × {m:g}): regret falls as ε grows",
            [valid_finals[(e, m)] for e in sorted(epsilons)],
            sorted(epsilons),
            command,
        )
        for m in multipliers
    ]
    title = f"OnlineUCB radius study (Improved-rate LDP linear bandits), T = {horizon:,}"
    summary: dict[str, Any] = {
        "name": name,
        "runs": runs,
        "horizon": horizon,
        "delta": DELTA,
        "base_radius": f"{BASE_RADIUS_SCALE:g}·sqrt(log(t + 1))",
        "multipliers": list(multipliers),
        "rows": rows,
    }
    summary.update(write_report(curves, out, "improved_ldp_linear_radius_study", title, recorder=recorder))
    summary.update(write_claims(claims, out, "improved_ldp_linear_radius_study", title, recorder=recorder))
    with_record(summary, recorder)
    figure = _plot_radius(rows, epsilons, multipliers, out / "improved_ldp_linear_radius_study_vs_radius.png")
    summary["figures"].insert(0, str(figure))
    (out / "improved_ldp_linear_radius_study.json").write_text(json.dumps(summary, indent=2, allow_nan=False))
    return summary


def _radius_claims(
    epsilon: float,
    key: str,
    finals: dict[float, np.ndarray],
    baselines: dict[str, np.ndarray],
    stats: dict[str, dict[str, Any]],
    command: str,
) -> list[Claim]:
    """Figure 1's claim at ε for the default radius (× 1, when in the grid) and at the best multiplier."""
    noise = "certified σ" if key == "valid" else "paper σ"
    certified = next(iter(stats.values()))["certified_epsilon"]
    claims = []
    if 1.0 in finals:
        claims += figure1_claims(epsilon, finals[1.0], baselines, command, f" ({noise}, radius × 1)")
    best = min(finals, key=lambda m: finals[m].mean())
    where = f" ({noise}, best radius of the grid, × {best:g}, chosen after the fact)"
    claims += figure1_claims(epsilon, finals[best], baselines, command, where)
    holds_at = [
        m for m in finals if figure1_claims(epsilon, finals[m], baselines, command)[0].holds == "holds"
    ]
    claims.append(
        Claim(
            f"ε = {epsilon:g} ({noise}, certified ε = {certified:.3g}): the Figure 1 claim holds at some "
            "radius",
            "holds at radius × " + ", ".join(f"{m:g}" for m in sorted(holds_at))
            if holds_at
            else "does not hold",
            ", ".join(f"× {m:g}: {_text(finals[m])}" for m in sorted(finals))
            + ("" if key == "valid" else f"; the paper's σ certifies ε = {certified:.3g}, not {epsilon:g}"),
            command,
        )
    )
    return claims


def memory_sizes(name: str, horizon: object = HORIZON) -> tuple[int, int, int]:
    """(default runs, rounds of regret per run the reproduction ``name`` holds at once: Figure 1 keeps the
    five LinUCB curves and up to three OnlineUCB ones of a panel, the radius study the five baselines and
    one OnlineUCB run; plus the instance's K·d arm features; no working arrays beyond the runs'), for the
    memory check of ``dpcert reproduce``.  ``horizon`` is the ``--option horizon`` given (validated here)."""
    horizon = check.positive_int("horizon", horizon, minimum=10)
    curves, runs = (8, RUNS) if name == "improved-ldp-linear-fig1" else (6, 10)
    return runs, curves * horizon + 100 * 5, 0


register_reproduction(
    ReproductionSpec(
        "improved-ldp-linear-fig1",
        "Improved-rate LDP linear bandits, Figure 1: OnlineUCB vs LinUCB, JDP, SDP, LDP (Chowdhury & Zhou "
        "2022); d=5, K=100, T=20000, delta=0.1",
        reproduce,
    )
)
register_reproduction(
    ReproductionSpec(
        "improved-ldp-linear-radius-study",
        "Improved-rate LDP linear bandits: OnlineUCB final regret vs confidence-radius multiplier at eps in "
        "{0.2, 1, 10} (certified noise) and with the paper's noise at eps=10; 10 runs by default",
        reproduce_radius_study,
    )
)
