"""The end-to-end demonstration behind ``dpcert demo``: each of the three jobs, small and fast.

Every step returns a JSON-ready dict and a few human-readable lines; steps only use the public API.
:func:`run_demo` ends by writing ``provenance.json``: the record of how the demo was made
(:mod:`dpcert.provenance`, format ``dpcert.reproductions.demo/1``) and every file it wrote, with its SHA-256.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import provenance
from dpcert.accounting.composition import compose
from dpcert.accounting.returning_users import split_budget
from dpcert.audits.report import AuditReport
from dpcert.audits.run import audit
from dpcert.bandits import registry
from dpcert.bandits.algorithms.robust_elimination import (
    Adversary,
    LaplaceClients,
    LinearArms,
    robust_elimination,
)
from dpcert.bandits.experiment import plot_regret, save_results, summary
from dpcert.certificates import Certificate, Guarantee
from dpcert.errors import BudgetExceeded
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.gaussian import calibrate_gaussian, gaussian_certificate
from dpcert.mechanisms.laplace import calibrate_laplace
from dpcert.mechanisms.shuffle.binary_sum import calibrate_binary_sum
from dpcert.mechanisms.shuffle.binomial_sum import calibrate_binomial_sum
from dpcert.profiles import TrustModel
from dpcert.reproductions.chowdhury_zhou_2022 import figure_runs
from dpcert.theory.amplification import largest_local_epsilon

SEED_STREAMS = {
    "step stream n": "numpy.random.default_rng([seed, n]) (DemoContext.rng): n = 1 the Gaussian release, "
    "2 the shuffle sum's data and noise and the correct Laplace audit, 3 the half-noise audit, 30 the "
    "robust bandit's instance, 31 its corrupted runs, 32 its private runs",
    "certified bandit": "dpcert bandit run dp-dpe --seed seed: numpy.random.default_rng([seed, 0]) draws "
    "the instances, numpy.random.default_rng([seed, 1, r]) runs repetition r",
    "private LinUCB": "numpy.random.default_rng([seed, 2]) draws the instances, then runs the LinUCB "
    "family (dpcert.reproductions.chowdhury_zhou_2022.figure_runs)",
}
"""How the demo derives its random streams from ``seed``."""
FILE = "provenance.json"


@dataclass(frozen=True)
class DemoContext:
    """Where the demo writes its files, the seed it draws from and the demo's provenance records."""

    out: Path
    seed: int
    recorder: provenance.Recorder = field(default_factory=lambda: provenance.Recorder({}))

    def rng(self, stream: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, stream])


StepResult = tuple[dict[str, Any], list[str]]


def certified(certificate: Certificate | None, what: str) -> Certificate:
    """The certificate of a private run (every private run carries one)."""
    if certificate is None:
        raise RuntimeError(f"{what} returned no certificate")
    return certificate


def noise_for_budget(context: DemoContext) -> StepResult:
    """Job 1: least noise for a target budget, with a certificate that survives a JSON round trip."""
    gaussian = calibrate_gaussian(1.0, 1e-5)
    repeated = calibrate_gaussian(1.0, 1e-5, compositions=100)
    laplace = calibrate_laplace(1.0)
    path = context.out / "gaussian_certificate.json"
    path.write_text(gaussian.certificate.to_json(indent=2))
    reread = Certificate.from_json(path.read_text())  # re-verified on read
    release = gaussian.mechanism()(42.0, context.rng(1))
    return (
        {
            "gaussian_sigma": gaussian.sigma,
            "gaussian_sigma_100_compositions": repeated.sigma,
            "laplace_scale": laplace.scale,
            "certificate_file": str(path),
            "round_trip_equal": reread == gaussian.certificate,
            "example_release": release,
        },
        [
            f"Gaussian (eps=1, delta=1e-5): sigma = {gaussian.sigma:.6g}  [{gaussian.certificate.basis}]",
            f"  same budget over 100 releases: sigma = {repeated.sigma:.6g} (exact composition)",
            f"Laplace (eps=1): scale = {laplace.scale:.6g}",
            f"  certificate written to {path} and re-verified on read",
        ],
    )


def certified_bandit(context: DemoContext) -> StepResult:
    """Job 3: DP-DPE with central privacy against non-private DPE; the worst user's certificate."""
    options = {"dimension": 5, "arms": 50, "progress": False}
    common: dict[str, Any] = {"horizon": 20_000, "runs": 3, "seed": context.seed, "options": options}
    ledger_path = context.out / "bandit" / "ledger.db"
    ledger_path.parent.mkdir(parents=True, exist_ok=True)
    for stale in (
        ledger_path,
        ledger_path.with_name("ledger.db-wal"),
        ledger_path.with_name("ledger.db-shm"),
    ):
        stale.unlink(missing_ok=True)
    spec = registry.algorithm("dp-dpe")
    central = registry.RunConfig("dp-dpe", TrustModel.CENTRAL, 1.0, 1e-5, ledger_path=ledger_path, **common)
    private = spec.run(central)
    baseline = spec.run(registry.RunConfig("dp-dpe", None, **common))
    record = context.recorder(provenance.BANDIT_RUN)
    paths = save_results(private, context.out / "bandit", "dp-dpe-central", record=record)
    plot = plot_regret(
        {"DP-DPE, central (1, 1e-5)": private, "DPE, non-private": baseline},
        context.out / "bandit" / "regret.png",
        "DP-DPE vs DPE (d = 5, 50 arms, 3 runs)",
    )
    with Ledger(ledger_path) as ledger:
        worst = ledger.spent_summary()
    private_summary, baseline_summary = summary(private), summary(baseline)
    certificate = certified(private.certificate, "DP-DPE (central)")
    return (
        {
            "dp_dpe_central": private_summary,
            "dpe_regret": baseline_summary["regret"],
            "results_file": str(paths["json"]),
            "ledger_file": str(ledger_path),
            "ledger_max_user_epsilon": worst.max_epsilon,
            "plot_file": str(plot) if plot else None,
        },
        [
            f"DP-DPE (central, eps=1, delta=1e-5), T = 20000, 3 runs: regret "
            f"{private_summary['regret']['mean']:.0f} ± {private_summary['regret']['stderr']:.0f} "
            f"(non-private DPE: {baseline_summary['regret']['mean']:.0f})",
            f"  {private.users} users per run, at most {private.extras['max_charges_per_user']} "
            "charge(s) each; "
            f"worst user: {certificate.summary()}",
            f"  ledger {ledger_path}: {worst.users} users, worst user's epsilon = {worst.max_epsilon:.4g}",
            f"  results in {paths['json']}" + (f", plot in {plot}" if plot else ""),
        ],
    )


def compose_and_charge(context: DemoContext) -> StepResult:
    """Accounting: compose certificates, split a returning user's budget, charge a per-user ledger."""
    releases = compose([gaussian_certificate(10.0, delta=1e-5)] * 100, delta=1e-5)
    split = split_budget(Guarantee(1.0, 1e-5), 10)
    path = context.out / "ledger.db"
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    sigma = calibrate_gaussian(1.0, 1e-5, compositions=4).sigma  # four batches exactly fit the budget
    per_batch = gaussian_certificate(sigma, delta=1e-5)
    users = np.arange(1000)
    with Ledger(path) as ledger:
        ledger.set_budget(None, Guarantee(1.0, 1e-5))
        for batch in range(4):
            ledger.charge(users, per_batch, run_id=f"batch-{batch}")
        try:
            ledger.charge(users[:10], per_batch, run_id="batch-4")
            refusal = ""
        except BudgetExceeded as exc:
            refusal = str(exc)
        worst = ledger.spent_summary()
    return (
        {
            "compose_100_gaussians_epsilon": releases.epsilon,
            "paper_batch_epsilon": split.paper.epsilon,
            "tight_batch_epsilon": split.tight.epsilon,
            "ledger_file": str(path),
            "max_user_epsilon": worst.max_epsilon,
            "refused": bool(refusal),
        },
        [
            f"100 Gaussian releases (sigma=10) compose exactly to epsilon = {releases.epsilon:.4f} "
            "at delta=1e-5",
            f"returning users, budget (1, 1e-5) over 10 batches: paper epsilon_m = "
            f"{split.paper.epsilon:.4f}, tight epsilon_m = {split.tight.epsilon:.4f}",
            f"ledger {path}: 1000 users charged 4 times (sigma = {sigma:.4g}), "
            f"max user epsilon = {worst.max_epsilon:.4f} <= 1",
            f"  a fifth charge was refused: {refusal}",
        ],
    )


def shuffle_model_sum(context: DemoContext) -> StepResult:
    """Shuffle model: a certified bit-sum over 1000 users, exact accounting against the paper's bits."""
    exact = calibrate_binomial_sum(1.0, 1e-5, users=1000, method="exact")
    paper = calibrate_binomial_sum(1.0, 1e-5, users=1000, method="paper")
    rng = context.rng(2)
    data = rng.uniform(-1.0, 1.0, size=1000)
    estimate = float(exact.mechanism().simulate(data, rng))
    path = context.out / "binomial_sum_certificate.json"
    path.write_text(exact.certificate.to_json(indent=2))
    reread = Certificate.from_json(path.read_text())
    binary = calibrate_binary_sum(1.0, 1e-6)
    epsilon0 = largest_local_epsilon(1.0, 1e-6, 1000, "closed-form")
    return (
        {
            "exact": {"g": exact.g, "b": exact.b, "p": exact.p, "noise_std": exact.noise_std},
            "paper": {"g": paper.g, "b": paper.b, "p": paper.p, "noise_std": paper.noise_std},
            "true_sum": float(data.sum()),
            "estimate": estimate,
            "certificate_file": str(path),
            "round_trip_equal": reread == exact.certificate,
            "binary_sum_noise_bits": binary.noise_bits,
            "largest_local_epsilon0": epsilon0,
        },
        [
            f"bit-sum over 1000 users at (1, 1e-5): exact b = {exact.b} noise bits per user "
            f"(paper: {paper.b}), noise std {exact.noise_std:.3g} (paper: {paper.noise_std:.3g})",
            f"  sum {data.sum():.2f} estimated as {estimate:.2f}; certificate re-verified from {path}",
            f"binary summation (Tenenbaum et al. 2021) at (1, 1e-6): N = {binary.noise_bits} noise bits",
            f"amplification: 1000 shuffled eps0-LDP reports are (1, 1e-6)-DP for eps0 <= {epsilon0:.3f}",
        ],
    )


def audit_a_claim(context: DemoContext) -> StepResult:
    """Job 2: audit a correct Laplace mechanism and one with half the noise; re-check a saved report."""
    correct = calibrate_laplace(1.0).mechanism()

    def half_noise(value, rng, size):
        return value + rng.laplace(0.0, correct.scale / 2.0, size)

    good = audit(correct, 0.0, 1.0, samples=200_000, rng=context.rng(2))
    bad = audit(half_noise, 0.0, 1.0, epsilon=1.0, samples=10_000, rng=context.rng(3))
    path = context.out / "audit_report.json"
    path.write_text(bad.to_json(indent=2))
    rechecked = AuditReport.from_json(path.read_text())  # bound and verdict re-derived from the counts
    return (
        {
            "correct_laplace": {"verdict": good.verdict, "epsilon_lower_bound": good.epsilon_lower_bound},
            "half_noise_laplace": {"verdict": bad.verdict, "epsilon_lower_bound": bad.epsilon_lower_bound},
            "report_file": str(path),
            "rechecked_verdict": rechecked.verdict,
        },
        [
            f"Laplace claiming eps=1: {good.verdict}, eps >= {good.epsilon_lower_bound:.3f} "
            f"(95% confidence, {good.samples} draws per input)",
            f"half the noise, same claim: {bad.verdict}, eps >= {bad.epsilon_lower_bound:.3f} "
            f"({bad.samples} draws per input)",
            f"  report written to {path} and re-checked from its counts",
        ],
    )


def robust_private_bandit(context: DemoContext) -> StepResult:
    """Charisopoulos, Esfandiari & Mirrokni 2023 on a small linear bandit: (a) 5% of rewards replaced by an
    out-of-range adversary, the default estimator (clip to the clean range, then the spectral filter; the
    clipping is what neutralises this attack) against plain least squares; (b) every reward reported with
    local Laplace noise (ε = 1)."""
    instance = LinearArms.random_sphere(30, 4, context.rng(30))
    clients, adversary = LaplaceClients("M1", epsilon=None), Adversary(0.05, "constant", 1e6)
    robust = robust_elimination(
        instance, 50_000, context.rng(31), clients=clients, adversary=adversary, width_scale=0.05, runs=3
    )
    plain = robust_elimination(
        instance,
        50_000,
        context.rng(31),
        clients=clients,
        adversary=adversary,
        width_scale=0.05,
        runs=3,
        estimator="least-squares",
    )
    private = robust_elimination(
        instance, 50_000, context.rng(32), clients=LaplaceClients("M1", epsilon=1.0), width_scale=0.05, runs=3
    )
    lines = ["linear bandit, K=30 arms in d=4, T=50,000, 3 runs (mean pseudo-regret)"]
    payload: dict[str, Any] = {}
    for label, result in (
        ("5% corrupted, clipped then filtered (clipping removes this attack)", robust),
        ("5% corrupted, plain least squares (no clipping)", plain),
        ("local Laplace reports (epsilon=1)", private),
    ):
        mean, _ = result.regret()
        lost = int(result.best_arm_eliminated.sum())
        payload[label] = {"regret": mean, "best_arm_lost": lost}
        lines.append(f"  {label}: regret {mean:,.0f}, best arm eliminated in {lost}/3 runs")
    certificate = certified(private.certificate, "the locally private robust elimination")
    payload["certificate"] = certificate.to_dict()
    lines.append(f"  certificate of the private run: {certificate.summary()}")
    return payload, lines


def private_linucb(context: DemoContext) -> StepResult:
    """Job 3: shuffle-private LinUCB (Chowdhury & Zhou 2022) against its central and local versions.

    Every run carries its certificate.
    """
    results = figure_runs(1.0, runs=8, horizon=2000, arms=20, seed=context.seed)
    payload: dict[str, Any] = {}
    lines = ["LinUCB family, eps=1, delta=0.1, d=5, K=20, T=2000, 8 instances (tight calibration):"]
    for name in ("linucb", "linucb-jdp", "linucb-sdp-amp", "linucb-ldp"):
        run = results[name]
        mean, stderr = run.final_regret()
        certificate = run.certificate
        payload[name] = {
            "regret": {"mean": mean, "stderr": stderr},
            "certificate": certificate.to_dict() if certificate else None,
        }
        claim = "non-private" if certificate is None else certificate.summary().split(";")[0]
        lines.append(f"  {name:15s} regret {mean:7.1f} +- {stderr:5.1f}   {claim}")
    path = context.out / "linucb_sdp_amp_certificate.json"
    path.write_text(certified(results["linucb-sdp-amp"].certificate, "SDP-Amp LinUCB").to_json(indent=2))
    Certificate.from_json(path.read_text())
    lines.append(f"  SDP-Amp certificate written to {path} and re-verified on read")
    return payload, lines


STEPS: tuple[tuple[str, Callable[[DemoContext], StepResult]], ...] = (
    ("compute noise for a budget", noise_for_budget),
    ("compose and charge a per-user ledger", compose_and_charge),
    ("shuffle-model sum with exact accounting", shuffle_model_sum),
    ("audit a privacy claim", audit_a_claim),
    ("run a certified bandit", certified_bandit),
    ("robust and locally private linear bandit", robust_private_bandit),
    ("run shuffle-private LinUCB", private_linucb),
)


def run_demo(out: Path, seed: int = 2026, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every demo step, writing files under ``out``, then ``out/provenance.json``; returns the
    JSON-ready results."""
    recorder = provenance.Recorder(
        provenance.seeds(seed, SEED_STREAMS),
        provenance.python_call("dpcert.reproductions.demo.run_demo", out, seed=seed),
    )
    out.mkdir(parents=True, exist_ok=True)
    context = DemoContext(out=out, seed=seed, recorder=recorder)
    results: dict[str, Any] = {}
    for title, step in STEPS:
        if echo:
            echo(f"== {title}")
        payload, lines = step(context)
        results[title] = payload
        if echo:
            for line in lines:
                echo("   " + line)
    write_provenance(out, recorder(provenance.DEMO))
    return results


def write_provenance(out: Path, record: dict[str, Any]) -> Path:
    """``out/provenance.json``: ``record`` and the SHA-256 of every other file under ``out``."""
    files = {
        path.relative_to(out).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(out.rglob("*"))
        if path.is_file() and path != out / FILE
    }
    path = out / FILE
    path.write_text(json.dumps({provenance.KEY: record, "files": files}, indent=1, allow_nan=False))
    return path
