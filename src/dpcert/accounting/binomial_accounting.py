"""Exact privacy of shifted binomial counts: the accounting behind every bit-sum shuffle protocol.

In the Cheu et al. bit-sum protocols (seed 000 Alg. 2 and 4, seed 002 Alg. 5–7, seed 001's
binary summation) the analyzer's view of one coordinate is, after shuffling, exactly the number of
ones among that coordinate's bits: ``C = Σ_i x̂_i + N`` with ``N ~ Bin(M, p)`` the total noise of all
users (``M = n·b`` noise bits) and ``x̂_i ∈ {0, …, g}`` the users' encoded values.

**Worst case of one coordinate (exact).**  Replacing one user's value changes ``x̂`` inside
``{0, …, g}``.  The law of the view is a mixture (over every user's randomized rounding) of shifted
copies of ``N``; by joint convexity of the hockey-stick divergence and post-processing (the other
users' rounding is independent noise added to both sides), ``δ(ε)`` is at most the largest
divergence between ``N + k`` and ``N + k'`` with ``|k − k'| <= g``.  ``Bin(M, p)`` is log-concave, so
the pair ``(N, N + s)`` has a monotone likelihood ratio and the optimal sets are threshold sets; for
such a set ``P(A) − e^ε Q(A) = F(t) − e^ε F(t − s)`` grows with ``s``, hence the maximum is at
``s = g``.  The bound is attained (inputs at the two ends of the range, others on grid points), so
``max(D_{e^ε}(N ‖ N+g), D_{e^ε}(N+g ‖ N))`` is the exact privacy profile of one coordinate.

**Several coordinates.**  Coordinates use independent noise and rounding, so the view is a product
and its privacy loss is the sum of the per-coordinate losses.  Without further structure every
coordinate may shift by ``g`` (in either direction), which is what :func:`composed_delta` assumes:
the ``m``-fold composition of the worst-case pair, maximised over the number of coordinates
shifted up versus down (the two directions differ only when ``p != 1/2``).  This is conservative for
ℓ2-bounded vectors (it does not use the ℓ2 bound).  The composition uses ``dp_accounting``'s dense
privacy-loss PMFs with pessimistic (upward) rounding of every loss.

Every truncation of a PMF tail moves that mass to the infinite-loss atom (it is counted in full
in δ), and every floating-point evaluation carries a relative allowance toward larger δ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from dpcert._numerics import smallest_valid

TAIL_MASS = 1e-20  # mass of each binomial tail dropped from the window (moved to the infinite loss)
LOSS_INTERVAL = 1e-4  # finest PLD discretisation of the privacy loss (rounded up: pessimistic)
MAX_COMPOSED_BUCKETS = 2**17  # coarser discretisation when the composed loss would need more buckets
_RELATIVE_SLACK = 1e-10  # allowance for rounding in log-PMF evaluation, toward larger δ


def _chernoff_tail(trials: int, p: float, threshold: float) -> float:
    """Chernoff–Hoeffding bound ``exp(−M·KL(a ‖ p))`` on ``P(N >= aM)`` for ``a = threshold/M > p``."""
    a = threshold / trials
    if a <= p:
        return 1.0
    if a >= 1.0:
        return 0.0 if threshold > trials else p**trials
    kl = a * math.log(a / p) + (1.0 - a) * math.log((1.0 - a) / (1.0 - p))
    return math.exp(-trials * kl)


def binomial_window(trials: int, p: float) -> tuple[int, int, float]:
    """Counts ``[lo, hi]`` holding all but ``<= 2·TAIL_MASS`` of ``Bin(trials, p)``; the dropped mass.

    The dropped mass is bounded rigorously by the Chernoff–Hoeffding (relative-entropy) bound.
    """
    mean = trials * p
    std = math.sqrt(trials * p * (1.0 - p))
    width = 8.0 * std + 8.0
    while True:
        lo = max(0, math.floor(mean - width))
        hi = min(trials, math.ceil(mean + width))
        upper_tail = _chernoff_tail(trials, p, hi + 1) if hi < trials else 0.0
        lower_tail = _chernoff_tail(trials, 1.0 - p, trials - lo + 1) if lo > 0 else 0.0
        if upper_tail <= TAIL_MASS and lower_tail <= TAIL_MASS:
            return lo, hi, upper_tail + lower_tail
        width *= 1.25


@lru_cache(maxsize=256)
def shifted_pair(trials: int, p: float, shift: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Log-PMFs of ``N`` and ``N + shift`` (``N ~ Bin(trials, p)``) on a common window of outcomes.

    Returns ``(log_p, log_q, dropped)`` where ``dropped`` bounds the mass of either law outside the
    window.  Arrays are read-only (cached).
    """
    lo, hi, dropped = binomial_window(trials, p)
    outcomes = np.arange(lo, hi + shift + 1)
    log_p = stats.binom.logpmf(outcomes, trials, p)
    log_q = stats.binom.logpmf(outcomes - shift, trials, p)
    log_p[outcomes > hi] = -np.inf  # outside P's window: its (tiny) mass is in `dropped`
    log_q[outcomes - shift < lo] = -np.inf
    log_p.setflags(write=False)
    log_q.setflags(write=False)
    return log_p, log_q, dropped


def _hockey_stick(log_upper: np.ndarray, log_lower: np.ndarray, dropped: float, epsilon: float) -> float:
    """``Σ_k (P(k) − e^ε Q(k))_+`` plus the dropped tail mass, rounded upward."""
    with np.errstate(invalid="ignore"):
        positive = log_upper > epsilon + log_lower
    if not positive.any():
        return min(1.0, dropped)
    upper = log_upper[positive]
    lower = epsilon + log_lower[positive]
    log_terms = upper + np.log1p(-np.exp(lower - upper))  # log(P − e^ε Q), P > e^ε Q
    value = float(np.exp(logsumexp(log_terms)))
    mass = float(np.exp(logsumexp(upper)))
    return min(1.0, value + _RELATIVE_SLACK * mass + dropped)


def shift_delta(epsilon: float, trials: int, p: float, shift: int) -> float:
    """Exact ``δ(ε)`` of the worst-case pair of one coordinate, ``max`` over both directions."""
    log_p, log_q, dropped = shifted_pair(trials, p, shift)
    forward = _hockey_stick(log_p, log_q, dropped, epsilon)
    if p == 0.5:  # Bin(M, 1/2) is symmetric: both directions are equal
        return forward
    return max(forward, _hockey_stick(log_q, log_p, dropped, epsilon))


def shift_epsilon(delta: float, trials: int, p: float, shift: int) -> float:
    """Least ε (rounded up) with :func:`shift_delta` ``<= delta``; ``inf`` if none."""
    if shift_delta(0.0, trials, p, shift) <= delta:
        return 0.0
    if delta <= 0.0:
        return math.inf
    ceiling = 1.0
    while shift_delta(ceiling, trials, p, shift) > delta:
        ceiling *= 2.0
        if ceiling > 1e4:
            return math.inf
    return smallest_valid(lambda e: shift_delta(e, trials, p, shift) - delta, 0.0, ceiling, grow=False)


@lru_cache(maxsize=128)
def _loss_pmf(trials: int, p: float, shift: int, upward: bool, interval: float):
    """Pessimistic ``dp_accounting`` dense PMF of the privacy loss of one coordinate.

    ``upward`` selects the pair (upper, lower) = (N, N + shift); otherwise (N + shift, N).
    """
    from dp_accounting.pld import pld_pmf

    log_p, log_q, dropped = shifted_pair(trials, p, shift)
    upper, lower = (log_p, log_q) if upward else (log_q, log_p)
    finite = np.isfinite(upper) & np.isfinite(lower)
    infinite_loss = np.isfinite(upper) & ~np.isfinite(lower)
    infinity_mass = float(np.exp(upper[infinite_loss]).sum()) + dropped
    losses = upper[finite] - lower[finite]
    indices = np.ceil(losses / interval).astype(np.int64)  # round every loss up: pessimistic
    lowest = int(indices.min())
    probs = np.bincount(indices - lowest, weights=np.exp(upper[finite]))
    probs *= 1.0 + _RELATIVE_SLACK
    return pld_pmf.DensePLDPmf(interval, lowest, probs, infinity_mass, True)


def loss_interval(trials: int, p: float, shift: int, coordinates: int) -> float:
    """Discretisation used for ``coordinates`` composed coordinates: ``1e-4``, or coarser so that
    the composed PMF has at most ``2^17`` buckets (each loss is still rounded up: pessimistic)."""
    log_p, log_q, _ = shifted_pair(trials, p, shift)
    finite = np.isfinite(log_p) & np.isfinite(log_q)
    losses = log_p[finite] - log_q[finite]
    span = float(losses.max() - losses.min()) if losses.size else 0.0
    return max(LOSS_INTERVAL, coordinates * span / MAX_COMPOSED_BUCKETS)


@dataclass(frozen=True)
class LossDistribution:
    """A discretised privacy-loss distribution: ``losses`` (ascending), their ``probs``, ``infinity``."""

    losses: np.ndarray
    probs: np.ndarray
    infinity: float

    @classmethod
    def from_pmf(cls, pmf: Any) -> LossDistribution:
        """From a ``dp_accounting`` dense PMF; masses below 1e-250 move to the infinite loss
        (conservative, and it avoids slow subnormal arithmetic); negative FFT round-off is dropped."""
        probs = np.clip(np.asarray(pmf._probs, dtype=float), 0.0, None)  # FFT round-off below zero
        losses = (np.arange(probs.size) + pmf._lower_loss) * pmf._discretization
        tiny = probs < 1e-250
        infinity = float(pmf._infinity_mass) + float(probs[tiny].sum())
        return cls(losses[~tiny], probs[~tiny], infinity)

    def delta(self, epsilon: float) -> float:
        """``μ_∞ + Σ_{L_i > ε} p_i (1 − e^{ε − L_i})``, rounded upward."""
        above = self.losses > epsilon
        value = float(np.dot(self.probs[above], -np.expm1(epsilon - self.losses[above])))
        return self.infinity + value * (1.0 + 1e-12)

    def epsilon(self, delta: float) -> float:
        """Least ε with ``delta(ε) <= delta``: found on the grid, then solved inside its interval.

        On ``[L_{j−1}, L_j)`` the divergence is ``μ_∞ + Σ_{i>=j} p_i − e^ε Σ_{i>=j} p_i e^{−L_i}``.
        """
        probs, losses = self.probs, self.losses
        if self.infinity > delta or probs.size == 0:
            return math.inf if self.infinity > delta else 0.0
        tail_p = np.cumsum(probs[::-1])[::-1]
        tail_q = np.cumsum((probs * np.exp(-losses))[::-1])[::-1]
        at_grid = self.infinity + tail_p[1:] - np.exp(losses[:-1]) * tail_q[1:]  # δ(L_{j−1}), j >= 1
        above = np.nonzero(at_grid > delta)[0]
        if above.size == 0:
            if self.delta(max(0.0, float(losses[0]))) <= delta:
                return max(0.0, float(losses[0])) if self.delta(0.0) > delta else 0.0
            j = 0
        else:
            j = int(above[-1]) + 1  # ε lies in [L_{j−1}, L_j)
        numerator = self.infinity + tail_p[j] - delta
        if numerator <= 0:
            return max(0.0, float(losses[j - 1]) if j > 0 else 0.0)
        return max(0.0, math.log(numerator / tail_q[j]))


@lru_cache(maxsize=128)
def _composed_pmfs(trials: int, p: float, shift: int, coordinates: int) -> tuple[LossDistribution, ...]:
    """Composed loss distributions, one per split of coordinates between the two shift directions."""
    interval = loss_interval(trials, p, shift, coordinates)
    up = _loss_pmf(trials, p, shift, True, interval)
    if p == 0.5:
        return (LossDistribution.from_pmf(up.self_compose(coordinates) if coordinates > 1 else up),)
    down = _loss_pmf(trials, p, shift, False, interval)
    pmfs = []
    for n_up in range(coordinates + 1):
        parts = []
        if n_up:
            parts.append(up.self_compose(n_up) if n_up > 1 else up)
        if coordinates - n_up:
            n_down = coordinates - n_up
            parts.append(down.self_compose(n_down) if n_down > 1 else down)
        pmfs.append(LossDistribution.from_pmf(parts[0] if len(parts) == 1 else parts[0].compose(parts[1])))
    return tuple(pmfs)


def composed_delta(epsilon: float, trials: int, p: float, shift: int, coordinates: int) -> float:
    """``δ(ε)`` of ``coordinates`` independent worst-case coordinates (pessimistic PLD)."""
    if coordinates == 1:
        return shift_delta(epsilon, trials, p, shift)
    pmfs = _composed_pmfs(trials, p, shift, coordinates)
    return min(1.0, max(pmf.delta(epsilon) for pmf in pmfs))


def composed_epsilon(delta: float, trials: int, p: float, shift: int, coordinates: int) -> float:
    """Least ε with :func:`composed_delta` ``<= delta`` (pessimistic PLD); ``inf`` if none."""
    if coordinates == 1:
        return shift_epsilon(delta, trials, p, shift)
    pmfs = _composed_pmfs(trials, p, shift, coordinates)
    epsilon = max(pmf.epsilon(delta) for pmf in pmfs)
    if not math.isfinite(epsilon):
        return math.inf
    step = 1e-12 + 1e-12 * epsilon
    while composed_delta(epsilon, trials, p, shift, coordinates) > delta:  # land on the safe side
        epsilon += step
        step *= 4.0
        if step > 1e6:
            return math.inf
    return epsilon
