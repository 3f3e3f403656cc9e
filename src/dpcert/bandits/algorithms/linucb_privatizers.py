"""The privatizers of the LinUCB family and their server-side aggregators (Chowdhury & Zhou 2022).

A privatizer says how each user's statistic ``z_t = (φ_t y_t, upper(φ_t φ_tᵀ))`` is made private (noise
only); its aggregator turns batches of statistics into the server's noisy cumulative sum, for all runs
at once.  :class:`Calibrated` pairs a privatizer with the certificate its noise earns; the calibrations
that build it are in :mod:`dpcert.bandits.calibration.linucb`, the engine that runs it in
:mod:`dpcert.bandits.algorithms.linucb`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from dpcert.certificates import Certificate, Guarantee
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.shuffle.binomial_sum import BinomialSumMechanism, BitSumParameters


# ----------------------------------------------------------------------------- the statistic
def statistic_size(dimension: int) -> int:
    """Length ``d + d(d+1)/2`` of the flat per-user statistic."""
    return dimension + dimension * (dimension + 1) // 2


@functools.lru_cache(maxsize=64)
def upper_indices(dimension: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(dimension)


def user_statistics(features: np.ndarray, rewards: np.ndarray) -> np.ndarray:
    """Flat statistics ``(φ y, upper(φφᵀ))`` (row-major upper triangle), shape ``(..., d + d(d+1)/2)``."""
    rows, cols = upper_indices(features.shape[-1])
    outer = features[..., rows] * features[..., cols]
    return np.concatenate([features * rewards[..., None], outer], axis=-1)


def symmetric_index(dimension: int) -> np.ndarray:
    """Index into the upper-triangle vector for every (i, j) of a d×d matrix (row-major)."""
    rows, cols = np.triu_indices(dimension)
    index = np.empty((dimension, dimension), dtype=int)
    index[rows, cols] = np.arange(rows.size)
    index[cols, rows] = np.arange(rows.size)
    return index.ravel()


def unpack(total: np.ndarray, dimension: int, regulariser: float) -> tuple[np.ndarray, np.ndarray]:
    """``(V, u)`` from a flat cumulative statistic: ``V = λ I + sym(upper)``, ``u`` the vector part."""
    runs = total.shape[0]
    gram = total[:, dimension:][:, symmetric_index(dimension)].reshape(runs, dimension, dimension)
    return gram + regulariser * np.eye(dimension), total[:, :dimension]


# ----------------------------------------------------------------------------- privatizers
class Aggregator(Protocol):
    """Server-side state of one privatizer for all runs: turns batches into noisy cumulative sums."""

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        """Add a batch of per-user statistics (runs, users, p); return the noisy cumulative sum (runs, p).

        ``rng`` is the aggregator's own stream (the same generator at every call, used by nothing
        else): the Gaussian aggregators draw their noise from it in blocks ahead of use.
        """


class ContinualPrivatizer(Protocol):
    """How LinUCB's user statistics are privatised under continual release: ``start`` gives the server
    state that turns each batch into a noisy running sum (noise only; certificates come from the
    calibrations).  One-off releases go through :class:`dpcert.bandits.privatizers.Privatizer`."""

    @property
    def name(self) -> str: ...

    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        """Per-entry standard deviation (or sub-Gaussian scale) of the cumulative noise at the horizon."""

    def start(self, runs: int, size: int) -> Aggregator:
        """Fresh server state for ``runs`` repetitions of a statistic of length ``size``."""


@dataclass
class ExactRunningSum:
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
        return ExactRunningSum(np.zeros((runs, size)))


class NormalPool:
    """Standard normals drawn from one generator in blocks and handed out in order.

    ``Generator.standard_normal`` fills its output in order, so the values handed out are exactly those
    of drawing each requested shape in turn from the same generator; the block draw only saves the
    per-call overhead.  Blocks are drawn into one reused buffer (``out=``), and a request larger than a
    block is drawn straight into the caller's array (:meth:`fill`), so no fresh memory is touched per
    draw.  The generator must be private to the pool (values past the last request are drawn and
    discarded).
    """

    def __init__(self, rng: np.random.Generator, block: int = 1 << 16) -> None:
        self.rng, self.block = rng, block
        self.buffer = np.empty(block)
        self.position = block  # the buffer holds no values yet

    def fill(self, out: np.ndarray) -> np.ndarray:
        """Write the next ``out.size`` values into ``out`` (float64, C-contiguous) and return it."""
        if out.dtype != np.float64 or not out.flags.c_contiguous:
            raise InvalidParameter("out", f"<{out.dtype} array>", "a C-contiguous float64 array")
        flat = out.reshape(-1)  # a view: the array is contiguous
        need = flat.size
        take = min(need, self.buffer.size - self.position)
        flat[:take] = self.buffer[self.position : self.position + take]
        self.position += take
        rest = need - take
        if rest >= self.block:  # a large request: straight into the caller's memory
            self.rng.standard_normal(out=flat[take:])
        elif rest:
            self.rng.standard_normal(out=self.buffer)
            flat[take:] = self.buffer[:rest]
            self.position = rest
        return out

    def standard_normal(self, shape: tuple[int, ...]) -> np.ndarray:
        """The next ``prod(shape)`` values as a new array of that shape."""
        return self.fill(np.empty(shape))


def reuse_pool(pool: NormalPool | None, rng: np.random.Generator) -> NormalPool:
    return pool if pool is not None and pool.rng is rng else NormalPool(rng)


@dataclass
class LocalGaussianSum:
    sigma: float
    total: np.ndarray
    pool: NormalPool | None = None

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        users = statistics.shape[1]
        self.pool = reuse_pool(self.pool, rng)
        # The analyzer's sum of `users` messages v_i + N(0, σ² I) is exactly sum + N(0, users σ² I).
        noise = self.pool.standard_normal(self.total.shape) * (self.sigma * math.sqrt(users))
        self.total += statistics.sum(axis=1) + noise
        return self.total


@dataclass(frozen=True)
class LocalGaussianRandomizer:
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
        return LocalGaussianSum(self.sigma, np.zeros((runs, size)))


def tree_levels(horizon: int, batch_size: int = 1) -> int:
    """Number of tree nodes containing any one batch's data: ``⌊log₂ ⌈T/B⌉⌋ + 1``.

    The tree's leaves are the ``⌈T/B⌉`` batches (Chowdhury & Zhou 2022, Prop. F.3), a partial last batch
    being a leaf of its own; with ``B = 1`` they are the rounds.
    """
    return (-(-int(horizon) // int(batch_size))).bit_length()


@dataclass
class TreeSum:
    sigma: float
    levels: int
    total: np.ndarray
    node_noise: np.ndarray  # (levels, runs, p): noise of the current node at each level
    node_ids: np.ndarray  # (levels,): block index t >> level of the current node, −1 if none yet
    level_index: np.ndarray  # (levels,): 0, 1, …, levels − 1
    pool: NormalPool | None = None
    leaf: int = 1  # rounds per leaf (the batch size): leaf index = batches released so far

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        self.total += statistics.sum(axis=1)
        levels = self.level_index
        index = -(-rounds_done // self.leaf)  # a partial last batch is a leaf of its own (never shares one)
        ids = index >> levels
        # a new dyadic block starts at the levels whose block index changed: always levels 0..k − 1
        count = int((ids != self.node_ids).sum())
        if count:
            self.pool = reuse_pool(self.pool, rng)
            self.node_noise[:count] = self.sigma * self.pool.standard_normal((count,) + self.total.shape)
            self.node_ids = ids
        # the nodes of the binary decomposition of the prefix of leaves, summed from the lowest level up
        prefix = np.zeros_like(self.total)
        for level in np.flatnonzero((index >> levels) & 1).tolist():
            prefix += self.node_noise[level]
        return self.total + prefix


@dataclass(frozen=True)
class TreeGaussian:
    """Tree-based aggregation (Dwork et al. 2010; Chan et al. 2011) with N(0, σ²) on every node.

    The leaves are the batches (Chowdhury & Zhou 2022, Prop. F.3: the tree is built over the ``⌈T/B⌉``
    batches, so a batch of B rounds costs one leaf): the prefix sum of batches ``1..m`` is the sum of the
    nodes of the binary decomposition of ``m``; each node covers a dyadic block and carries its own noise,
    reused by every prefix that contains the block.  One batch's data enter ``⌊log₂ ⌈T/B⌉⌋ + 1`` nodes.
    """

    sigma: float
    horizon: int
    name: str = "tree-gaussian"
    batch_size: int = 1

    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        return self.sigma * math.sqrt(tree_levels(horizon, batch_size))

    def start(self, runs: int, size: int) -> Aggregator:
        levels = tree_levels(self.horizon, self.batch_size)
        return TreeSum(
            self.sigma,
            levels,
            np.zeros((runs, size)),
            np.zeros((levels, runs, size)),
            np.full(levels, -1),
            np.arange(levels),
            leaf=self.batch_size,
        )


@dataclass
class VecSum:
    parameters: BitSumParameters
    certificate: Certificate
    total: np.ndarray
    streams: tuple[np.random.Generator, np.random.Generator] | None = None
    source: np.random.Generator | None = None

    def random_streams(self, rng: np.random.Generator) -> tuple[np.random.Generator, np.random.Generator]:
        """(rounding bits, binomial noise): two generators spawned once from the aggregator's stream, so
        that each kind of randomness is one sequence however the batches are grouped into draws."""
        if self.streams is None or self.source is not rng:
            rounding, noise = rng.spawn(2)
            self.streams, self.source = (rounding, noise), rng
        return self.streams

    def mechanism(self, users: int, size: int) -> BinomialSumMechanism:
        """The protocol of a batch of ``users`` on the flat statistic of length ``size`` (the ℓ2 option
        changes the accounting, not the protocol)."""
        flat = replace(self.parameters, users=users, dimension=size, shape="vector", norm="entry")
        return BinomialSumMechanism(flat, self.certificate)

    def add_batch(self, statistics: np.ndarray, rounds_done: int, rng: np.random.Generator) -> np.ndarray:
        rounding, noise = self.random_streams(rng)
        mechanism = self.mechanism(statistics.shape[1], statistics.shape[2])
        self.total += mechanism.simulate(statistics, rounding, noise_rng=noise)
        return self.total


@dataclass(frozen=True)
class ShuffleVectorSum:
    """P_Vec (Alg. 5–7): every entry of every user's statistic is sent as g + b bits; per-label counts.

    The protocol is :mod:`dpcert.mechanisms.shuffle.binomial_sum` (safe encoding range 2: encodings in
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
        return VecSum(self.parameters, self.certificate, np.zeros((runs, size)))


# ----------------------------------------------------------------------------- calibrated privatizers
@dataclass(frozen=True)
class Calibrated:
    """A privatizer with the guarantee its noise earns per user, against the claimed (ε, δ).

    ``batch_certificate`` is what one participation (one batch release of a user's data) is charged,
    an event-level certificate; ``certificate`` is a user's total over her participations, their
    composition (what actually holds, re-derivable from its parameters); ``claim_met`` says whether it
    covers the claim through its profile.  ``noise`` lists the noise parameters for reports.
    """

    algorithm: str
    privatizer: ContinualPrivatizer
    certificate: Certificate | None
    claim: Guarantee | None
    claim_met: bool
    calibration: str
    noise: dict[str, Any] = field(default_factory=dict)
    batch_certificate: Certificate | None = None  # one participation's charge
    interval: float | None = None  # PLD discretisation of the composition (P_Vec with returning users)
    batch_rule: BatchSizeChoice | None = None  # set when the batch size came from a corollary (auto)
    local_epsilon: float | None = None  # P_Vec: one user's messages alone, at the batch's delta (or None)


@dataclass(frozen=True)
class BatchSizeChoice:
    """A batch size chosen from T, d, ε, δ by a utility-targeted corollary of Chowdhury & Zhou 2022.

    The corollaries balance the batching term dB of the regret against the privacy term and state B
    up to a constant; ``value`` is their expression with every hidden constant set to 1, and
    ``batch_size`` that value rounded to an integer in [1, T]; for the shuffle protocols the divisor
    of T nearest to it (P_Vec runs full batches only, and a short last batch would weaken P_Amp's
    amplification, which is accounted with the smallest batch).
    """

    algorithm: str
    batch_size: int
    value: float
    rule: str
    formula: str

    def note(self) -> str:
        return (
            f"batch size B = {self.batch_size} chosen by {self.rule}: B = {self.formula} = "
            f"{self.value:.4g} (hidden constants set to 1)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "value": self.value,
            "rule": self.rule,
            "formula": self.formula,
        }
