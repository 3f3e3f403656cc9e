"""``dpcert bandit run`` and ``dpcert reproduce`` entries for seed 001 (shuffle-model MAB) and seed 003
(robust private batched elimination).

Neither paper has experiments; the reproductions run the experiments proposed in their specs:

* ``seed001-shuffle-mab`` (spec 001 §7): k = 10 arms with means (0.9, 0.8×3, 0.6×3, 0.3×3), T = 10⁶,
  δ = 1e-6, ε ∈ {2, 1, 0.5, 0.25, 0.1}, 20 runs; SDP-AE (m = ⌈σ²⌉) and VB-SDP-AE against the non-private
  elimination (m = 1 and doubling), central ε-DP elimination (Laplace) and local ε-DP elimination
  (randomized response).
* ``seed003-e1-sanity`` … ``seed003-e4-m1-vs-m2`` (spec 003 §4, E1–E4): d = 5, K = 50 arms and θ* uniform
  on the sphere, rewards ``2·Bernoulli((1+⟨a,θ*⟩)/2) − 1``, δ' = 0.05, width scale c_γ = 0.05 frozen.
  Horizons are reduced where the spec's would take long on two cores (stated in each summary).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpcert.accounting.session import PrivacySession
from dpcert.bandits import registry
from dpcert.bandits.corruption import IN_RANGE_STRATEGIES, InRangeAdversary
from dpcert.bandits.environments.mab import SPEC_001_MEANS, MultiArmedBandit
from dpcert.bandits.experiment import open_sessions, target_of
from dpcert.bandits.mab import (
    BatchSchedule,
    EliminationResult,
    ExactSum,
    ShuffleBinarySum,
    batched_arm_elimination,
    central_dp_se,
    local_dp_se,
    sdp_ae,
    shuffle_binary_sum,
    successive_elimination,
    vb_sdp_ae,
)
from dpcert.bandits.robust_elimination import (
    Adversary,
    LaplaceClients,
    LinearArms,
    RobustEliminationResult,
    robust_elimination,
)
from dpcert.errors import InvalidParameter

SEED001_EPSILONS = (2.0, 1.0, 0.5, 0.25, 0.1)
SEED001_DELTA = 1e-6
SEED001_HORIZON = 1_000_000
SEED001_RUNS = 20

SEED003_SETTING = {"arms": 50, "dimension": 5, "failure_probability": 0.05, "width_scale": 0.05}
SEED003_RUNS = 10


# =========================================================================== shared helpers
def _session(config: registry.RunConfig) -> PrivacySession:
    """One session for the R lockstep repetitions (their local ids are disjoint: ``run·T + i``)."""
    (session,) = open_sessions(config, 1)
    return session


def _shuffle_summation(epsilon: float, delta: float) -> tuple[ShuffleBinarySum, bool]:
    """The calibrated ``M_sum`` and whether it carries a certificate."""
    summation = shuffle_binary_sum(epsilon, delta)
    return summation, summation.certificate is not None


def _require(value: float | None, name: str, privacy: str) -> float:
    if value is None:
        raise InvalidParameter(name, None, f"a value (privacy={privacy!r} needs --{name})")
    return value


def _mab_bandit(options: Mapping[str, Any]) -> MultiArmedBandit:
    return MultiArmedBandit(np.asarray(options.get("means", SPEC_001_MEANS), dtype=float))


def _to_bandit_run(
    config: registry.RunConfig,
    result: EliminationResult | RobustEliminationResult,
    users: int,
    session: PrivacySession,
    extras: Mapping[str, Any],
) -> registry.BanditRun:
    """The run's certificate is the worst user's composition of her charges at the target's δ."""
    curves = result.cumulative_regret()
    if curves.size > 20_000_000:
        curves = curves.astype(np.float32)
    target = target_of(config)
    certificate = None if target is None else session.worst_user_certificate(target.delta)
    return registry.BanditRun(
        algorithm=config.algorithm,
        cumulative_regret=curves,
        certificate=certificate,
        users=users,
        max_user_epsilon=0.0 if certificate is None else float(certificate.epsilon_for(target.delta)),
        seconds=result.seconds,
        extras={**extras, "max_charges_per_user": session.max_charges_per_user()},
        privacy=config.privacy,
        target=target,
    )


_OPTION_KEYS = {
    "run_mab": frozenset({"means", "batch_size"}),
    "run_robust": frozenset(
        {
            "model", "clip", "alpha", "strategy", "magnitude", "estimator", "variance", "width_scale",
            "failure_probability", "arms", "dimension", "reward_model", "scale",
        }
    ),
}  # fmt: skip
"""The ``--option`` keys each runner reads (anything else is refused by ``dpcert bandit run``)."""


# =========================================================================== seed 001 algorithms
def run_mab(config: registry.RunConfig) -> registry.BanditRun:
    """``dpcert bandit run sdp-ae | vb-sdp-ae | mab-se`` (options: ``means``, ``batch_size``)."""
    bandit = _mab_bandit(config.options)
    rng = np.random.default_rng(config.seed)
    session = _session(config)
    common = dict(runs=config.runs, session=session)
    privacy = config.privacy
    certified = True
    if config.algorithm in ("sdp-ae", "vb-sdp-ae") and privacy != "shuffle":
        raise InvalidParameter(
            "privacy", privacy, f"'shuffle' for {config.algorithm} (pass --privacy shuffle)"
        )
    if privacy == "shuffle":
        epsilon = _require(config.epsilon, "epsilon", privacy)
        delta = _require(config.delta, "delta", privacy)
        summation, certified = _shuffle_summation(epsilon, delta)
        if config.algorithm == "sdp-ae":
            size = int(config.options.get("batch_size", max(1, math.ceil(summation.noise_bits / 4))))
            schedule = BatchSchedule("fixed", size)
        else:
            schedule = BatchSchedule("doubling")
        name = "sdp-ae" if config.algorithm == "sdp-ae" else "vb-sdp-ae"
        result = batched_arm_elimination(
            bandit, config.horizon, summation, schedule, rng, algorithm=name, **common
        )
    elif privacy == "none":
        size = int(config.options.get("batch_size", 1))
        result = successive_elimination(bandit, config.horizon, rng, batch_size=size, **common)
    elif privacy == "central":
        epsilon = _require(config.epsilon, "epsilon", privacy)
        result = central_dp_se(bandit, config.horizon, rng, epsilon=epsilon, **common)
    elif privacy == "local":
        epsilon = _require(config.epsilon, "epsilon", privacy)
        result = local_dp_se(bandit, config.horizon, rng, epsilon=epsilon, **common)
    else:
        raise InvalidParameter("privacy", privacy, "none, central, local or shuffle")
    extras = {
        "noise_bits": result.parameters.get("noise_bits"),
        "certified": certified,
        "phases": result.phases,
        "good_event_violations": int(result.good_event_violated.sum()),
        "best_arm_eliminated": int(result.best_arm_eliminated.sum()),
        "privacy_note": "each user is in exactly one batch: the run's guarantee is one summation's "
        "(spec 001 §1.2), with no composition over batches, phases or arms",
    }
    return _to_bandit_run(config, result, int(result.users_aggregated.max()), session, extras)


# =========================================================================== seed 003 algorithm
def _linear_instance(options: Mapping[str, Any], seed: int) -> LinearArms:
    return LinearArms.random_sphere(
        int(options.get("arms", SEED003_SETTING["arms"])),
        int(options.get("dimension", SEED003_SETTING["dimension"])),
        np.random.default_rng([seed, 3]),
        str(options.get("reward_model", "signed-bernoulli")),
    )


IN_RANGE_PREFIX = "in-range-"


def _robust_adversary(
    options: Mapping[str, Any],
    instance: LinearArms,
    clients: LaplaceClients,
    horizon: int,
    failure_probability: float,
) -> Adversary | InRangeAdversary:
    """The ``strategy`` option's adversary: the engine's (random | constant | targeted | sign-flip, with
    ``magnitude``) or an in-range one (in-range-targeted | in-range-coordinated, values ``±scale·Ȳ`` inside
    the engine's M1 clean range Ȳ at the engine's per-event δ = δ'/(K T²))."""
    strategy = str(options.get("strategy", "random"))
    alpha = float(options.get("alpha", 0.0))
    if not strategy.startswith(IN_RANGE_PREFIX):
        if "scale" in options:
            raise InvalidParameter(
                "scale", options["scale"], "only with strategy=in-range-targeted|coordinated"
            )
        return Adversary(alpha, strategy, float(options.get("magnitude", 1e6)))
    if "magnitude" in options:
        raise InvalidParameter("magnitude", options["magnitude"], "not with an in-range strategy (use scale)")
    allowed = ", ".join(IN_RANGE_PREFIX + name for name in IN_RANGE_STRATEGIES)
    if strategy[len(IN_RANGE_PREFIX) :] not in IN_RANGE_STRATEGIES:
        raise InvalidParameter(
            "strategy", strategy, "one of random, constant, targeted, sign-flip, " + allowed
        )
    if clients.model != "M1":
        raise InvalidParameter("strategy", strategy, "an in-range strategy with model=M1 only")
    return InRangeAdversary(
        alpha,
        instance.arms,
        instance.means,
        strategy[len(IN_RANGE_PREFIX) :],
        clip=clients.clip,
        laplace_scale=clients.scale(),
        delta=failure_probability / (instance.arms.shape[0] * horizon**2),
        scale=float(options.get("scale", 1.0)),
    )


def run_robust(config: registry.RunConfig) -> registry.BanditRun:
    """``dpcert bandit run robust-elimination --privacy none|local`` (options: ``model`` M1|M2, ``alpha``,
    ``strategy`` (random | constant | targeted | sign-flip | in-range-targeted | in-range-coordinated),
    ``magnitude``, ``scale`` (in-range only, fraction of Ȳ), ``width_scale``, ``estimator``
    (filter | clip-only | least-squares), ``variance`` (default by client model), ``arms``, ``dimension``)."""
    options = config.options
    if config.privacy not in ("none", "local"):
        raise InvalidParameter("privacy", config.privacy, "'none' or 'local' for robust-elimination")
    epsilon = None if config.privacy == "none" else _require(config.epsilon, "epsilon", "local")
    model = str(options.get("model", "M1"))
    batches = options.get("batches")
    batches = math.ceil(math.log(config.horizon)) if batches is None else int(batches)
    reports = 1 if model == "M1" else max(1, batches - 1)  # an M2 client reports once per phase
    per_report = None if epsilon is None else epsilon / reports  # pure DP: the losses add up exactly
    clients = LaplaceClients(model, per_report, float(options.get("clip", 1.0)))
    session = _session(config)
    instance = _linear_instance(options, config.seed)
    failure_probability = float(options.get("failure_probability", SEED003_SETTING["failure_probability"]))
    adversary = _robust_adversary(options, instance, clients, config.horizon, failure_probability)
    result = robust_elimination(
        instance,
        config.horizon,
        np.random.default_rng(config.seed),
        clients=clients,
        adversary=adversary,
        estimator=str(options.get("estimator", "filter")),
        variance=None if options.get("variance") is None else str(options["variance"]),
        width_scale=float(options.get("width_scale", SEED003_SETTING["width_scale"])),
        failure_probability=failure_probability,
        batches=batches,
        runs=config.runs,
        session=session,
    )
    extras = {
        "event_level_certificate": None if result.certificate is None else result.certificate.to_dict(),
        "batches": result.batches.tolist(),
        "best_arm_eliminated": int(result.best_arm_eliminated.sum()),
        **{key: value for key, value in result.parameters.items() if key != "delta_per_event"},
    }
    extras["epsilon_per_report"] = per_report
    return _to_bandit_run(config, result, int(result.users.max()), session, extras)


# =========================================================================== reproductions
def _mean_se(values: np.ndarray) -> dict[str, float]:
    values = np.asarray(values, dtype=float)
    stderr = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else 0.0
    return {"mean": float(values.mean()), "stderr": stderr}


def _save(out: Path, stem: str, summary: dict[str, Any], curves: Mapping[str, np.ndarray]) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(summary, indent=2, allow_nan=False))
    np.savez_compressed(
        out / f"{stem}.npz", **{key.replace(" ", "_"): value for key, value in curves.items()}
    )
    if not curves:
        return summary
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - the plot extra is optional
        return summary
    figure, axis = plt.subplots(figsize=(6, 4))
    for label, curve in curves.items():
        if label.endswith("checkpoints"):
            continue
        grid = curves.get(label.split("|")[0] + "|checkpoints")
        if grid is None:
            continue
        mean = curve.mean(axis=0)
        stderr = curve.std(axis=0, ddof=1) / math.sqrt(curve.shape[0]) if curve.shape[0] > 1 else 0 * mean
        axis.plot(grid, mean, label=label.split("|")[0])
        axis.fill_between(grid, mean - stderr, mean + stderr, alpha=0.2)
    axis.set_xlabel("round")
    axis.set_ylabel("cumulative pseudo-regret")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(out / f"{stem}.png", dpi=120)
    plt.close(figure)
    summary["plot"] = str(out / f"{stem}.png")
    return summary


def _row(result: EliminationResult | RobustEliminationResult, seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "regret": _mean_se(result.final_regret),
        "seconds": seconds,
        "runs": int(result.final_regret.size),
        **extra,
    }


def reproduce_seed001(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizon: int = SEED001_HORIZON,
    epsilons: tuple[float, ...] = SEED001_EPSILONS,
) -> dict[str, Any]:
    """Spec 001 §7: regret (mean ± s.e.) and wall time of SDP-AE, VB-SDP-AE and the baselines."""
    runs = SEED001_RUNS if runs is None else runs
    bandit = MultiArmedBandit(np.asarray(SPEC_001_MEANS))
    rows: dict[str, Any] = {}
    curves: dict[str, np.ndarray] = {}

    def timed(label: str, call: Callable[[np.random.Generator], EliminationResult], **extra: Any) -> None:
        started = time.perf_counter()
        result = call(np.random.default_rng([seed, len(rows)]))
        seconds = time.perf_counter() - started
        rows[label] = _row(
            result,
            seconds,
            good_event_violations=int(result.good_event_violated.sum()),
            best_arm_eliminated=int(result.best_arm_eliminated.sum()),
            certificate=None if result.certificate is None else result.certificate.summary(),
            **extra,
        )
        curves[f"{label}|regret"] = result.regret_curve
        curves[f"{label}|checkpoints"] = result.checkpoints

    timed("non-private SE (m=1)", lambda rng: successive_elimination(bandit, horizon, rng, runs=runs))
    timed(
        "non-private VB (sigma=0)",
        lambda rng: batched_arm_elimination(
            bandit, horizon, ExactSum(), BatchSchedule("doubling"), rng, runs=runs
        ),
    )
    for epsilon in epsilons:
        summation, certified = _shuffle_summation(epsilon, SEED001_DELTA)
        n = summation.noise_bits
        info = {"epsilon": epsilon, "noise_bits": n, "sigma2": n / 4, "certified": certified}
        timed(
            f"SDP-AE eps={epsilon}",
            lambda rng, n=n: sdp_ae(bandit, horizon, rng, noise_bits=n, runs=runs),
            **info,
        )
        timed(
            f"VB-SDP-AE eps={epsilon}",
            lambda rng, n=n: vb_sdp_ae(bandit, horizon, rng, noise_bits=n, runs=runs),
            **info,
        )
        timed(
            f"central DP-SE eps={epsilon}",
            lambda rng, e=epsilon: central_dp_se(bandit, horizon, rng, epsilon=e, runs=runs),
            epsilon=epsilon,
        )
        timed(
            f"local DP-SE eps={epsilon}",
            lambda rng, e=epsilon: local_dp_se(bandit, horizon, rng, epsilon=e, runs=runs),
            epsilon=epsilon,
        )
    summary = {
        "name": "seed001-shuffle-mab",
        "setting": {"means": list(SPEC_001_MEANS), "horizon": horizon, "delta": SEED001_DELTA, "runs": runs},
        "rows": rows,
    }
    return _save(out, "seed001_shuffle_mab", summary, curves)


def _seed003_instance(seed: int) -> LinearArms:
    return LinearArms.random_sphere(
        SEED003_SETTING["arms"], SEED003_SETTING["dimension"], np.random.default_rng([seed, 3])
    )


def _run003(instance: LinearArms, horizon: int, runs: int, rng_key: list[int], **kwargs: Any):
    started = time.perf_counter()
    result = robust_elimination(
        instance,
        horizon,
        np.random.default_rng(rng_key),
        runs=runs,
        width_scale=SEED003_SETTING["width_scale"],
        failure_probability=SEED003_SETTING["failure_probability"],
        **kwargs,
    )
    return result, time.perf_counter() - started


def reproduce_seed003_e1(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizons: tuple[int, ...] = (10_000, 30_000, 100_000, 300_000, 1_000_000),
) -> dict[str, Any]:
    """E1: non-private, α = 0; log–log slope of regret vs T (spec expects 0.35–0.65); a* survival."""
    runs = SEED003_RUNS if runs is None else runs
    instance = _seed003_instance(seed)
    rows, means = {}, []
    for index, horizon in enumerate(horizons):
        result, seconds = _run003(
            instance, horizon, runs, [seed, 1, index], clients=LaplaceClients(epsilon=None)
        )
        rows[str(horizon)] = _row(
            result,
            seconds,
            best_arm_survived=float(1.0 - result.best_arm_eliminated.mean()),
            max_batches=int(result.batches.max()),
            batch_limit=math.ceil(math.log(horizon)),
        )
        means.append(result.final_regret.mean())
    slope = float(np.polyfit(np.log(horizons), np.log(means), 1)[0])
    summary = {
        "name": "seed003-e1-sanity",
        "setting": {**SEED003_SETTING, "runs": runs},
        "rows": rows,
        "slope": slope,
    }
    return _save(out, "seed003_e1", summary, {})


E2_ADVERSARIES = (
    ("constant 1e6", "constant", 1e6),
    ("targeted 5", "targeted", 5.0),
    ("targeted 50", "targeted", 50.0),
    ("sign-flip x50", "sign-flip", 50.0),
)


def reproduce_seed003_e2(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizon: int = 100_000,
    alphas: tuple[float, ...] = (0.0, 0.005, 0.01, 0.02, 0.05),
    adversaries: tuple[tuple[str, str, float], ...] = E2_ADVERSARIES,
) -> dict[str, Any]:
    """E2: robustness vs α, robust filter against plain least squares, four adversaries (non-private)."""
    runs = SEED003_RUNS if runs is None else runs
    instance = _seed003_instance(seed)
    rows: dict[str, Any] = {}
    for label, strategy, magnitude in adversaries:
        for alpha in alphas:
            for estimator in ("robust", "least-squares"):
                result, seconds = _run003(
                    instance,
                    horizon,
                    runs,
                    [seed, 2, int(alpha * 1000)],
                    clients=LaplaceClients(epsilon=None),
                    adversary=Adversary(alpha, strategy, magnitude),
                    estimator=estimator,
                )
                rows[f"{label} | alpha={alpha} | {estimator}"] = _row(
                    result, seconds, best_arm_lost=int(result.best_arm_eliminated.sum())
                )
    summary = {
        "name": "seed003-e2-robustness",
        "setting": {**SEED003_SETTING, "runs": runs, "horizon": horizon, "spec_horizon": 1_000_000},
        "rows": rows,
    }
    return _save(out, "seed003_e2", summary, {})


def reproduce_seed003_e3(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizon: int = 100_000,
    epsilons: tuple[float | None, ...] = (0.5, 1.0, 2.0, 5.0, None),
) -> dict[str, Any]:
    """E3: privacy cost in M1 at α = 0: regret against ε (spec expects ∝ 1 + c/ε)."""
    runs = SEED003_RUNS if runs is None else runs
    instance = _seed003_instance(seed)
    rows = {}
    for epsilon in epsilons:
        result, seconds = _run003(
            instance, horizon, runs, [seed, 3], clients=LaplaceClients("M1", epsilon=epsilon)
        )
        rows["inf" if epsilon is None else str(epsilon)] = _row(result, seconds)
    summary = {
        "name": "seed003-e3-privacy",
        "setting": {**SEED003_SETTING, "runs": runs, "horizon": horizon},
        "rows": rows,
    }
    return _save(out, "seed003_e3", summary, {})


def reproduce_seed003_e4(
    runs: int | None = None,
    out: Path = Path("dpcert-reproduce"),
    seed: int = 0,
    *,
    horizons: tuple[int, ...] = (10_000, 100_000, 1_000_000),
    epsilons: tuple[float, ...] = (0.5, 1.0),
) -> dict[str, Any]:
    """E4: client model M1 (one report per reward) against M2 (one aggregated report per action owner)."""
    runs = SEED003_RUNS if runs is None else runs
    instance = _seed003_instance(seed)
    rows = {}
    for epsilon in epsilons:
        for horizon in horizons:
            for model in ("M1", "M2"):
                result, seconds = _run003(
                    instance,
                    horizon,
                    runs,
                    [seed, 4, horizon],
                    clients=LaplaceClients(model, epsilon=epsilon),
                )
                rows[f"{model} | eps={epsilon} | T={horizon}"] = _row(
                    result,
                    seconds,
                    client_level_epsilon=result.client_level_epsilon,
                    best_arm_lost=int(result.best_arm_eliminated.sum()),
                )
    summary = {"name": "seed003-e4-m1-vs-m2", "setting": {**SEED003_SETTING, "runs": runs}, "rows": rows}
    return _save(out, "seed003_e4", summary, {})


# =========================================================================== registration
for _name, _description, _models, _run in (
    (
        "sdp-ae",
        "SDP-AE: shuffle-model arm elimination, fixed batches m = ceil(sigma^2) (seed 001 Alg. 1)",
        ("shuffle",),
        run_mab,
    ),
    (
        "vb-sdp-ae",
        "VB-SDP-AE: shuffle-model arm elimination, batches 2^t (seed 001 Alg. 2)",
        ("shuffle",),
        run_mab,
    ),
    (
        "mab-se",
        "successive elimination on a Bernoulli MAB: none (m=1), central (Laplace), "
        "local (randomized response), shuffle (VB-SDP-AE)",
        ("none", "central", "local", "shuffle"),
        run_mab,
    ),
    (
        "robust-elimination",
        "robust locally private batched elimination for linear bandits (seed 003 Alg. 1, clients M1/M2)",
        ("none", "local"),
        run_robust,
    ),
):
    registry.register_algorithm(
        registry.AlgorithmSpec(_name, _description, _models, _run, _OPTION_KEYS[_run.__name__])
    )

for _name, _description, _reproduce in (
    (
        "seed001-shuffle-mab",
        "seed 001 (spec §7): SDP-AE / VB-SDP-AE vs non-private, central, local",
        reproduce_seed001,
    ),
    (
        "seed003-e1-sanity",
        "seed 003 E1: non-private regret vs T (slope), best-arm survival",
        reproduce_seed003_e1,
    ),
    (
        "seed003-e2-robustness",
        "seed 003 E2: regret vs corruption alpha, robust vs plain LS",
        reproduce_seed003_e2,
    ),
    ("seed003-e3-privacy", "seed 003 E3: regret vs epsilon in client model M1", reproduce_seed003_e3),
    ("seed003-e4-m1-vs-m2", "seed 003 E4: client models M1 vs M2 across T and epsilon", reproduce_seed003_e4),
):
    registry.register_reproduction(registry.ReproductionSpec(_name, _description, _reproduce))
