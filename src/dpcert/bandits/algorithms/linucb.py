"""The LinUCB family under four trust models, as one batched framework (Chowdhury & Zhou 2022, Alg. 1).

Every algorithm here is Algorithm 1 of Chowdhury & Zhou 2022 ("Shuffle Private Linear Contextual
Bandits", ICML 2022; docs/REFERENCES.md) with a different *privatizer* for the per-user statistic
``z_t = (φ_t y_t, upper(φ_t φ_tᵀ)) ∈ R^{d + d(d+1)/2}``:

==================  ==========  ====================================================================
algorithm           batch B     privatizer
==================  ==========  ====================================================================
``linucb``          1 (or any)  none (Abbasi-Yadkori, Pál & Szepesvári 2011; Lemma A.4, σ = 0)
``linucb-ldp``      1           Gaussian local randomizer (Zheng et al. 2020; Prop. F.1)
``linucb-jdp``      1           tree-based aggregation of Gaussian-noised sums (Shariff & Sheffet 2018)
``linucb-sdp-amp``  20          P_Amp: Gaussian local randomizer amplified by shuffling (Thm 3.2, Alg. 2–4)
``linucb-sdp-vec``  20          P_Vec: Cheu et al. bit summation of vector and matrix (Thm 3.5, Alg. 5–7)
==================  ==========  ====================================================================

The server keeps the noisy running sum of the statistics; the batch-``m`` model is
``V_m = λ I + Σ Ṽ`` and ``θ̂_m = V_m^{-1} u_m`` (Alg. 1), constant within each batch of the fixed
schedule ``t_m = mB`` (§2.1; the determinant-triggered schedule is unsound with noisy V, §6 of the
paper).  The regulariser λ is the "PSD shift" of the proof of Lemma A.4: ``λ = 2 Σ_N`` with
``Σ_N`` a high-probability bound on the operator norm of the cumulative matrix noise, so that
``Σ_N I ≼ H_m ≼ 3 Σ_N I``.  Should the noisy ``V_m`` still fail to be positive definite (probability
≤ α), its eigenvalues are clipped (post-processing, privacy-neutral) and the event is counted.

Privacy of the statistic.  With ``‖φ‖ ≤ 1`` and ``|y| ≤ 1`` the joint ℓ2 sensitivity of ``z`` under
replacement of one user is ``3/√2`` (derived in :func:`joint_sensitivity`), smaller than the paper's
treatment of the vector and the matrix as two releases of sensitivity 2 each.  The ``paper``
calibrations use each theorem's noise (preconditions checked); the ``tight`` ones the least noise
meeting the same (ε, δ): for the Gaussian privatizers by the exact profile (Balle & Wang 2018, Thm 8)
of the joint release, for P_Amp also through amplification by shuffling where that needs less noise
(:mod:`dpcert.mechanisms.shuffle.pamp`), for P_Vec by exact accounting of the binomial counts
(:mod:`dpcert.mechanisms.shuffle.binomial_sum`).  Every run's certificate states the guarantee that the noise
actually used earns, re-derivable from its parameters.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.bandits.algorithms import linucb_kernel
from dpcert.bandits.algorithms.linucb_model import choose_arms, repair_models
from dpcert.bandits.algorithms.linucb_privatizers import (
    Aggregator,
    Calibrated,
    ContinualPrivatizer,
    NoPrivacy,
    statistic_size,
    symmetric_index,
    upper_indices,
    user_statistics,
)
from dpcert.bandits.environments.contextual import ContextualLinearBandit
from dpcert.bandits.experiment import certified_run
from dpcert.bandits.registry import BanditRun
from dpcert.certificates import TrustModel
from dpcert.errors import InvalidParameter
from dpcert.session import PrivacySession

CALIBRATIONS = ("tight", "paper")
RADII = ("theory", "experiment")
JOINT_SENSITIVITY = 3.0 / math.sqrt(2.0)


def joint_sensitivity() -> float:
    """ℓ2 sensitivity of ``z = (φ y, upper(φ φᵀ))`` for ``‖φ‖ ≤ 1``, ``|y| ≤ 1`` (replace one user).

    With ``c = ⟨φ, φ'⟩`` for unit vectors: ``‖φy − φ'y'‖² ≤ 2 + 2|c|`` and
    ``‖upper(φφᵀ − φ'φ'ᵀ)‖² ≤ ‖φφᵀ − φ'φ'ᵀ‖_F² = 2 − 2c²`` (the upper triangle counts each
    off-diagonal entry once; equality when the difference is diagonal, which a rotation of the pair
    achieves).  The sum ``4 + 2|c| − 2c²`` is largest at ``|c| = 1/2``: ``9/2``.  Shorter vectors only
    decrease both terms.  So the sensitivity is ``√(9/2) = 3/√2 ≈ 2.121``; the paper bounds the two
    parts by 2 each and splits the budget between them (proof of Thm B.1).
    """
    return JOINT_SENSITIVITY


# ----------------------------------------------------------------------------- confidence radius
@dataclass(frozen=True)
class ConfidenceRadius:
    """Regulariser λ and radius β_m of the batched UCB index (Chowdhury & Zhou 2022, §2.2–2.3).

    ``theory``: Lemma A.2/A.4 with explicit constants (docs/PAPER_NOTES.md, PN-CZ-7): for cumulative
    per-entry noise scale s, ``Σ_N = s(2√d + 2√ln(4M/α))``, ``Σ_n = s(√d + √(2 ln(4M/α)))``,
    ``λ = max(1, 2Σ_N)``, ``λ_min = λ − Σ_N``, ``λ_max = λ + Σ_N``, ``ν = Σ_n/√λ_min`` and
    ``β_m = √(2 ln(2/α) + d ln(1 + t_m/(d λ_min))) + √λ_max + ν`` (‖θ*‖ ≤ 1).
    ``experiment``: the constant radius of the paper's experiment code: ``Γ = s√d`` (1 if s = 0),
    ``λ = 2Γ`` (``1e-4`` without noise), ``β = √Γ S + R √(d ln((1 + T/Γ) T))`` with S = √d, R = 1/2.
    """

    regulariser: float
    floor: float
    beta: Callable[[int], float]
    kind: str

    @classmethod
    def build(
        cls, kind: str, noise_scale: float, dimension: int, horizon: int, batch_size: int, alpha: float
    ) -> ConfidenceRadius:
        d = dimension
        if kind == "theory":
            log_term = math.log(4.0 * math.ceil(horizon / batch_size) / alpha)
            sigma_matrix = noise_scale * (2.0 * math.sqrt(d) + 2.0 * math.sqrt(log_term))
            sigma_vector = noise_scale * (math.sqrt(d) + math.sqrt(2.0 * log_term))
            lam = max(1.0, 2.0 * sigma_matrix)
            lam_min, lam_max = lam - sigma_matrix, lam + sigma_matrix
            nu = sigma_vector / math.sqrt(lam_min)

            def beta(rounds: int) -> float:
                return (
                    math.sqrt(2.0 * math.log(2.0 / alpha) + d * math.log(1.0 + rounds / (d * lam_min)))
                    + math.sqrt(lam_max)
                    + nu
                )

            return cls(lam, lam_min, beta, kind)
        if kind == "experiment":
            gamma = noise_scale * math.sqrt(d) if noise_scale > 0 else 1.0
            lam = 2.0 * gamma if noise_scale > 0 else 1e-4
            width = math.sqrt(gamma) * math.sqrt(d) + 0.5 * math.sqrt(
                d * math.log((1.0 + horizon / gamma) * horizon)
            )
            return cls(lam, min(lam, gamma), lambda rounds: width, kind)
        raise InvalidParameter("radius", kind, "one of " + ", ".join(RADII))


# ----------------------------------------------------------------------------- the engine
@dataclass(frozen=True)
class EngineResult:
    """Output of :func:`run_batched_linucb`: per-round pseudo-regret and diagnostics, per run."""

    cumulative_regret: np.ndarray  # (runs, horizon)
    actions: np.ndarray  # (runs, horizon) chosen arm index
    updates: int  # number of server updates
    eigenvalue_clips: np.ndarray  # (runs,) batches whose noisy V_m was not positive definite
    regulariser: np.ndarray  # (runs,) λ of each run's privatizer
    final_beta: np.ndarray  # (runs,)


@dataclass
class _StackedSum:
    """Privatizer g's aggregator on its block of runs, each drawing from its own random stream, so that
    one algorithm's noise does not depend on which others share the pass."""

    blocks: list[tuple[slice, Aggregator, np.random.Generator]]
    total: np.ndarray

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        for rows, aggregator, stream in self.blocks:
            self.total[rows] = aggregator.add_batch(statistics[rows], rounds_done, stream)
        return self.total


class _BatchedGaussJordan:
    """``V^{-1}`` and ``V^{-1} u`` for many small symmetric systems at once, runs on the last axis.

    Gauss–Jordan elimination of ``[V | I | u]`` without pivoting, vectorised over the runs: d steps of a
    few array operations each, instead of one LAPACK call per matrix (the per-matrix call overhead
    dominates at d ≤ 15).  For symmetric V the pivots are the diagonal of D in ``V = L D Lᵀ``, so V is
    positive definite exactly when every pivot is positive (Sylvester's criterion); elimination without
    pivoting is then as stable as Cholesky (Higham 2002, Thm 10.3 and §9.3).  The smallest pivot of each
    run is returned so that the caller can treat the runs whose V is not positive definite.
    """

    def __init__(self, dimension: int, runs: int) -> None:
        self.dimension = dimension
        self.work = np.empty((dimension, 2 * dimension + 1, runs))
        self.scratch = np.empty_like(self.work)
        self.row = np.empty((2 * dimension + 1, runs))
        self.pivots = np.empty((dimension, runs))
        self.identity = np.eye(dimension)[:, :, None]

    def __call__(self, gram: np.ndarray, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(V^{-1}`` of shape (d, d, runs), ``V^{-1} u`` of shape (d, runs), smallest pivot (runs,))``."""
        d, work, row, scratch = self.dimension, self.work, self.row, self.scratch
        work[:, :d] = gram.transpose(1, 2, 0)
        work[:, d : 2 * d] = self.identity
        work[:, 2 * d] = vector.T
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for k in range(d):
                self.pivots[k] = work[k, k]
                np.divide(work[k], work[k, k], out=row)
                np.multiply(work[:, k, None, :], row, out=scratch)
                work -= scratch
                work[k] = row
        return work[:, d : 2 * d], work[:, 2 * d], self.pivots.min(axis=0)


def _solve_with_safety_net(
    gram: np.ndarray,
    vector: np.ndarray,
    floor: np.ndarray,
    clips: np.ndarray,
    noisy: np.ndarray,
    eliminate: _BatchedGaussJordan,
) -> tuple[np.ndarray, np.ndarray]:
    """``(V^{-1}, V^{-1} u)`` (shapes (d, d, runs) and (d, runs)); rows whose V is not positive definite
    get eigenvalues clipped at ``floor``.

    Only the ``noisy`` rows (boolean mask) are checked: without noise ``V = λI + Σ φφᵀ`` with λ > 0 is
    positive definite by construction.  Clipping is post-processing of the published V
    (privacy-neutral); each occurrence is counted.  Rows whose elimination met a non-positive pivot
    (V not positive definite, or too ill-conditioned to tell) are solved again by :func:`repair_models`.
    """
    inverse, theta_hat, smallest_pivot = eliminate(gram, vector)
    suspect = np.flatnonzero(noisy & ~(smallest_pivot > 0.0))
    if suspect.size:
        repaired_inverse, repaired_theta, clipped = repair_models(
            gram[suspect], vector[suspect], floor[suspect]
        )
        clips[suspect] += clipped
        inverse[:, :, suspect] = repaired_inverse.transpose(1, 2, 0)
        theta_hat[:, suspect] = repaired_theta.T
    return inverse, theta_hat


def run_batched_linucb(
    env: ContextualLinearBandit,
    privatizers: ContinualPrivatizer | list[ContinualPrivatizer],
    *,
    horizon: int,
    batch_size: int,
    rng: np.random.Generator,
    radius: str = "theory",
    alpha: float = 0.05,
    on_batch: Callable[[int, np.ndarray, np.ndarray], None] | None = None,
    before_release: Callable[[int, int], None] | None = None,
    engine: str = "auto",
) -> EngineResult:
    """Algorithm 1 of Chowdhury & Zhou 2022 for every repetition at once.

    Per batch m (rounds ``t_{m−1}+1 .. min(mB, T)``; a partial last batch is allowed): the index
    ``⟨φ, θ̂_{m−1}⟩ + β_{m−1}‖φ‖_{V_{m−1}^{-1}}`` is maximised over the round's K arms (lowest index
    wins ties), rewards are drawn, the batch's user statistics go through the privatizer, and the
    model is republished.  With fixed arms the action is constant within a batch, so the whole batch
    is handled in one step.  ``on_batch(m, V_m, θ̂_m)`` observes each published model (tests).
    ``before_release(j, n)`` runs before batch j's (0-based, n users) statistics reach the privatizers,
    i.e. before any of its noise is drawn: the runs charge their privacy sessions there, and an
    exception (a refused charge) stops the run before the release.

    ``privatizers`` may be a list of G privatizers sharing the batch schedule: each runs on every one of
    the environment's R instances (same arms, same contexts), giving G·R runs ordered privatizer-major
    (run ``g R + i`` is privatizer g on instance i), each with its own λ and β, so that several
    algorithms advance in one vectorised pass.

    The arm maximising the index as computed in one fixed order is chosen
    (:func:`~dpcert.bandits.algorithms.linucb_model.choose_arms`), so every decision is the same on every
    CPU and BLAS kernel, and the same in the compiled and the NumPy path.

    ``engine``: ``"auto"`` runs the rounds compiled (:mod:`dpcert.bandits.algorithms.linucb_kernel`, same
    results) when numba is installed, the arms are fixed and ``on_batch`` is unset; ``"numpy"`` or
    ``"numba"``.
    """
    compiled = linucb_kernel.wanted(engine, env.fixed_arms, on_batch is not None)
    horizon = check.positive_int("horizon", horizon)
    batch_size = check.positive_int("batch_size", batch_size)
    alpha = check.probability("alpha", alpha, open_low=True, open_high=True)
    rng = check.generator(rng)
    d, block = env.dimension, env.runs
    group = list(privatizers) if isinstance(privatizers, (list, tuple)) else [privatizers]
    if not group:
        raise InvalidParameter("privatizers", group, "at least one privatizer")
    count = len(group)
    runs = count * block
    instance = np.tile(np.arange(block), count)
    radii = [
        ConfidenceRadius.build(radius, p.cumulative_std(horizon, batch_size), d, horizon, batch_size, alpha)
        for p in group
    ]
    lam = np.repeat([c.regulariser for c in radii], block)
    noisy = np.repeat([not isinstance(p, NoPrivacy) for p in group], block)
    eliminate = _BatchedGaussJordan(d, runs)
    floor = np.repeat([c.floor for c in radii], block)

    constant_beta = np.repeat([c.beta(0) for c in radii], block) if radius == "experiment" else None

    def beta_at(rounds: int) -> np.ndarray:
        if constant_beta is not None:
            return constant_beta
        return np.repeat([c.beta(rounds) for c in radii], block)

    size = statistic_size(d)
    aggregator = _StackedSum(
        [
            (slice(g * block, (g + 1) * block), p.start(block, size), stream)
            for g, (p, stream) in enumerate(zip(group, rng.spawn(count), strict=True))
        ],
        np.zeros((runs, size)),
    )
    rows, cols = upper_indices(d)
    pair_weight = np.where(rows == cols, 1.0, 2.0)
    flat_upper = rows * d + cols
    symmetric = symmetric_index(d)
    identity = np.eye(d)
    # per instance, row g of `weights` scores privatizer g's means ⟨φ, θ̂⟩, row G + g its squared widths
    # ‖φ‖²_{V^{-1}}; the arms' design is shared by all privatizers, so one product scores every run
    weights = np.zeros((block, 2 * count, d + rows.size))

    def set_weights(theta_hat: np.ndarray, inverse: np.ndarray) -> None:
        """Load θ̂ (d, runs) and V^{-1} (d, d, runs) into the scoring weights."""
        weights[:, :count, :d] = theta_hat.reshape(d, count, block).transpose(2, 1, 0)
        upper = inverse.reshape(d * d, runs)[flat_upper]
        weights[:, count:, d:] = upper.reshape(-1, count, block).transpose(2, 1, 0)

    set_weights(np.zeros((d, runs)), identity[:, :, None] / lam)
    gaps = np.empty((runs, horizon))
    actions = np.empty((runs, horizon), dtype=np.int64)
    clips = np.zeros(runs, dtype=np.int64)

    def scores(features: np.ndarray) -> np.ndarray:
        """Columns ``[φ, upper(φφᵀ) ⊙ (1 on, 2 off the diagonal)]`` per arm, shape (instances, d + q, K)."""
        quadratic = features[..., rows] * features[..., cols] * pair_weight
        design = np.concatenate([features, quadratic], axis=-1).transpose(0, 2, 1)
        return np.ascontiguousarray(design, dtype=np.float64)

    def ucb_arm(design: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """Each run's UCB arm (the fixed-order index's maximiser, lowest index on exact ties), runs
        ordered privatizer-major."""
        scored = weights @ design  # (instances, 2G, K), summed in the BLAS kernel's order
        per_instance = beta.reshape(count, block).T
        index = scored[:, count:]
        np.maximum(index, 0.0, out=index)
        np.sqrt(index, out=index)
        index *= per_instance[:, :, None]
        index += scored[:, :count]  # the mean + β √max(width, 0) of ucb_index, operation for operation
        bound = fixed_bound if design is fixed_design else float(np.abs(design).max())
        return choose_arms(index, weights, design, d, per_instance, bound).T.ravel()

    fixed_design, fixed_bound = None, 0.0
    if env.fixed_arms:
        fixed_features = env.arms
        fixed_design = scores(fixed_features)
        fixed_bound = float(np.abs(fixed_design).max())
        fixed_means = env.means(fixed_features)
        fixed_best = fixed_means.max(axis=1)
        fixed_outer = fixed_features[..., rows] * fixed_features[..., cols]  # upper(φφᵀ) of every arm
    gram_index = d + symmetric
    shift = lam[:, None, None] * identity
    if compiled and fixed_design is not None:  # compiled only runs on fixed arms
        fill = (gaps, actions, clips)
        batch, beta = linucb_kernel.run_fixed_arms(
            env, aggregator.blocks, fixed_design, lam, floor, noisy, beta_at, *fill,
            horizon=horizon, batch_size=batch_size, rng=rng, before_release=before_release,
        )  # fmt: skip
        return EngineResult(np.cumsum(gaps, axis=1), actions, batch, clips, lam, beta)
    start, batch, beta = 0, 0, beta_at(0)
    while start < horizon:
        stop = min(start + batch_size, horizon)
        users = stop - start
        if fixed_design is not None:
            arm = ucb_arm(fixed_design, beta)
            gaps[:, start:stop] = (fixed_best[instance] - fixed_means[instance, arm])[:, None]
            actions[:, start:stop] = arm[:, None]
            chosen = fixed_features[instance, arm][:, None, :]
            chosen_means = fixed_means[instance, arm][:, None]
            chosen_outer = fixed_outer[instance, arm][:, None, :]
            if users > 1:
                chosen_outer = np.broadcast_to(chosen_outer, (runs, users, rows.size))
                chosen = np.broadcast_to(chosen, (runs, users, d))
                chosen_means = np.broadcast_to(chosen_means, (runs, users))
        else:
            chosen = np.empty((runs, users, d))
            chosen_means = np.empty((runs, users))
            for offset in range(users):  # contexts change every round; the model does not
                features = env.contexts(rng)
                arm = ucb_arm(scores(features), beta)
                means = env.means(features)
                gaps[:, start + offset] = means.max(axis=1)[instance] - means[instance, arm]
                actions[:, start + offset] = arm
                chosen[:, offset] = features[instance, arm]
                chosen_means[:, offset] = means[instance, arm]
        rewards = np.clip(env.sample_rewards(chosen_means, rng), -1.0, 1.0)
        if before_release is not None:
            before_release(start // batch_size, users)
        if fixed_design is not None:  # the same values as user_statistics(chosen, rewards)
            statistics = np.concatenate([chosen * rewards[..., None], chosen_outer], axis=-1)
        else:
            statistics = user_statistics(chosen, rewards)
        noisy_total = aggregator.add_batch(statistics, stop, rng)
        gram = noisy_total[:, gram_index].reshape(runs, d, d)
        gram += shift
        inverse, theta_hat = _solve_with_safety_net(gram, noisy_total[:, :d], floor, clips, noisy, eliminate)
        set_weights(theta_hat, inverse)
        beta = beta_at(stop)
        batch += 1
        if on_batch is not None:
            on_batch(batch, gram, theta_hat.T.copy())
        start = stop
    return EngineResult(np.cumsum(gaps, axis=1), actions, batch, clips, lam, beta)


# ----------------------------------------------------------------------------- algorithms
ALGORITHMS = ("linucb", "linucb-ldp", "linucb-jdp", "linucb-sdp-amp", "linucb-sdp-vec")
DEFAULT_BATCH = {"linucb": 1, "linucb-ldp": 1, "linucb-jdp": 1, "linucb-sdp-amp": 20, "linucb-sdp-vec": 20}
TRUST = {
    "linucb-ldp": TrustModel.LOCAL,
    "linucb-jdp": TrustModel.CENTRAL,
    "linucb-sdp-amp": TrustModel.SHUFFLE,
    "linucb-sdp-vec": TrustModel.SHUFFLE,
}


# ----------------------------------------------------------------------------- runs
def users_per_run(horizon: int, batch_size: int, participations: int) -> int:
    """Distinct users of one run: groups of ``batch_size`` users, each group in ``participations`` batches."""
    return batch_size * math.ceil(math.ceil(horizon / batch_size) / participations)


def batch_users(batch: int, users: int, batch_size: int, participations: int) -> np.ndarray:
    """Local ids of the ``users`` users of batch ``batch`` (0-based): user ``i`` of group ``k`` sits at
    position ``i`` of batches ``kP .. kP + P − 1``, so each user is in at most P batches and at most once
    per batch (Chowdhury & Zhou 2022, Assumption 4.1)."""
    return (batch // participations) * batch_size + np.arange(users, dtype=np.int64)


def run_group(
    env: ContextualLinearBandit,
    calibrated: list[Calibrated],
    *,
    horizon: int,
    batch_size: int,
    rng: np.random.Generator,
    radius: str = "experiment",
    alpha: float = 0.05,
    participations: int = 1,
    sessions: list[PrivacySession] | None = None,
    engine: str = "auto",
) -> list[BanditRun]:
    """Run several calibrated algorithms that share a batch size in one vectorised pass.

    Every algorithm sees the same R instances of ``env``; results come back in input order.  Each
    algorithm's users are charged through its session (default: a fresh in-memory one) before every
    batch release, one event-level charge per participation (local id ``i·R + r`` for user i of run r);
    a run's certificate is the worst user's composition of her charges at the claim's δ.  ``engine`` as
    in :func:`run_batched_linucb` (both give the same results).
    """
    start = time.perf_counter()
    runs = env.runs
    per_run = users_per_run(horizon, batch_size, participations)
    if sessions is None:
        sessions = [PrivacySession(f"{c.algorithm}/r") for c in calibrated]
    for session, c in zip(sessions, calibrated, strict=True):
        session.interval = c.interval

    def charge(batch: int, users: int) -> None:
        # user u = batch_users(batch, ...)[i] of run r has local id u·R + r: one range per batch
        start = (batch // participations) * batch_size * runs
        for session, c in zip(sessions, calibrated, strict=True):
            if c.batch_certificate is not None:
                session.charge_range(start, users * runs, c.batch_certificate)

    result = run_batched_linucb(
        env,
        [c.privatizer for c in calibrated],
        horizon=horizon,
        batch_size=batch_size,
        rng=rng,
        radius=radius,
        alpha=alpha,
        before_release=charge,
        engine=engine,
    )
    seconds = time.perf_counter() - start
    output = []
    for g, (c, session) in enumerate(zip(calibrated, sessions, strict=True)):
        rows = slice(g * runs, (g + 1) * runs)
        extras: dict[str, Any] = {
            "batch_size": batch_size,
            "batch_size_rule": None if c.batch_rule is None else c.batch_rule.to_dict(),
            "participations": participations,
            "calibration": c.calibration,
            "noise": c.noise,
            "radius": radius,
            "regulariser": float(result.regulariser[rows][0]),
            "eigenvalue_clips": int(result.eigenvalue_clips[rows].sum()),
            "updates": result.updates,
            "seconds_shared_with": [other.algorithm for other in calibrated],
        }
        output.append(
            certified_run(
                c.algorithm,
                result.cumulative_regret[rows],
                [session],
                per_run,
                seconds=seconds,
                target=c.claim,
                privacy=None if c.claim is None else TRUST[c.algorithm],
                extras=extras,
            )  # fmt: skip
        )
    return output
