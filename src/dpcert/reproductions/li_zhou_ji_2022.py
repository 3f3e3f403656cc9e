"""Reproductions of Figure 2 of Li, Zhou & Ji 2022 behind ``dpcert reproduce``.

Setting (Li, Zhou & Ji 2022, §7; the distributions of θ*, ξ_u and the reward noise, which the paper
does not state, are dpcert's choices): d = 20, k = 1000 arms and θ* uniform on the unit sphere,
σ = 0.1 with ξ_u = σ·(uniform unit vector), Rademacher reward noise, so B = 2.1; α = 0.8,
β = 1/(kT), T = 10⁶, 20 runs; ε = 10, δ = 0.25 for panels (b) and (c) and
ε ∈ {0.5, 1, 2, 5, 10} at δ = 0.25 for panel (a).  Every private curve is computed for both
calibrations: ``paper`` (the paper's noise and confidence width) and ``tight`` (least noise by exact
accounting, exact privacy width).  Each curve's certificate is the worst user's guarantee, re-derived
from its parameters; whether it meets the requested (ε, δ) is recorded.  The paper-calibrated ε = 10
runs certify only ε ≈ 18.36 at δ = 0.25 (docs/PAPER_NOTES.md, PN-LZJ-1, PN-LZJ-7): panels are titled
by the *target* ε and each legend entry gives the curve's certified (ε, δ).

Every reproduction writes its JSON summary, the report of :mod:`dpcert.reproductions.report`
(``STEM.md``: final regret mean ± s.d. and ± s.e.; ``STEM_curves.npz``: every run's curve; one PNG
per panel of cumulative regret; for Fig. 2(b) and 2(c) ``STEM.png`` draws, as the paper does, the
per-round regret R(t)/t, every panel in one figure, and ``STEM-cumulative.png`` the cumulative regret)
and ``STEM_claims.md``, the paper's claims the figure tests.  Every
comparative claim is decided by :func:`dpcert.reproductions.claims.paired_verdict` on the per-run final
regrets: the curves of one reproduction share ``--seed``, so run r of every curve plays the same
instance (``numpy.random.default_rng([seed, 0])``) with the same stream (``[seed, 1, r]``) and the runs
are paired by index.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import provenance
from dpcert.bandits import registry
from dpcert.bandits.algorithms.elimination import match_fixed_users
from dpcert.bandits.experiment import json_ready, regret_curve, save_results, summary
from dpcert.bandits.privatizers import calibration_from_label, trust_model_of
from dpcert.bandits.runner import SEEDS, run_elimination_config
from dpcert.certificates import Certificate
from dpcert.errors import PreconditionFailed
from dpcert.reproductions.claims import (
    Claim,
    PairedVerdict,
    all_hold,
    claims_footer,
    claims_table,
    few_runs_warning,
    paired_verdict,
    verdict,
    with_record,
)
from dpcert.reproductions.report import Curve, write_report

SETTING: dict[str, Any] = {"dimension": 20, "arms": 1000, "heterogeneity": 0.1, "alpha": 0.8}
HORIZON = 1_000_000
RUNS = 20
EPSILON = 10.0
DELTA = 0.25
EPSILON_GRID = (0.5, 1.0, 2.0, 5.0, 10.0)
MODELS = (("CDP-DPE", "central"), ("LDP-DPE", "local"), ("SDP-DPE", "shuffle"))
SHUFFLE_CENTRAL_MARGIN = 0.25
"""Relative margin of "SDP-DPE ≈ CDP-DPE" (Li, Zhou & Ji 2022, §7: shuffle as good as central)."""
PANELS_2B = {
    "paper": "paper calibration (noise of Tables 3–4)",
    "tight": "tight calibration (least noise, exact accounting)",
}
"""Fig. 2(b)'s panels: the paper's one panel (DPE, CDP-, LDP-, SDP-DPE) once per calibration."""
FREE_FACTOR = 2.0
""""Privacy for free" (Remark 5.6) is read as CDP-DPE's regret below this multiple of DPE's."""
HELD_CURVES = {"li-zhou-ji-2022-fig2a": 1, "li-zhou-ji-2022-fig2b": 2, "li-zhou-ji-2022-fig2c": 3}
"""Curves of T rounds per run a figure holds at once: 2(a) one ε at a time; 2(b) DPE and one private
model; 2(c) DPE, a DPE-FixedU trial of the matching search and the matched DPE-FixedU."""


WORKING_COPIES = 8
"""(users, d) float64 arrays one phase of a run works on at once (the users' deviations ξ_u, their mean
rewards and reports); a phase has at most T users."""


def memory_sizes(name: str) -> tuple[int, int, int]:
    """(default runs, rounds of regret per run the figure ``name`` holds at once, float64 values one run
    works on), for the memory check of ``dpcert reproduce`` before any work."""
    return RUNS, HELD_CURVES[name] * HORIZON, WORKING_COPIES * HORIZON * SETTING["dimension"]


def _run(
    privacy: str,
    calibration: str,
    runs: int,
    seed: int,
    epsilon=EPSILON,
    algorithm="dp-dpe",
    *,
    figure: str = "li-zhou-ji-2022",
    label: str = "",
    **extra,
):
    target = "" if privacy == "none" else f", target ε = {epsilon:g}, δ = {DELTA:g}"
    sys.stderr.write(f"{figure}: running {label or algorithm}{target} ({runs} runs, T = {HORIZON:,})\n")
    config = registry.RunConfig(
        algorithm=algorithm,
        privacy=trust_model_of(privacy),
        epsilon=None if privacy == "none" else epsilon,
        delta=None if privacy == "none" else DELTA,
        horizon=HORIZON,
        runs=runs,
        seed=seed,
        calibration=calibration_from_label(calibration),
        options={**SETTING, "progress": True, **extra},
    )
    return run_elimination_config(config)


def _finals(run: registry.BanditRun) -> np.ndarray:
    return np.asarray(run.cumulative_regret)[:, -1]


def _certified(run: registry.BanditRun) -> tuple[float, float] | None:
    """The worst user's certified (ε, δ) at the target δ (``None`` for non-private runs)."""
    return None if run.privacy is None else (float(run.max_user_epsilon), DELTA)


def _curve(run: registry.BanditRun, label: str, panel: str) -> Curve:
    rounds, values = regret_curve(run)
    return Curve(label, rounds, values, _certified(run), panel)


def _mark_identical(curves: list[Curve]) -> list[Curve]:
    """Name, in its label, a curve that repeats an earlier one of its panel run for run (runs that never
    eliminate an arm have the same regret in every model): otherwise the later line hides the earlier."""
    marked: list[Curve] = []
    for curve in curves:
        twin = next(
            (
                other.label
                for other in marked
                if other.panel == curve.panel
                and other.regret.shape == curve.regret.shape
                and np.array_equal(other.regret, curve.regret)
            ),
            None,
        )
        label = (
            curve.label
            if twin is None
            else f"{curve.label} [same regret as {twin.split(' [')[0].split(' ε=')[0]}]"
        )
        marked.append(Curve(label, curve.rounds, curve.regret, curve.certified, curve.panel))
    return marked


def _command(name: str, runs: int, seed: int) -> str:
    return f"dpcert reproduce {name} --runs {runs} --seed {seed}" + (
        "" if HORIZON == 1_000_000 else f" (T = {HORIZON:,} through the Python API)"
    )


def _tested(tests: list[PairedVerdict]) -> str:
    """The verdicts and numbers of ``tests``, one after the other."""
    return "; ".join(f"{test.holds}: {test.numbers}" for test in tests)


def _write_claims(out: Path, stem: str, title: str, table: str, recorder: provenance.Recorder) -> str:
    path = out / f"{stem}_claims.md"
    path.write_text(f"# Claims of Li, Zhou & Ji 2022 tested by {title}\n\n{table}{claims_footer(recorder)}")
    return str(path)


def _recorder(name: str, runs: int, out: Path, seed: int) -> provenance.Recorder:
    """Every curve is one ``dpcert bandit run`` of the elimination family with ``--seed seed``."""
    streams = {f"every curve: {key}": value for key, value in SEEDS[run_elimination_config].items()}
    return provenance.reproduction(name, runs, out, seed, streams)


def _greater(a: np.ndarray, b: np.ndarray) -> float:
    """One-sided Welch t-test p-value for mean(a) > mean(b)."""
    from scipy import stats

    if a.size < 2 or b.size < 2:
        return math.nan
    return float(stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)


def _verify_all(curves: dict[str, Any]) -> bool:
    """Re-read every curve's certificate from its JSON form; reading re-derives and verifies it."""
    for entry in curves.values():
        if entry.get("certificate") is not None:
            Certificate.from_dict(entry["certificate"])  # raises CertificateMismatch if it fails
    return True


def reproduce_fig2b(runs: int | None, out: Path | str, seed: int = 0) -> dict[str, Any]:
    """Fig. 2(b): regret over time at target ε = 10, δ = 0.25: DPE, CDP/LDP/SDP-DPE, both calibrations."""
    name = "li-zhou-ji-2022-fig2b"
    runs = runs or RUNS
    few_runs_warning(name, runs)
    out = Path(out)  # a string too, as the recorded Python call passes it
    out.mkdir(parents=True, exist_ok=True)
    recorder = _recorder(name, runs, out, seed)
    dpe = _run("none", "tight", runs, seed, figure=name, label="DPE (non-private)")
    save_results(dpe, out, "fig2b-dpe", record=recorder(provenance.BANDIT_RUN))
    dpe_finals = _finals(dpe)
    curves: dict[str, Any] = {"DPE": summary(dpe)}
    report_curves: list[Curve] = []
    skipped: dict[str, str] = {}
    finals: dict[str, dict[str, np.ndarray]] = {}
    for calibration in ("paper", "tight"):
        # one panel per calibration, each drawn as the paper's: DPE, CDP-, LDP- and SDP-DPE
        panel = PANELS_2B[calibration]
        report_curves.append(_curve(dpe, "DPE (non-private)", panel))
        finals[calibration] = {"DPE": dpe_finals}
        for label, privacy in MODELS:
            key = f"{label} ({calibration})"
            try:
                run = _run(privacy, calibration, runs, seed, figure=name, label=key)
            except PreconditionFailed as exc:
                skipped[key] = str(exc)
                continue
            save_results(run, out, f"fig2b-{privacy}-{calibration}", record=recorder(provenance.BANDIT_RUN))
            curves[key] = summary(run)
            report_curves.append(_curve(run, key, panel))
            finals[calibration][label] = _finals(run)
            del run
    checks = {}
    for calibration, table in finals.items():
        entry: dict[str, Any] = {label: float(values.mean()) for label, values in table.items()}
        if "LDP-DPE" in table and "CDP-DPE" in table:
            entry["p_LDP_gt_CDP"] = _greater(table["LDP-DPE"], table["CDP-DPE"])
            entry["p_LDP_gt_DPE"] = _greater(table["LDP-DPE"], table["DPE"])
            entry["CDP_excess_over_DPE"] = float(table["CDP-DPE"].mean() / table["DPE"].mean() - 1.0)
        if "SDP-DPE" in table:
            entry["SDP_excess_over_DPE"] = float(table["SDP-DPE"].mean() / table["DPE"].mean() - 1.0)
        checks[calibration] = entry
    title = (
        f"Li, Zhou & Ji 2022, Fig. 2(b): target ε = {EPSILON:g}, δ = {DELTA:g}, T = {HORIZON:,}"
        "\ncertified (ε, δ) of each curve in the legend"
    )
    report = write_report(
        _mark_identical(report_curves), out, "fig2b", title, recorder=recorder, per_round=True
    )
    claims = claims_table(_fig2b_claims(finals, curves, _command(name, runs, seed)))
    result = {
        "name": name,
        "runs": runs,
        "horizon": HORIZON,
        "out": str(out),
        "curves": curves,
        "final_regret_means": checks,
        "skipped": skipped,
        "all_certificates_verified": _verify_all(curves),
        "claims": claims,
        "claims_file": _write_claims(out, "fig2b", f"`{name}`", claims, recorder),
        **report,
    }
    result = with_record(json_ready(result), recorder)
    (out / "fig2b.json").write_text(json.dumps(result, indent=1, allow_nan=False))
    return result


def _fig2b_claims(
    finals: dict[str, dict[str, np.ndarray]], curves: dict[str, Any], command: str
) -> list[Claim]:
    """The claims of Fig. 2(b): comparative rows by :func:`paired_verdict` on the per-run final regrets
    in ``finals[calibration][label]`` (paired by run index), certificate rows exact."""
    rows: list[Claim] = []
    for calibration, table in finals.items():
        if not {"LDP-DPE", "CDP-DPE", "SDP-DPE"} <= set(table):
            continue
        ldp, cdp, sdp, dpe = (table[label] for label in ("LDP-DPE", "CDP-DPE", "SDP-DPE", "DPE"))
        m = {label: float(values.mean()) for label, values in table.items()}
        largest = [
            paired_verdict(ldp, cdp, "first > second", labels=("LDP", "CDP")),
            paired_verdict(ldp, sdp, "first > second", labels=("LDP", "SDP")),
        ]
        rows.append(
            Claim(
                f"§7: LDP-DPE has the largest regret ({calibration} calibration; paired, above CDP-DPE "
                "and above SDP-DPE)",
                all_hold([test.holds for test in largest]),
                f"LDP {m['LDP-DPE']:,.0f}, CDP {m['CDP-DPE']:,.0f}, SDP {m['SDP-DPE']:,.0f}; "
                + _tested(largest),
                command,
            )
        )
        alike = paired_verdict(
            sdp, cdp, "first ≈ second", margin=SHUFFLE_CENTRAL_MARGIN, labels=("SDP", "CDP")
        )
        rows.append(
            Claim(
                f"§7: SDP-DPE ≈ CDP-DPE, shuffle as good as central ({calibration}; within "
                f"{SHUFFLE_CENTRAL_MARGIN:.0%})",
                alike.holds,
                f"SDP / CDP = {m['SDP-DPE'] / m['CDP-DPE']:.2f}; {alike.numbers}",
                command,
            )
        )
        free = paired_verdict(
            cdp, FREE_FACTOR * dpe, "first < second", labels=("CDP", f"{FREE_FACTOR:g} × DPE")
        )
        rows.append(
            Claim(
                f"Remark 5.6: privacy 'for free' in the central model, CDP-DPE close to DPE ({calibration}; "
                f"below {FREE_FACTOR:g}× DPE)",
                free.holds,
                f"CDP / DPE = {m['CDP-DPE'] / m['DPE']:.2f} (DPE {m['DPE']:,.0f}); {free.numbers}",
                command,
            )
        )
    certified = {
        key: entry.get("max_user_epsilon")
        for key, entry in curves.items()
        if key != "DPE" and entry.get("max_user_epsilon") is not None
    }
    for calibration in ("paper", "tight"):
        mine = {key: value for key, value in certified.items() if key.endswith(f"({calibration})")}
        if not mine:
            continue
        rows.append(
            Claim(
                (
                    f"The paper's noise (Tables 3–4, eq. 3) is ({EPSILON:g}, {DELTA:g})-DP (PN-LZJ-1)"
                    if calibration == "paper"
                    else f"dpcert's tight noise is ({EPSILON:g}, {DELTA:g})-DP (exact accounting)"
                ),
                verdict(all(value <= EPSILON * (1 + 1e-9) for value in mine.values())),
                "certified ε at δ = 0.25: " + ", ".join(f"{key} {value:.4g}" for key, value in mine.items()),
                command,
            )
        )
    return rows


def reproduce_fig2a(runs: int | None, out: Path | str, seed: int = 0) -> dict[str, Any]:
    """Fig. 2(a): final regret at T against target ε ∈ {0.5, 1, 2, 5, 10} (δ = 0.25), both calibrations."""
    name = "li-zhou-ji-2022-fig2a"
    runs = runs or RUNS
    few_runs_warning(name, runs)
    out = Path(out)  # a string too, as the recorded Python call passes it
    out.mkdir(parents=True, exist_ok=True)
    recorder = _recorder(name, runs, out, seed)
    table: dict[str, dict[str, dict[str, Any]]] = {}
    report_curves: list[Curve] = []
    skipped: dict[str, str] = {}
    for calibration in ("paper", "tight"):
        for label, privacy in MODELS:
            key = f"{label} ({calibration})"
            table[key] = {}
            for epsilon in EPSILON_GRID:
                try:
                    run = _run(privacy, calibration, runs, seed, epsilon=epsilon, figure=name, label=key)
                except PreconditionFailed as exc:
                    skipped[key] = str(exc)
                    break
                mean, stderr = run.final_regret()
                finals = _finals(run)
                table[key][f"{epsilon:g}"] = {
                    "mean": mean,
                    "stderr": stderr,
                    "sd": float(np.std(finals, ddof=1)) if finals.size > 1 else 0.0,
                    "certified_epsilon": run.max_user_epsilon,
                    "target_met": run.target_met,
                    "finals": [float(value) for value in finals],  # run r of every curve: instance r
                }
                report_curves.append(_curve(run, f"{key} ε={epsilon:g}", f"target epsilon={epsilon:g}"))
                del run
    title = (
        f"Li, Zhou & Ji 2022, Fig. 2(a) runs, δ = {DELTA:g}, T = {HORIZON:,}"
        "\ncertified (ε, δ) of each curve in the legend"
    )
    report = write_report(_mark_identical(report_curves), out, "fig2a", title, recorder=recorder)
    plot = _plot_fig2a(table, out / "fig2a.png")
    claims = claims_table(_fig2a_claims(table, _command(name, runs, seed)))
    result = {
        "name": name,
        "runs": runs,
        "out": str(out),
        "plot": plot,
        "final_regret": table,
        "skipped": skipped,
        "claims": claims,
        "claims_file": _write_claims(out, "fig2a", f"`{name}`", claims, recorder),
        **report,
    }
    result["figures"] = [plot, *report["figures"]]
    result = with_record(json_ready(result), recorder)
    (out / "fig2a.json").write_text(json.dumps(result, indent=1, allow_nan=False))
    return result


def _fig2a_claims(table: dict[str, dict[str, dict[str, Any]]], command: str) -> list[Claim]:
    """The claims of Fig. 2(a): comparative rows by :func:`paired_verdict` on the per-run final regrets
    ``table[curve][ε]["finals"]`` (paired by run index), certificate rows exact."""
    rows: list[Claim] = []
    for calibration in ("paper", "tight"):
        series = {label: table.get(f"{label} ({calibration})", {}) for label, _ in MODELS}
        if not all(len(points) == len(EPSILON_GRID) for points in series.values()):
            continue
        finals = {
            label: [np.asarray(p["finals"], dtype=float) for p in points.values()]
            for label, points in series.items()
        }
        means = {label: np.array([p["mean"] for p in points.values()]) for label, points in series.items()}
        falls = [
            paired_verdict(
                values[-1],
                values[0],
                "first < second",
                labels=(f"{label} at ε = {EPSILON_GRID[-1]:g}", f"ε = {EPSILON_GRID[0]:g}"),
            )
            for label, values in finals.items()
        ]
        rows.append(
            Claim(
                f"Fig. 2(a): regret falls as ε grows, in every model ({calibration} calibration; paired, "
                f"ε = {EPSILON_GRID[0]:g} vs {EPSILON_GRID[-1]:g})",
                all_hold([test.holds for test in falls]),
                "; ".join(f"{label} {values[0]:,.0f} → {values[-1]:,.0f}" for label, values in means.items())
                + "; "
                + _tested(falls),
                command,
            )
        )
        if {"LDP-DPE", "CDP-DPE", "SDP-DPE"} <= set(means):
            worst = [
                paired_verdict(ldp, other, "first > second", labels=(f"LDP at ε = {e:g}", name))
                for e, ldp, cdp, sdp in zip(
                    EPSILON_GRID, finals["LDP-DPE"], finals["CDP-DPE"], finals["SDP-DPE"], strict=True
                )
                for name, other in (("CDP", cdp), ("SDP", sdp))
            ]
            rows.append(
                Claim(
                    f"Fig. 2(a): LDP-DPE worst at every ε ({calibration}; paired, above CDP-DPE and SDP-DPE)",
                    all_hold([test.holds for test in worst]),
                    "LDP / CDP = "
                    + ", ".join(f"{r:.1f}" for r in means["LDP-DPE"] / means["CDP-DPE"])
                    + "; "
                    + _tested(worst),
                    command,
                )
            )
            alike = [
                paired_verdict(
                    sdp,
                    cdp,
                    "first ≈ second",
                    margin=SHUFFLE_CENTRAL_MARGIN,
                    labels=(f"SDP at ε = {e:g}", "CDP"),
                )
                for e, sdp, cdp in zip(EPSILON_GRID, finals["SDP-DPE"], finals["CDP-DPE"], strict=True)
            ]
            rows.append(
                Claim(
                    f"Fig. 2(a): SDP-DPE ≈ CDP-DPE at every ε ({calibration}; paired, within "
                    f"{SHUFFLE_CENTRAL_MARGIN:.0%})",
                    all_hold([test.holds for test in alike]),
                    "SDP / CDP = "
                    + ", ".join(f"{r:.2f}" for r in means["SDP-DPE"] / means["CDP-DPE"])
                    + "; "
                    + _tested(alike),
                    command,
                )
            )
        certified = [p["certified_epsilon"] for points in series.values() for p in points.values()]
        targets = [float(e) for points in series.values() for e in points]
        rows.append(
            Claim(
                f"The {calibration} calibration certifies each target ε at δ = {DELTA:g}",
                verdict(all(c <= t * (1 + 1e-9) for c, t in zip(certified, targets, strict=True))),
                "largest certified / target: "
                + f"{max(c / t for c, t in zip(certified, targets, strict=True)):.3g}",
                command,
            )
        )
    return rows


def _plot_fig2a(table: dict[str, dict[str, dict[str, Any]]], path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    figure, axis = plt.subplots(figsize=(9.5, 4.6))
    styles = ("-", "--", "-.", ":")
    markers = ("o", "s", "^", "D", "v", "P")
    colours = matplotlib.color_sequences["tab10"]
    drawn: dict[tuple[float, ...], str] = {}
    for index, (label, points) in enumerate(table.items()):
        if not points:
            continue
        eps = [float(e) for e in points]
        mean = np.array([p["mean"] for p in points.values()])
        sd = np.array([p.get("sd", 0.0) for p in points.values()])
        certified = ", ".join(f"{p['certified_epsilon']:.3g}" for p in points.values())
        same = drawn.setdefault(tuple(mean.tolist()), label)
        twin = "" if same == label else f" [same as {same}]"
        axis.errorbar(
            eps, mean, yerr=sd, marker=markers[index % len(markers)], capsize=3,
            ls=styles[index % len(styles)], color=colours[index % len(colours)],
            label=f"{label} — certified ε: {certified}{twin}",
            markersize=4 + 2 * (len(table) - index) / len(table),
        )  # fmt: skip
    axis.set(
        xscale="log",
        yscale="log",
        xlabel=f"target ε (δ = {DELTA:g})",
        ylabel=f"cumulative pseudo-regret at T = {HORIZON:,}",
    )
    axis.set_xticks(EPSILON_GRID, [f"{e:g}" for e in EPSILON_GRID])
    axis.grid(alpha=0.3, which="both")
    axis.set_title(
        "Li, Zhou & Ji 2022, Fig. 2(a): final regret vs target ε, mean ± 1 s.d.\n"
        "legend: certified ε at δ = 0.25 for each target ε (paper calibration exceeds the target at ε = 10)",
        fontsize=9,
    )
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return str(path)


def reproduce_fig2c(runs: int | None, out: Path | str, seed: int = 0) -> dict[str, Any]:
    """Fig. 2(c): DPE against DPE-FixedU with U matched to DPE's mean communication cost.

    U is the integer whose mean C(T) over the same runs (same seeds) is closest to DPE's, found by
    bisection (:func:`~dpcert.bandits.algorithms.elimination.match_fixed_users`, docs/PAPER_NOTES.md,
    PN-LZJ-8), starting from DPE's C(T) divided by its mean Σ_l s_l.
    """
    name = "li-zhou-ji-2022-fig2c"
    runs = runs or RUNS
    few_runs_warning(name, runs)
    out = Path(out)  # a string too, as the recorded Python call passes it
    out.mkdir(parents=True, exist_ok=True)
    recorder = _recorder(name, runs, out, seed)
    dpe = _run("none", "tight", runs, seed, figure=name, label="DPE")
    communication = dpe.extras["communication"]["mean"]
    supports = np.mean(
        [sum(p["support"] for p in phases if p["released"]) for phases in dpe.extras["phases"]]
    )

    def fixed_communication(users: int) -> float:
        trial = _run(
            "none", "tight", runs, seed, algorithm="dpe-fixedu", fixed_users=users, figure=name,
            label=f"DPE-FixedU (U={users}, matching communication)",
        )  # fmt: skip
        return float(trial.extras["communication"]["mean"])

    match = match_fixed_users(
        communication, fixed_communication, guess=max(1, round(communication / supports))
    )
    fixed = match.users
    fixed_run = _run(
        "none", "tight", runs, seed, algorithm="dpe-fixedu", fixed_users=fixed, figure=name,
        label=f"DPE-FixedU (U={fixed})",
    )  # fmt: skip
    save_results(dpe, out, "fig2c-dpe", record=recorder(provenance.BANDIT_RUN))
    save_results(fixed_run, out, "fig2c-fixedu", record=recorder(provenance.BANDIT_RUN))
    title = f"Li, Zhou & Ji 2022, Fig. 2(c): DPE vs DPE-FixedU at matched communication, T = {HORIZON:,}"
    report = write_report(
        [_curve(dpe, "DPE", ""), _curve(fixed_run, f"DPE-FixedU (U={fixed})", "")], out, "fig2c", title,
        recorder=recorder, per_round=True,
    )  # fmt: skip
    p_value = _greater(_finals(fixed_run), _finals(dpe))
    claim = _fig2c_claim(
        _finals(dpe),
        _finals(fixed_run),
        fixed,
        (communication, match.communication),
        _command(name, runs, seed),
    )
    claims = claims_table([claim])
    result = {
        "name": name,
        "runs": runs,
        "out": str(out),
        "fixed_users": fixed,
        "communication_match": {
            "DPE": communication,
            "DPE-FixedU": match.communication,
            "relative_difference": match.relative_difference,
            "bracket": list(match.bracket),
            "evaluations": {str(k): v for k, v in match.evaluations.items()},
        },
        "DPE": summary(dpe),
        "DPE-FixedU": summary(fixed_run),
        "p_FixedU_gt_DPE": p_value,
        "claims": claims,
        "claims_file": _write_claims(out, "fig2c", f"`{name}`", claims, recorder),
        **report,
    }
    result = with_record(json_ready(result), recorder)
    (out / "fig2c.json").write_text(json.dumps(result, indent=1, allow_nan=False))
    return result


def _fig2c_claim(
    dpe: np.ndarray, fixed_run: np.ndarray, fixed: int, communication: tuple[float, float], command: str
) -> Claim:
    """Fig. 2(c)'s claim, by :func:`paired_verdict` on the per-run final regrets of DPE and DPE-FixedU
    (same seed: run r of both plays instance r)."""
    faster = paired_verdict(fixed_run, dpe, "first > second", labels=(f"DPE-FixedU (U = {fixed})", "DPE"))
    return Claim(
        "Fig. 2(c): at equal communication DPE learns faster than DPE-FixedU (paired)",
        faster.holds,
        f"DPE {dpe.mean():,.0f} vs DPE-FixedU (U = {fixed}) {fixed_run.mean():,.0f}; {faster.numbers}; "
        f"C(T) {communication[0]:,.0f} vs {communication[1]:,.0f} reals",
        command,
    )


for _name, _description, _run_figure in (
    (
        "li-zhou-ji-2022-fig2a",
        "Li, Zhou & Ji 2022, Fig. 2(a): final regret vs target epsilon, CDP/LDP/SDP-DPE, paper and tight "
        "calibrations",
        reproduce_fig2a,
    ),
    (
        "li-zhou-ji-2022-fig2b",
        "Li, Zhou & Ji 2022, Fig. 2(b): regret over time at target eps=10, DPE vs CDP/LDP/SDP-DPE",
        reproduce_fig2b,
    ),
    (
        "li-zhou-ji-2022-fig2c",
        "Li, Zhou & Ji 2022, Fig. 2(c): DPE vs DPE-FixedU at matched communication",
        reproduce_fig2c,
    ),
):
    registry.register_reproduction(registry.ReproductionSpec(_name, _description, _run_figure))
