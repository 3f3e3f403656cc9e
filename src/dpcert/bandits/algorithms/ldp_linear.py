"""LDP linear contextual bandit with an online-learner confidence set (Improved-rate LDP linear
bandits).

"Improved rate for Locally Differentially Private Linear Bandits" (anonymous submission;
docs/REFERENCES.md).  Each user perturbs her own chosen feature vector and reward,

    x̃_t = x_t + ζ_t + η_{x,t},   ỹ_t = y_t + η_{y,t},   ζ ~ N(0, Δ² I), η ~ N(0, σ² I)      (§2.2)

and sends only ``(x̃_t, ỹ_t)``.  The server runs an online learner on the de-biased loss
``l_t(θ) = (⟨x̃_t, θ⟩ − ỹ_t)² − ‖θ‖²_Σ`` (Σ = σ² I; the printed ⟨x̃_t, θ_t⟩ inside the square is a typo,
docs/PAPER_NOTES.md, PN-IRL-2), and turns its predictions into a confidence ellipsoid by the
online-to-confidence-set conversion: centre ``θ̂_N = Ṽ_{N−1}^{-1} ũ_{N−1}``, ``Ṽ = I + Σ x̃ x̃ᵀ``,
``ũ = Σ ⟨θ_t, x̃_t⟩ x̃_t`` (Lemma 3.3, with the +I of the proof).  The action maximises
``⟨x, θ̂⟩ + rad·‖x‖_{Ṽ^{-1}}``.

The online learner is chosen by ``learner``: ``"ogd"`` (default) is projected online gradient descent, which
the paper says "has the same empirical performance" as its Maler (§5); ``"maler"`` is Maler (Wang, Lu & Zhang
2019, the paper's Algorithm 3, not in the provided text; :mod:`dpcert.bandits.algorithms.maler`) told the
horizon T, and ``"anytime-maler"`` its doubling-trick variant (the paper's Algorithm 7).  Both Maler variants
get ``G`` = the engine's clip constant of their base learner and ``D`` = the domain radius.  The learner only
post-processes the releases, so it never changes the certificate.

Privacy (Thm 3.2 and docs/PAPER_NOTES.md, PN-IRL-1).  The paper calibrates ``σ = 2√(2 ln(1.25/δ))/ε``
for x̃ and ỹ *separately* (sensitivity 2 each, classical Gaussian, ε < 1 only).  The release is the
*pair*, whose ℓ2 sensitivity is ``√(2² + 2²) = 2√2``; the ``analytic_joint`` calibration (default) is
the least σ meeting (ε, δ) for that pair by the exact Gaussian profile (Balle & Wang 2018, Thm 8).  The
deliberate perturbation ζ only adds noise to x̃; it is ignored by the certificate (conservative).
The clipped gradient and everything the server computes are post-processing.

Model selection (Algorithm 2, Private Bandits Combiner, after Cutkosky, Das & Purohit 2020): base
learners with different assumed λ_min run side by side; each round one active learner is chosen by
its putative upper bound and learners whose regret test fails are eliminated.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from dpcert.bandits.calibration.ldp_linear import LocalCalibration
from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert.bandits.algorithms.maler import AnytimeMaler, Maler, clip_norm, debiased_gradient, project_ball
from dpcert.bandits.environments.contextual import ContextualLinearBandit
from dpcert.bandits.experiment import certified_run
from dpcert.bandits.registry import BanditRun
from dpcert.bandits.results import Run
from dpcert.certificates import Certificate
from dpcert.errors import DataOutOfBounds, InvalidParameter
from dpcert.mechanisms.discrete_gaussian_l2 import SecureL2Gaussian
from dpcert.mechanisms.secure.samplers import IntegerPool
from dpcert.profiles import TrustModel
from dpcert.session import PrivacySession

RADII = ("log", "theory")
STEPS = ("strongly_convex", "convex")


# ----------------------------------------------------------------------------- privacy


def secure_release(
    features: np.ndarray, rewards: np.ndarray, mechanism: SecureL2Gaussian, noise: IntegerPool
) -> tuple[np.ndarray, np.ndarray]:
    """Each user's ``g (round((x, y)/g) + Z)``, Z of d + 1 integer N_Z(0, σ²) draws (exact multiples of g).

    ``features`` (users, d) and ``rewards`` (users,) must satisfy ``‖x‖ <= 1``, ``|y| <= 1`` (the
    sensitivity the certificate is computed for); violations raise :class:`DataOutOfBounds`.  ``noise``
    hands out the integer draws (:class:`~dpcert.mechanisms.secure.samplers.IntegerPool` at the
    mechanism's σ in grid steps).
    """
    features = np.asarray(features, dtype=float)
    rewards = np.asarray(rewards, dtype=float)
    if np.any(fixed_order.norm(features) > 1.0 + 1e-12) or np.any(np.abs(rewards) > 1.0):
        raise DataOutOfBounds("pair (x, y)", "<outside the unit ball>", "||x|| <= 1 and |y| <= 1")
    pair = np.concatenate([features, rewards[..., None]], axis=-1)
    units = mechanism.grid.to_units(pair)
    released = mechanism.grid.from_units(units + noise.take(units.shape))
    return released[..., :-1], released[..., -1]


def randomize(
    features: np.ndarray, rewards: np.ndarray, sigma: float, perturbation: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The user's release ``(x + ζ + η_x, y + η_y)`` (§2.2); ``perturbation`` is Δ (std of ζ)."""
    noisy_x = features + math.hypot(sigma, perturbation) * rng.standard_normal(features.shape)
    noisy_y = rewards + sigma * rng.standard_normal(rewards.shape)
    return noisy_x, noisy_y


def perturbation_variance(lambda_min: float, threshold: float) -> float:
    """Δ² rule of Alg. 1: 0 if the assumed λ_min exceeds the threshold λ̄, else λ̄."""
    return 0.0 if lambda_min > threshold else threshold


def clip_constant(
    *, radius: float, sigma: float, perturbation: float, horizon: int, failure: float, c: float
) -> float:
    """G of Alg. 1 (reconstructed; docs/PAPER_NOTES.md, PN-IRL-4: the lost "+" restored; ``c`` ≥ d accounts
    for ‖η_x‖ ~ σ√d).

    ``G = 2√(2 log(2T/β))(2Dσ + 2σ + DΔ + Δ) + 2 log(2T/β)(2DΔ² + 4DΔσ + 4Δσ + 2Dσ² + 2σ² + D c σ²)
    + 2D + 2``.
    """
    D, s, p = radius, sigma, perturbation
    log_term = math.log(2.0 * horizon / failure)
    first = 2.0 * math.sqrt(2.0 * log_term) * (2 * D * s + 2 * s + D * p + p)
    second = (
        2.0 * log_term * (2 * D * p**2 + 4 * D * p * s + 4 * p * s + 2 * D * s**2 + 2 * s**2 + D * c * s**2)
    )
    return first + second + 2 * D + 2


# ----------------------------------------------------------------------------- learners
@dataclass(frozen=True)
class BaseLearner:
    """One instance of Algorithm 1: assumed λ_min, feature perturbation Δ², step rule and radius.

    ``radius="log"`` uses ``rad_t = radius_scale · √log(t + 1)`` (dpcert's choice: the paper states no radius
    constant, docs/PAPER_NOTES.md, PN-IRL-4, and the theory radius is vacuous at the paper's T; the
    regret depends strongly on ``radius_scale``: ``dpcert reproduce improved-ldp-linear-radius-study``);
    ``radius="theory"`` uses ``radius_scale · √(M_N + K_N)`` with the Lemma 3.5
    plug-ins (γ = 1, c = 1).
    """

    lambda_min: float
    perturbation_variance: float
    step: str = "strongly_convex"
    radius: str = "log"
    radius_scale: float = 0.5

    def __post_init__(self) -> None:
        check.nonnegative_finite("lambda_min", self.lambda_min)
        check.nonnegative_finite("perturbation_variance", self.perturbation_variance)
        if self.step not in STEPS:
            raise InvalidParameter("step", self.step, "one of " + ", ".join(STEPS))
        if self.radius not in RADII:
            raise InvalidParameter("radius", self.radius, "one of " + ", ".join(RADII))
        check.nonnegative_finite("radius_scale", self.radius_scale)

    @property
    def modulus(self) -> float:
        """Strong-convexity modulus of the expected loss, μ = 2(λ_min + Δ²)."""
        return 2.0 * (self.lambda_min + self.perturbation_variance)


def theory_radius(
    rounds: int | np.ndarray,
    *,
    learner: BaseLearner,
    gradient_bound: float,
    domain: float,
    sigma: float,
    epsilon: float,
    delta: float,
    horizon: int,
    failure: float,
    noise_scale: float = 1.0,
) -> float | np.ndarray:
    """``√(M_N + K_N)`` of Lemma 3.3 with S_N and M_N from Lemma 3.5 (constants 1)."""
    mu = learner.modulus
    if mu <= 0:
        raise InvalidParameter(
            "lambda_min", learner.lambda_min, "lambda_min + Delta^2 > 0 for the theory radius"
        )
    G, DM, n = gradient_bound, 2.0 * domain, np.maximum(rounds, 2)
    log_n, log_fail, log_tb = np.log(n), math.log(1.0 / failure), math.log(horizon / failure)
    s_n = (G**2 / mu**2 + G * DM / mu) * log_n + (G**2 / mu**2) * log_fail
    m_n = (G**2 / mu + G * DM) * log_n + (G**2 / mu) * log_fail
    p2 = learner.perturbation_variance
    k_n = (
        domain * p2 * log_tb * np.sqrt(n * s_n)
        + (noise_scale + domain * math.sqrt(math.log(1.0 / delta)) / epsilon + domain * math.sqrt(p2)) ** 2
        * log_tb
        + (math.log(1.0 / delta) / epsilon**2 + p2) * log_tb * s_n
    )
    return np.sqrt(m_n + k_n)


def default_learner_grid(horizon: int) -> list[BaseLearner]:
    """Base learners of Alg. 2: i = 1 the worst-case learner (λ_min = 0, Δ² = λ̄ = T^{-1/8}; dpcert
    runs it with horizon T rather than the doubling Alg. 7), i = 2..M with ``λ_i = 2^{i−1}/T^{1/8}`` and
    Δ² = 0, ``M = ⌈log₂(T)/8⌉ + 1`` so that λ_M ≥ 1."""
    threshold = horizon ** (-1.0 / 8.0)
    count = math.ceil(math.log2(horizon) / 8.0) + 1
    grid = [BaseLearner(0.0, perturbation_variance(0.0, threshold))]
    for i in range(2, count + 1):
        lam = 2.0 ** (i - 1) * threshold
        grid.append(BaseLearner(lam, perturbation_variance(lam, threshold)))
    return grid


@dataclass(frozen=True)
class CombinerConstants:
    """α_i, C_i, η_i, R_i of Thm 4.1 (P = P' = p = 1: the paper leaves them as universal constants)."""

    alpha: np.ndarray
    scale: np.ndarray  # C_i
    rate: np.ndarray  # η_i
    offset: np.ndarray  # R_i
    confidence: float = 1.0  # p

    @classmethod
    def build(
        cls, learners: Sequence[BaseLearner], *, dimension: int, horizon: int, epsilon: float, failure: float
    ):
        T, d, n = horizon, dimension, len(learners)
        log32 = math.log(T) ** 1.5
        t8 = T ** (1.0 / 8.0)
        alpha, scale, rate = np.empty(n), np.empty(n), np.empty(n)
        for i, learner in enumerate(learners):
            if i == 0:
                alpha[i] = 0.75
                scale[i] = log32 * math.sqrt(d) * (epsilon * t8 + 1.0) / (epsilon * t8)
                rate[i] = epsilon * t8 / (math.sqrt(d * T) * (log32 * epsilon * t8 + 1.0))
            else:
                alpha[i] = 0.5
                scale[i] = log32 * math.sqrt(d) / (epsilon * learner.lambda_min)
                rate[i] = epsilon / (log32 * math.sqrt(d * T))
        a = alpha
        factor = (1 - a) ** ((1 - a) / a) * (1 + a) ** (1 / a) / a ** ((1 - a) / a)
        offset = (
            scale * T**a
            + factor * scale ** (1 / a) * T * rate ** ((1 - a) / a)
            + 288.0 * math.log(T**3 * n / failure) * T * rate
            + ((1.0 / rate).sum() - 1.0 / rate)
        )
        return cls(alpha, scale, rate, offset)

    def bound(
        self, plays: np.ndarray, sigma: float, horizon: int, learners: int, failure: float
    ) -> np.ndarray:
        """``C_i n^{α_i} + p √(n (1+σ²) log(T³ M log(n) (1+σ²)/β))`` per play count n (log n >= log 2)."""
        n = np.maximum(plays, 1.0)
        inner = np.log(horizon**3 * learners * np.log(np.maximum(n, 2.0)) * (1 + sigma**2) / failure)
        return self.scale * n**self.alpha + self.confidence * np.sqrt(n * (1 + sigma**2) * inner)


# ----------------------------------------------------------------------------- the run
@dataclass(frozen=True)
class LDPLinearRun(Run):
    """:func:`run_ldp_linear`'s runs: the :class:`~dpcert.bandits.results.Run` (regret after every round,
    one user per round, the randomizer's certificate) and the learners' record.

    Its attributes besides those of :class:`~dpcert.bandits.results.Run`:

    Attributes
    ----------
    plays, active
        Shape (runs, learners): rounds given to each base learner, and whether it is still active.
    clipped_fraction
        Fraction of the rounds whose de-biased gradient was clipped.
    final_online
        Shape (runs, learners, d): the online learners' last iterates.
    """

    plays: np.ndarray
    active: np.ndarray
    clipped_fraction: float
    final_online: np.ndarray


def run_ldp_linear(
    env: ContextualLinearBandit,
    learners: Sequence[BaseLearner],
    *,
    horizon: int,
    sigma: float,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    domain: float = 1.0,
    failure: float = 0.05,
    clip_c: float | None = None,
    session: PrivacySession | None = None,
    certificate: Certificate | None = None,
    learner: str = "ogd",
    secure: SecureL2Gaussian | None = None,
) -> LDPLinearRun:
    """Algorithm 1 (one learner) or Algorithm 2 (several, with the combiner), vectorised over runs.

    Every round, per run: choose the active learner with the largest putative bound U (Alg. 2; skipped
    with one learner), play its UCB action, release ``(x̃, ỹ)``, update only that learner: OGD step on the
    clipped de-biased gradient at its current (pre-update) iterate θ_t, ``Ṽ += x̃x̃ᵀ``,
    ``ũ += ⟨θ_t, x̃⟩ x̃``; then run the elimination test (never removing the last active learner).

    With a ``session`` and the randomizer's ``certificate``, round t's user of run r (local id
    ``r·T + t``) is charged through the session before her noise is drawn.

    ``learner`` picks each base learner's online learner: ``"ogd"`` (default, the step rule of its
    :class:`BaseLearner`), ``"maler"`` (:class:`~dpcert.bandits.algorithms.maler.Maler` told T) or
    ``"anytime-maler"`` (:class:`~dpcert.bandits.algorithms.maler.AnytimeMaler`), with ``gradient_bound`` =
    that base learner's clip constant and ``radius`` = ``domain``; each is updated only in the runs that chose
    its base learner.

    ``secure``: the integer-exact mechanism of :func:`~dpcert.bandits.calibration.ldp_linear.
    calibrate_secure_randomizer` (its ``real_sigma`` must be ``sigma``).  Each user then releases
    :func:`secure_release` of ``(x, y)`` and adds ζ afterwards; the integer draws come in blocks from a
    generator spawned from ``rng`` at the first release (after its charge).  The server's de-biasing
    uses σ²: the discrete Gaussian's variance is at most σ² (Canonne, Kamath & Steinke 2020) and,
    summed exactly, within 1e-6 relative of σ² once σ >= 1 grid step (here σ is thousands of steps);
    rounding moves each released coordinate by at most g/2 = 2^-14 σ (the grid is 2^13 times finer
    than σ), an input perturbation far below the noise.
    """
    started = time.perf_counter()
    horizon = check.positive_int("horizon", horizon)
    sigma = check.positive_finite("sigma", sigma)
    rng = check.generator(rng)
    if secure is not None and (secure.real_sigma != sigma or secure.coordinates != env.dimension + 1):
        allowed = f"a mechanism of {env.dimension + 1} coordinates at sigma {sigma}"
        raise InvalidParameter("secure", secure.certificate.mechanism, allowed)
    secure_noise: IntegerPool | None = None
    if not learners:
        raise InvalidParameter("learners", learners, "at least one base learner")
    if learner not in ONLINE_LEARNERS:
        raise InvalidParameter("learner", learner, "one of " + ", ".join(ONLINE_LEARNERS))
    runs, d, count = env.runs, env.dimension, len(learners)
    c = float(d) if clip_c is None else check.positive_finite("clip_c", clip_c)
    bounds = np.array(
        [
            clip_constant(
                radius=domain,
                sigma=sigma,
                perturbation=math.sqrt(lr.perturbation_variance),
                horizon=horizon,
                failure=failure,
                c=c,
            )
            for lr in learners
        ]
    )
    perturb = np.sqrt([lr.perturbation_variance for lr in learners])
    moduli = np.array([lr.modulus for lr in learners])
    strongly = np.array([lr.step == "strongly_convex" and lr.modulus > 0 for lr in learners])
    models = [_online_learner(learner, d, horizon, domain, bound, runs) for bound in bounds]
    online_learners = [model for model in models if model is not None]  # none for "ogd"
    combiner = CombinerConstants.build(
        learners, dimension=d, horizon=horizon, epsilon=epsilon, failure=failure
    )

    gram = np.broadcast_to(np.eye(d), (runs, count, d, d)).copy()
    vector = np.zeros((runs, count, d))
    online = np.zeros((runs, count, d))
    plays = np.zeros((runs, count))
    reward_sum = np.zeros((runs, count))
    test_sum = np.zeros((runs, count))
    active = np.ones((runs, count), dtype=bool)
    gaps = np.empty((runs, horizon))
    clipped = 0
    run_index = np.arange(runs)
    rows, cols = np.triu_indices(d)
    pair_weight = np.where(rows == cols, 1.0, 2.0)
    flat_upper = rows * d + cols

    def radius_of(learner_index: np.ndarray, rounds: np.ndarray) -> np.ndarray:
        out = np.empty(runs)
        for i, learner in enumerate(learners):
            mask = learner_index == i
            if not mask.any():
                continue
            if learner.radius == "log":
                out[mask] = learner.radius_scale * np.sqrt(np.log(rounds[mask] + 1.0))
            else:
                out[mask] = learner.radius_scale * theory_radius(
                    rounds[mask],
                    learner=learner,
                    gradient_bound=bounds[i],
                    domain=domain,
                    sigma=sigma,
                    epsilon=epsilon,
                    delta=delta,
                    horizon=horizon,
                    failure=failure,
                )
        return out

    for t in range(horizon):
        if count == 1:
            chosen = np.zeros(runs, dtype=np.int64)
        else:
            n = plays
            mean = np.where(n > 0, reward_sum / np.maximum(n, 1), 0.0)
            bonus = combiner.bound(n, sigma, horizon, count, failure) / np.maximum(n, 1)
            upper = mean + np.minimum(1.0, bonus) - combiner.offset / horizon
            upper = np.where(n == 0, np.inf, upper)
            chosen = np.argmax(np.where(active, upper, -np.inf), axis=1)
        features = env.contexts(rng)
        means = env.means(features)
        learner_gram = gram[run_index, chosen]
        right = np.concatenate(
            [np.broadcast_to(np.eye(d), (runs, d, d)), vector[run_index, chosen][..., None]], axis=2
        )
        solved = fixed_order.solve_spd(learner_gram, right)  # I + Σ x̃x̃ᵀ is positive definite
        centre = solved[:, :, d]
        inverse_upper = solved[:, :, :d].reshape(runs, d * d)[:, flat_upper]
        widths = fixed_order.dot(
            features[..., rows] * features[..., cols] * pair_weight, inverse_upper[:, None, :]
        )
        rad = radius_of(chosen, plays[run_index, chosen])
        index = fixed_order.matvec(features, centre) + rad[:, None] * np.sqrt(np.maximum(widths, 0.0))
        arm = np.argmax(index, axis=1)
        x = features[run_index, arm]
        gaps[:, t] = means.max(axis=1) - means[run_index, arm]
        y = np.clip(env.sample_rewards(means[run_index, arm], rng), -1.0, 1.0)
        if session is not None and certificate is not None:  # charged before the user's noise is drawn
            session.charge(run_index * horizon + t, certificate)
        # user side: the only data leaving the user
        zeta = perturb[chosen][:, None] * rng.standard_normal((runs, d))
        if secure is None:
            noisy_x = x + zeta + sigma * rng.standard_normal((runs, d))
            noisy_y = y + sigma * rng.standard_normal(runs)
        else:
            if secure_noise is None:  # first release, after its charge: a stream of its own
                secure_noise = IntegerPool(secure.sigma, rng.spawn(1)[0])
            released_x, noisy_y = secure_release(x, y, secure, secure_noise)
            noisy_x = released_x + zeta
        # server side: post-processing of (x~, y~) and public state
        if online_learners:  # a Maler learner per base learner: θ_t is its prediction
            for i, model in enumerate(online_learners):
                mask = chosen == i
                if mask.any():
                    online[mask, i] = model.predict()[mask]
        theta_t = online[run_index, chosen]
        gradient, was_clipped = clip_norm(debiased_gradient(noisy_x, noisy_y, theta_t, sigma), bounds[chosen])
        clipped += int(was_clipped.sum())
        played = plays[run_index, chosen] + 1.0
        if not online_learners:
            step = np.where(
                strongly[chosen],
                1.0 / (np.maximum(moduli[chosen], 1e-300) * played),
                2.0 * domain / (bounds[chosen] * np.sqrt(played)),
            )
            online[run_index, chosen] = project_ball(theta_t - step[:, None] * gradient, domain)
        else:
            for i, model in enumerate(online_learners):
                mask = chosen == i
                if mask.any():
                    model.update(np.where(mask[:, None], gradient, 0.0), rows=mask)
        gram[run_index, chosen] += noisy_x[:, :, None] * noisy_x[:, None, :]
        vector[run_index, chosen] += fixed_order.dot(theta_t, noisy_x)[:, None] * noisy_x
        # combiner bookkeeping and elimination test (Alg. 2; the garbled "\hat t" read as y~)
        before = plays[run_index, chosen]
        previous_mean = np.where(before > 0, reward_sum[run_index, chosen] / np.maximum(before, 1), 0.0)
        test_sum[run_index, chosen] += previous_mean - noisy_y
        plays[run_index, chosen] = played
        reward_sum[run_index, chosen] += noisy_y
        if count > 1:
            threshold = combiner.bound(plays, sigma, horizon, count, failure)[run_index, chosen]
            fails = test_sum[run_index, chosen] >= threshold
            last = active.sum(axis=1) == 1
            drop = fails & ~last
            active[run_index[drop], chosen[drop]] = False
    if online_learners:
        for i, model in enumerate(online_learners):
            online[:, i] = model.predict()
    cumulative = np.cumsum(gaps, axis=1)
    return LDPLinearRun(
        algorithm="ldp-linear" if count == 1 else "ldp-linear-combiner",
        horizon=horizon,
        final_regret=cumulative[:, -1].copy(),
        checkpoints=np.arange(1, horizon + 1),
        regret_curve=cumulative,
        users=np.full(runs, horizon, dtype=np.int64),
        certificate=certificate,
        seconds=time.perf_counter() - started,
        parameters={
            "dimension": d,
            "learners": count,
            "learner": learner,
            "sigma": sigma,
            "epsilon": epsilon,
            "delta": delta,
            "failure": failure,
            "gradient_bounds": bounds.tolist(),
            "secure": secure is not None,
        },
        plays=plays,
        active=active,
        clipped_fraction=clipped / (runs * horizon),
        final_online=online,
    )


ONLINE_LEARNERS = ("ogd", "maler", "anytime-maler")


def _online_learner(
    name: str, dimension: int, horizon: int, radius: float, gradient_bound: float, runs: int
) -> Maler | AnytimeMaler | None:
    """The Maler learner of one base learner (None for ``"ogd"``, which the engine steps inline)."""
    if name == "maler":
        return Maler(dimension, horizon, radius=radius, gradient_bound=gradient_bound, runs=runs)
    if name == "anytime-maler":
        return AnytimeMaler(dimension, radius=radius, gradient_bound=gradient_bound, runs=runs)
    return None


ONLINE_UCB = BaseLearner(lambda_min=0.1, perturbation_variance=0.0)  # PN-IRL-4; OGD step 1/(0.2 t)
"""dpcert's tuned OnlineUCB: OGD steps ``1/(μ t)``, radius ``0.5·√log(t + 1)`` (not the paper's)."""

PAPER_ONLINE_UCB = BaseLearner(lambda_min=0.1, perturbation_variance=0.0, radius="theory", radius_scale=1.0)
"""OnlineUCB as the paper's Figure 1 states it (docs/PAPER_NOTES.md, PN-IRL-5), run with ``learner="maler"``:
the radius ``√(M_N + K_N)`` of Lemma 3.3 with γ = 1, the Lemma 3.5 plug-ins for M_N and S_N (c = 1),
R = 1, D = 1, failure β = 0.05 and λ_min = 0.1, so Δ² = 0 (λ_min > λ̄ = T^{-1/4})."""
PAPER_LEARNER = "maler"
"""The online learner of the paper's experiments ("we implement Algorithm 1 with Maler", §5)."""


def bandit_run(
    name: str,
    result: LDPLinearRun,
    session: PrivacySession,
    local: LocalCalibration,
    seconds: float,
    extras: dict[str, Any],
) -> BanditRun:
    """The run's certificate: the worst user's composition of her charges (one report each)."""
    return certified_run(
        name, result.regret_curve, [session], result.horizon, seconds=seconds, target=local.claim,
        privacy=TrustModel.LOCAL, extras=extras,
    )  # fmt: skip
