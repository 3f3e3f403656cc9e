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
from functools import lru_cache

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from dpcert._numerics import smallest_valid

TAIL_MASS = 1e-20  # mass of each binomial tail dropped from the window (moved to the infinite loss)
LOSS_INTERVAL = 1e-4  # PLD discretisation of the privacy loss (rounded up: pessimistic)
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


@lru_cache(maxsize=128)
def _composed_pmfs(trials: int, p: float, shift: int, coordinates: int, interval: float) -> tuple:
    """PMFs of the composed loss, one per split of coordinates between the two shift directions."""
    up = _loss_pmf(trials, p, shift, True, interval)
    if p == 0.5:
        return (up.self_compose(coordinates) if coordinates > 1 else up,)
    down = _loss_pmf(trials, p, shift, False, interval)
    pmfs = []
    for n_up in range(coordinates + 1):
        parts = []
        if n_up:
            parts.append(up.self_compose(n_up) if n_up > 1 else up)
        if coordinates - n_up:
            n_down = coordinates - n_up
            parts.append(down.self_compose(n_down) if n_down > 1 else down)
        pmfs.append(parts[0] if len(parts) == 1 else parts[0].compose(parts[1]))
    return tuple(pmfs)


def composed_delta(
    epsilon: float, trials: int, p: float, shift: int, coordinates: int, interval: float = LOSS_INTERVAL
) -> float:
    """``δ(ε)`` of ``coordinates`` independent worst-case coordinates (pessimistic PLD)."""
    if coordinates == 1:
        return shift_delta(epsilon, trials, p, shift)
    pmfs = _composed_pmfs(trials, p, shift, coordinates, interval)
    return min(1.0, max(float(pmf.get_delta_for_epsilon(epsilon)) for pmf in pmfs))


def composed_epsilon(
    delta: float, trials: int, p: float, shift: int, coordinates: int, interval: float = LOSS_INTERVAL
) -> float:
    """Least ε with :func:`composed_delta` ``<= delta`` (pessimistic PLD); ``inf`` if none."""
    if coordinates == 1:
        return shift_epsilon(delta, trials, p, shift)
    pmfs = _composed_pmfs(trials, p, shift, coordinates, interval)
    epsilon = max(float(pmf.get_epsilon_for_delta(delta)) for pmf in pmfs)
    if not math.isfinite(epsilon):
        return math.inf
    step = interval
    while composed_delta(epsilon, trials, p, shift, coordinates, interval) > delta:  # safe side
        epsilon += step
        step *= 2.0
        if step > 1e6:
            return math.inf
    return epsilon
