"""Integer-exact (secure) Gaussian privatizers for LDP-, SDP-Amp- and JDP-LinUCB (Chowdhury & Zhou 2022).

The float privatizers of :mod:`dpcert.bandits.algorithms.linucb` add textbook floating-point
Gaussians, whose low-order bits leak (Mironov 2012).  Here every release is an exact multiple of a
power-of-two grid step g, computed from integers only:

``SecureLocalGaussian`` (LDP, Prop. F.1's local randomizer; also P_Amp's users, whose messages the
shuffler only permutes)
    Each user rounds her statistic ``z = (φy, upper(φφᵀ))`` (m = d + d(d+1)/2 entries) to ``g ℤ`` and
    sends ``round(z/g) + Z`` with Z of m independent N_Z(0, σ²) (CKS 2020, Alg. 3, integer-exact).
    The server's sum of messages is an exact integer.  Certificate: the ℓ2 multivariate discrete
    Gaussian (:mod:`dpcert.mechanisms.discrete_gaussian_l2`) at shift ``Δ/g + √m``, Δ = 3/√2.

``SecureTreeGaussian`` (JDP, tree aggregation over the batches, Prop. F.3)
    The server rounds each user's statistic to the fine grid ``h = g 2^-20`` (exact int64 sums),
    keeps every tree node's exact sum in h-steps and releases the node, when its dyadic block of
    leaves is complete, as ``round(sum/g) + Z`` in g-steps.  A prefix is the sum of the released nodes
    of its binary decomposition.  A user with P participations is in at most P nodes of each of the
    L levels, c_j times in node j (Σ c_j = P); node j's integer shift has ℓ2 norm at most
    ``c_j a + b`` with ``a = Δ/g + √m 2^-20`` and ``b = √m``, and
    ``Σ_j (c_j a + b)² <= Σ_j c_j (√c_j a + b)² <= P (√P a + b)²`` (as c_j >= 1).  So each
    participation is charged L releases at shift ``√P a + b``; the P charges sum to at least the
    user's ρ (zCDP adds, Bun & Steinke 2016, Lemma 2.3).  For P = 1 the charge is exact.

Confidence radius.  The engine sizes λ and β from ``cumulative_std`` (the per-entry scale s of the
cumulative noise).  The discrete Gaussian is σ²-subgaussian with variance at most σ² (Canonne,
Kamath & Steinke 2020; both checked by exact summation in tests/test_secure_linucb.py), and sums of
independent subgaussians add their variance proxies, so ``σ_real √n`` (n users for the local randomizer, L
nodes for the tree) bounds the noise exactly as the float privatizers' σ√n does.  Rounding adds
a deterministic error of at most e per entry of the cumulative statistic: ``e = T g/2`` for the
local randomizer (one rounding per user), ``e = (L g + T h)/2`` for the tree (one rounding per node
of the decomposition, plus the users' fine roundings).  A symmetric d×d error with entries at most e
has operator norm at most d e and a d-vector norm at most √d e; the radius bounds of Chowdhury &
Zhou 2022, Lemmas A.2/A.4 grow by at least ``2√d x`` and ``√d x`` when s grows by x, so
``x = max(1, √d/2) e`` is added to the scale.  The theory radius's matrix bound is the Gaussian
one (Σ_N, docs/PAPER_NOTES.md PN-CZ-7); for subgaussian entries only unspecified constants are
known, so the runner refuses ``radius="theory"`` for secure runs; the experiment radius (the
paper's code) takes the scale as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcert.bandits.algorithms.linucb_privatizers import Aggregator, tree_levels
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.secure.noise import Grid
from dpcert.mechanisms.secure.samplers import IntegerPool

FINE_BITS = 20  # the tree's per-user rounding grid h = g 2^-20
_INT_LIMIT = 2**62


def _pool(pool: IntegerPool | None, sigma: int, rng: np.random.Generator) -> IntegerPool:
    return pool if pool is not None and pool.rng is rng else IntegerPool(sigma, rng)


def rounding_scale(dimension: int, error: float) -> float:
    """Scale added to the noise scale for a deterministic error of at most ``error`` per entry."""
    return max(1.0, math.sqrt(dimension) / 2.0) * error


@dataclass
class _SecureLocalSum:
    grid: Grid
    sigma: int
    total: np.ndarray  # (runs, p) int64: the exact sum of the messages, in grid steps
    pool: IntegerPool | None = None

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        units = self.grid.to_units(statistics)  # each user rounds her own statistic
        self.pool = _pool(self.pool, self.sigma, rng)
        messages = units + self.pool.take(units.shape)
        self.total += messages.sum(axis=1)
        return self.grid.from_units(self.total)


@dataclass(frozen=True)
class SecureLocalGaussian:
    """Each user sends ``round(z/g) + Z``, Z ~ N_Z(0, σ²)^m integer-exact (see the module docstring).

    ``sigma`` is in grid steps; ``real_sigma = g σ``.
    """

    grid: Grid
    sigma: int
    dimension: int
    name: str = "secure-local-gaussian"

    @property
    def real_sigma(self) -> float:
        return self.sigma * self.grid.granularity

    def rounding_error(self, horizon: int, batch_size: int) -> float:
        """Bound on the rounding error of one entry of the cumulative statistic: ``T g / 2``."""
        return horizon * self.grid.granularity / 2.0

    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        scale = self.real_sigma * math.sqrt(horizon)
        return scale + rounding_scale(self.dimension, self.rounding_error(horizon, batch_size))

    def start(self, runs: int, size: int) -> Aggregator:
        return _SecureLocalSum(self.grid, self.sigma, np.zeros((runs, size), dtype=np.int64))


@dataclass
class _SecureTreeSum:
    grid: Grid
    sigma: int
    levels: int
    leaf: int
    pending: np.ndarray  # (levels, runs, p) int64: exact sum, in fine steps, of each open node
    released: np.ndarray  # (levels, runs, p) int64: the last released node of each level, in g-steps
    level_index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pool: IntegerPool | None = None

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        fine = Grid(int(self.grid.exponent) - FINE_BITS)
        self.pending += fine.to_units(statistics).sum(axis=1)
        index = -(-rounds_done // self.leaf)  # leaves released so far (a partial last batch is a leaf)
        complete = (index % (1 << self.level_index)) == 0  # the level-ℓ block ending at this leaf
        count = int(complete.sum())  # always levels 0 .. count − 1
        self.pool = _pool(self.pool, self.sigma, rng)
        # round half to even from fine steps to g-steps, exactly on integers
        self.released[:count] = _round_shift(self.pending[:count], FINE_BITS) + self.pool.take(
            (count,) + self.pending.shape[1:]
        )
        self.pending[:count] = 0
        used = ((index >> self.level_index) & 1).astype(bool)
        return self.grid.from_units(self.released[used].sum(axis=0))


def _round_shift(values: np.ndarray, bits: int) -> np.ndarray:
    """``round(values / 2^bits)`` (half to even) on int64, exactly."""
    floor = values >> bits
    remainder = values - (floor << bits)
    half = 1 << (bits - 1)
    up = (remainder > half) | ((remainder == half) & (floor & 1 == 1))
    return floor + up


@dataclass(frozen=True)
class SecureTreeGaussian:
    """Tree aggregation over the batches with integer-exact N_Z(0, σ²) on every node (module docstring).

    ``sigma`` is in grid steps; ``real_sigma = g σ``.
    """

    grid: Grid
    sigma: int
    horizon: int
    dimension: int
    batch_size: int = 1
    name: str = "secure-tree-gaussian"

    def __post_init__(self) -> None:
        # exact int64 sums: T users, each entry at most 1 in magnitude, in fine steps
        if self.horizon * math.ldexp(1.0, FINE_BITS - int(self.grid.exponent)) >= _INT_LIMIT:
            raise InvalidParameter(
                "granularity", self.grid.granularity, "a grid with horizon x 2^20 / granularity < 2^62"
            )

    @property
    def real_sigma(self) -> float:
        return self.sigma * self.grid.granularity

    def rounding_error(self, horizon: int, batch_size: int) -> float:
        """Bound on the rounding error of one entry of a released prefix: ``(L g + T h)/2``."""
        levels = tree_levels(horizon, batch_size)
        g = self.grid.granularity
        return (levels * g + horizon * math.ldexp(g, -FINE_BITS)) / 2.0

    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        scale = self.real_sigma * math.sqrt(tree_levels(horizon, batch_size))
        return scale + rounding_scale(self.dimension, self.rounding_error(horizon, batch_size))

    def start(self, runs: int, size: int) -> Aggregator:
        levels = tree_levels(self.horizon, self.batch_size)
        return _SecureTreeSum(
            self.grid,
            self.sigma,
            levels,
            self.batch_size,
            np.zeros((levels, runs, size), dtype=np.int64),
            np.zeros((levels, runs, size), dtype=np.int64),
            np.arange(levels, dtype=np.int64),
        )
