"""One runner for ``dpcert bandit run``: a :class:`~dpcert.bandits.registry.RunConfig` becomes
privacy session(s) → engine → :class:`~dpcert.bandits.registry.BanditRun`.

Each ``run_*_config`` validates its family's ``--option`` keys, splits the per-user target over a
returning user's participations where the family needs it (:mod:`dpcert.bandits.calibration`), opens
the run's sessions (:func:`dpcert.bandits.experiment.open_sessions`: the ledger is charged before every
release), runs the engine of :mod:`dpcert.bandits.algorithms` and derives the run's certificate as the
worst user's composition.  Every algorithm is registered here (:data:`FAMILIES`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.bandits import registry
from dpcert.bandits.algorithms import (
    corruption,
    dp_se,
    dp_ucb,
    elimination,
    ldp_linear,
    ldp_mab,
    linucb,
    mab,
    robust_elimination,
)
from dpcert.bandits.calibration.elimination import release_budget
from dpcert.bandits.calibration.ldp_linear import calibrate_randomizer
from dpcert.bandits.calibration.linucb import BIT_SUM_KEYS, calibrate
from dpcert.bandits.calibration.linucb_secure import calibrate_secure, check_secure_algorithm
from dpcert.bandits.environments import choice_data
from dpcert.bandits.environments.contextual import vaswani_instance
from dpcert.bandits.environments.linear import sample_instances
from dpcert.bandits.environments.mab import SPEC_001_MEANS, MultiArmedBandit
from dpcert.bandits.experiment import certified_run, combine_runs, open_sessions, run_repetitions, target_of
from dpcert.bandits.privatizers import PRIVACY_MODELS, Calibration, make_privatizer
from dpcert.bandits.registry import BanditRun, RunConfig
from dpcert.bandits.results import RunResult
from dpcert.errors import InvalidParameter
from dpcert.profiles import TrustModel
from dpcert.session import PrivacySession

# ============================================================ DP-DPE / DP-PE (Li, Zhou & Ji 2022)
ELIMINATION_ALGORITHMS = {
    "dp-dpe": ("Li, Zhou & Ji 2022 Alg. 1: DPE (privacy none) or CDP/LDP/SDP-DPE", PRIVACY_MODELS),
    "dpe-fixedu": ("Li, Zhou & Ji 2022 §7: DPE with U users per phase (option fixed_users)", ("none",)),
    "dp-pe": ("Li, Zhou & Ji 2022 Alg. 3 (App. C): PE or CDP/LDP/SDP-PE", PRIVACY_MODELS),
}


ELIMINATION_OPTIONS: dict[str, Any] = {
    "dimension": 20,
    "arms": 1000,
    "heterogeneity": 0.1,
    "alpha": 0.8,
    "beta": None,
    "width": None,  # default: "paper" with the paper calibration, "exact" with the tight one
    "fixed_users": None,
    "user_mode": "unique",
    "population": None,
    "heterogeneity_kind": "sphere",
    "noise_kind": "rademacher",
    "reward_bound": None,
    "workers": 1,
    "progress": None,
    "scheduler": "local",
    "secure": False,  # integer-exact noise for the central/local Gaussian privatizers
}


def _elimination_options(config: registry.RunConfig) -> dict[str, Any]:
    unknown = set(config.options) - set(ELIMINATION_OPTIONS)
    if unknown:
        raise InvalidParameter(
            "option", sorted(unknown)[0], "one of " + ", ".join(sorted(ELIMINATION_OPTIONS))
        )
    return {**ELIMINATION_OPTIONS, **dict(config.options)}


def run_elimination_config(config: registry.RunConfig) -> registry.BanditRun:
    """Run R repetitions of one algorithm of this family as configured by ``dpcert bandit run``."""
    started = time.perf_counter()
    options = _elimination_options(config)
    spec_privacy = ELIMINATION_ALGORITHMS[config.algorithm][1]
    if config.privacy_name not in spec_privacy:
        raise InvalidParameter("privacy", config.privacy_name, "one of " + ", ".join(spec_privacy))
    if config.algorithm == "dpe-fixedu" and options["fixed_users"] is None:
        raise InvalidParameter("fixed_users", None, "an integer >= 1 (--option fixed_users=U)")
    width = options["width"] or ("paper" if config.calibration is Calibration.PAPER else "exact")
    settings = elimination.EliminationSettings(
        horizon=config.horizon,
        variant="pe" if config.algorithm == "dp-pe" else "dpe",
        alpha=options["alpha"],
        beta=options["beta"],
        width=width,
        fixed_users=options["fixed_users"],
        user_mode=options["user_mode"],
        population=options["population"],
    )
    runs = check.positive_int("runs", config.runs)
    heterogeneity = 0.0 if settings.variant == "pe" else options["heterogeneity"]
    instances = sample_instances(
        options["dimension"],
        options["arms"],
        runs,
        np.random.default_rng([config.seed, 0]),
        heterogeneity=heterogeneity,
        heterogeneity_kind=options["heterogeneity_kind"],
        noise_kind=options["noise_kind"],
        reward_bound=options["reward_bound"],
    )
    target = target_of(config)
    calibration = config.calibration
    per_release = release_budget(target, settings, calibration)
    privatizer = make_privatizer(
        config.privacy_name,
        reward_bound=instances[0].reward_bound,
        epsilon=None if per_release is None else per_release.epsilon,
        delta=None if per_release is None else per_release.delta,
        calibration=calibration,
        secure=options["secure"],
    )
    sessions = open_sessions(config, runs)

    def one_run(index: int) -> tuple[RunResult, PrivacySession]:
        # the session comes back with the result: a worker process charges its own copy
        rng = np.random.default_rng([config.seed, 1, index])
        run = elimination.run_elimination(
            instances[index], privatizer, settings, rng, session=sessions[index]
        )
        return run, sessions[index]

    returned = run_repetitions(
        one_run,
        runs,
        workers=1 if config.ledger_path is not None else options["workers"],
        progress=options["progress"],
        label=config.algorithm,
        scheduler="local" if config.ledger_path is not None else options["scheduler"],
    )
    results = [run for run, _ in returned]
    communication = [int(r.communication[0]) for r in results if r.communication is not None]
    return combine_runs(
        config.algorithm,
        [r.regret_curve[0] for r in results],
        [session for _, session in returned],
        [int(r.users[0]) for r in results],
        seconds=time.perf_counter() - started,
        target=target,
        privacy=config.privacy,
        extras={
            "calibration": config.calibration_name,
            "secure": bool(options["secure"]),
            "per_release": None if per_release is None else per_release.to_dict(),
            "width": width,
            "settings": asdict(settings),
            "communication": {
                "mean": float(np.mean(communication)),
                "per_run": communication,
                "unit": results[0].parameters["unit"],
            },
            "realised_regret": np.concatenate(
                [r.realised_curve for r in results if r.realised_curve is not None]
            ),
            "phases": [[asdict(p) for p in r.phase_records] for r in results],
        },
    )


# =================== MAB (Tenenbaum et al. 2021), robust (Charisopoulos, Esfandiari & Mirrokni 2023)
def _require(value: float | None, name: str, privacy: str) -> float:
    if value is None:
        raise InvalidParameter(name, None, f"a value (privacy={privacy!r} needs --{name})")
    return value


def _to_bandit_run(
    config: registry.RunConfig,
    result: RunResult,
    users: int,
    session: PrivacySession,
    extras: Mapping[str, Any],
) -> registry.BanditRun:
    """The run's certificate is the worst user's composition of her charges at the target's δ."""
    curves = result.cumulative_regret()
    if curves.size > 20_000_000:
        curves = curves.astype(np.float32)
    return certified_run(
        config.algorithm, curves, [session], users, seconds=result.seconds, target=target_of(config),
        privacy=config.privacy, extras=extras,
    )  # fmt: skip


MAB_OPTIONS = frozenset({"means", "batch_size", "horizon", "reward_model", "secure"})
ROBUST_OPTIONS = frozenset(
    {"model", "clip", "alpha", "strategy", "magnitude", "estimator", "variance", "width_scale",
     "failure_probability", "arms", "dimension", "reward_model", "scale", "secure", "epsilon_per"}
)  # fmt: skip
SECURE_REFUSALS = {
    "none": "no noise is added without privacy",
    "shuffle": "the shuffle binary sum's noise is already integer (Binomial noise bits on integer bit "
    "sums): no floating-point noise to replace",
    "local": "randomized response releases bits (no secure variant)",
}


def _secure_option(
    options: Mapping[str, Any], privacy: str, supported: str | None, algorithm: str, delta: float | None
) -> bool:
    """The ``secure`` option as a bool, refused (naming why) unless ``privacy == supported``
    (``supported=None``: the algorithm has no secure variant) and the target ``delta`` > 0."""
    secure = options.get("secure", False)
    if not isinstance(secure, (bool, np.bool_)):
        raise InvalidParameter("secure", secure, "true or false")
    if secure and privacy != supported:
        reason = SECURE_REFUSALS.get(privacy, "not supported")
        where = f"false for {algorithm}" if supported is None else (
            f"only with --privacy {supported} for {algorithm}"
        )  # fmt: skip
        raise InvalidParameter("secure", True, f"{where}; {privacy}: {reason}")
    if secure and not delta:
        raise InvalidParameter(
            "delta",
            delta,
            "delta > 0 with secure noise (its certificate covers release times, which add a small "
            "term to delta, stated in its notes; e.g. --delta 1e-20)",
        )
    return bool(secure)


def run_mab(config: registry.RunConfig) -> registry.BanditRun:
    """``dpcert bandit run sdp-ae | vb-sdp-ae | mab-se``.

    Options: ``means``, ``batch_size``, ``horizon=known|unknown`` (``unknown``: the doubling trick of
    Tenenbaum et al. 2021, footnote 10; ``--horizon`` is then only when users stop arriving) and
    ``reward_model=bernoulli|beta`` (``beta``: rewards valued in [0, 1], sent as randomized-rounding bits
    to the bit summations) and ``secure`` (``--secure``, privacy ``central`` only: integer-exact noise,
    :class:`~dpcert.bandits.algorithms.mab.CentralLaplaceSum`).
    """
    supported = "central" if config.algorithm == "mab-se" else None  # sdp-ae, vb-sdp-ae: shuffle only
    secure = _secure_option(config.options, config.privacy_name, supported, config.algorithm, config.delta)
    reward_model = str(config.options.get("reward_model", "bernoulli"))
    if reward_model not in ("bernoulli", "beta"):
        raise InvalidParameter("reward_model", reward_model, "bernoulli or beta")
    horizon_mode = str(config.options.get("horizon", "known"))
    if horizon_mode not in mab.HORIZON_MODES:
        raise InvalidParameter("horizon", horizon_mode, "known or unknown")
    bandit = MultiArmedBandit(
        np.asarray(config.options.get("means", SPEC_001_MEANS), dtype=float), reward_model
    )
    rng = np.random.default_rng(config.seed)
    (session,) = open_sessions(config, 1)  # one session: the lockstep runs' ids are disjoint
    common: dict[str, Any] = dict(runs=config.runs, session=session, horizon_mode=horizon_mode)
    privacy = config.privacy_name
    certified = True
    if config.algorithm in ("sdp-ae", "vb-sdp-ae") and privacy != "shuffle":
        raise InvalidParameter(
            "privacy", privacy, f"'shuffle' for {config.algorithm} (pass --privacy shuffle)"
        )
    if privacy == "shuffle":
        epsilon = _require(config.epsilon, "epsilon", privacy)
        delta = _require(config.delta, "delta", privacy)
        summation = mab.shuffle_binary_sum(epsilon, delta)
        certified = summation.certificate is not None
        if config.algorithm == "sdp-ae":
            size = int(config.options.get("batch_size", max(1, math.ceil(summation.noise_bits / 4))))
            if size > config.horizon:  # not one batch would complete: nothing would be learnt or released
                raise InvalidParameter(
                    "horizon",
                    config.horizon,
                    f"at least one batch of sdp-ae ({size} users at this epsilon and delta; or set "
                    "--option batch_size)",
                )
            schedule = mab.BatchSchedule("fixed", size)
        else:
            schedule = mab.BatchSchedule("doubling")
        name = "sdp-ae" if config.algorithm == "sdp-ae" else "vb-sdp-ae"
        result = mab.run_engine(bandit, config.horizon, summation, schedule, rng, algorithm=name, **common)
    elif privacy == "none":
        size = int(config.options.get("batch_size", 1))
        result = mab.successive_elimination(bandit, config.horizon, rng, batch_size=size, **common)
    elif privacy == "central":
        epsilon = _require(config.epsilon, "epsilon", privacy)
        result = mab.central_dp_se(bandit, config.horizon, rng, epsilon=epsilon, secure=secure, **common)
    elif privacy == "local":
        epsilon = _require(config.epsilon, "epsilon", privacy)
        result = mab.local_dp_se(bandit, config.horizon, rng, epsilon=epsilon, **common)
    else:
        raise InvalidParameter("privacy", privacy, "none, central, local or shuffle")
    extras = {
        "noise_bits": result.parameters.get("noise_bits"),
        "certified": certified,
        "phases": result.phases,
        "good_event_violations": int(result.good_event_violated.sum()),
        "best_arm_eliminated": int(result.best_arm_eliminated.sum()),
        "horizon_mode": horizon_mode,
        "epochs": result.parameters.get("epochs"),
        "reward_model": reward_model,
        "secure": secure,
        "privacy_note": "each user is in exactly one batch: the run's guarantee is one summation's "
        "(docs/PAPER_NOTES.md, PN-TKMS-4), with no composition over batches, phases, arms or epochs",
    }
    return _to_bandit_run(config, result, int(result.users.max()), session, extras)


DP_SE_OPTIONS = frozenset({"means", "beta", "decay", "width_scale", "reward_model", "secure"})


def run_dp_se(config: registry.RunConfig) -> registry.BanditRun:
    """``dpcert bandit run dp-se --privacy central``: DP-SE (Sajed & Sheffet 2019).

    Options: ``means`` (default the Tenenbaum et al. 2021 instance), ``beta`` (confidence, default 0.1),
    ``decay`` (Δ_e = decay^-e, default 2), ``width_scale`` (default 1), ``reward_model=bernoulli|beta``
    and ``secure`` (integer-exact noise; needs ``--delta`` > 0).
    """
    options = config.options
    secure = _secure_option(options, config.privacy_name, "central", config.algorithm, config.delta)
    if config.privacy_name != "central":
        raise InvalidParameter("privacy", config.privacy_name, "'central' for dp-se (pass --privacy central)")
    epsilon = _require(config.epsilon, "epsilon", "central")
    reward_model = str(options.get("reward_model", "bernoulli"))
    if reward_model not in ("bernoulli", "beta"):
        raise InvalidParameter("reward_model", reward_model, "bernoulli or beta")
    parameters = dp_se.DPSEParameters(
        epsilon,
        options.get("beta", dp_se.DEFAULT_BETA),
        options.get("decay", dp_se.DEFAULT_DECAY),
        options.get("width_scale", 1.0),
    )
    bandit = MultiArmedBandit(np.asarray(options.get("means", SPEC_001_MEANS), dtype=float), reward_model)
    rng = np.random.default_rng(config.seed)
    (session,) = open_sessions(config, 1)  # one session: the lockstep runs' ids are disjoint
    result = dp_se.dp_se(
        bandit, config.horizon, rng, epsilon=parameters.epsilon, beta=parameters.beta,
        decay=parameters.decay, width_scale=parameters.width_scale, secure=secure, runs=config.runs,
        session=session,
    )  # fmt: skip
    extras = {
        "citation": dp_se.CITATION,
        "epochs": result.phases,
        "beta": parameters.beta,
        "decay": parameters.decay,
        "width_scale": parameters.width_scale,
        "good_event_violations": int(result.good_event_violated.sum()),
        "best_arm_eliminated": int(result.best_arm_eliminated.sum()),
        "reward_model": reward_model,
        "secure": secure,
        "privacy_note": "each reward enters exactly one Laplace release of sensitivity 1: the run's "
        "guarantee is one release's (parallel composition, McSherry 2009)",
    }
    return _to_bandit_run(config, result, int(result.users.max()), session, extras)


BASELINE_OPTIONS = frozenset({"means", "width_scale", "reward_model", "mechanism", "beta"})


def run_private_mab_baseline(config: registry.RunConfig) -> registry.BanditRun:
    """``dpcert bandit run dp-ucb --privacy central`` (Mishra & Thakurta 2015) and ``ldp-ucb`` /
    ``ldp-se --privacy local`` (Ren, Zhou, Liu & Shroff 2020).

    Options: ``means`` (default the Tenenbaum et al. 2021 instance), ``width_scale`` (default 1),
    ``reward_model=bernoulli|beta``; ``ldp-*``: ``mechanism=bernoulli|laplace``; ``ldp-se``: ``beta``.
    """
    options = config.options
    name = config.algorithm
    wanted = "central" if name == "dp-ucb" else "local"
    if config.privacy_name != wanted:
        raise InvalidParameter(
            "privacy", config.privacy_name, f"'{wanted}' for {name} (pass --privacy {wanted})"
        )
    allowed = {"means", "width_scale", "reward_model"} | (
        set() if name == "dp-ucb" else {"mechanism"} | ({"beta"} if name == "ldp-se" else set())
    )
    unknown = set(options) - allowed
    if unknown:
        raise InvalidParameter(
            "option", sorted(unknown)[0], f"one of {', '.join(sorted(allowed))} for {name}"
        )
    epsilon = _require(config.epsilon, "epsilon", wanted)
    reward_model = str(options.get("reward_model", "bernoulli"))
    if reward_model not in ("bernoulli", "beta"):
        raise InvalidParameter("reward_model", reward_model, "bernoulli or beta")
    bandit = MultiArmedBandit(np.asarray(options.get("means", SPEC_001_MEANS), dtype=float), reward_model)
    rng = np.random.default_rng(config.seed)
    (session,) = open_sessions(config, 1)  # one session: the lockstep runs' ids are disjoint
    common: dict[str, Any] = dict(
        epsilon=epsilon, width_scale=options.get("width_scale", 1.0), runs=config.runs, session=session
    )
    if name == "dp-ucb":
        result = dp_ucb.dp_ucb(bandit, config.horizon, rng, **common)
        citation = dp_ucb.CITATION
    elif name == "ldp-ucb":
        result = ldp_mab.ldp_ucb(
            bandit, config.horizon, rng, mechanism=str(options.get("mechanism", "bernoulli")), **common
        )
        citation = ldp_mab.CITATION
    else:
        result = ldp_mab.ldp_se(
            bandit, config.horizon, rng, mechanism=str(options.get("mechanism", "bernoulli")),
            beta=options.get("beta", ldp_mab.DEFAULT_BETA), **common,
        )  # fmt: skip
        citation = ldp_mab.CITATION
    extras = {
        "citation": citation,
        "reward_model": reward_model,
        "good_event_violations": int(result.good_event_violated.sum()),
        "best_arm_eliminated": int(result.best_arm_eliminated.sum()),
        **{
            key: result.parameters[key]
            for key in ("width_scale", "mechanism", "beta", "levels")
            if key in result.parameters
        },
    }
    return _to_bandit_run(config, result, int(result.users.max()), session, extras)


MAX_LINEAR_ENTRIES = 10**7
"""Most arm coordinates (arms x dimension) of a linear instance: its arrays and design stay < 2 GiB."""


def _linear_instance(options: Mapping[str, Any], seed: int) -> robust_elimination.LinearArms:
    arms = check.positive_int("arms", options.get("arms", robust_elimination.SEED003_SETTING["arms"]))
    dimension = check.positive_int(
        "dimension", options.get("dimension", robust_elimination.SEED003_SETTING["dimension"])
    )
    if arms * dimension > MAX_LINEAR_ENTRIES:
        raise InvalidParameter(
            "arms", arms, f"arms x dimension <= {MAX_LINEAR_ENTRIES:.0e} (dimension {dimension})"
        )
    return robust_elimination.LinearArms.random_sphere(
        arms,
        dimension,
        np.random.default_rng([seed, 3]),
        str(options.get("reward_model", "signed-bernoulli")),
    )


IN_RANGE_PREFIX = "in-range-"


def _robust_adversary(
    options: Mapping[str, Any],
    instance: robust_elimination.LinearArms,
    clients: robust_elimination.LaplaceClients,
    horizon: int,
    failure_probability: float,
) -> robust_elimination.Adversary | corruption.InRangeAdversary:
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
        return robust_elimination.Adversary(alpha, strategy, float(options.get("magnitude", 1e6)))
    if "magnitude" in options:
        raise InvalidParameter("magnitude", options["magnitude"], "not with an in-range strategy (use scale)")
    allowed = ", ".join(IN_RANGE_PREFIX + name for name in corruption.IN_RANGE_STRATEGIES)
    if strategy[len(IN_RANGE_PREFIX) :] not in corruption.IN_RANGE_STRATEGIES:
        raise InvalidParameter(
            "strategy", strategy, "one of random, constant, targeted, sign-flip, " + allowed
        )
    if clients.model != "M1":
        raise InvalidParameter("strategy", strategy, "an in-range strategy with model=M1 only")
    return corruption.InRangeAdversary(
        alpha,
        instance.arms,
        instance.means,
        strategy[len(IN_RANGE_PREFIX) :],
        clip=float(clients.report_clip(1)),  # c_r, or its grid rounding with secure noise
        laplace_scale=clients.scale(),
        delta=failure_probability / (instance.arms.shape[0] * horizon**2),
        scale=float(options.get("scale", 1.0)),
    )


def run_robust(config: registry.RunConfig) -> registry.BanditRun:
    """``dpcert bandit run robust-elimination --privacy none|local`` (options: ``model`` M1|M2, ``alpha``,
    ``strategy`` (random | constant | targeted | sign-flip | in-range-targeted | in-range-coordinated),
    ``magnitude``, ``scale`` (in-range only, fraction of Ȳ), ``width_scale``, ``estimator``
    (filter | clip-only | least-squares), ``variance`` (default by client model), ``arms``, ``dimension``,
    ``secure`` (``--secure``, privacy ``local`` only: integer-exact client noise,
    :class:`~dpcert.bandits.algorithms.robust_elimination.LaplaceClients`), ``epsilon_per``).

    ``epsilon_per``: what ``--epsilon`` bounds for an M2 client, who reports once per batch.
    ``"client"`` (default): her total, split evenly over her reports (pure DP adds up exactly), so the
    run's certificate meets ``--epsilon``.  ``"report"``: each report, as in Charisopoulos, Esfandiari &
    Mirrokni 2023 and ``dpcert reproduce charisopoulos-2023-e4``; the run's certificate is then the
    client-level composition, larger than ``--epsilon``, and the run says so.  M1 clients report once:
    both read the same."""
    options = config.options
    if config.privacy_name not in ("none", "local"):
        raise InvalidParameter("privacy", config.privacy_name, "'none' or 'local' for robust-elimination")
    secure = _secure_option(options, config.privacy_name, "local", config.algorithm, config.delta)
    epsilon = None if config.privacy is None else _require(config.epsilon, "epsilon", "local")
    model = str(options.get("model", "M1"))
    batches = options.get("batches")
    batches = math.ceil(math.log(config.horizon)) if batches is None else int(batches)
    scope = str(options.get("epsilon_per", "client"))
    if scope not in ("client", "report"):
        raise InvalidParameter("epsilon_per", scope, "client (a client's total) or report (each report)")
    # an M2 client reports once per phase
    reports = 1 if model == "M1" or scope == "report" else max(1, batches - 1)
    per_report = None if epsilon is None else epsilon / reports  # pure DP: the losses add up exactly
    clients = robust_elimination.LaplaceClients(
        model, per_report, float(options.get("clip", 1.0)), secure=secure
    )
    (session,) = open_sessions(config, 1)  # one session: the lockstep runs' ids are disjoint
    instance = _linear_instance(options, config.seed)
    failure_probability = float(
        options.get("failure_probability", robust_elimination.SEED003_SETTING["failure_probability"])
    )
    adversary = _robust_adversary(options, instance, clients, config.horizon, failure_probability)
    result = robust_elimination.robust_elimination(
        instance,
        config.horizon,
        np.random.default_rng(config.seed),
        clients=clients,
        adversary=adversary,
        estimator=str(options.get("estimator", "filter")),
        variance=None if options.get("variance") is None else str(options["variance"]),
        width_scale=float(options.get("width_scale", robust_elimination.SEED003_SETTING["width_scale"])),
        failure_probability=failure_probability,
        batches=batches,
        runs=config.runs,
        session=session,
    )
    extras = {
        "event_level_certificate": None if result.certificate is None else result.certificate.to_dict(),
        "batches": None if result.batches is None else result.batches.tolist(),
        "best_arm_eliminated": int(result.best_arm_eliminated.sum()),
        **{key: value for key, value in result.parameters.items() if key != "delta_per_event"},
    }
    extras["epsilon_per_report"] = per_report
    extras["epsilon_per"] = scope
    extras["client_level_epsilon"] = result.client_level_epsilon
    return _to_bandit_run(config, result, int(result.users.max()), session, extras)


# ================================================================ LinUCB family (Chowdhury & Zhou 2022)
LINUCB_DESCRIPTIONS = {
    "linucb": (
        "non-private LinUCB (Abbasi-Yadkori, Pál & Szepesvári 2011) in the batched framework of "
        "Chowdhury & Zhou 2022"
    ),
    "linucb-ldp": "LDP-LinUCB (Zheng et al. 2020): Gaussian local randomizer",
    "linucb-jdp": "JDP-LinUCB (Shariff & Sheffet 2018): tree-based aggregation, central model",
    "linucb-sdp-amp": "SDP-LinUCB, P_Amp (Chowdhury & Zhou 2022, Thm 3.2): Gaussian randomizer + shuffler",
    "linucb-sdp-vec": "SDP-LinUCB, P_Vec (Chowdhury & Zhou 2022, Thm 3.5): Cheu et al. 2021 bit summation",
}


LINUCB_OPTIONS = frozenset(
    {"dimension", "arms", "batch_size", "radius", "alpha", "participations", "sigma", "fixed_arms", "reward",
     "secure", "environment", "order"}
) | frozenset(BIT_SUM_KEYS)  # fmt: skip
LDP_LINEAR_OPTIONS = frozenset(
    {"dimension", "arms", "fixed_arms", "lambda_min", "threshold", "perturbation_variance", "radius",
     "radius_scale", "sigma", "learner", "secure", "environment", "order"}
)  # fmt: skip


ENVIRONMENTS = ("chowdhury-zhou", "travel-mode")
"""Contextual environments of the LinUCB and LDP-linear runs (option ``environment``)."""


def _contextual_dimension(options: Mapping[str, Any]) -> int:
    """The feature dimension: option ``dimension`` (default 5), fixed by the travel-mode data at 12."""
    environment = options.get("environment", "chowdhury-zhou")
    if environment not in ENVIRONMENTS:
        raise InvalidParameter("environment", environment, "one of " + ", ".join(ENVIRONMENTS))
    if environment == "travel-mode":
        given = options.get("dimension", choice_data.DIMENSION)
        if given != choice_data.DIMENSION:
            raise InvalidParameter("dimension", given, f"{choice_data.DIMENSION} (the travel-mode features)")
        return choice_data.DIMENSION
    return check.positive_int("dimension", options.get("dimension", 5), minimum=2)


def _contextual_instance(
    config: RunConfig, options: Mapping[str, Any], dimension: int, rng: np.random.Generator, **kwargs: Any
) -> Any:
    """The instance of the LinUCB and LDP-linear runs: Chowdhury & Zhou 2022's (options ``arms`` = 100,
    ``fixed_arms``) or, with ``environment=travel-mode``, the travel-mode bandit of real choices
    (:mod:`dpcert.bandits.environments.choice_data`; option ``order`` iid | by-income)."""
    if options.get("environment", "chowdhury-zhou") == "travel-mode":
        for name in ("arms", "fixed_arms", "reward"):
            if name in options:
                raise InvalidParameter(
                    name, options[name], "left out with environment=travel-mode (set by the data)"
                )
        order = options.get("order", "iid")
        if order not in choice_data.ORDERS:
            raise InvalidParameter("order", order, "one of " + ", ".join(choice_data.ORDERS))
        return choice_data.TravelModeBandit.draw(config.runs, rng, order=order)
    if "order" in options:
        raise InvalidParameter("order", options["order"], "only with environment=travel-mode")
    arms = check.positive_int("arms", options.get("arms", 100))
    fixed = bool(options.get("fixed_arms", True))
    return vaswani_instance(config.runs, dimension, arms, rng, fixed_arms=fixed, **kwargs)


def _known_options(config: RunConfig, known: frozenset[str]) -> dict[str, Any]:
    """The run's ``--option`` settings, refused (naming them) unless every key is in ``known``."""
    unknown = set(config.options) - known
    if unknown:
        raise InvalidParameter("options", sorted(unknown), "any of " + ", ".join(sorted(known)))
    return dict(config.options)


def run_linucb_config(config: RunConfig) -> BanditRun:
    """``dpcert bandit run linucb*``: R repetitions on the instance of Chowdhury & Zhou 2022 (options:
    dimension=5, arms=100, batch_size (an integer or ``auto``, the paper's corollary), radius, alpha,
    participations, sigma, fixed_arms, reward; for linucb-sdp-vec g, b, p; secure: integer-exact noise
    for linucb-ldp, linucb-jdp and linucb-sdp-amp, :mod:`dpcert.bandits.calibration.linucb_secure`)."""
    options = _known_options(config, LINUCB_OPTIONS)
    algorithm = config.algorithm
    secure = options.get("secure", False)
    if not isinstance(secure, (bool, np.bool_)):
        raise InvalidParameter("secure", secure, "true or false")
    if secure:
        check_secure_algorithm(algorithm)
        if options.get("radius", "experiment") == "theory":
            raise InvalidParameter(
                "radius",
                "theory",
                "'experiment' with secure noise (the theory radius's matrix bound is proven for Gaussian "
                "noise only)",
            )
    batch_size = options.get("batch_size", linucb.DEFAULT_BATCH[algorithm])
    if batch_size != "auto":  # "auto": the paper's corollary (calibration.linucb.corollary_batch_size)
        batch_size = check.positive_int("batch_size", batch_size)
    participations = check.positive_int("participations", options.get("participations", 1))
    dimension = _contextual_dimension(options)
    expected = "none" if algorithm == "linucb" else linucb.TRUST[algorithm].value
    if config.privacy_name != expected:
        raise InvalidParameter("privacy", config.privacy_name, f"'{expected}' for {algorithm}")
    bit_sum = {key: options[key] for key in BIT_SUM_KEYS if key in options} or None
    calibrated = (calibrate_secure if secure else functools.partial(calibrate, bit_sum=bit_sum))(
        algorithm,
        epsilon=config.epsilon,
        delta=config.delta,
        horizon=config.horizon,
        batch_size=batch_size,
        dimension=dimension,
        calibration=config.calibration,
        participations=participations,
        sigma=options.get("sigma"),
    )
    if calibrated.batch_rule is not None:
        batch_size = calibrated.batch_rule.batch_size
    rng = np.random.default_rng(config.seed)
    env = _contextual_instance(config, options, dimension, rng, reward=options.get("reward", "bernoulli"))
    start = time.perf_counter()
    (run,) = linucb.run_group(
        env,
        [calibrated],
        horizon=config.horizon,
        batch_size=batch_size,
        rng=rng,
        radius=options.get("radius", "experiment"),
        alpha=options.get("alpha", 0.05),
        participations=participations,
        sessions=open_sessions(config, 1),
    )
    extras = {**run.extras, "secure": bool(secure)}
    return dataclasses.replace(run, seconds=time.perf_counter() - start, extras=extras)


# ============================================================ Improved-rate LDP linear bandits
def _ldp_learners(name: str, horizon: int, options: dict[str, Any]) -> list[ldp_linear.BaseLearner]:
    radius = options.get("radius", "log")
    scale = float(options.get("radius_scale", 0.5))
    if name == "ldp-linear":
        lam = float(options.get("lambda_min", ldp_linear.ONLINE_UCB.lambda_min))
        threshold = float(options.get("threshold", horizon ** (-0.25)))  # Cor 3.6: λ̄ = T^{-1/4}
        explicit = options.get("perturbation_variance")
        p2 = ldp_linear.perturbation_variance(lam, threshold) if explicit is None else float(explicit)
        return [ldp_linear.BaseLearner(lam, p2, radius=radius, radius_scale=scale)]
    return [
        ldp_linear.BaseLearner(lr.lambda_min, lr.perturbation_variance, radius=radius, radius_scale=scale)
        for lr in ldp_linear.default_learner_grid(horizon)
    ]


def run_ldp_linear_config(config: RunConfig) -> BanditRun:
    """``dpcert bandit run ldp-linear | ldp-linear-combiner`` on the instance of §4.1.

    Options: dimension (5), arms (100), fixed_arms (True), lambda_min (0.1), threshold (T^{-1/4}),
    perturbation_variance, radius ('log' | 'theory'), radius_scale (0.5), sigma (user noise), learner
    ('ogd' | 'maler' | 'anytime-maler', the online learner; privacy does not depend on it), secure
    (integer-exact noise on a grid, certified through the pair's l2 sensitivity by zCDP).
    ``calibration``: 'tight' (the default: ``Calibration.LEAST_NOISE``, reported as analytic_joint) or
    'paper'.
    """
    options = _known_options(config, LDP_LINEAR_OPTIONS)
    if config.privacy is not TrustModel.LOCAL:
        raise InvalidParameter("privacy", config.privacy_name, f"'local' for {config.algorithm}")
    calibration = config.calibration
    dimension = _contextual_dimension(options)
    secure = options.get("secure", False)
    if not isinstance(secure, bool):
        raise InvalidParameter("secure", secure, "true or false")
    local = calibrate_randomizer(
        check.epsilon(config.epsilon), check.positive_delta(config.delta), calibration,
        sigma=options.get("sigma"), secure=secure, dimension=dimension,
    )  # fmt: skip
    rng = np.random.default_rng(config.seed)
    env = _contextual_instance(config, options, dimension, rng)
    start = time.perf_counter()
    (session,) = open_sessions(config, 1)
    result = ldp_linear.run_ldp_linear(
        env,
        _ldp_learners(config.algorithm, config.horizon, options),
        horizon=config.horizon,
        sigma=local.sigma,
        epsilon=local.claim.epsilon,
        delta=local.claim.delta,
        rng=rng,
        session=session,
        certificate=local.certificate,
        learner=str(options.get("learner", "ogd")),
        secure=local.secure,
    )
    extras = {
        "learner": str(options.get("learner", "ogd")),
        "calibration": local.calibration,
        "secure": secure,
        "noise": {"sigma": local.sigma},
        "clipped_fraction": result.clipped_fraction,
        "plays_per_learner": result.plays.mean(axis=0).tolist(),
        "active_per_learner": result.active.mean(axis=0).tolist(),
    }
    return ldp_linear.bandit_run(
        config.algorithm, result, session, local, time.perf_counter() - start, extras
    )


# =========================================================================== registration
MAB_ALGORITHMS = {
    "sdp-ae": (
        "SDP-AE: shuffle-model arm elimination, fixed batches m = ceil(sigma^2) (Tenenbaum et al. 2021, "
        "Alg. 1); options horizon=known|unknown, reward_model=bernoulli|beta",
        ("shuffle",),
    ),
    "vb-sdp-ae": (
        "VB-SDP-AE: shuffle-model arm elimination, batches 2^t (Tenenbaum et al. 2021, Alg. 2); options "
        "horizon=known|unknown, reward_model=bernoulli|beta",
        ("shuffle",),
    ),
    "mab-se": (
        "successive elimination on a MAB with rewards in [0, 1]: none (m=1), and dpcert's own central "
        "(Laplace) and local (randomized response) eliminations, shuffle (VB-SDP-AE)",
        ("none", "central", "local", "shuffle"),
    ),
}
DP_SE_ALGORITHMS = {
    "dp-se": (
        "DP-SE: private successive elimination, Laplace(1/eps) on each arm's epoch sum, epochs sized by "
        "the gap 2^-e (Sajed & Sheffet 2019); options beta, decay, width_scale, reward_model, secure",
        ("central",),
    ),
}
BASELINE_ALGORITHMS = {
    "dp-ucb": (
        "DP-UCB: UCB on per-arm private running sums from the binary mechanism, Laplace(L/eps) per tree "
        "node, L = ceil(log2 T) + 1 (Mishra & Thakurta 2015); options width_scale, reward_model",
        ("central",),
    ),
    "ldp-ucb": (
        "LDP-UCB: UCB on locally privatized rewards, Bernoulli response or Laplace (Ren, Zhou, Liu & "
        "Shroff 2020); options mechanism=bernoulli|laplace, width_scale, reward_model",
        ("local",),
    ),
    "ldp-se": (
        "LDP-SE: successive elimination on locally privatized rewards (Ren, Zhou, Liu & Shroff 2020); "
        "options mechanism=bernoulli|laplace, beta, width_scale, reward_model",
        ("local",),
    ),
}
ROBUST_ALGORITHMS = {
    "robust-elimination": (
        "robust locally private batched elimination for linear bandits "
        "(Charisopoulos, Esfandiari & Mirrokni 2023, Alg. 1; clients M1/M2)",
        ("none", "local"),
    ),
}
LDP_LINEAR_ALGORITHMS = {
    "ldp-linear": (
        "LDP linear bandit: de-biased online learner, online-to-confidence-set conversion "
        "(Improved-rate LDP linear bandits, Alg. 1)",
        ("local",),
    ),
    "ldp-linear-combiner": (
        "Improved-rate LDP linear bandits, Alg. 2: private bandits combiner over base learners "
        "with different lambda_min",
        ("local",),
    ),
}
LOCKSTEP = "numpy.random.default_rng(seed): one generator for the R runs in lockstep"
SEEDS: dict[Callable[..., Any], dict[str, str]] = {
    run_elimination_config: {
        "instances": "numpy.random.default_rng([seed, 0]) draws the R instances",
        "repetition r": "numpy.random.default_rng([seed, 1, r]), r = 0, ..., R - 1",
    },
    run_mab: {"runs": LOCKSTEP},
    run_dp_se: {"runs": LOCKSTEP},
    run_private_mab_baseline: {"runs": LOCKSTEP},
    run_robust: {"instance": "numpy.random.default_rng([seed, 3])", "runs": LOCKSTEP},
    run_linucb_config: {"instances, then runs": LOCKSTEP + ", after it drew the R instances"},
    run_ldp_linear_config: {"instances, then runs": LOCKSTEP + ", after it drew the R instances"},
}
"""How each family's runner derives its random streams from ``--seed`` (as the code above does)."""

Family = tuple[Mapping[str, tuple[str, tuple[str, ...]]], Callable[..., Any], frozenset[str] | None]
FAMILIES: tuple[Family, ...] = (
    (ELIMINATION_ALGORITHMS, run_elimination_config, None),
    (MAB_ALGORITHMS, run_mab, MAB_OPTIONS),
    (DP_SE_ALGORITHMS, run_dp_se, DP_SE_OPTIONS),
    (BASELINE_ALGORITHMS, run_private_mab_baseline, BASELINE_OPTIONS),
    (ROBUST_ALGORITHMS, run_robust, ROBUST_OPTIONS),
    (
        {name: (LINUCB_DESCRIPTIONS[name], ("none",) if name == "linucb" else (linucb.TRUST[name].value,))
         for name in linucb.ALGORITHMS},
        run_linucb_config,
        None,
    ),
    (LDP_LINEAR_ALGORITHMS, run_ldp_linear_config, None),
)  # fmt: skip
"""Every algorithm of ``dpcert bandit run``, by family: {name: (description, privacy models)}, the
family's runner and its ``--option`` keys (``None``: the runner checks them)."""

for _algorithms, _run, _options in FAMILIES:
    for _name, (_description, _models) in _algorithms.items():
        _distributable = _run is run_elimination_config  # repetitions one by one (option "scheduler")
        registry.register_algorithm(
            registry.AlgorithmSpec(_name, _description, _models, _run, _options, _distributable, SEEDS[_run])
        )
