"""DP-UCB: UCB on private running sums from the binary mechanism (Mishra & Thakurta 2015), central model.

Mishra & Thakurta, "(Nearly) optimal differentially private stochastic multi-arm bandits", UAI 2015.
Every arm keeps its rewards' running sum through the binary (tree-based) mechanism of Chan, Shi & Song
2011 (§3.4; also Dwork, Naor, Pitassi & Rothblum 2010): when the arm's ``m``-th reward arrives, the
node of level ``i = v₂(m)`` (the number of trailing zeros of ``m``) completes, its exact p-sum
``α_i = Σ_{j<i} α_j + x_m`` is released as ``α̂_i = α_i + Lap(b)`` and the private prefix sum is
``S̃(m) = Σ_{j : bit j of m is 1} α̂_j`` — ``popcount(m)`` independent Laplace(b) noises, variance
``popcount(m)·2b²`` (:func:`noise_count`, :func:`prefix_noise_variance`).  After playing every arm once,
round ``t + 1`` plays

    argmax_a  S̃_a/n_a + width_scale·( sqrt(2 ln t / n_a) + u_t / n_a )

(``n_a`` the arm's pulls so far): UCB1's Hoeffding term (Auer, Cesa-Bianchi & Fischer 2002) plus the
tree's noise over the pulls, where ``u_t`` = :func:`~dpcert.bandits.algorithms.mab.laplace_sum_deviation`
``(b, L, ln t)`` bounds a sum of at most ``L`` Laplace(b) noises except with probability ``2t⁻⁴``
(sub-exponential tail; the same role as Chan, Shi & Song 2011, Cor. 2.9, in Mishra & Thakurta's index).
``L = ⌈log₂ T⌉ + 1`` is the number of levels of a tree over ``T`` steps and ``b = L/ε`` the node noise
of the paper.  The authors' reference code of sayakrc/Differentially-Private-Bandits has no DP-UCB, so
there is no second implementation to take constants from: these are the paper's structure with a proven
tail bound for the noise term.

Privacy (ε-DP, replace-one, central model).  Neighbouring runs differ in one user's reward (in [0, 1]),
the user of one round; her round's arm is a function of earlier releases only, so she enters exactly one
arm's stream at the same position in both runs.  In that stream her reward lies in at most one node per
level, ``<= ⌊log₂ T⌋ + 1 <= L`` nodes, and changes each of those sums by at most 1: each node's release is
Laplace(L/ε) at sensitivity 1, ``ε/L``-DP (Dwork, McSherry, Nissim & Smith 2006), and composing the
``L`` releases that contain her gives ε (basic composition; Chan, Shi & Song 2011, Thm 3.5, for the binary
mechanism).  Nodes without her reward and the other arms' streams do not depend on her reward, and the
arm choices are post-processing of released nodes, so the whole run is ε-DP.  Her certificate is the
``L``-fold composition of the node's Laplace certificate (:class:`~dpcert.bandits.algorithms.mab.
CentralLaplaceSum` at ε/L, the same object that draws the noise), charged for every user of a block of
rounds before that block's rewards and noises are drawn.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpcert import _validation as check
from dpcert.accounting.composition import compose_counts
from dpcert.bandits.algorithms.mab import CentralLaplaceSum, checked_run_inputs, laplace_sum_deviation
from dpcert.bandits.calibration.common import with_notes
from dpcert.bandits.environments.mab import MultiArmedBandit
from dpcert.bandits.privatizers import Contributions
from dpcert.bandits.results import RunResult
from dpcert.certificates import Certificate
from dpcert.errors import InvalidParameter
from dpcert.session import PrivacySession

ALGORITHM = "dp-ucb"
CITATION = "Mishra & Thakurta 2015 (UAI), private UCB on binary-mechanism sums (Chan, Shi & Song 2011)"
BLOCK = 4096  # rounds charged (then drawn) at a time
RUN_NOTE = (
    "whole run: each reward enters one arm's binary-mechanism tree (Chan, Shi & Song 2011) in at most "
    "L = ceil(log2 T) + 1 nodes, each released with Laplace(L/eps) at sensitivity 1; the L-fold basic "
    "composition is eps (Mishra & Thakurta 2015); arm choices are post-processing"
)


def binary_mechanism_levels(horizon: int) -> int:
    """``L = ⌈log₂ T⌉ + 1``: the levels of a binary tree over a stream of at most ``T`` steps."""
    horizon = check.positive_int("horizon", horizon)
    return (horizon - 1).bit_length() + 1


def noise_count(counts: np.ndarray | int) -> np.ndarray:
    """Laplace noises in the private prefix sum of ``m`` rewards: ``popcount(m)`` (elementwise)."""
    values = np.asarray(counts, dtype=np.int64)
    if np.any(values < 0):
        raise InvalidParameter("counts", "<negative entry>", "non-negative stream lengths")
    total = np.zeros(values.shape, dtype=np.int64)
    rest = values.copy()
    while np.any(rest):
        total += rest & 1
        rest >>= 1
    return total


def prefix_noise_variance(counts: np.ndarray | int, scale: float) -> np.ndarray:
    """Variance of the noise in the private prefix sum of ``m`` rewards: ``popcount(m)·2b²``."""
    scale = check.positive_finite("scale", scale)
    return noise_count(counts) * (2.0 * scale * scale)


@dataclass(frozen=True)
class DPUCBParameters:
    """Validated parameters: privacy ε and ``width_scale`` > 0 (1 is the analysed index)."""

    epsilon: float
    width_scale: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.epsilon(self.epsilon))
        object.__setattr__(self, "width_scale", check.positive_finite("width_scale", self.width_scale))


def node_summation(epsilon: float, horizon: int) -> CentralLaplaceSum:
    """The Laplace release of one tree node at sensitivity 1: ``ε/L``-DP (scale ``L/ε``), with ``ε/L``
    lowered by a few ulps where needed so that ``L`` times its certificate's ε is at most ε exactly."""
    epsilon = check.epsilon(epsilon)
    levels = binary_mechanism_levels(horizon)
    node_epsilon = epsilon / levels
    for _ in range(64):  # each step lowers by one ulp; one or two suffice
        node = CentralLaplaceSum(node_epsilon)
        if Fraction(node.certificate.epsilon) * levels <= Fraction(epsilon):
            return node
        node_epsilon = math.nextafter(node_epsilon, 0.0)
    raise InvalidParameter("epsilon", epsilon, "a value whose L-th part composes back to at most itself")


def binary_mechanism_certificate(epsilon: float, horizon: int) -> Certificate:
    """A user's certificate: the ``L``-fold basic composition of the node's Laplace certificate (ε)."""
    node = node_summation(epsilon, horizon)
    return compose_counts([(node.certificate, binary_mechanism_levels(horizon))], method="basic")


class BinaryMechanismSum:
    """The private running sum of one stream by the binary mechanism (Chan, Shi & Song 2011, §3.4).

    :meth:`append` adds the stream's next value with the Laplace noise of the node that completes there
    and returns the released prefix sum ``S̃(m)``.  ``high[j]`` is the noise of the current prefix's nodes
    of levels ``>= j``, so completing level ``i`` sets ``high[0..i] = high[i + 1] + z`` (the nodes below
    ``i`` leave the prefix, the exact p-sums they held are inside the new node).
    """

    __slots__ = ("count", "exact", "high", "levels")

    def __init__(self, levels: int) -> None:
        self.levels = check.positive_int("levels", levels)
        self.count = 0
        self.exact = 0.0
        self.high = [0.0] * (levels + 1)

    @property
    def private_sum(self) -> float:
        """The released prefix sum: the exact sum plus the noise of ``popcount(m)`` nodes."""
        return self.exact + self.high[0]

    def append(self, value: float, noise: float) -> float:
        """Add ``value``; ``noise`` is the completing node's Laplace draw.  Returns the new ``S̃(m)``."""
        count = self.count + 1
        level = (count & -count).bit_length() - 1  # v₂(m): the completing node's level
        if level >= self.levels:
            raise InvalidParameter("count", count, f"at most {2**self.levels - 1} values in this tree")
        high = self.high
        node = high[level + 1] + noise
        for j in range(level + 1):
            high[j] = node
        self.count = count
        self.exact += value
        return self.exact + node


def noise_width(scale: float, levels: int, rounds: np.ndarray) -> np.ndarray:
    """``u_t``: a bound on a sum of at most ``levels`` Laplace(``scale``) noises holding except with
    probability ``2t⁻⁴`` (:func:`~dpcert.bandits.algorithms.mab.laplace_sum_deviation` at ``ln t``)."""
    return np.array([laplace_sum_deviation(scale, levels, math.log(float(t))) for t in rounds])


def _play_block(
    trees: list[BinaryMechanismSum],
    rewards: list[list[float]],
    noise: list[float],
    bonus: list[float],
    width: list[float],
    start: int,
) -> list[int]:
    """One run's rounds ``start, start + 1, …`` of a block (pure Python: a handful of arms per round).

    Round ``t < k`` plays arm ``t``; later rounds play the first arm maximising
    ``(S̃_a + width)/n_a + bonus/sqrt(n_a)``.  Returns the arms played."""
    k = len(trees)
    sums = [tree.private_sum for tree in trees]
    inverse = [1.0 / tree.count if tree.count else 0.0 for tree in trees]
    root = [math.sqrt(value) for value in inverse]
    played = []
    for step, (reward, z, c, w) in enumerate(zip(rewards, noise, bonus, width, strict=True)):
        t = start + step
        if t < k:
            arm = t
        else:
            arm, best = 0, -math.inf
            for a in range(k):
                value = (sums[a] + w) * inverse[a] + c * root[a]
                if value > best:
                    arm, best = a, value
        tree = trees[arm]
        sums[arm] = tree.append(reward[arm], z)
        inverse[arm] = 1.0 / tree.count
        root[arm] = math.sqrt(inverse[arm])
        played.append(arm)
    return played


def dp_ucb(
    bandit: MultiArmedBandit,
    horizon: int,
    rng: np.random.Generator,
    *,
    epsilon: float,
    width_scale: float = 1.0,
    runs: int = 1,
    session: PrivacySession | None = None,
    curve_points: int = 200,
) -> RunResult:
    """DP-UCB (Mishra & Thakurta 2015), ``runs`` repetitions in lockstep (vectorised over runs and arms).

    ``bandit`` needs rewards in [0, 1] (Bernoulli or Beta arms).  Users of run ``r`` have local ids
    ``r·T + i`` (``i`` the 0-based round); every round's user is charged through ``session``, a block of
    :data:`BLOCK` rounds at a time, before that block's rewards and noises are drawn.  Each user has a
    reward for every arm (drawn for the block); only the pulled arm's enters a tree.  Module docstring:
    the algorithm and its privacy.
    """
    parameters = DPUCBParameters(epsilon, width_scale)
    horizon, runs, rng, curve_points = checked_run_inputs(bandit, horizon, runs, rng, curve_points)
    levels = binary_mechanism_levels(horizon)
    node = node_summation(parameters.epsilon, horizon)
    certificate = with_notes(binary_mechanism_certificate(parameters.epsilon, horizon), RUN_NOTE)
    started = time.perf_counter()
    k = bandit.arms
    trees = [[BinaryMechanismSum(levels) for _ in range(k)] for _ in range(runs)]
    gaps = bandit.gaps
    checkpoints = np.linspace(0.0, horizon, curve_points)
    curves = np.zeros((runs, curve_points))
    regret = np.zeros(runs)
    violated = np.zeros(runs, dtype=bool)
    arm_grid = np.broadcast_to(np.arange(k), (runs, BLOCK, k))
    for start in range(0, horizon, BLOCK):
        size = min(BLOCK, horizon - start)
        if session is not None:
            session.charge_ranges(np.arange(runs) * horizon + start, size, certificate)
        rewards = bandit.rewards(arm_grid[:, :size], rng)  # (runs, size, k): each user's potential rewards
        # one completing node per round and run: its noise, a release of zero sums that the tree adds
        # to the node's partial sum (the block's users were charged above)
        noise = node.release(Contributions.of_sums(np.zeros((runs, size)), 1), rng).estimate
        rounds = np.maximum(np.arange(start, start + size), 1)  # rounds played before this one (>= 1)
        bonus = (parameters.width_scale * np.sqrt(2.0 * np.log(rounds.astype(float)))).tolist()
        width = (parameters.width_scale * noise_width(node.noise_scale, levels, rounds)).tolist()
        played = np.array(
            [
                _play_block(trees[r], rewards[r].tolist(), noise[r].tolist(), bonus, width, start)
                for r in range(runs)
            ],
            dtype=np.int64,
        ).reshape(runs, size)
        cumulative = regret[:, None] + np.cumsum(gaps[played], axis=1)
        table = np.concatenate((regret[:, None], cumulative), axis=1)
        times = np.arange(start, start + size + 1, dtype=float)
        for g in np.flatnonzero((checkpoints >= start) & (checkpoints <= start + size)):
            curves[:, g] = [np.interp(checkpoints[g], times, row) for row in table]
        regret = cumulative[:, -1]
        # the good event at the block's end: every arm's private mean within its width of μ_a
        counts = np.array([[tree.count for tree in row] for row in trees], dtype=float)
        if np.all(counts > 0):
            log_t = math.log(float(start + size))
            half = parameters.width_scale * (
                np.sqrt(2.0 * log_t / counts)
                + laplace_sum_deviation(node.noise_scale, levels, log_t) / counts
            )
            sums = np.array([[tree.private_sum for tree in row] for row in trees])
            violated |= np.any(np.abs(sums / counts - bandit.means) > half, axis=1)
    pulls = np.array([[tree.count for tree in row] for row in trees], dtype=np.int64)
    return RunResult(
        algorithm=ALGORITHM,
        horizon=horizon,
        final_regret=regret,
        checkpoints=checkpoints,
        regret_curve=curves,
        pulls=pulls,
        users=np.full(runs, horizon, dtype=np.int64),
        best_arm_eliminated=np.zeros(runs, dtype=bool),
        good_event_violated=violated,
        certificate=certificate,
        seconds=time.perf_counter() - started,
        parameters={
            "arms": k,
            "means": bandit.means.tolist(),
            "epsilon": parameters.epsilon,
            "width_scale": parameters.width_scale,
            "levels": levels,
            "node_scale": node.noise_scale,
            "citation": CITATION,
        },
        summation_calls=pulls.copy(),
        phases=horizon,
    )
