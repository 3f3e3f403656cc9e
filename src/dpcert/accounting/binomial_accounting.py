"""Exact privacy of shifted binomial counts: the accounting behind every bit-sum shuffle protocol.

API for bandit algorithms
-------------------------
Bandit code rarely needs this module directly: certificates from
:mod:`dpcert.mechanisms.binomial_sum` call it.  ``composed_delta(ε, n·b, p, g, coordinates)`` and
``composed_epsilon(δ, n·b, p, g, coordinates)`` give the profile of one run of a bit-sum protocol
(``coordinates = 1``: exact; more: pessimistic PLD composition), cached per parameter set;
``l2_delta`` / ``l2_epsilon`` the same for ℓ2-bounded data (``p = 1/2``).

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
shifted up versus down (the two directions differ only when ``p != 1/2``).  For data bounded entry
by entry this worst case is attained (every entry at opposite ends of its range), so the profile is
exact up to the PLD discretisation; for ℓ2-bounded vectors it is conservative.  The opt-in
:func:`l2_delta` uses the ℓ2 bound: after coupled randomized rounding the integer shifts lie in a
lattice set, and the worst case is taken over its maximal shift multisets
(:func:`l2_shift_multisets`).  Each per-coordinate loss PMF is a ``dp_accounting`` dense PMF with
every loss rounded up (pessimistic); compositions multiply their Fourier transforms.

Every truncation of a PMF tail moves that mass to the infinite-loss atom (it is counted in full
in δ), and every floating-point evaluation carries a relative allowance toward larger δ.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.special import gammaln, logsumexp

from dpcert._numerics import smallest_valid

TAIL_MASS = 1e-20  # mass of each binomial tail dropped from the window (moved to the infinite loss)
LOSS_INTERVAL = 1e-4  # finest PLD discretisation of the privacy loss (rounded up: pessimistic)
MAX_COMPOSED_BUCKETS = 2**17  # coarser discretisation when the composed loss would need more buckets
_RELATIVE_SLACK = 1e-10  # allowance for rounding in log-PMF evaluation, toward larger δ


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _stirling_error(n: np.ndarray) -> np.ndarray:
    """``ln n! − (n + ½) ln n + n − ln √(2π)`` (Loader 2000): its series for n > 15, else direct."""
    n = np.asarray(n, dtype=float)
    out = np.zeros(n.shape)
    small = (n > 0) & (n <= 15)
    ns = n[small]
    out[small] = gammaln(ns + 1.0) - (ns + 0.5) * np.log(ns) + ns - _LOG_SQRT_2PI
    large = n > 15
    inv2 = 1.0 / np.where(large, n, 1.0) ** 2
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    series = (s0 - (s1 - (s2 - (s3 - s4 * inv2) * inv2) * inv2) * inv2) / np.where(large, n, 1.0)
    out[large] = series[large]
    return out


def _deviance(x: np.ndarray, mean: float) -> np.ndarray:
    """``x ln(x / mean) + mean − x`` without cancellation (Loader 2000's ``bd0``), ``x >= 0``."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = np.where(x > 0, x * np.log(x / mean), 0.0) + mean - x
    near = np.abs(x - mean) < 0.1 * (x + mean)
    v = np.where(near, (x - mean) / (x + mean), 0.0)
    total = (x - mean) * v
    term = 2.0 * x * v
    v2 = v * v
    for j in range(1, 40):  # |v| < 1/21: each term is below the previous by a factor < 1/441
        term = term * v2
        step = term / (2 * j + 1)
        total = total + step
        if not np.any(np.abs(step) > 1e-17 * np.abs(total)):  # the rest is below 1e-17 relative
            break
    return np.where(near, total, direct)


def log_binomial_pmf(k: np.ndarray, trials: int, p: float) -> np.ndarray:
    """``ln P(Bin(trials, p) = k)`` to near machine precision relative to the PMF (Loader 2000).

    ``scipy.stats.binom.logpmf`` loses relative accuracy as ``trials`` grows (about 2e-10 at 1e5,
    4e-8 at 1e7), more than the allowances of the exact accounting; this saddle-point form keeps
    every term small or computed without cancellation.  ``−inf`` outside ``0 <= k <= trials``.
    """
    k = np.asarray(k, dtype=float)
    n = float(trials)
    q = 1.0 - p
    inside = (k > 0) & (k < n)
    ki = np.where(inside, k, 1.0)
    rest = n - ki
    with np.errstate(divide="ignore"):
        log_scale = 0.5 * np.log(n / (2.0 * math.pi * ki * rest))
    body = (
        _stirling_error(np.array(n))
        - _stirling_error(ki)
        - _stirling_error(rest)
        - _deviance(ki, n * p)
        - _deviance(rest, n * q)
        + log_scale
    )
    out = np.where(inside, body, -np.inf)
    out = np.where(k == 0, n * math.log1p(-p), out)
    out = np.where(k == n, n * math.log(p), out)
    return out


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
    log_p = log_binomial_pmf(outcomes, trials, p)
    log_q = log_binomial_pmf(outcomes - shift, trials, p)
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
    """A discretised privacy-loss distribution: ``losses`` (ascending), their ``probs``, ``infinity``.

    ``tail_p[j] = Σ_{i>=j} p_i`` and ``tail_q[j] = Σ_{i>=j} p_i e^{−L_i}`` make every evaluation
    ``O(log n)``: for ``L_{j−1} <= ε < L_j``, ``δ(ε) = μ_∞ + tail_p[j] − e^ε tail_q[j]``.
    """

    losses: np.ndarray
    probs: np.ndarray
    infinity: float
    tail_p: np.ndarray
    tail_q: np.ndarray

    _SUM_SLACK = 1e-9  # bounds the rounding of the running sums (n·u with n <= 1e7), toward larger δ

    @classmethod
    def from_grid(cls, lower: int, interval: float, probs: np.ndarray, infinity: float) -> LossDistribution:
        """From masses on the grid ``(lower + i)·interval``; masses below 1e-250 move to the infinite
        loss (conservative, and it avoids slow subnormal arithmetic); negative FFT round-off is
        dropped (which can only raise δ)."""
        probs = np.clip(np.asarray(probs, dtype=float), 0.0, None)
        losses = (np.arange(probs.size) + lower) * interval
        tiny = probs < 1e-250
        infinity = float(infinity) + float(probs[tiny].sum())
        losses, probs = losses[~tiny], probs[~tiny]
        with np.errstate(over="ignore"):  # e^{−L} overflows only far below any ε >= 0 that is queried
            weighted = probs * np.exp(-losses)
        tail_p = np.append(np.cumsum(probs[::-1])[::-1], 0.0)
        tail_q = np.append(np.cumsum(weighted[::-1])[::-1], 0.0)
        return cls(losses, probs, infinity, tail_p, tail_q)

    def delta(self, epsilon: float) -> float:
        """``μ_∞ + Σ_{L_i > ε} p_i (1 − e^{ε − L_i})``, rounded upward."""
        j = int(np.searchsorted(self.losses, epsilon, side="right"))  # first loss above ε
        mass, weighted = float(self.tail_p[j]), math.exp(epsilon) * float(self.tail_q[j])
        return self.infinity + max(0.0, mass - weighted) + self._SUM_SLACK * (mass + weighted)

    def epsilon(self, delta: float) -> float:
        """Least ε with ``delta(ε) <= delta``: found on the grid, then solved inside its interval."""
        losses, tail_p, tail_q = self.losses, self.tail_p, self.tail_q
        if self.infinity > delta or losses.size == 0:
            return math.inf if self.infinity > delta else 0.0
        with np.errstate(over="ignore", invalid="ignore"):
            at_grid = self.infinity + tail_p[1:-1] - np.exp(losses[:-1]) * tail_q[1:-1]  # δ(L_{j−1})
        above = np.nonzero(~(at_grid <= delta))[0]
        j = int(above[-1]) + 1 if above.size else 0  # ε lies in [L_{j−1}, L_j) (L_{−1} = −∞)
        numerator = self.infinity + tail_p[j] - delta
        if numerator <= 0 or tail_q[j] <= 0:
            return max(0.0, float(losses[j - 1]) if j > 0 else 0.0)
        return max(0.0, math.log(numerator / tail_q[j]))


def _spectrum(
    parts: list[tuple[Any, int]], length: int, spectra: dict | None = None, powers: dict | None = None
) -> tuple[np.ndarray, int, float, int]:
    """Fourier transform (length ``length``) of the composition of ``count`` copies of each dense PMF in
    ``parts``, with its lowest grid index, its infinite-loss mass and its size on the grid.

    ``spectra`` may hold the PMFs' transforms at that length, and ``powers`` a cache of their powers
    shared by several calls (patterns of the ℓ2 mode share most factors)."""
    from scipy.fft import rfft

    size = 1 + sum(count * (pmf.size - 1) for pmf, count in parts)
    spectrum = np.ones(length // 2 + 1, dtype=complex)
    lower, log_survive = 0, 0.0
    for pmf, count in parts:
        key = (id(pmf), count)
        power = powers.get(key) if powers is not None else None
        if power is None:
            transform = spectra[id(pmf)] if spectra else rfft(np.asarray(pmf._probs, dtype=float), length)
            power = transform**count
            if powers is not None:
                powers[key] = power
        spectrum *= power
        lower += count * pmf._lower_loss
        log_survive += count * math.log1p(-pmf._infinity_mass)
    infinity = -math.expm1(log_survive) * (1.0 + 1e-12)
    return spectrum, lower, infinity, size


def _compose(parts: list[tuple[Any, int]], interval: float) -> LossDistribution:
    """Loss distribution of the composition of ``count`` copies of each dense PMF in ``parts``.

    All PMFs share the grid ``interval``; the composition is the product of their Fourier transforms
    (one inverse FFT), negative round-off dropped and tiny masses moved to the infinite loss.
    """
    from scipy.fft import irfft, next_fast_len

    length = next_fast_len(1 + sum(count * (pmf.size - 1) for pmf, count in parts))
    spectrum, lower, infinity, size = _spectrum(parts, length)
    return LossDistribution.from_grid(lower, interval, irfft(spectrum, length)[:size], infinity)


def _least_epsilon(distributions: tuple[LossDistribution, ...], delta: float) -> float:
    """Least ε with ``max_i distributions[i].delta(ε) <= delta``, landed on the safe side."""
    epsilon = max(dist.epsilon(delta) for dist in distributions)
    if not math.isfinite(epsilon):
        return math.inf
    step = 1e-12 + 1e-12 * epsilon
    while max(dist.delta(epsilon) for dist in distributions) > delta:
        epsilon += step
        step *= 4.0
        if step > 1e6:
            return math.inf
    return epsilon


@lru_cache(maxsize=128)
def _composed_pmfs(trials: int, p: float, shift: int, coordinates: int) -> tuple[LossDistribution, ...]:
    """Composed loss distributions, one per split of coordinates between the two shift directions."""
    interval = loss_interval(trials, p, shift, coordinates)
    up = _loss_pmf(trials, p, shift, True, interval)
    if p == 0.5:  # both directions are equal
        return (_compose([(up, coordinates)], interval),)
    down = _loss_pmf(trials, p, shift, False, interval)
    return tuple(
        _compose([(up, n_up), (down, coordinates - n_up)], interval) for n_up in range(coordinates + 1)
    )


def composed_delta(epsilon: float, trials: int, p: float, shift: int, coordinates: int) -> float:
    """``δ(ε)`` of ``coordinates`` independent worst-case coordinates (pessimistic PLD)."""
    if coordinates == 1:
        return shift_delta(epsilon, trials, p, shift)
    return min(1.0, max(dist.delta(epsilon) for dist in _composed_pmfs(trials, p, shift, coordinates)))


def composed_epsilon(delta: float, trials: int, p: float, shift: int, coordinates: int) -> float:
    """Least ε with :func:`composed_delta` ``<= delta`` (pessimistic PLD); ``inf`` if none."""
    if coordinates == 1:
        return shift_epsilon(delta, trials, p, shift)
    return _least_epsilon(_composed_pmfs(trials, p, shift, coordinates), delta)


# --------------------------------------------------------------------------- l2-bounded data
class TooManyShiftPatterns(ValueError):
    """More ℓ2 shift patterns than a limit: the ℓ2 accounting is refused rather than run for hours."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} l2 shift patterns")
        self.limit = limit


MAX_L2_MULTISETS = 400
# Search nodes visited while enumerating before the enumeration is refused as too large.
MAX_L2_SEARCH_NODES = 200_000


def l2_shift_multisets(
    coordinates: int, g: int, limit: int = MAX_L2_MULTISETS
) -> tuple[tuple[int, ...], ...]:
    """Maximal multisets of per-coordinate integer shifts for ℓ2-bounded data (``p = 1/2``).

    Neighbouring inputs with ``‖y − y'‖₂ <= 2B`` have real encoded shifts ``s`` with ``‖s‖₂ <= g``.
    Coupling the two randomized roundings through one uniform per coordinate (``x̂ = ⌊u + U⌋``), the
    integer shift is ``t_k ∈ {⌊s_k⌋, ⌈s_k⌉}``, so ``|t_k| <= min(g, ⌈|s_k|⌉)`` and
    ``Σ_k (|t_k| − 1)_+² <= g²``.  By joint convexity the view's δ(ε) is at most the largest δ(ε) of
    a product of shifted binomials with such shifts; with ``p = 1/2`` it depends only on the multiset
    of ``|t_k|`` (reflect a coordinate) and grows with each ``|t_k|`` (Blackwell order of the
    log-concave shift family), so only the maximal multisets (sorted, non-increasing) are needed.

    A shift of 1 costs nothing, so every maximal multiset has all ``coordinates`` entries >= 1 and at
    most ``g²`` entries >= 2; the search (an explicit stack, no recursion) enumerates the entries >= 2
    and fills the rest with ones.  Raises :class:`TooManyShiftPatterns` as soon as more than ``limit``
    multisets are found or the search visits more than ``MAX_L2_SEARCH_NODES`` nodes.
    """
    budget = g * g
    found: list[tuple[int, ...]] = []
    visited = 0
    # a node: (entries >= 2 chosen so far, non-increasing; the largest next entry allowed; cost)
    stack: list[tuple[tuple[int, ...], int, int]] = [((), g, 0)]
    while stack:
        prefix, ceiling, cost = stack.pop()
        visited += 1
        if visited > MAX_L2_SEARCH_NODES:
            raise TooManyShiftPatterns(limit)
        ones = coordinates - len(prefix)
        smallest = 1 if ones else (prefix[-1] if prefix else g)
        if smallest >= g or budget - cost < 2 * smallest - 1:  # no entry can grow by one: maximal
            found.append(prefix + (1,) * ones)
            if len(found) > limit:
                raise TooManyShiftPatterns(limit)
        if ones == 0:
            continue
        children = [
            (prefix + (a,), a, cost + (a - 1) ** 2)
            for a in range(2, min(ceiling, g) + 1)
            if cost + (a - 1) ** 2 <= budget
        ]
        stack.extend(children)  # popped largest first: the same order as a descending search
    return tuple(sorted(found, reverse=True))


def l2_patterns(
    groups: tuple[int, ...], g: int, limit: int = MAX_L2_MULTISETS
) -> tuple[tuple[int, ...], ...]:
    """Combined shift multisets for several ℓ2-bounded groups of coordinates (e.g. P_Vec's vector
    and matrix, each of ℓ2 norm at most ``B``): one maximal multiset per group, every combination,
    merged and de-duplicated (the composed loss depends only on the merged multiset).

    Raises :class:`TooManyShiftPatterns` when a group alone, or the combinations, exceed ``limit``.
    """
    per_group = [l2_shift_multisets(size, g, limit) for size in groups]
    if math.prod(len(part) for part in per_group) > limit * limit:
        raise TooManyShiftPatterns(limit)
    merged = set()
    for combination in itertools.product(*per_group):
        merged.add(tuple(sorted((a for part in combination for a in part), reverse=True)))
        if len(merged) > limit:
            raise TooManyShiftPatterns(limit)
    return tuple(sorted(merged, reverse=True))


def l2_pattern_count(groups: tuple[int, ...], g: int, limit: int = MAX_L2_MULTISETS) -> int | None:
    """Number of combined ℓ2 shift patterns, or ``None`` if more than ``limit`` (found out early)."""
    try:
        return len(l2_patterns(groups, g, limit))
    except TooManyShiftPatterns:
        return None


@lru_cache(maxsize=64)
def _l2_loss_distributions(trials: int, g: int, groups: tuple[int, ...]) -> tuple[LossDistribution, ...]:
    """Composed loss distributions of every shift pattern (``p = 1/2``, pessimistic PLD)."""
    from scipy.fft import irfft, next_fast_len, rfft

    patterns = l2_patterns(groups, g)
    coordinates = sum(groups)
    interval = loss_interval(trials, 0.5, g, coordinates)  # shift g has the widest loss range
    per_shift = {a: _loss_pmf(trials, 0.5, a, True, interval) for a in range(1, g + 1)}
    length = next_fast_len(coordinates * max(pmf.size for pmf in per_shift.values()))
    spectra = {id(pmf): rfft(np.asarray(pmf._probs, dtype=float), length) for pmf in per_shift.values()}
    powers: dict = {}  # patterns share most (shift, count) factors: each power is computed once
    composed = [
        _spectrum([(per_shift[a], pattern.count(a)) for a in set(pattern)], length, spectra, powers)
        for pattern in patterns
    ]
    grids = irfft(np.stack([spectrum for spectrum, *_ in composed]), length, axis=-1, workers=-1)
    return tuple(
        LossDistribution.from_grid(lower, interval, grid[:size], infinity)
        for grid, (_, lower, infinity, size) in zip(grids, composed, strict=True)
    )


def _groups(coordinates: int | tuple[int, ...]) -> tuple[int, ...]:
    return (coordinates,) if isinstance(coordinates, int) else tuple(coordinates)


def l2_delta(epsilon: float, trials: int, g: int, coordinates: int | tuple[int, ...]) -> float:
    """δ(ε) for ℓ2-bounded groups of coordinates (see :func:`l2_shift_multisets`, :func:`l2_patterns`)."""
    distributions = _l2_loss_distributions(trials, g, _groups(coordinates))
    return min(1.0, max(dist.delta(epsilon) for dist in distributions))


def l2_epsilon(delta: float, trials: int, g: int, coordinates: int | tuple[int, ...]) -> float:
    """Least ε with :func:`l2_delta` ``<= delta``; ``inf`` if none."""
    return _least_epsilon(_l2_loss_distributions(trials, g, _groups(coordinates)), delta)
