"""``dpcert reproduce`` entries for Chowdhury & Zhou 2022: Figure 1 and Appendix G (Figure 2).

:func:`figure_runs` runs the five LinUCB algorithms on the same instances (one vectorised pass per
batch size); :func:`reproduction` builds the entry that runs every panel under both calibrations and
writes, through :func:`dpcert.reproductions.report.write_report`, one figure per (dimension, ε,
calibration) panel, the table of final regret, every run's curves, and a table of the paper's claims
with the numbers that decide them (:func:`claims_table`).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import provenance
from dpcert.bandits.algorithms.linucb import ALGORITHMS, CALIBRATIONS, run_group
from dpcert.bandits.algorithms.linucb_privatizers import ShuffleVectorSum
from dpcert.bandits.calibration.linucb import _amplified_pamp, calibrate
from dpcert.bandits.environments.contextual import vaswani_instance
from dpcert.bandits.privatizers import calibration_from_label
from dpcert.bandits.registry import BanditRun, ReproductionSpec, register_reproduction
from dpcert.reproductions.claims import (
    Claim,
    all_hold,
    claims_footer,
    few_runs_warning,
    paired_verdict,
    verdict,
    with_record,
)
from dpcert.reproductions.claims import claims_table as markdown_claims
from dpcert.reproductions.report import Curve, write_report

SHUFFLE_BATCH = 20
"""Batch size of both shuffle protocols in the paper's experiments (Chowdhury & Zhou 2022, §5)."""

LABELS = {
    "linucb": "LinUCB (non-private)",
    "linucb-jdp": "LinUCB-JDP (central)",
    "linucb-sdp-amp": "LinUCB-SDP-Amp (shuffle, B = 20)",
    "linucb-sdp-vec": "LinUCB-SDP-Vec (shuffle, B = 20)",
    "linucb-ldp": "LinUCB-LDP (local)",
}
"""Legend labels, in the paper's legend order (central to local)."""

SEED_STREAMS = {
    "instances, then runs": "numpy.random.default_rng([seed, 2]) draws the R instances, then runs the "
    "per-round algorithms (linucb, linucb-jdp, linucb-ldp) in lockstep, then the shuffle ones "
    "(linucb-sdp-amp, linucb-sdp-vec)",
}
"""How :func:`figure_runs` derives its random streams from ``seed`` (anew for every panel)."""

AMP_LDP_MARGIN = 0.10
"""Relative margin of "SDP-Amp ≈ LDP": the paired mean of SDP-Amp − LDP within ±10 % of LDP's mean final
regret (two one-sided tests, :func:`dpcert.reproductions.claims.paired_verdict`)."""

SAVED_POINTS = 200
"""Rounds at which every run's cumulative regret is saved for the figures and the NPZ (plus t = 1)."""


def figure_runs(
    epsilon: float,
    *,
    runs: int = 50,
    horizon: int = 20_000,
    dimension: int = 5,
    arms: int = 100,
    delta: float = 0.1,
    shuffle_batch: int = SHUFFLE_BATCH,
    calibration: str = "tight",
    seed: int = 0,
    radius: str = "experiment",
    engine: str = "auto",
    progress: Callable[[str], None] | None = None,
) -> dict[str, BanditRun]:
    """Chowdhury & Zhou 2022, Figure 1 (and Appendix G): the five algorithms on the same R instances.

    The three per-round algorithms share one vectorised pass, the two shuffle ones another;
    ``progress`` (if given) is told which curves each pass runs; ``engine`` picks the compiled or the
    NumPy rounds (the same results; see :func:`~dpcert.bandits.algorithms.linucb.run_batched_linucb`).
    """
    rng = np.random.default_rng([seed, 2])
    env = vaswani_instance(runs, dimension, arms, rng)
    common: dict[str, Any] = {"epsilon": epsilon, "delta": delta, "horizon": horizon, "dimension": dimension}
    common["calibration"] = calibration_from_label(calibration)
    per_round = [calibrate(name, batch_size=1, **common) for name in ALGORITHMS[:3]]
    amp = calibrate("linucb-sdp-amp", batch_size=shuffle_batch, **common)
    vec = calibrate("linucb-sdp-vec", batch_size=shuffle_batch, **common)
    results = []
    for group, batch in ((per_round, 1), ([amp, vec], shuffle_batch)):
        if progress is not None:
            names = ", ".join(c.algorithm for c in group)
            progress(f"{names} (B = {batch}, {runs} runs, T = {horizon})")
        results += run_group(
            env, group, horizon=horizon, batch_size=batch, rng=rng, radius=radius, engine=engine
        )
    return {run.algorithm: run for run in results}


def run_summary(run: BanditRun, out: Path | None = None, stem: str = "") -> dict[str, Any]:
    """JSON-ready summary of one algorithm's runs; with ``out``, the mean regret curve goes to STEM.npy
    (the Chowdhury & Zhou 2022 reproductions save every run's curve through the report instead)."""
    mean, stderr = run.final_regret()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        np.save(out / f"{stem}.npy", np.asarray(run.cumulative_regret).mean(axis=0))
    return {
        "regret": {"mean": mean, "stderr": stderr},
        "final_regret": [round(float(value), 3) for value in np.asarray(run.cumulative_regret)[:, -1]],
        "certificate": run.certificate.to_dict() if run.certificate else None,
        "certified": _certified(run),
        "claim_met": run.target_met,
        "calibration_used": run.extras.get("calibration"),
        "noise": run.extras.get("noise"),
        "seconds": run.seconds,
    }


def _certified(run: BanditRun) -> tuple[float, float] | None:
    """The (ε, δ) the run's certificate (the worst user's) states: the target where it is met, else
    the least ε its profile gives at the target δ."""
    if run.certificate is None:
        return None
    return (float(run.certificate.epsilon), float(run.certificate.delta))


@dataclass(frozen=True)
class FigurePanels:
    """The panels of a Chowdhury & Zhou 2022 figure: every (dimension, ε) under both calibrations."""

    epsilons: tuple[float, ...]
    dimensions: tuple[int, ...]
    horizon: int = 20_000
    runs: int = 50
    delta: float = 0.1
    arms: int = 100


FIGURES: dict[str, tuple[str, FigurePanels]] = {
    "chowdhury-zhou-2022-fig1": (
        "Chowdhury & Zhou 2022, Figure 1: d=5, K=100, T=20000, delta=0.1, "
        "eps in {0.2, 1, 10}, tight and paper",
        FigurePanels((0.2, 1.0, 10.0), (5,)),
    ),
    "chowdhury-zhou-2022-fig2": (
        "Chowdhury & Zhou 2022, Appendix G (Figure 2): eps=1, d in {10, 15}, tight and paper",
        FigurePanels((1.0,), (10, 15)),
    ),
}
"""The registered reproductions: description and panels (each panel seeds itself from ``seed``)."""


def memory_sizes(name: str, horizon: int | None = None) -> tuple[int, int, int]:
    """(default runs, rounds of regret per run the figure ``name`` holds at once: the five curves of one
    panel, plus its instance's K·d arm features; no working arrays beyond the runs', the passes are
    vectorised over them), for the memory check of ``dpcert reproduce``."""
    panels = FIGURES[name][1]
    held = len(ALGORITHMS) * (horizon or panels.horizon) + panels.arms * max(panels.dimensions)
    return panels.runs, held, 0


def panel_name(dimension: int, epsilon: float, calibration: str) -> str:
    return f"d = {dimension}, target ε = {epsilon:g}, {calibration} calibration"


def panel_runs(task: tuple[float, int, str, int, int, int, float, str]) -> dict[str, BanditRun]:
    """One panel under one calibration, ``task = (ε, dimension, calibration, runs, horizon, seed, δ, name)``.

    Progress naming the curves goes to stderr.
    """
    epsilon, dimension, calibration, runs, horizon, seed, delta, name = task
    label = f"{name}: {panel_name(dimension, epsilon, calibration)}"

    def progress(message: str) -> None:
        sys.stderr.write(f"{label}: running {message}\n")
        sys.stderr.flush()

    return figure_runs(
        epsilon,
        runs=runs,
        horizon=horizon,
        dimension=dimension,
        delta=delta,
        calibration=calibration,
        seed=seed,
        progress=progress,
    )


def saved_rounds(horizon: int, points: int = SAVED_POINTS) -> np.ndarray:
    """Rounds 1 ≤ t ≤ T (evenly spaced, both ends included) at which curves are saved."""
    return np.unique(np.linspace(1, horizon, points + 1).round().astype(int))


def panel_curves(runs: dict[str, BanditRun], panel: str, horizon: int) -> list[Curve]:
    """The report's curves of one panel, in the paper's legend order."""
    rounds = saved_rounds(horizon)
    curves = []
    for algorithm in LABELS:
        run = runs[algorithm]
        regret = np.asarray(run.cumulative_regret)[:, rounds - 1]
        curves.append(Curve(LABELS[algorithm], rounds, regret, _certified(run), panel))
    return curves


def amplification_numbers(epsilon: float, delta: float, dimension: int, calibration: str) -> dict[str, Any]:
    """Why SDP-Amp ≈ LDP at B = 20: the noise each calibration needs, per user and per batch sum.

    ``tight``: amplification by shuffling (Feldman, McMillan & Talwar 2020, numeric bound) at B = 20
    needs a larger σ than the local calibration (exact Gaussian profile) at the same (ε, δ), so P_Amp
    keeps the local σ: every user adds the same noise as under LDP, and the two differ only in when
    the model is updated.  ``paper``: Chowdhury & Zhou 2022, Thm 3.2's σ, whose amplification lemma
    (Lemma B.4) needs B ≥ 16 e^ε0 ln(4/δ) ≥ 59; at B = 20 only its local guarantee is certified.
    P_Vec's binomial noise on the batch *sum* is compared with P_Amp's (√B σ per entry).
    """
    common: dict[str, Any] = {
        "epsilon": epsilon,
        "delta": delta,
        "horizon": SHUFFLE_BATCH,
        "dimension": dimension,
        "calibration": calibration_from_label(calibration),
    }
    ldp = calibrate("linucb-ldp", batch_size=1, **common)
    amp = calibrate("linucb-sdp-amp", batch_size=SHUFFLE_BATCH, **common)
    vec = calibrate("linucb-sdp-vec", batch_size=SHUFFLE_BATCH, **common)
    amplified = _amplified_pamp(epsilon, delta, SHUFFLE_BATCH, dimension, "tight")
    if not isinstance(vec.privatizer, ShuffleVectorSum):
        raise RuntimeError("the SDP-Vec calibration returned no shuffled vector sum")  # it always does
    vec_parameters = vec.privatizer.parameters
    if amp.certificate is None:
        raise RuntimeError("the SDP-Amp calibration returned no certificate")  # private: it always has one
    numbers = {
        "sigma_ldp": ldp.noise["sigma"],
        "sigma_amp": amp.noise["sigma"],
        "sigma_amplification_needs": None if amplified is None else amplified.sigma,
        "amp_certified_epsilon": amp.certificate.epsilon,
        "amp_batch_sum_std": amp.noise["sigma"] * math.sqrt(SHUFFLE_BATCH),
        "vec_batch_sum_std": vec_parameters.noise_std,
        "vec_local_epsilon": vec.local_epsilon,
    }
    if calibration == "tight":
        needs = "nothing" if amplified is None else f"σ = {amplified.sigma:.3g}"
        holds = amplified is None or amplified.sigma >= numbers["sigma_amp"]
        text = (
            f"amplification by shuffling at B = 20 needs {needs}, the local calibration σ = "
            f"{numbers['sigma_amp']:.3g} (= LDP's {numbers['sigma_ldp']:.3g}): SDP-Amp keeps the local σ"
        )
    else:
        eps0 = epsilon * math.sqrt(SHUFFLE_BATCH / math.log(2 / delta))
        needed = 16 * math.exp(eps0) * math.log(4 / delta)
        holds = SHUFFLE_BATCH < needed
        text = (
            f"Thm 3.2's σ = {numbers['sigma_amp']:.3g} (LDP's Prop. F.1 σ = {numbers['sigma_ldp']:.3g}); "
            f"Lemma B.4 needs B ≥ {needed:.3g} > 20, so SDP-Amp's certificate is the local guarantee "
            f"of that σ, ε = {numbers['amp_certified_epsilon']:.4g}"
        )
    text += (
        f"; per batch sum SDP-Vec adds noise of s.d. {numbers['vec_batch_sum_std']:.3g} per entry against "
        f"SDP-Amp's {numbers['amp_batch_sum_std']:.3g}"
    )
    return {"holds": bool(holds), "text": text, **numbers}


def _finals(panel: dict[str, Any], algorithm: str, calibration: str) -> np.ndarray:
    return np.asarray(panel["algorithms"][algorithm][calibration]["final_regret"], dtype=float)


def _regret(panel: dict[str, Any], algorithm: str, calibration: str) -> str:
    regret = panel["algorithms"][algorithm][calibration]["regret"]
    return f"{regret['mean']:,.0f} ± {regret['stderr']:,.0f}"


def _short(algorithm: str) -> str:
    return LABELS[algorithm].split(" ")[0]


def claims_table(summary: dict[str, Any], command: str) -> str:
    """``| claim | holds? | numbers | command |`` for every panel of a reproduction.

    Every comparative claim is decided by :func:`dpcert.reproductions.claims.paired_verdict` on the
    final regrets of runs on the same instances: the claims of Chowdhury & Zhou 2022, §5 (each shuffle
    protocol's regret lies between LinUCB-JDP's and LinUCB-LDP's; every private algorithm comes closer
    to LinUCB as ε grows), and SDP-Amp ≈ LDP at B = 20 (within :data:`AMP_LDP_MARGIN`), whose
    explanation — amplification by shuffling needs more noise than the local calibration — is given as
    numbers next to the verdict, not as the verdict.  Whether each calibration's certificates meet the
    target ε is exact.
    """
    rows: list[Claim] = []

    def row(claim: str, holds: str, numbers: str) -> None:
        rows.append(Claim(claim, holds, numbers, command))

    for panel in summary["panels"]:
        for calibration in CALIBRATIONS:
            where = panel_name(panel["dimension"], panel["epsilon"], calibration)
            jdp, ldp = _finals(panel, "linucb-jdp", calibration), _finals(panel, "linucb-ldp", calibration)
            for algorithm in ("linucb-sdp-amp", "linucb-sdp-vec"):
                sdp, name = _finals(panel, algorithm, calibration), _short(algorithm)
                above_jdp = paired_verdict(jdp, sdp, "first < second", labels=("JDP", name))
                below_ldp = paired_verdict(sdp, ldp, "first < second", labels=(name, "LDP"))
                row(
                    f"{where}: {name} lies between LinUCB-JDP and LinUCB-LDP (§5)",
                    all_hold([above_jdp.holds, below_ldp.holds]),
                    f"final regret JDP {_regret(panel, 'linucb-jdp', calibration)}, {name} "
                    f"{_regret(panel, algorithm, calibration)}, "
                    f"LDP {_regret(panel, 'linucb-ldp', calibration)}; JDP < {name}: {above_jdp.holds}, "
                    f"{above_jdp.numbers}; {name} < LDP: {below_ldp.holds}, {below_ldp.numbers}",
                )
            why = panel["amplification"][calibration]
            amp_ldp = paired_verdict(
                _finals(panel, "linucb-sdp-amp", calibration),
                ldp,
                "first ≈ second",
                margin=AMP_LDP_MARGIN,
                labels=("SDP-Amp", "LDP"),
            )
            row(
                f"{where}: SDP-Amp ≈ LDP (final regret within {AMP_LDP_MARGIN:.0%}) because amplification "
                "by shuffling needs more noise than the local calibration at B = 20 (SDP-Vec does not "
                "rely on it)",
                amp_ldp.holds,
                f"paired {amp_ldp.numbers}; final regret SDP-Amp "
                f"{_regret(panel, 'linucb-sdp-amp', calibration)}, "
                f"LDP {_regret(panel, 'linucb-ldp', calibration)}, "
                f"SDP-Vec {_regret(panel, 'linucb-sdp-vec', calibration)}; noise (not the verdict): "
                f"{why['text']} (amplification needs more noise: {'yes' if why['holds'] else 'no'})",
            )
            certified = {
                algorithm: entry[calibration]["certified"]
                for algorithm, entry in panel["algorithms"].items()
                if entry[calibration]["certified"] is not None
            }
            met = all(panel["algorithms"][a][calibration]["claim_met"] for a in certified)
            row(
                f"{where}: every certificate meets the target ε = {panel['epsilon']:g}",
                verdict(met),
                "; ".join(f"{_short(a)} certifies ε = {c[0]:.4g}" for a, c in certified.items()),
            )
    for dimension in sorted({panel["dimension"] for panel in summary["panels"]}):
        panels = sorted(
            (p for p in summary["panels"] if p["dimension"] == dimension), key=lambda p: p["epsilon"]
        )
        if len(panels) < 2:
            continue
        for calibration in CALIBRATIONS:
            verdicts, texts = [], []
            for algorithm in LABELS:
                if algorithm == "linucb":
                    continue
                gaps = [
                    _finals(p, algorithm, calibration) - _finals(p, "linucb", calibration) for p in panels
                ]
                steps = [
                    paired_verdict(
                        later,
                        earlier,
                        "first < second",
                        labels=(f"gap at ε = {b['epsilon']:g}", f"gap at ε = {a['epsilon']:g}"),
                    )
                    for a, b, earlier, later in zip(panels[:-1], panels[1:], gaps[:-1], gaps[1:], strict=True)
                ]
                verdicts += [step.holds for step in steps]
                texts.append(
                    f"{_short(algorithm)} "
                    + " → ".join(f"{gap.mean():,.0f}" for gap in gaps)
                    + " ("
                    + "; ".join(f"{step.holds}: {step.numbers}" for step in steps)
                    + ")"
                )
            epsilons = ", ".join(f"{p['epsilon']:g}" for p in panels)
            row(
                f"d = {dimension}, {calibration} calibration: every private algorithm comes closer to LinUCB "
                f"as ε grows (§5; ε = {epsilons})",
                all_hold(verdicts),
                "excess final regret over LinUCB, paired steps: " + " / ".join(texts),
            )
    return markdown_claims(rows)


def _command(name: str, runs: int, horizon: int, seed: int, panels: FigurePanels) -> str:
    default_horizon = FIGURES[name][1].horizon if name in FIGURES else panels.horizon
    command = f"dpcert reproduce {name} --runs {runs}"
    if horizon != default_horizon:
        command += f" --horizon {horizon}"
    return command + (f" --seed {seed}" if seed else "")


def reproduce_panels(
    name: str,
    panels: FigurePanels,
    runs: int,
    out: Path | str | None,
    seed: int,
    map_tasks: Callable[..., Iterable[dict[str, BanditRun]]] = map,
) -> dict[str, Any]:
    """Every panel of ``panels`` under both calibrations, with the report and the claims table.

    ``map_tasks(panel_runs, tasks)`` computes the panels (default: one after the other, here); the
    panels seed themselves, so any scheduler gives the same numbers.  With ``out``, writes
    ``NAME.json``, ``NAME.md`` (final regret), ``NAME_claims.md``, ``NAME_curves.npz`` (every run's
    curve) and one PNG per panel (:func:`dpcert.reproductions.report.write_report`).
    """
    few_runs_warning(name, runs)
    call = provenance.python_call(
        "dpcert.reproductions.chowdhury_zhou_2022.reproduce_panels", name, panels, runs, out, seed
    )
    recorder = provenance.Recorder(
        provenance.seeds(seed, {f"every panel: {k}": v for k, v in SEED_STREAMS.items()}), call
    )
    tasks = [
        (epsilon, dimension, calibration, runs, panels.horizon, seed, panels.delta, name)
        for dimension in panels.dimensions
        for epsilon in panels.epsilons
        for calibration in CALIBRATIONS
    ]
    results = iter(map_tasks(panel_runs, tasks))  # in task order: dimension, ε, calibration
    summary: dict[str, Any] = {
        "name": name,
        "runs": runs,
        "horizon": panels.horizon,
        "delta": panels.delta,
        "shuffle_batch": SHUFFLE_BATCH,
        "panels": [],
    }
    curves: list[Curve] = []
    for dimension in panels.dimensions:
        for epsilon in panels.epsilons:
            panel: dict[str, Any] = {"epsilon": epsilon, "dimension": dimension, "algorithms": {}}
            panel["amplification"] = {}
            for calibration in CALIBRATIONS:
                runs_by_algorithm = next(results)
                for algorithm, run in runs_by_algorithm.items():
                    panel["algorithms"].setdefault(algorithm, {})[calibration] = run_summary(run)
                where = panel_name(dimension, epsilon, calibration)
                curves += panel_curves(runs_by_algorithm, where, panels.horizon)
                panel["amplification"][calibration] = amplification_numbers(
                    epsilon, panels.delta, dimension, calibration
                )
            summary["panels"].append(panel)
    command = _command(name, runs, panels.horizon, seed, panels)
    summary["command"] = command
    summary["claims"] = claims_table(summary, command)
    if out is not None:
        out = Path(out)  # a string too, as the recorded Python call passes it
        title = (
            f"{FIGURES[name][0].split(':')[0] if name in FIGURES else name} — "
            f"T = {panels.horizon}, K = {panels.arms}, δ = {panels.delta:g}"
        )
        summary.update(write_report(curves, out, name, title, recorder=recorder))
        claims_file = out / f"{name}_claims.md"
        claims_file.write_text(f"# {title}: claims\n\n{summary['claims']}{claims_footer(recorder)}")
        summary["claims_file"] = str(claims_file)
        with_record(summary, recorder)
        (out / f"{name}.json").write_text(json.dumps(summary, indent=2))
    return summary


def reproduction(
    name: str, epsilons: tuple[float, ...], dimensions: tuple[int, ...], horizon: int = 20_000
) -> Callable[..., dict[str, Any]]:
    """The ``dpcert reproduce`` entry for Figure 1 / Appendix G: every panel under both calibrations."""
    panels = FigurePanels(epsilons, dimensions, horizon)

    def reproduce(runs: int | None = None, out: Path | None = None, seed: int = 0) -> dict[str, Any]:
        return reproduce_panels(name, panels, runs or panels.runs, out, seed)

    return reproduce


for _name, (_description, _panels) in FIGURES.items():
    register_reproduction(
        ReproductionSpec(_name, _description, reproduction(_name, _panels.epsilons, _panels.dimensions))
    )
