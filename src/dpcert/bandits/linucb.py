"""The LinUCB family under four trust models, as one batched framework (Chowdhury & Zhou 2022, Alg. 1).

Every algorithm here is Algorithm 1 of Chowdhury & Zhou, "Shuffle Private Linear Contextual Bandits"
(ICML 2022; spec ``002_shuffle_linucb.md``) with a different *privatizer* for the per-user statistic
``z_t = (φ_t y_t, upper(φ_t φ_tᵀ)) ∈ R^{d + d(d+1)/2}``:

==================  ==========  ====================================================================
algorithm           batch B     privatizer
==================  ==========  ====================================================================
``linucb``          1 (or any)  none (Abbasi-Yadkori et al. 2011; batched LinUCB of Lemma A.4, σ = 0)
``linucb-ldp``      1           Gaussian local randomizer (Zheng et al. 2020; C&Z Prop F.1)
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
(:mod:`dpcert.mechanisms.shuffle`), for P_Vec by exact accounting of the binomial counts
(:mod:`dpcert.mechanisms.binomial_sum`).  Every run's certificate states the guarantee that the noise
actually used earns, re-derivable from its parameters.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from dpcert import __version__ as dpcert_version
from dpcert import _validation as check
from dpcert.accounting.calibration import analytic_gaussian_sigma
from dpcert.accounting.composition import compose_counts
from dpcert.accounting.returning_users import paper_split, split_budget
from dpcert.accounting.session import PrivacySession, meets_target
from dpcert.bandits import linucb_kernel
from dpcert.bandits.calibration import paper_gaussian_sigma
from dpcert.bandits.environments.contextual import ContextualLinearBandit, vaswani_instance
from dpcert.bandits.experiment import open_sessions
from dpcert.bandits.registry import (
    AlgorithmSpec,
    BanditRun,
    ReproductionSpec,
    RunConfig,
    register_algorithm,
    register_reproduction,
)
from dpcert.certificates import (
    Certificate,
    Guarantee,
    Neighbouring,
    TrustModel,
)
from dpcert.errors import DPCertError, InvalidParameter, PreconditionFailed
from dpcert.mechanisms.binomial_sum import (
    NOTES,
    PLD_NOTE,
    BinomialSumCalibration,
    BinomialSumMechanism,
    BitSumParameters,
    binomial_sum_certificate,
    calibrate_binomial_sum,
    composed_interval,
    default_precision,
    least_noise_bits,
)
from dpcert.mechanisms.gaussian import ANALYTIC_BASIS, gaussian_delta, gaussian_epsilon
from dpcert.mechanisms.shuffle import PAmpCalibration, calibrate_pamp, pamp_paper_sigma

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


# ----------------------------------------------------------------------------- the statistic
def statistic_size(dimension: int) -> int:
    """Length ``d + d(d+1)/2`` of the flat per-user statistic."""
    return dimension + dimension * (dimension + 1) // 2


@functools.lru_cache(maxsize=64)
def _upper_indices(dimension: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(dimension)


def user_statistics(features: np.ndarray, rewards: np.ndarray) -> np.ndarray:
    """Flat statistics ``(φ y, upper(φφᵀ))`` (row-major upper triangle), shape ``(..., d + d(d+1)/2)``."""
    rows, cols = _upper_indices(features.shape[-1])
    outer = features[..., rows] * features[..., cols]
    return np.concatenate([features * rewards[..., None], outer], axis=-1)


def _symmetric_index(dimension: int) -> np.ndarray:
    """Index into the upper-triangle vector for every (i, j) of a d×d matrix (row-major)."""
    rows, cols = np.triu_indices(dimension)
    index = np.empty((dimension, dimension), dtype=int)
    index[rows, cols] = np.arange(rows.size)
    index[cols, rows] = np.arange(rows.size)
    return index.ravel()


def unpack(total: np.ndarray, dimension: int, regulariser: float) -> tuple[np.ndarray, np.ndarray]:
    """``(V, u)`` from a flat cumulative statistic: ``V = λ I + sym(upper)``, ``u`` the vector part."""
    runs = total.shape[0]
    gram = total[:, dimension:][:, _symmetric_index(dimension)].reshape(runs, dimension, dimension)
    return gram + regulariser * np.eye(dimension), total[:, :dimension]


# ----------------------------------------------------------------------------- privatizers
class Aggregator(Protocol):
    """Server-side state of one privatizer for all runs: turns batches into noisy cumulative sums."""

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        """Add a batch of per-user statistics (runs, users, p); return the noisy cumulative sum (runs, p).

        ``rng`` is the aggregator's own stream (the same generator at every call, used by nothing
        else): the Gaussian aggregators draw their noise from it in blocks ahead of use.
        """


class Privatizer(Protocol):
    """How user statistics are privatised (noise only; certificates come from the calibrations)."""

    name: str

    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        """Per-entry standard deviation (or sub-Gaussian scale) of the cumulative noise at the horizon."""

    def start(self, runs: int, size: int) -> Aggregator:
        """Fresh server state for ``runs`` repetitions of a statistic of length ``size``."""


@dataclass
class _ExactSum:
    total: np.ndarray

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        self.total += statistics.sum(axis=1)
        return self.total


@dataclass(frozen=True)
class NoPrivacy:
    """The identity randomizer (non-private LinUCB)."""

    name: str = "none"

    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        return 0.0

    def start(self, runs: int, size: int) -> Aggregator:
        return _ExactSum(np.zeros((runs, size)))


class _NormalPool:
    """Standard normals drawn from one generator in large blocks and handed out in order.

    ``Generator.standard_normal`` fills its output in order, so the values handed out are exactly those
    of drawing each requested shape in turn from the same generator; the block draw only saves the
    per-call overhead.  The generator must be private to the pool (values past the last request are
    drawn and discarded).
    """

    def __init__(self, rng: np.random.Generator, block: int = 1 << 16) -> None:
        self.rng, self.block = rng, block
        self.buffer = np.empty(0)
        self.position = 0

    def standard_normal(self, shape: tuple[int, ...]) -> np.ndarray:
        need = math.prod(shape)
        if self.position + need > self.buffer.size:
            rest = self.buffer[self.position :]
            fresh = self.rng.standard_normal(max(self.block, need - rest.size))
            self.buffer, self.position = np.concatenate([rest, fresh]), 0
        values = self.buffer[self.position : self.position + need]
        self.position += need
        return values.reshape(shape)


def _pool(pool: _NormalPool | None, rng: np.random.Generator) -> _NormalPool:
    return pool if pool is not None and pool.rng is rng else _NormalPool(rng)


@dataclass
class _LocalGaussianSum:
    sigma: float
    total: np.ndarray
    pool: _NormalPool | None = None

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        users = statistics.shape[1]
        self.pool = _pool(self.pool, rng)
        # The analyzer's sum of `users` messages v_i + N(0, σ² I) is exactly sum + N(0, users σ² I).
        noise = self.pool.standard_normal(self.total.shape) * (self.sigma * math.sqrt(users))
        self.total += statistics.sum(axis=1) + noise
        return self.total


@dataclass(frozen=True)
class LocalGaussian:
    """Each user adds N(0, σ²) to every entry of her statistic (LDP-LinUCB and P_Amp, Alg. 2).

    On the matrix part the noise is drawn on the upper triangle and mirrored, so the noisy Gram
    matrix is symmetric with variance σ² on and off the diagonal.  The analyzer (Alg. 4) sums the
    shuffled messages; the engine draws that sum directly, which has the same distribution.
    """

    sigma: float
    name: str = "local-gaussian"

    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        return self.sigma * math.sqrt(horizon)

    def start(self, runs: int, size: int) -> Aggregator:
        return _LocalGaussianSum(self.sigma, np.zeros((runs, size)))


def tree_levels(horizon: int) -> int:
    """Number of tree nodes containing any one round's data: ``⌊log₂ T⌋ + 1``."""
    return int(horizon).bit_length()


@dataclass
class _TreeSum:
    sigma: float
    levels: int
    total: np.ndarray
    node_noise: np.ndarray  # (levels, runs, p): noise of the current node at each level
    node_ids: np.ndarray  # (levels,): block index t >> level of the current node, −1 if none yet
    level_index: np.ndarray  # (levels,): 0, 1, …, levels − 1
    pool: _NormalPool | None = None

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        self.total += statistics.sum(axis=1)
        levels = self.level_index
        ids = rounds_done >> levels
        # a new dyadic block starts at the levels whose block index changed: always levels 0..k − 1
        count = int((ids != self.node_ids).sum())
        if count:
            self.pool = _pool(self.pool, rng)
            self.node_noise[:count] = self.sigma * self.pool.standard_normal((count,) + self.total.shape)
            self.node_ids = ids
        used = ((rounds_done >> levels) & 1).astype(float)  # binary decomposition of the prefix [1, t]
        return self.total + (used @ self.node_noise.reshape(self.levels, -1)).reshape(self.total.shape)


@dataclass(frozen=True)
class TreeGaussian:
    """Tree-based aggregation (Dwork et al. 2010; Chan et al. 2011) with N(0, σ²) on every node.

    The prefix sum of rounds ``1..t`` is the sum of the nodes of the binary decomposition of ``t``;
    each node covers a dyadic block and carries its own noise, reused by every prefix that contains
    the block.  One round's data enter ``⌊log₂ T⌋ + 1`` nodes (one per level).
    """

    sigma: float
    horizon: int
    name: str = "tree-gaussian"

    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        return self.sigma * math.sqrt(tree_levels(horizon))

    def start(self, runs: int, size: int) -> Aggregator:
        levels = tree_levels(self.horizon)
        return _TreeSum(
            self.sigma,
            levels,
            np.zeros((runs, size)),
            np.zeros((levels, runs, size)),
            np.full(levels, -1),
            np.arange(levels),
        )


@dataclass
class _VecSum:
    parameters: BitSumParameters
    certificate: Certificate
    total: np.ndarray

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        users = statistics.shape[1]
        # the same protocol on the flat statistic (the ℓ2 option changes the accounting, not the protocol)
        flat = replace(
            self.parameters, users=users, dimension=statistics.shape[2], shape="vector", norm="entry"
        )
        self.total += BinomialSumMechanism(flat, self.certificate).simulate(statistics, rng)
        return self.total


@dataclass(frozen=True)
class ShuffleVectorSum:
    """P_Vec (Alg. 5–7): every entry of every user's statistic is sent as g + b bits; per-label counts.

    The protocol is :mod:`dpcert.mechanisms.binomial_sum` (safe encoding range 2: encodings in
    {0..g}; analyzer re-centred by B, the paper's fix of Cheu et al.), run on the flat statistic, whose
    d + d(d+1)/2 entries all lie in [−1, 1]; ``parameters`` hold (g, b, p) of one full batch.
    """

    parameters: BitSumParameters
    certificate: Certificate
    name: str = "shuffle-vector-sum"

    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        batches = math.ceil(horizon / batch_size)
        return math.sqrt(batches) * replace(self.parameters, users=batch_size).noise_std

    def start(self, runs: int, size: int) -> Aggregator:
        return _VecSum(self.parameters, self.certificate, np.zeros((runs, size)))


# ----------------------------------------------------------------------------- confidence radius
@dataclass(frozen=True)
class ConfidenceRadius:
    """Regulariser λ and radius β_m of the batched UCB index (C&Z §2.2–2.3).

    ``theory``: Lemma A.2/A.4 with the spec's concrete constants: for cumulative per-entry noise
    scale s, ``Σ_N = s(2√d + 2√ln(4M/α))``, ``Σ_n = s(√d + √(2 ln(4M/α)))``, ``λ = max(1, 2Σ_N)``,
    ``λ_min = λ − Σ_N``, ``λ_max = λ + Σ_N``, ``ν = Σ_n/√λ_min`` and
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
    (V not positive definite, or too ill-conditioned to tell) are solved again by LAPACK after the check.
    """
    inverse, theta_hat, smallest_pivot = eliminate(gram, vector)
    suspect = np.flatnonzero(noisy & ~(smallest_pivot > 0.0))
    if suspect.size:
        values, vectors = np.linalg.eigh(gram[suspect])
        bad = values.min(axis=1) <= 0.0
        clips[suspect] += bad
        values = np.where(bad[:, None], np.maximum(values, floor[suspect, None]), values)
        repaired = np.einsum("rij,rj,rkj->rik", vectors, values, vectors)
        inverse[:, :, suspect] = np.linalg.inv(repaired).transpose(1, 2, 0)
        theta_hat[:, suspect] = np.linalg.solve(repaired, vector[suspect][:, :, None])[:, :, 0].T
    return inverse, theta_hat


def run_batched_linucb(
    env: ContextualLinearBandit,
    privatizers: Privatizer | list[Privatizer],
    *,
    horizon: int,
    batch_size: int,
    rng: np.random.Generator,
    radius: str = "theory",
    alpha: float = 0.05,
    index_dtype: str = "float64",
    on_batch: Callable[[int, np.ndarray, np.ndarray], None] | None = None,
    before_release: Callable[[int, int], None] | None = None,
    engine: str = "auto",
) -> EngineResult:
    """Algorithm 1 of C&Z for every repetition at once.

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

    ``index_dtype="float32"`` scores the arms in single precision (about 4× faster on K = 100 arms);
    the model itself (V, θ̂, the noisy sums) is always kept in double precision.

    ``engine``: ``"auto"`` runs the rounds compiled (:mod:`dpcert.bandits.linucb_kernel`, same results)
    when numba is installed, the arms are fixed and ``on_batch`` is unset; ``"numpy"`` or ``"numba"``.
    """
    compiled = linucb_kernel.wanted(engine, env.fixed_arms, on_batch is not None)
    if index_dtype not in ("float64", "float32"):
        raise InvalidParameter("index_dtype", index_dtype, "'float64' or 'float32'")
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
    rows, cols = _upper_indices(d)
    pair_weight = np.where(rows == cols, 1.0, 2.0)
    flat_upper = rows * d + cols
    symmetric = _symmetric_index(d)
    identity = np.eye(d)
    # per instance, row 2g of `weights` scores privatizer g's means ⟨φ, θ̂⟩, row 2g + 1 its squared widths
    # ‖φ‖²_{V^{-1}}; the arms' design is shared by all privatizers, so one product scores every run
    weights = np.zeros((block, 2 * count, d + rows.size), dtype=index_dtype)

    def set_weights(theta_hat: np.ndarray, inverse: np.ndarray) -> None:
        """Load θ̂ (d, runs) and V^{-1} (d, d, runs) into the scoring weights."""
        weights[:, 0::2, :d] = theta_hat.reshape(d, count, block).transpose(2, 1, 0)
        upper = inverse.reshape(d * d, runs)[flat_upper]
        weights[:, 1::2, d:] = upper.reshape(-1, count, block).transpose(2, 1, 0)

    set_weights(np.zeros((d, runs)), identity[:, :, None] / lam)
    gaps = np.empty((runs, horizon))
    actions = np.empty((runs, horizon), dtype=np.int64)
    clips = np.zeros(runs, dtype=np.int64)

    def scores(features: np.ndarray) -> np.ndarray:
        """Columns ``[φ, upper(φφᵀ) ⊙ (1 on, 2 off the diagonal)]`` per arm, shape (instances, d + q, K)."""
        quadratic = features[..., rows] * features[..., cols] * pair_weight
        design = np.concatenate([features, quadratic], axis=-1).transpose(0, 2, 1)
        return np.ascontiguousarray(design, dtype=index_dtype)

    def ucb_arm(design: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """Each run's UCB arm (lowest index on ties), runs ordered privatizer-major."""
        scored = weights @ design  # (instances, 2G, K)
        index = scored[:, 0::2] + beta.reshape(count, block).T[:, :, None] * np.sqrt(
            np.maximum(scored[:, 1::2], 0.0)
        )
        return np.argmax(index, axis=2).T.ravel()

    fixed_design = None
    if env.fixed_arms:
        fixed_features = env.arms
        fixed_design = scores(fixed_features)
        fixed_means = env.means(fixed_features)
        fixed_best = fixed_means.max(axis=1)
        fixed_outer = fixed_features[..., rows] * fixed_features[..., cols]  # upper(φφᵀ) of every arm
    gram_index = d + symmetric
    shift = lam[:, None, None] * identity
    if compiled:
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


# ----------------------------------------------------------------------------- calibration
ALGORITHMS = ("linucb", "linucb-ldp", "linucb-jdp", "linucb-sdp-amp", "linucb-sdp-vec")
DEFAULT_BATCH = {"linucb": 1, "linucb-ldp": 1, "linucb-jdp": 1, "linucb-sdp-amp": 20, "linucb-sdp-vec": 20}
TRUST = {
    "linucb-ldp": TrustModel.LOCAL,
    "linucb-jdp": TrustModel.CENTRAL,
    "linucb-sdp-amp": TrustModel.SHUFFLE,
    "linucb-sdp-vec": TrustModel.SHUFFLE,
}


@dataclass(frozen=True)
class Calibrated:
    """A privatizer with the guarantee its noise earns per user, against the claimed (ε, δ).

    ``batch_certificate`` is what one participation (one batch release of a user's data) is charged,
    an event-level certificate; ``certificate`` is a user's total over her participations, their
    composition (what actually holds, re-derivable from its parameters); ``claim_met`` says whether it
    covers the claim through its profile.  ``noise`` lists the noise parameters for reports.
    """

    algorithm: str
    privatizer: Privatizer
    certificate: Certificate | None
    claim: Guarantee | None
    claim_met: bool
    calibration: str
    noise: dict[str, Any] = field(default_factory=dict)
    batch_certificate: Certificate | None = None  # one participation's charge
    interval: float | None = None  # PLD discretisation of the composition (P_Vec with returning users)


def classical_pair_sigma(epsilon: float, delta: float) -> float:
    """``4 √(2 ln(2.5/δ)) / ε``: classical Gaussian (Dwork & Roth Thm A.1) on the vector and the matrix,
    each with sensitivity 2 and budget (ε/2, δ/2) (C&Z proof of Thm B.1 and Prop F.1)."""
    return paper_gaussian_sigma(epsilon / 2.0, delta / 2.0, 2.0)


def gaussian_guarantee(
    sigma: float,
    *,
    sensitivity: float,
    compositions: int,
    epsilon: float,
    delta: float,
    trust_model: TrustModel,
    neighbouring: Neighbouring,
    notes: tuple[str, ...],
) -> tuple[Certificate, bool]:
    """The claimed (ε, δ) if the exact Gaussian profile supports it, else (ε that holds at δ, δ)."""
    mu = sensitivity * math.sqrt(compositions) / sigma
    met = bool(gaussian_delta(epsilon, mu) <= delta)
    guarantee = Guarantee(epsilon, delta) if met else Guarantee(gaussian_epsilon(delta, mu), delta)
    parameters = {"sigma": sigma, "sensitivity": sensitivity, "compositions": compositions}
    certificate = Certificate(
        "gaussian", guarantee, trust_model, neighbouring, parameters, ANALYTIC_BASIS, notes
    )
    return certificate.verify(), met


def _amplified_pamp(
    epsilon: float, delta: float, batch_size: int, dimension: int, calibration: str
) -> PAmpCalibration | None:
    """P_Amp calibrated through amplification by shuffling, or ``None`` where that is not possible.

    ``tight``: least σ by FMT20's numeric bound (Thm 3.2; :func:`~dpcert.mechanisms.shuffle.calibrate_pamp`);
    ``paper``: Thm 3.2 = B.1 with Lemma B.4, whose preconditions (ε0 <= 1, B >= 16 e^ε0 ln(4/δ)) are checked.
    """
    method = "numeric" if calibration == "tight" else "paper"
    try:
        return calibrate_pamp(epsilon, delta, users=batch_size, dimension=dimension, method=method)
    except PreconditionFailed:
        return None


def calibrate(
    algorithm: str,
    *,
    epsilon: float | None,
    delta: float | None,
    horizon: int,
    batch_size: int,
    dimension: int,
    calibration: str = "tight",
    participations: int = 1,
    sigma: float | None = None,
    bit_sum: Mapping[str, Any] | None = None,
) -> Calibrated:
    """Noise for ``algorithm`` at the claimed (ε, δ) and the certificate that noise earns per user.

    Parameters
    ----------
    calibration
        ``"paper"``: the theorem's noise (C&Z Prop F.1 for LDP; the classical split on the tree for
        JDP; Thm 3.2 / E.3 for P_Amp; Thm 3.5 for P_Vec), preconditions checked and reported in the
        certificate's notes.  ``"tight"``: the least Gaussian noise meeting (ε, δ) by the exact profile
        of the joint release (sensitivity 3/√2), composed exactly over a user's participations; for
        P_Amp the smaller of that and the amplification-by-shuffling calibration (FMT20 numeric bound,
        unique users); for P_Vec the least noise bits by exact accounting of the binomial counts.
    participations
        Batches (rounds for B = 1) in which one user may appear, at most once per batch (C&Z §4,
        Assumption 4.1).  ``paper`` splits the budget by advanced composition (Thm E.2); ``tight``
        composes the Gaussian releases exactly (μ adds in quadrature); for P_Vec ``paper`` calibrates each
        batch by Thm 3.5 at that split and ``tight`` finds the least noise bits whose M-fold composition
        (pessimistic PLD of the batch's dominating pair) meets (ε, δ).
    sigma
        A user-chosen noise level (per user, or per tree node for JDP) replacing the calibration; the
        certificate then reports what it guarantees.  Not for P_Vec.
    bit_sum
        P_Vec only: user-chosen ``{"g": …, "b": …, "p": …}`` (precision, noise bits per user and entry,
        bit probability) replacing the calibration; the certificate then reports what they guarantee.
    """
    if algorithm not in ALGORITHMS:
        raise InvalidParameter("algorithm", algorithm, "one of " + ", ".join(ALGORITHMS))
    if algorithm == "linucb":
        return Calibrated(algorithm, NoPrivacy(), None, None, True, "none")
    if calibration not in CALIBRATIONS:
        raise InvalidParameter("calibration", calibration, "one of " + ", ".join(CALIBRATIONS))
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    horizon = check.positive_int("horizon", horizon)
    batch_size = check.positive_int("batch_size", batch_size)
    participations = check.positive_int("participations", participations)
    trust = TRUST[algorithm]
    claim = Guarantee(epsilon, delta)
    sens = JOINT_SENSITIVITY
    notes: list[str] = [
        "sensitivity 3/sqrt(2) of the joint release (phi*y, upper(phi phi^T)) for ||phi|| <= 1, |y| <= 1; "
        "rewards are clipped to [-1, 1] before release"
    ]
    if participations > 1:
        notes.append(
            f"returning users: each user in at most {participations} batches, at most once per batch"
        )

    if algorithm == "linucb-sdp-vec":
        if sigma is not None:
            raise InvalidParameter("sigma", sigma, "None for linucb-sdp-vec (give bit_sum g, b, p instead)")
        return _calibrate_vec(claim, batch_size, dimension, calibration, participations, horizon, bit_sum)
    if bit_sum is not None:
        raise InvalidParameter("bit_sum", dict(bit_sum), "None except for linucb-sdp-vec (use sigma)")

    levels = tree_levels(horizon) if algorithm == "linucb-jdp" else 1
    if algorithm == "linucb-jdp":
        # one user's P rounds may share a node: node sensitivity up to P·Δ on each of the L levels
        node_sensitivity, compositions = sens * participations, levels
        notes.append(f"tree aggregation: each round's data in {levels} nodes (one per level)")
    else:
        node_sensitivity, compositions = sens, participations
    if sigma is not None:
        noise = check.positive_finite("sigma", sigma)
        notes.append("user-supplied noise level")
    elif calibration == "tight":
        noise = analytic_gaussian_sigma(epsilon, delta, node_sensitivity, compositions)
        notes.append(
            "least noise by the exact Gaussian profile (Balle & Wang 2018, Thm 8), exact composition"
        )
    else:
        # C&Z Thm E.2 per-batch budget (Dwork & Roth Cor 3.21, k = M, δ' = δ/2); unchanged for M = 1
        eps_m, delta_m = (epsilon, delta) if participations == 1 else paper_split(claim, participations)
        if participations > 1:
            notes.append(
                f"paper split (C&Z Thm E.2): per-batch (epsilon, delta) = ({eps_m:.6g}, {delta_m:.3g})"
            )
        if algorithm == "linucb-ldp":
            noise = classical_pair_sigma(eps_m, delta_m)
            notes.append("paper noise: C&Z Prop F.1, sigma = 4 sqrt(2 ln(2.5/delta0)) / epsilon0")
        elif algorithm == "linucb-jdp":
            noise = participations * math.sqrt(levels) * classical_pair_sigma(epsilon, delta)
            notes.append(
                "paper-style noise (seed 002 gives no formula for its JDP baseline): the classical Gaussian "
                "of Prop F.1 on each of the L tree levels, i.e. sensitivity 2 sqrt(L) for the vector and the "
                "matrix with (epsilon/2, delta/2) each (Shariff & Sheffet 2018 construction); variance "
                "times M0^2 for returning users (C&Z Prop 4.3)"
            )
        else:
            noise = pamp_paper_sigma(eps_m, delta_m, batch_size)
            eps0 = eps_m * math.sqrt(batch_size / math.log(2.0 / delta_m))
            fmt_ok = (
                eps0 <= math.log(batch_size / (16.0 * math.log(4.0 / delta_m))) if batch_size > 1 else False
            )
            notes.append(
                f"paper noise: C&Z Thm 3.2 (Thm E.3 for returning users), local epsilon0 = {eps0:.4g}"
            )
            if eps0 > 1.0:
                notes.append(
                    f"precondition of Thm 3.2 fails: epsilon0 = {eps0:.4g} > 1 "
                    "(needs epsilon <= sqrt(ln(2/delta)/B))"
                )
            if not fmt_ok:
                notes.append(
                    "amplification precondition fails (Feldman, McMillan & Talwar 2020, Thm 3.8): "
                    "needs B >= 16 e^epsilon0 ln(4/delta) = "
                    f"{16 * math.exp(eps0) * math.log(4 / delta_m):.4g}"
                )
    amplified = None
    if algorithm == "linucb-sdp-amp":
        # a short last batch is shuffled with fewer users: amplification is accounted with the smallest
        # batch actually shuffled (one user alone gets no amplification, only her local guarantee)
        smallest = horizon - (math.ceil(horizon / batch_size) - 1) * batch_size
        if smallest < batch_size:
            notes.append(f"the last batch holds {smallest} users: amplification is accounted for {smallest}")
        if participations == 1 and sigma is None:
            amplified = _amplified_pamp(epsilon, delta, smallest, dimension, calibration)
        if amplified is not None and calibration == "tight" and amplified.sigma < noise:
            return Calibrated(
                algorithm,
                LocalGaussian(amplified.sigma),
                amplified.certificate,
                claim,
                meets_target(amplified.certificate, claim),
                calibration,
                {"sigma": amplified.sigma, "epsilon0": amplified.epsilon0, "delta0": amplified.delta0},
                amplified.certificate,
            )
        if amplified is not None and calibration == "tight":
            notes.append(
                f"amplification by shuffling (FMT20 numeric bound) would need sigma = {amplified.sigma:.4g} "
                f"> {noise:.4g}: the local calibration is used"
            )
        notes.append(
            "certified: the exact local guarantee of each user's messages, which the shuffled view inherits "
            "(post-processing)"
        )
    if algorithm == "linucb-jdp" and participations > 1:
        notes.append(
            f"per-participation charge: sensitivity sqrt({participations}) x 3/sqrt(2) on each of the "
            f"{levels} levels, so that {participations} charges compose to the node sensitivity "
            f"{participations} x 3/sqrt(2) of rounds sharing a node"
        )
    charge, _ = gaussian_guarantee(
        noise,
        sensitivity=node_sensitivity / math.sqrt(participations) if algorithm == "linucb-jdp" else sens,
        compositions=levels if algorithm == "linucb-jdp" else 1,
        epsilon=epsilon,
        delta=delta,
        trust_model=trust,
        neighbouring=Neighbouring.REPLACE_ONE,
        notes=tuple(notes),
    )
    certificate = charge if participations == 1 else compose_counts([(charge, participations)], delta=delta)
    met = meets_target(certificate, claim)
    privatizer: Privatizer = (
        TreeGaussian(noise, horizon) if algorithm == "linucb-jdp" else LocalGaussian(noise)
    )
    if amplified is not None and not met and meets_target(amplified.certificate, claim):
        # the paper's σ meets the claim through Lemma B.4 although not locally
        return Calibrated(
            algorithm, privatizer, amplified.certificate, claim, True, calibration, {"sigma": noise},
            amplified.certificate,
        )  # fmt: skip
    return Calibrated(algorithm, privatizer, certificate, claim, met, calibration, {"sigma": noise}, charge)


CACHE_ENV = "DPCERT_CACHE_DIR"


def calibration_cache_dir() -> Path | None:
    """Directory of the on-disk calibration cache.

    ``$DPCERT_CACHE_DIR``, else ``$XDG_CACHE_HOME/dpcert``, else ``~/.cache/dpcert``; ``None`` (no disk
    cache) when ``DPCERT_CACHE_DIR`` is set to the empty string.
    """
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dpcert"


def _cache_path(directory: Path, key: Mapping[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return directory / f"calibration-{digest}.json"


def _read_cached_bit_sum(path: Path, key: Mapping[str, Any]) -> BinomialSumCalibration | None:
    """The cached calibration if the file holds this key and its certificate re-verifies, else ``None``.

    The certificate goes through :meth:`Certificate.from_json` (which re-derives the profile from the
    parameters and raises if the stated guarantee does not hold) and must be a certificate of exactly
    the cached parameters; anything else (missing, corrupt, tampered, other version) is a miss.
    """
    try:
        entry = json.loads(path.read_text())
        if entry.get("key") != key:
            return None
        parameters = BitSumParameters(**entry["parameters"])
        certificate = Certificate.from_json(entry["certificate"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError, DPCertError):
        return None
    if certificate.parameters != dataclasses.asdict(parameters) or certificate.guarantee != Guarantee(
        key["epsilon"], key["delta"]
    ):
        return None
    return BinomialSumCalibration(parameters, certificate, entry["method"])


def _write_cached_bit_sum(path: Path, key: Mapping[str, Any], result: BinomialSumCalibration) -> None:
    """Store a calibration (atomic replace); an unwritable cache directory is not an error."""
    entry = {
        "key": dict(key),
        "parameters": dataclasses.asdict(result.parameters),
        "certificate": result.certificate.to_json(),
        "method": result.method,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(entry, indent=1))
        os.replace(temporary, path)
    except OSError:
        return


@functools.lru_cache(maxsize=32)
def _bit_sum_calibration(
    epsilon: float, delta: float, batch_size: int, dimension: int, calibration: str
) -> BinomialSumCalibration:
    """Bit-sum parameters for P_Vec, cached in memory and on disk (the exact ℓ2 search takes seconds).

    The disk entry is keyed by a hash of every argument and the dpcert version, and is used only if its
    certificate re-verifies (see :func:`_read_cached_bit_sum`).
    """
    key = {
        "function": "calibrate_binomial_sum",
        "version": dpcert_version,
        "epsilon": epsilon,
        "delta": delta,
        "users": batch_size,
        "dimension": dimension,
        "calibration": calibration,
    }
    directory = calibration_cache_dir()
    path = None if directory is None else _cache_path(directory, key)
    if path is not None:
        cached = _read_cached_bit_sum(path, key)
        if cached is not None:
            return cached
    result = calibrate_binomial_sum(
        epsilon,
        delta,
        users=batch_size,
        dimension=dimension,
        bound=1.0,
        shape="vector+matrix",
        method="paper" if calibration == "paper" else "exact",
        norm="entry" if calibration == "paper" else "l2",
    )
    if path is not None:
        _write_cached_bit_sum(path, key, result)
    return result


BIT_SUM_KEYS = ("g", "b", "p")
RETURNING_VEC_NOTE = (
    "returning users: the user-level guarantee is the adaptive composition of one batch's bit-sum "
    "certificate over the user's batches (compose 'best'; with p = 1/2 this includes the pessimistic "
    "PLD of the batch's dominating pair, self-composed)"
)


def _supplied_bit_sum(bit_sum: Mapping[str, Any], batch_size: int, dimension: int) -> BitSumParameters:
    """User-chosen (g, b, p) for one full batch; ``g`` defaults to ``max(4, ⌈√B⌉)`` and ``p`` to 1/2."""
    if not isinstance(bit_sum, Mapping):
        raise InvalidParameter("bit_sum", bit_sum, "a mapping with keys among g, b, p")
    unknown = sorted(set(bit_sum) - set(BIT_SUM_KEYS))
    if unknown:
        raise InvalidParameter("bit_sum", unknown, "keys among g, b, p")
    if bit_sum.get("b") is None:
        raise InvalidParameter("b", None, "an integer >= 1 (noise bits per user and entry)")
    return BitSumParameters(
        bit_sum.get("g", default_precision(batch_size)),
        bit_sum["b"],
        bit_sum.get("p", 0.5),
        batch_size,
        dimension,
        1.0,
        "vector+matrix",
    )


def _user_level(batch: Certificate, count: int, delta: float, interval: float) -> Certificate:
    """A returning user's guarantee: the adaptive composition of ``count`` participations' charges."""
    total = compose_counts(
        [(batch, count)], method="best", delta=delta, value_discretization_interval=interval
    )
    pld_note = (PLD_NOTE,) if callable(getattr(batch.profile, "privacy_loss_parts", None)) else ()
    return _with_notes(total, (RETURNING_VEC_NOTE,) + pld_note)


@functools.lru_cache(maxsize=16)
def _tight_returning_vec(
    epsilon: float, delta: float, batch_size: int, dimension: int, participations: int
) -> tuple[BitSumParameters, Certificate]:
    """Least b (p = 1/2, g = max(4, ⌈√B⌉)) whose ``participations``-fold composition meets (ε, δ).

    The batch certificate is stated at the paper's per-batch δ_m = δ/(2M) (any point of its profile
    is valid; the composition uses the whole PLD).
    """
    template = BitSumParameters(
        default_precision(batch_size), 1, 0.5, batch_size, dimension, 1.0, "vector+matrix"
    )
    b = least_noise_bits(epsilon, delta, template, compositions=participations)
    parameters = replace(template, b=b)
    batch = binomial_sum_certificate(
        parameters,
        delta=delta / (2.0 * participations),
        notes=NOTES
        + (
            f"tight returning-user split: least b whose {participations}-fold PLD composition "
            f"meets ({epsilon:g}, {delta:g})",
        ),
    )
    return parameters, batch


def _calibrate_vec(
    claim: Guarantee,
    batch_size: int,
    dimension: int,
    calibration: str,
    participations: int,
    horizon: int,
    bit_sum: Mapping[str, Any] | None = None,
) -> Calibrated:
    """P_Vec through :mod:`dpcert.mechanisms.binomial_sum` (shape vector+matrix); full batches only.

    Unique users: ``paper`` is Thm 3.5's (g, b, p = 1/4), the claim confirmed by exact accounting of the
    binomial counts; ``tight`` is p = 1/2, g = max(4, ⌈√B⌉) and the least b by that accounting, using
    that each user's vector part has ℓ2 norm ≤ 1 and her matrix part Frobenius norm ≤ 1 (``norm="l2"``).

    Returning users (C&Z §4, Thm E.5), each in at most M batches: ``paper`` calibrates each batch by
    Thm 3.5 at the split (ε_m, δ_m) = (ε/(2√(2M ln(2/δ))), δ/(2M)) of Thm E.2
    (:func:`dpcert.accounting.returning_users.split_budget`); ``tight`` takes p = 1/2 and the least b
    whose M-fold composition, by the batch's pessimistic PLD, meets (ε, δ).  Either way the run's
    certificate is the user-level composition of the batch certificate (compose ``best``), i.e. what
    the noise actually earns.

    ``bit_sum`` (user-chosen g, b, p) replaces the calibration; the certificate reports what holds.
    """
    if horizon % batch_size:
        raise InvalidParameter(
            "horizon", horizon, f"a multiple of batch_size={batch_size} for linucb-sdp-vec (no partial batch)"
        )
    notes: list[str] = []
    if bit_sum is not None:
        q = _supplied_bit_sum(bit_sum, batch_size, dimension)
        delta_batch = claim.delta if participations == 1 else claim.delta / (2.0 * participations)
        try:
            batch = binomial_sum_certificate(q, delta=delta_batch, notes=NOTES + ("user-supplied (g, b, p)",))
        except InvalidParameter as exc:
            raise InvalidParameter(
                "b", q.b, f"enough noise bits for a finite epsilon at delta = {delta_batch:g}"
            ) from exc
        notes.append("user-supplied (g, b, p)")
    elif participations == 1:
        result = _bit_sum_calibration(claim.epsilon, claim.delta, batch_size, dimension, calibration)
        q, batch = result.parameters, result.certificate
    elif calibration == "paper":
        split = split_budget(claim, participations)
        eps_m, delta_m = split.paper.epsilon, split.paper.delta
        result = _bit_sum_calibration(eps_m, delta_m, batch_size, dimension, "paper")
        q, batch = result.parameters, result.certificate
        advanced = split.paper.total_certificate.epsilon
        notes.append(
            f"paper split (C&Z Thm E.2): per-batch (epsilon, delta) = ({eps_m:.6g}, {delta_m:.3g}); "
            f"advanced composition (Dwork & Roth Thm 3.20) gives epsilon = {advanced:.6g}"
            + ("" if split.paper_meets_target else " > the claim")
        )
    else:
        q, batch = _tight_returning_vec(claim.epsilon, claim.delta, batch_size, dimension, participations)
    noise = {"g": q.g, "b": q.b, "p": q.p}
    privatizer = ShuffleVectorSum(q, batch)
    if participations == 1:
        met = meets_target(batch, claim)
        return Calibrated("linucb-sdp-vec", privatizer, batch, claim, met, calibration, noise, batch)
    interval = composed_interval(claim.epsilon, q.coordinates, participations)
    certificate = _user_level(batch, participations, claim.delta, interval)
    if notes:
        certificate = _with_notes(certificate, tuple(notes))
    met = meets_target(certificate, claim)
    return Calibrated(
        "linucb-sdp-vec", privatizer, certificate, claim, met, calibration, noise, batch, interval
    )


def _with_notes(certificate: Certificate, notes: tuple[str, ...]) -> Certificate:
    """The same certificate (same parameters, same profile) with extra notes."""
    extended = Certificate(
        certificate.mechanism,
        certificate.guarantee,
        certificate.trust_model,
        certificate.neighbouring,
        certificate.parameters,
        certificate.basis,
        certificate.notes + notes,
    )
    extended.__dict__["profile"] = certificate.profile
    return extended.verify()


# ----------------------------------------------------------------------------- runs
def users_per_run(horizon: int, batch_size: int, participations: int) -> int:
    """Distinct users of one run: groups of ``batch_size`` users, each group in ``participations`` batches."""
    return batch_size * math.ceil(math.ceil(horizon / batch_size) / participations)


def batch_users(batch: int, users: int, batch_size: int, participations: int) -> np.ndarray:
    """Local ids of the ``users`` users of batch ``batch`` (0-based): user ``i`` of group ``k`` sits at
    position ``i`` of batches ``kP .. kP + P − 1``, so each user is in at most P batches and at most once
    per batch (C&Z Assumption 4.1)."""
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
    index_dtype: str = "float64",
    participations: int = 1,
    sessions: list[PrivacySession] | None = None,
) -> list[BanditRun]:
    """Run several calibrated algorithms that share a batch size in one vectorised pass.

    Every algorithm sees the same R instances of ``env``; results come back in input order.  Each
    algorithm's users are charged through its session (default: a fresh in-memory one) before every
    batch release, one event-level charge per participation (local id ``i·R + r`` for user i of run r);
    a run's certificate is the worst user's composition of her charges at the claim's δ.
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
        index_dtype=index_dtype,
        before_release=charge,
    )
    seconds = time.perf_counter() - start
    output = []
    for g, (c, session) in enumerate(zip(calibrated, sessions, strict=True)):
        rows = slice(g * runs, (g + 1) * runs)
        extras: dict[str, Any] = {
            "batch_size": batch_size,
            "participations": participations,
            "calibration": c.calibration,
            "noise": c.noise,
            "radius": radius,
            "regulariser": float(result.regulariser[rows][0]),
            "eigenvalue_clips": int(result.eigenvalue_clips[rows].sum()),
            "updates": result.updates,
            "seconds_shared_with": [other.algorithm for other in calibrated],
            "max_charges_per_user": session.max_charges_per_user(),
        }
        certificate = None if c.claim is None else session.worst_user_certificate(c.claim.delta)
        max_eps = 0.0 if certificate is None else float(certificate.epsilon_for(c.claim.delta))
        output.append(
            BanditRun(
                c.algorithm,
                result.cumulative_regret[rows],
                certificate,
                per_run,
                max_eps,
                seconds,
                extras,
                privacy="none" if c.claim is None else TRUST[c.algorithm].value,
                target=c.claim,
            )  # fmt: skip
        )
    return output


def _options(config: RunConfig) -> dict[str, Any]:
    known = {
        "dimension",
        "arms",
        "batch_size",
        "radius",
        "alpha",
        "participations",
        "sigma",
        "fixed_arms",
        "reward",
        *BIT_SUM_KEYS,
    }
    unknown = set(config.options) - known
    if unknown:
        raise InvalidParameter("options", sorted(unknown), "any of " + ", ".join(sorted(known)))
    return dict(config.options)


def run_algorithm(config: RunConfig) -> BanditRun:
    """``dpcert bandit run linucb*``: R repetitions on the C&Z instance (options: dimension=5, arms=100,
    batch_size, radius, alpha, participations, sigma, fixed_arms, reward; for linucb-sdp-vec g, b, p)."""
    options = _options(config)
    algorithm = config.algorithm
    batch_size = check.positive_int("batch_size", options.get("batch_size", DEFAULT_BATCH[algorithm]))
    participations = check.positive_int("participations", options.get("participations", 1))
    dimension = check.positive_int("dimension", options.get("dimension", 5), minimum=2)
    expected = "none" if algorithm == "linucb" else TRUST[algorithm].value
    if config.privacy != expected:
        raise InvalidParameter("privacy", config.privacy, f"'{expected}' for {algorithm}")
    calibrated = calibrate(
        algorithm,
        epsilon=config.epsilon,
        delta=config.delta,
        horizon=config.horizon,
        batch_size=batch_size,
        dimension=dimension,
        calibration=config.calibration,
        participations=participations,
        sigma=options.get("sigma"),
        bit_sum={key: options[key] for key in BIT_SUM_KEYS if key in options} or None,
    )
    rng = np.random.default_rng(config.seed)
    env = vaswani_instance(
        config.runs,
        dimension,
        check.positive_int("arms", options.get("arms", 100)),
        rng,
        fixed_arms=bool(options.get("fixed_arms", True)),
        reward=options.get("reward", "bernoulli"),
    )
    start = time.perf_counter()
    (run,) = run_group(
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
    return dataclasses.replace(run, seconds=time.perf_counter() - start)


def figure_runs(
    epsilon: float,
    *,
    runs: int = 50,
    horizon: int = 20_000,
    dimension: int = 5,
    arms: int = 100,
    delta: float = 0.1,
    shuffle_batch: int = 20,
    calibration: str = "tight",
    seed: int = 0,
    radius: str = "experiment",
    index_dtype: str = "float32",
) -> dict[str, BanditRun]:
    """C&Z Figure 1 (and Appendix G): the five algorithms on the same R instances, vectorised.

    The three per-round algorithms share one pass, the two shuffle ones another.
    """
    rng = np.random.default_rng([seed, 2])
    env = vaswani_instance(runs, dimension, arms, rng)
    common = {"epsilon": epsilon, "delta": delta, "horizon": horizon, "dimension": dimension}
    per_round = [calibrate(name, batch_size=1, calibration=calibration, **common) for name in ALGORITHMS[:3]]
    amp = calibrate("linucb-sdp-amp", batch_size=shuffle_batch, calibration=calibration, **common)
    vec = calibrate("linucb-sdp-vec", batch_size=shuffle_batch, calibration=calibration, **common)
    results = run_group(
        env, per_round, horizon=horizon, batch_size=1, rng=rng, radius=radius, index_dtype=index_dtype
    )
    results += run_group(
        env,
        [amp, vec],
        horizon=horizon,
        batch_size=shuffle_batch,
        rng=rng,
        radius=radius,
        index_dtype=index_dtype,
    )
    return {run.algorithm: run for run in results}


def run_summary(run: BanditRun, out: Path | None = None, stem: str = "") -> dict[str, Any]:
    """JSON-ready summary of one algorithm's runs; with ``out``, the mean regret curve goes to STEM.npy."""
    mean, stderr = run.final_regret()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        np.save(out / f"{stem}.npy", np.asarray(run.cumulative_regret).mean(axis=0))
    return {
        "regret": {"mean": mean, "stderr": stderr},
        "certificate": run.certificate.to_dict() if run.certificate else None,
        "claim_met": run.target_met,
        "calibration_used": run.extras.get("calibration"),
        "noise": run.extras.get("noise"),
        "seconds": run.seconds,
    }


def reproduction(
    name: str, epsilons: tuple[float, ...], dimensions: tuple[int, ...], horizon: int = 20_000
) -> Callable[..., dict[str, Any]]:
    """The ``dpcert reproduce`` entry for C&Z Figure 1 / Appendix G: every panel under both calibrations.

    Writes ``NAME.json`` (regret mean ± s.e., certificates) and the mean regret curves (``.npy``) to ``out``.
    """

    def reproduce(runs: int | None = None, out: Path | None = None, seed: int = 0) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "name": name,
            "runs": runs or 50,
            "horizon": horizon,
            "delta": 0.1,
            "panels": [],
        }
        for dimension in dimensions:
            for epsilon in epsilons:
                panel: dict[str, Any] = {"epsilon": epsilon, "dimension": dimension, "algorithms": {}}
                for calibration in CALIBRATIONS:
                    results = figure_runs(
                        epsilon,
                        runs=runs or 50,
                        horizon=horizon,
                        dimension=dimension,
                        calibration=calibration,
                        seed=seed,
                    )
                    for algorithm, run in results.items():
                        entry = panel["algorithms"].setdefault(algorithm, {})
                        entry[calibration] = run_summary(
                            run, out, f"{name}_d{dimension}_eps{epsilon}_{calibration}_{algorithm}"
                        )
                summary["panels"].append(panel)
        if out is not None:
            (out / f"{name}.json").write_text(json.dumps(summary, indent=2))
        return summary

    return reproduce


for _name in ALGORITHMS:
    register_algorithm(
        AlgorithmSpec(
            _name,
            {
                "linucb": "non-private LinUCB (Abbasi-Yadkori et al. 2011), C&Z 2022 batched framework",
                "linucb-ldp": "LDP-LinUCB (Zheng et al. 2020): Gaussian local randomizer",
                "linucb-jdp": "JDP-LinUCB (Shariff & Sheffet 2018): tree-based aggregation, central model",
                "linucb-sdp-amp": "SDP-LinUCB with P_Amp (C&Z 2022, Thm 3.2): Gaussian randomizer + shuffler",
                "linucb-sdp-vec": "SDP-LinUCB with P_Vec (C&Z 2022, Thm 3.5): Cheu et al. bit summation",
            }[_name],
            ("none",) if _name == "linucb" else (TRUST[_name].value,),
            run_algorithm,
        )
    )
register_reproduction(
    ReproductionSpec(
        "cz2022-figure1",
        "Chowdhury & Zhou 2022, Figure 1: d=5, K=100, T=20000, delta=0.1, eps in {0.2, 1, 10}",
        reproduction("cz2022-figure1", (0.2, 1.0, 10.0), (5,)),
    )
)
register_reproduction(
    ReproductionSpec(
        "cz2022-figure2",
        "Chowdhury & Zhou 2022, Appendix G (Figure 2): eps=1, d in {10, 15}, tight and paper",
        reproduction("cz2022-figure2", (1.0,), (10, 15)),
    )
)
