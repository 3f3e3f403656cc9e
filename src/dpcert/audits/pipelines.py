"""Audit whole protocols and bandit pipelines: exact shuffled views and released statistics of a run.

Shuffled views (the binary summation of Tenenbaum et al. 2021; the Cheu et al. bit sum).  Every message
of the binary summation and of the bit-sum protocol is one bit and the shuffler permutes them uniformly,
so the analyzer's view is determined by the number of ones (docs/PAPER_NOTES.md, PN-TKMS-2): the view's
privacy profile is exactly that of the count.  :func:`binary_sum_view` and :func:`bit_sum_view` give the
two count PMFs on neighbouring inputs (as a :class:`~dpcert.audits.exact.DiscretePair`, whose
``delta_for`` is the exact hockey-stick divergence); :func:`view_count` reduces materialized shuffled
messages to that count.

Bandit pipelines.  :class:`UserPopulation` is a fixed table of users' reward bits, one row per user in
arrival order and one column per arm: a user population in the sense of the replace-one relation, so that
two tables differing in one row are neighbouring inputs of the *whole* run.  :func:`elimination_pipeline`
wraps the batched arm elimination of Tenenbaum et al. 2021 into a mechanism ``f(population, rng, size)``
that runs ``size`` independent repetitions (vectorised in lockstep) and releases one statistic of each
run's final model, ready for :func:`dpcert.audits.audit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.audits.exact import DiscretePair
from dpcert.bandits.algorithms.mab import (
    RUN_NOTE,
    BatchSchedule,
    BatchSummation,
    batched_arm_elimination,
    with_notes,
)
from dpcert.bandits.results import RunResult
from dpcert.certificates import Certificate
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.shuffle.binary_sum import BinarySum
from dpcert.mechanisms.shuffle.binomial_sum import BinomialSumMechanism

STATISTICS = ("pulls", "first-estimate")


# =========================================================================== exact shuffled views
def _bits_vector(name: str, bits: Any) -> np.ndarray:
    array = check.finite_array(name, bits)
    if array.ndim != 1 or array.size == 0 or not np.all((array == 0) | (array == 1)):
        raise InvalidParameter(name, "<array>", "a non-empty 1-D array of 0/1 rewards")
    return array.astype(np.int64)


def _shifted_binomial(trials: int, p: float, shift: np.ndarray, size: int) -> np.ndarray:
    """PMF on ``{0, …, size − 1}`` of ``X + Bin(trials, p)`` where ``X`` has PMF ``shift``."""
    from scipy import stats

    noise = stats.binom.pmf(np.arange(trials + 1), trials, p)
    return np.convolve(shift, noise)[:size]


def binary_sum_view(bits_a: Any, bits_b: Any, noise_bits: int) -> DiscretePair:
    """PMFs of the count of ones in the shuffled view of the binary summation on two batches.

    The view of ``m`` users' bits plus ``N`` fair noise bits, permuted, is determined by its count
    ``Σx + Bin(N, 1/2)`` (docs/PAPER_NOTES.md, PN-TKMS-2); outcome ``c`` of the pair is the count ``c``.

    Parameters
    ----------
    bits_a, bits_b
        The two batches of reward bits (same length ``m``).
    noise_bits
        ``N``.
    """
    from scipy import stats

    a, b = _bits_vector("bits_a", bits_a), _bits_vector("bits_b", bits_b)
    if a.shape != b.shape:
        raise InvalidParameter("bits_b", f"length {b.size}", f"length {a.size} (as bits_a)")
    n = check.positive_int("noise_bits", noise_bits)
    size = a.size + n + 1
    p = np.zeros(size)
    q = np.zeros(size)
    p[int(a.sum()) : int(a.sum()) + n + 1] = stats.binom.pmf(np.arange(n + 1), n, 0.5)
    q[int(b.sum()) : int(b.sum()) + n + 1] = stats.binom.pmf(np.arange(n + 1), n, 0.5)
    return DiscretePair(tuple(range(size)), p, q)


def _encoded_sum_pmf(mechanism: BinomialSumMechanism, data: Any) -> np.ndarray:
    """PMF of ``Σ_i x̂_i`` (one coordinate): randomized rounding makes it a shifted Poisson binomial.

    ``x̂_i = ⌊u_i⌋ + Ber(u_i − ⌊u_i⌋)``; the Poisson-binomial PMF is the inverse DFT of the product of
    the users' characteristic functions (vectorised over users).  This is an audit oracle, not a
    certificate: each of its ``n + 1`` cells carries an absolute floating-point error of order 1e-16
    (negative round-off is clipped to 0 and the PMF renormalised), so rounding cells less likely than
    about 1e-14 are not resolved.  The binomial noise is then convolved directly (positive terms).
    """
    q = mechanism.parameters
    values = check.bounded_array("data", data, -q.bound, q.bound)
    if values.shape != (q.users,):
        raise InvalidParameter("data", values.shape, f"one batch of {q.users} scalars, shape ({q.users},)")
    scaled = np.clip((values + q.bound) * (q.g / (2.0 * q.bound)), 0.0, q.g)
    floor = np.floor(scaled)
    fraction = scaled - floor
    base = int(floor.sum())
    length = q.users + 1
    frequencies = np.exp(-2j * np.pi * np.arange(length) / length)
    product = np.prod(1.0 - fraction[:, None] + fraction[:, None] * frequencies[None, :], axis=0)
    bernoulli_sum = np.clip(np.fft.ifft(product).real, 0.0, None)
    pmf = np.zeros(q.users * q.g + 1)
    pmf[base : base + length] = bernoulli_sum[: pmf.size - base]
    return pmf / pmf.sum()


def bit_sum_view(mechanism: BinomialSumMechanism, data_a: Any, data_b: Any) -> DiscretePair:
    """PMFs of the count of ones in the shuffled view of the Cheu et al. scalar bit sum on two batches.

    The analyzer sees ``n(g + b)`` shuffled bits whose count is ``Σ x̂_i + Bin(n b, p)`` (the multiset of
    bits is the count); outcome ``c`` of the pair is the count ``c``.

    Parameters
    ----------
    mechanism
        A scalar (``dimension = 1``, ``shape = "vector"``) bit-sum mechanism.
    data_a, data_b
        The two batches: ``n`` values in ``[−B, B]`` each.
    """
    q = mechanism.parameters
    if q.shape != "vector" or q.dimension != 1:
        raise InvalidParameter("mechanism", f"{q.shape}, dimension {q.dimension}", "a scalar bit sum")
    size = q.users * q.g + q.noise_trials + 1
    p = _shifted_binomial(q.noise_trials, q.p, _encoded_sum_pmf(mechanism, data_a), size)
    r = _shifted_binomial(q.noise_trials, q.p, _encoded_sum_pmf(mechanism, data_b), size)
    return DiscretePair(tuple(range(size)), p / p.sum(), r / r.sum())


def view_count(messages: Any) -> np.ndarray:
    """The sufficient statistic of shuffled one-bit messages ``(..., length)``: the number of ones."""
    array = np.asarray(messages)
    if array.ndim == 0:
        raise InvalidParameter("messages", array.shape, "an array of shuffled bits, last axis the messages")
    return array.sum(axis=-1).astype(np.int64)


@dataclass(frozen=True)
class ShuffledViewCount:
    """Mechanism ``f(batch, rng, size)``: materialize the shuffled messages, release their count of ones.

    Wraps :class:`~dpcert.mechanisms.shuffle.binary_sum.BinarySum` (``batch``: ``m`` bits) or a scalar
    :class:`~dpcert.mechanisms.shuffle.binomial_sum.BinomialSumMechanism` (``batch``: ``n`` values); the count
    is the sufficient statistic of the view, so auditing it audits the shuffled view itself.
    ``certificate`` is the wrapped mechanism's (what :func:`dpcert.audits.audit` tests by default).
    """

    mechanism: BinarySum | BinomialSumMechanism

    @property
    def certificate(self) -> Certificate:
        if self.mechanism.certificate is None:
            raise InvalidParameter(
                "mechanism", "BinarySum(certificate=None)", "a protocol with a certificate (the claim)"
            )
        return self.mechanism.certificate

    def __call__(self, batch: Any, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        values = np.asarray(batch, dtype=float)
        runs = 1 if size is None else check.positive_int("size", size)
        if isinstance(self.mechanism, BinarySum):
            counts = view_count(
                self.mechanism.materialize(np.broadcast_to(values, (runs,) + values.shape), rng)
            )
        else:
            stacked = np.broadcast_to(values[..., None], (runs,) + values.shape + (1,))
            counts = view_count(self.mechanism.materialize(stacked, rng))[..., 0]
        return counts[0] if size is None else counts


# =========================================================================== bandit pipelines
@dataclass
class UserPopulation:
    """Users of batched arm elimination: ``rewards[i, a]`` is user ``i``'s bit on arm ``a``.

    Used as the environment of :func:`dpcert.bandits.algorithms.mab.batched_arm_elimination`: the engine
    serves the viable arms in ascending order, each to the next ``m`` users in arrival order (its documented
    schedule), so a batch of arm ``a`` sums the column ``a`` over exactly those users.  The table is the data:
    two populations that differ in one row are replace-one neighbours of the whole run.  The object is
    stateful (the next arriving user of each repetition); use a fresh one per run. ``served`` keeps, per call,
    the ``(runs, arms)`` first and one-past-last user of every batch (``-1`` where none).

    ``means`` (column means) only feed the pseudo-regret and good-event diagnostics of the engine.
    """

    rewards: np.ndarray
    reward_model: str = "bernoulli"
    means: np.ndarray = field(init=False)
    gaps: np.ndarray = field(init=False)
    served: list[tuple[np.ndarray, np.ndarray]] = field(init=False, default_factory=list)
    _next_user: np.ndarray | None = field(init=False, default=None)
    _cumulative: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        table = check.finite_array("rewards", self.rewards)
        if table.ndim != 2 or table.shape[1] < 2 or not np.all((table == 0) | (table == 1)):
            raise InvalidParameter("rewards", table.shape, "a (users, arms >= 2) table of 0/1 rewards")
        self.rewards = table.astype(np.int64)
        self.means = self.rewards.mean(axis=0)
        self.gaps = self.means.max() - self.means
        self._cumulative = np.vstack([np.zeros((1, table.shape[1]), np.int64), np.cumsum(self.rewards, 0)])

    @property
    def users(self) -> int:
        return int(self.rewards.shape[0])

    @property
    def arms(self) -> int:
        return int(self.rewards.shape[1])

    @property
    def best_arm(self) -> int:
        return int(np.argmax(self.means))

    @property
    def binary(self) -> bool:
        return True

    def reward_sums(self, arms: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Sums of column ``arms`` over the next ``counts`` users, arms served in ascending order."""
        arms = np.asarray(arms)
        counts = np.asarray(counts, dtype=np.int64)
        if counts.ndim != 2 or arms.shape != counts.shape or np.any(counts < 0):
            raise InvalidParameter("counts", counts.shape, "non-negative (runs, arms) pull counts")
        if self._next_user is None:
            self._next_user = np.zeros(counts.shape[0], dtype=np.int64)
        end = self._next_user[:, None] + np.cumsum(counts, axis=1)
        start = end - counts
        if np.any(end > self.users):
            raise InvalidParameter("rewards", f"{self.users} users", f"at least {int(end.max())} users")
        sums = self._cumulative[end, arms] - self._cumulative[start, arms]
        self.served.append((np.where(counts > 0, start, -1), np.where(counts > 0, end, -1)))
        self._next_user = end[:, -1]
        return sums.astype(float)


def released_statistic(result: RunResult, statistic: str, arm: int = 0) -> np.ndarray:
    """One scalar per repetition, computed from what the run released.

    ``"pulls"``: users the run assigned to ``arm`` in the end (with two arms, the whole final
    allocation); ``"first-estimate"``: the server's estimate of ``arm`` after phase 1 times the batch
    size, i.e. the debiased batch sum it was released (needs a run made with ``record_phases=True``).
    """
    arm = check.positive_int("arm", arm, minimum=0)
    if arm >= result.pulls.shape[1]:
        raise InvalidParameter("arm", arm, f"an arm index below {result.pulls.shape[1]}")
    if statistic == "pulls":
        return result.pulls[:, arm].astype(np.int64)
    if statistic == "first-estimate":
        if not result.phase_records:
            raise InvalidParameter("result", "<no phase records>", "a run made with record_phases=True")
        first = result.phase_records[0]
        return first.estimates[:, arm] * first.batch_size
    raise InvalidParameter("statistic", statistic, "one of " + ", ".join(STATISTICS))


@dataclass(frozen=True)
class EliminationPipeline:
    """Mechanism ``f(rewards, rng, size)``: batched arm elimination on a population, one statistic per run.

    ``rewards`` is a ``(users, arms)`` table of bits (the horizon is the number of users); each call
    runs ``size`` independent repetitions in lockstep (a fresh :class:`UserPopulation`) with
    ``summation`` and fixed batches of ``batch_size`` users (Tenenbaum et al. 2021, Alg. 1 schedule), and
    returns :func:`released_statistic` of each.  ``certificate`` is the run's: the summation's, since every
    user's reward enters exactly one summation (docs/PAPER_NOTES.md, PN-TKMS-4), as
    :func:`~dpcert.bandits.algorithms.mab.batched_arm_elimination` reports it.
    """

    summation: BatchSummation
    batch_size: int
    statistic: str = "pulls"
    arm: int = 0

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise InvalidParameter("statistic", self.statistic, "one of " + ", ".join(STATISTICS))
        object.__setattr__(self, "batch_size", check.positive_int("batch_size", self.batch_size))
        object.__setattr__(self, "arm", check.positive_int("arm", self.arm, minimum=0))

    @property
    def certificate(self) -> Certificate | None:
        return with_notes(self.summation.certificate, RUN_NOTE)

    def run(self, rewards: Any, rng: np.random.Generator, runs: int = 1) -> RunResult:
        """``runs`` repetitions on the population ``rewards`` (the engine's full result)."""
        population = UserPopulation(np.asarray(rewards))
        return batched_arm_elimination(
            population,  # type: ignore[arg-type]  # duck-typed environment
            population.users,
            self.summation,
            BatchSchedule("fixed", self.batch_size),
            rng,
            runs=check.positive_int("runs", runs),
            record_phases=self.statistic == "first-estimate",
            curve_points=2,
        )

    def __call__(self, rewards: Any, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        values = released_statistic(
            self.run(rewards, rng, 1 if size is None else size), self.statistic, self.arm
        )
        return values[0] if size is None else values


def elimination_pipeline(
    summation: BatchSummation, batch_size: int, *, statistic: str = "pulls", arm: int = 0
) -> EliminationPipeline:
    """The :class:`EliminationPipeline` of ``summation`` with fixed batches of ``batch_size`` users."""
    return EliminationPipeline(summation, batch_size, statistic, arm)
