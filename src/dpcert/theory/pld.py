"""Composition of discretised privacy loss distributions with a proven floating-point error bound.

The pessimistic single-mechanism PLDs of ``dp_accounting.pld`` (losses rounded *up* to the grid
``h``, tails moved to the infinite loss) are upper bounds on the privacy profile in exact arithmetic.
Composing them by floating-point FFT convolution, as ``dp_accounting`` does, adds an absolute
round-off of order ``u log N`` per grid point that is not bounded by the library and swamps the tail
mass once δ is small (10⁻¹² and below) or the number of compositions is large.  This module performs
the convolutions itself and bounds every rounding step, so that each returned δ(ε) is an upper bound
on the δ(ε) of the exact composition of the pessimistic PLDs.

Method (for one target ε)
-------------------------
1. *Exponential tilting.*  Each component's finite loss masses ``p_j`` at losses ``L_j = h ℓ_j`` are
   replaced by ``q_j = p_j e^{λ L_j} / M(λ)`` with ``λ >= 0`` the saddle point of the composed
   cumulant ``K(λ) = Σ_i k_i ln M_i(λ)``, ``K'(λ) = ε`` (the Esscher transform behind saddle-point
   approximations).  Tilting commutes with convolution, and it is what makes the round-off
   *relative*: the tilted composed distribution is centred at ε, so the absolute FFT error of
   order ``u`` there becomes a relative error of δ at any level, where an untilted computation
   (absolute error of order ``u`` per grid point) loses all accuracy once δ falls to about 1e-12.
   Untilting multiplies the mass at ``L`` by ``exp(K(λ) − λ L)``.  The tilt is that of ε rounded
   to a lattice, so that nearby ε share one FFT pass; any λ >= 0 is valid.
2. *Window.*  The composed tilted distribution is convolved on a circular grid of ``N = 2^m`` points
   covering the loss window ``[a, b] ∋ ε``.  Mass outside the window wraps around; it is
   non-negative, so it only *adds* to the masses inside (valid).  Losses above ``b`` are not lost:
   their total mass is bounded by the Chernoff bound ``min_t exp(K(t) − t b)`` (exact inequality
   ``P[L >= b] <= E e^{t(L − b)}``) and added to δ.
3. *FFT round-off.*  For the radix-2 FFT, Higham (2002, *Accuracy and Stability of Numerical
   Algorithms*, 2nd ed., Thm 24.2) proves ``‖fl(Fx) − Fx‖₂ <= c_N ‖Fx‖₂`` with
   ``c_N = log₂N · η / (1 − log₂N · η)``, ``η = μ + γ₄(√2 + μ)``, ``μ`` the error of the twiddle
   factors.  With normalised tilted vectors (``‖q_i‖₁ = s_i``, so ``|F q_i| <= s_i`` pointwise),
   powers ``X_i^{k_i}`` computed by repeated squaring (each complex product has relative error at
   most ``ν = √2 γ₂``, Higham Lemma 3.5, and the binary powering chain applies at most ``2k + 2
   log₂ k`` of them to any result) and the inverse transform bounded by the same theorem, the
   computed composed vector ``r̂`` satisfies

       ‖r̂ − r‖₂ <= S e^{ε_max} [ (K + 1) c_N (1 + τ) + τ ],   S = Π s_i^{k_i},

   with ``K = Σ k_i``, ``ε_max = K c_N √N`` (pointwise bound of the forward-transform errors) and
   ``τ`` the accumulated multiplication round-off.  The error on δ is then at most
   ``‖r̂ − r‖₂ · ‖w‖₂`` by Cauchy–Schwarz, ``w_ℓ = e^{K(λ) − λ L_ℓ}(1 − e^{ε − L_ℓ})`` over the
   losses above ε, which is of the order of the Chernoff level ``e^{K(λ) − λ ε}`` times ``(λh)^{-1/2}``.
   This bound is added to the computed δ.  pocketfft (C++; ``numpy.fft`` from numpy 2 on, which
   returns the same bits as ``scipy.fft``; ``scipy.fft`` under numpy 1.x) is used on power-of-two sizes
   with the twiddle error taken as ``μ = 4u`` (pocketfft computes its twiddles in extended
   precision).  Higham's theorem is stated for the radix-2 complex FFT; pocketfft's radix-4 and
   real-data passes have the same butterfly structure, and the per-stage constant ``η`` is taken 8
   times larger to cover them: this transfer is argued, not machine-checked.
4. *Inputs.*  Masses of the single-mechanism PLDs come from CDF differences in ``dp_accounting``;
   each is inflated to ``p (1 + 2⁻⁴⁴) + 2⁻⁴⁸`` (an allowance of 512 ulp relative and 32 ulp absolute
   for the special functions behind them; an assumption on their accuracy, not proven here), the
   infinite-loss mass by the relative factor only.  All remaining scalar steps (exponentials of the
   tilt, sums of non-negative terms) are covered by explicit relative allowances of a few ulp per
   operation (``γ_n`` bounds for sums of non-negative terms).  Single components of small
   support are merged by direct convolution before the FFT (sums of non-negative products: each
   entry at least ``(1 − γ_m)`` times the exact one).

If the window needed for a negligible tail would exceed ``MAX_FFT_SIZE`` points, the computation
still returns a valid (looser) bound: the tail term is added as computed.

Saddle points and windows are steered by cumulants of the pmfs binned to ``_STEERING_POINTS``
points at the bins' mean losses (the Chernoff tail bounds use losses rounded up); steering never
enters a bound.  :class:`MonotoneDeltaCurve` reads the passes so that δ(ε) is non-increasing in ε
and depends on ε only (one tilted pass per cell of the ε axis, the least bound over the cells at
or below ε), and finds the least ε for a δ without a new pass per bisection step.
:class:`LossPmfPair` carries a mechanism's remove and add pmfs (e.g. from
:func:`dpcert.mechanisms.subsampled_gaussian.poisson_gaussian_loss_pmfs`) into compositions.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert._numerics import UNIT_ROUNDOFF, brent_root, nudge_up_until_valid, smallest_valid

MASS_RELATIVE_ALLOWANCE = 2.0**-44
MASS_ABSOLUTE_ALLOWANCE = 2.0**-48
MAX_FFT_SIZE = 2**22
MAX_CELLS = 64  # cells scanned by MonotoneDeltaCurve.epsilon_for before it answers inf
# Window half-width in standard deviations of the tilted composed loss, and the tail target
# relative to the Chernoff level at ε (only tightness depends on these, never validity).
_WINDOW_SDS = 8.0
_TAIL_TARGET = 1e-9
_NUMPY_MAJOR = int(np.__version__.split(".")[0])
_COARSE_POINTS = 2048
# Saddle points and windows are steered by cumulants on this many binned means per component.
_STEERING_POINTS = 8192
# Higham's constant is for the radix-2 complex FFT; pocketfft runs radix-4 and real-data passes of
# the same butterfly structure.  The per-stage constant is taken 8 times larger to cover them.
_FFT_SAFETY = 8.0
# Single components of at most _DIRECT_SIZE points are merged by direct convolution while the
# product of the lengths stays below _DIRECT_WORK (cheaper than one FFT each, and exact up to γ_m).
_DIRECT_SIZE = 4096
_DIRECT_WORK = 4_000_000
# MonotoneDeltaCurve widens its first cell (one pass instead of two at the usual δ) only where the
# composed loss tilted to the wide cell's upper edge spreads at most this many times its untilted
# standard deviation (a nearly Gaussian composition, where one tilt is accurate across the cell).
_GAUSSIAN_LIKE = 1.25


@dataclass(frozen=True)
class LossPmf:
    """Finite part of one direction of a discretised PLD: mass ``probs[j]`` at loss ``h (lower + j)``.

    ``probs`` are upper bounds on the pessimistic masses (inflated by the allowances above) and
    ``infinity_mass`` an upper bound on the mass at the infinite loss.
    """

    discretization: float
    lower: int
    probs: np.ndarray = field(repr=False)
    infinity_mass: float

    @property
    def upper(self) -> int:
        return self.lower + self.probs.size - 1

    @cached_property
    def losses(self) -> np.ndarray:
        return (self.lower + np.arange(self.probs.size)) * self.discretization

    @cached_property
    def log_probs(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.probs)


def loss_pmf_from_masses(
    interval: float, losses: np.ndarray, masses: np.ndarray, infinity_mass: float, relative_allowance: float
) -> LossPmf:
    """Pessimistic PMF of finite ``losses`` with ``masses``: every loss rounded *up* to the grid
    ``interval``, and every mass (and ``infinity_mass``) inflated by ``1 + relative_allowance``, the
    caller's bound on the relative error of its mass evaluations."""
    indices = np.ceil(np.asarray(losses, dtype=float) / interval).astype(np.int64)
    lowest = int(indices.min())
    probs: np.ndarray = np.bincount(indices - lowest, weights=np.asarray(masses, dtype=float))
    probs *= 1.0 + relative_allowance + 4.0 * UNIT_ROUNDOFF
    probs.setflags(write=False)
    infinity = min(1.0, float(infinity_mass) * (1.0 + relative_allowance + 4.0 * UNIT_ROUNDOFF))
    return LossPmf(interval, lowest, probs, infinity)


@dataclass(frozen=True, eq=False)
class LossPmfPair:
    """The two directions of one mechanism's discretised PLD, each already an upper bound.

    ``remove`` is the law of the privacy loss ``ln(P/Q)`` under ``P`` and ``add`` that of ``ln(Q/P)``
    under ``Q`` for the mechanism's dominating pair ``(P, Q)``.  Compared by identity (so that caches
    keyed by the object stay cheap).
    """

    remove: LossPmf
    add: LossPmf

    def __post_init__(self) -> None:
        if self.remove.discretization != self.add.discretization:
            raise ValueError("both directions must share one discretization interval")


def loss_pmfs(privacy_loss_distribution: Any) -> tuple[LossPmf, LossPmf | None]:
    """The remove and add pmfs of a ``dp_accounting`` PLD (``None`` for add if symmetric), inflated.

    A :class:`LossPmf` stands for a symmetric pair (both directions have its law) and is returned as
    is; a :class:`LossPmfPair` gives its two directions as they are.
    """
    if isinstance(privacy_loss_distribution, LossPmf):
        return privacy_loss_distribution, None
    if isinstance(privacy_loss_distribution, LossPmfPair):
        return privacy_loss_distribution.remove, privacy_loss_distribution.add
    remove = _loss_pmf(privacy_loss_distribution._pmf_remove)
    if privacy_loss_distribution._symmetric:
        return remove, None
    return remove, _loss_pmf(privacy_loss_distribution._pmf_add)


def _loss_pmf(pmf: Any) -> LossPmf:
    discretization = float(pmf._discretization)
    if hasattr(pmf, "_loss_probs"):
        keys = sorted(pmf._loss_probs)
        lower = int(keys[0]) if keys else 0
        probs = np.zeros((keys[-1] - keys[0] + 1) if keys else 1)
        for key in keys:
            probs[key - lower] += pmf._loss_probs[key]
    else:
        lower = int(pmf._lower_loss)
        probs = np.array(pmf._probs, dtype=float)
    nonzero = np.nonzero(probs > 0.0)[0]
    if nonzero.size == 0:
        probs, lower = np.zeros(1), 0
    else:
        probs = probs[nonzero[0] : nonzero[-1] + 1]
        lower += int(nonzero[0])
    probs = np.maximum(probs, 0.0) * (1.0 + MASS_RELATIVE_ALLOWANCE) + MASS_ABSOLUTE_ALLOWANCE
    if nonzero.size == 0:
        probs = np.zeros(1)
    infinity = min(1.0, max(0.0, float(pmf._infinity_mass)) * (1.0 + MASS_RELATIVE_ALLOWANCE))
    return LossPmf(discretization, lower, probs, infinity)


def _fft() -> Any:
    """The C++ pocketfft: ``numpy.fft`` from numpy 2 on (the same code and bits as ``scipy.fft``, without
    importing SciPy), ``scipy.fft`` under numpy 1.x (whose ``numpy.fft`` is an older C port)."""
    if _NUMPY_MAJOR >= 2:
        return np.fft
    import scipy.fft

    return scipy.fft


def _gamma(n: float) -> float:
    return n * UNIT_ROUNDOFF / (1.0 - n * UNIT_ROUNDOFF)


def fft_relative_error(size: int) -> float:
    """``c_N`` of Higham 2002, Thm 24.2 for a power-of-two FFT of ``size`` points (μ = 4u)."""
    stages = max(1, int(math.log2(size)))
    mu = 4.0 * UNIT_ROUNDOFF
    eta = _FFT_SAFETY * (mu + _gamma(4) * (math.sqrt(2.0) + mu))
    return stages * eta / (1.0 - stages * eta)


@dataclass
class _Tilted:
    """Tilted log-masses of one pmf at one λ."""

    log_normalizer: float  # ln Σ_j p_j e^{λ L_j}
    mean: float
    variance: float


def _tilt(pmf: LossPmf, lam: float) -> tuple[_Tilted, np.ndarray]:
    losses = pmf.losses
    log_weights = pmf.log_probs + lam * losses if lam else pmf.log_probs
    log_norm = fixed_order.log_sum_exp(log_weights)
    weights = np.exp(log_weights - log_norm)
    total = float(np.sum(weights))
    mean = fixed_order.sum_of_products(weights, losses) / total
    variance = fixed_order.sum_of_products(weights, (losses - mean) ** 2) / total
    return _Tilted(log_norm, mean, variance), weights


class ComposedLossBound:
    """Upper bound on δ(ε) of ``Π_i pmf_i^{*k_i}`` (one direction) with proven round-off."""

    def __init__(
        self,
        parts: Sequence[tuple[LossPmf, int]],
        coarse_points: int | None = _COARSE_POINTS,
        steering_points: int | None = _STEERING_POINTS,
    ) -> None:
        if not parts:
            raise ValueError("at least one pmf is needed")
        steps = {p.discretization for p, _ in parts}
        if len(steps) != 1:
            raise ValueError("all pmfs must share one discretization interval")
        self.discretization = steps.pop()
        self.parts = [(p, int(k)) for p, k in parts]
        self.total_count = sum(k for _, k in self.parts)
        self.lowest = sum(k * p.lower for p, k in self.parts)
        self.highest = sum(k * p.upper for p, k in self.parts)
        log_finite = sum(
            k * math.log1p(-p.infinity_mass) if p.infinity_mass < 1.0 else -math.inf for p, k in self.parts
        )
        # 1 − Π (1 − ι_i)^{k_i}, rounded up (relative allowance for log1p/expm1 and the sum).
        self._passes: dict[tuple[float, int, int], _Pass] = {}
        # cumulants on losses rounded up to at most ``coarse_points`` points per component (all points
        # if None): cheaper, still valid for Chernoff bounds.  The saddle points and windows are
        # steered by cumulants on ``steering_points`` points per component at the bins' mean losses
        # (the rounded-up ones if None), which do not drift when a component's mass sits in a few
        # of many points (subsampled mechanisms).
        counts = np.array([k for _, k in self.parts], dtype=float)
        coarse = [p if coarse_points is None else _coarsened(p, coarse_points) for p, _ in self.parts]
        self._bound_table = _CumulantTable(coarse, counts)
        self._steering_table = (
            self._bound_table
            if steering_points is None
            else _CumulantTable([_binned_means(p, steering_points) for p, _ in self.parts], counts)
        )
        # each component's sum of n positive terms errs by at most γ_n relative (its log by ~γ_n)
        self._summation_slack = float(
            sum(k * 2.0 * _gamma(c.probs.size + 4) for k, c in zip(counts, coarse, strict=True))
        )
        allowance = 64.0 * UNIT_ROUNDOFF * (len(self.parts) + 2)
        self.infinity_mass = min(1.0, -math.expm1(log_finite) * (1.0 + allowance))

    # ------------------------------------------------------------------ cumulants
    def cumulants(self, lam: float) -> tuple[float, float, float]:
        """``K(λ)``, ``K'(λ)`` and ``K''(λ)`` of the composed finite part, with every loss rounded up
        to a coarse grid of at most ``_COARSE_POINTS`` points per component.

        For λ >= 0 the coarse ``K`` is at least the exact one (losses only move up), so Chernoff
        bounds computed from it remain valid; the derivatives only steer the tilt and window.
        """
        return self._bound_table.evaluate(lam)

    def steering_cumulants(self, lam: float) -> tuple[float, float, float]:
        """The cumulants that steer saddle points and windows (never used in a bound)."""
        return self._steering_table.evaluate(lam)

    def saddle_point(self, epsilon: float) -> float:
        """λ >= 0 with ``K'(λ) = ε`` (0 if the mean loss is already above ε), to about 1e-4.

        Safeguarded Newton iteration on the increasing ``K'``; only the lattice point of λ matters
        (see ``_pass_for``), and any λ >= 0 gives a valid bound.
        """
        _, mean, variance = self.steering_cumulants(0.0)
        if mean >= epsilon:
            return 0.0
        low, high = 0.0, math.inf
        lam = (epsilon - mean) / variance if variance > 0.0 else 1.0
        for _ in range(100):
            _, mean, variance = self.steering_cumulants(lam)
            if mean < epsilon:
                low = lam
            else:
                high = lam
            if high - low <= 1e-4 * high:
                break
            step = (epsilon - mean) / variance if variance > 0.0 else math.inf
            candidate = lam + step
            if not (low < candidate < high):
                candidate = 2.0 * low + 1.0 if math.isinf(high) else 0.5 * (low + high)
            if abs(candidate - lam) <= 1e-5 * lam:
                break
            lam = candidate
        return lam

    def tail_above(self, bound: float) -> float:
        """Upper bound on the finite mass at losses >= ``bound`` (Chernoff, rounded up)."""
        if bound > self.highest * self.discretization:
            return 0.0
        lam = self.saddle_point(bound)
        best = math.inf
        for t in {lam, 0.5 * lam, 2.0 * lam + 1e-3}:
            log_norm, _, _ = self.cumulants(t)
            exponent = log_norm - t * bound
            slack = 64.0 * UNIT_ROUNDOFF * (abs(log_norm) + abs(t * bound) + 1.0) * (self.total_count + 1)
            slack += self._summation_slack
            total = exponent + slack + 1e-12
            if total < 0.0:  # a bound of 1 or more says nothing (and may overflow exp)
                best = min(best, math.exp(total))
        return min(1.0, best)

    # ------------------------------------------------------------------ the bound
    def delta_for(self, epsilon: float) -> float:
        """Proven upper bound on δ(ε) of the composition (infinite-loss mass included)."""
        if epsilon >= self.highest * self.discretization:
            return min(1.0, self.infinity_mass * (1.0 + 1e-12))
        return self._pass_for(epsilon).delta_for(epsilon)

    def epsilon_for(self, delta: float) -> float:
        """Smallest ε found with ``delta_for(ε) <= delta`` as evaluated (``inf`` if none)."""
        if delta < self.infinity_mass:
            return math.inf
        h = self.discretization
        top = max(0.0, self.highest * h)
        if self.delta_for(top) > delta:
            return math.inf
        epsilon = self._chernoff_guess(delta)
        for _ in range(6):
            curve = self._pass_for(epsilon)
            candidate = curve.smallest_epsilon(delta)
            if self._pass_for(candidate) is curve:
                epsilon = candidate
                break
            epsilon = candidate
        if self.delta_for(epsilon) <= delta:
            return epsilon
        return nudge_up_until_valid(lambda e: self.delta_for(e) - delta, epsilon, top)

    def _chernoff_guess(self, delta: float) -> float:
        """ε where the saddle-point approximation ``e^{K(λ) − λK'(λ)} / (λ(1 + λ)√(2πK''(λ)))``
        of the finite part meets the target δ (a starting point only)."""
        target = math.log(max(delta - self.infinity_mass, 1e-300))
        _, mean0, _ = self.steering_cumulants(0.0)

        def gap(t: float) -> float:
            log_norm, mean, variance = self.steering_cumulants(t)
            correction = math.log(t * (1.0 + t) * math.sqrt(2.0 * math.pi * max(variance, 1e-300)))
            return log_norm - t * mean - max(0.0, correction) - target

        low, high = 1e-3, 1.0
        if gap(low) <= 0.0:
            return max(0.0, mean0)
        for _ in range(60):
            if gap(high) <= 0.0:
                break
            low, high = high, high * 2.0
        else:
            return self.highest * self.discretization
        # brentq's default xtol: brent_root takes scipy.optimize.brentq's steps and returns its float
        root = brent_root(gap, low, high, xtol=2e-12, rtol=1e-3, maxiter=100)
        return max(0.0, self.steering_cumulants(root)[1])

    def _pass_for(self, epsilon: float) -> _Pass:
        """The cached FFT pass for ε: tilt at the saddle point of ε rounded to a lattice of step
        ``max(2 h, 2 σ₀)`` (σ₀ the standard deviation of the untilted composed loss).

        The window depends on the rounded point only (so nearby ε share one pass), except that it
        is extended downward when ε lies below it.  Any tilt is valid; rounding costs tightness
        only in the (tiny) round-off term.
        """
        h = self.discretization
        step = max(2.0 * h, 2.0 * math.sqrt(max(self.steering_cumulants(0.0)[2], 0.0)))
        lam = self.saddle_point(step * round(epsilon / step))
        log_norm, mean, variance = self.steering_cumulants(lam)
        half_width = int(math.ceil(_WINDOW_SDS * math.sqrt(max(variance, 0.0)) / h)) + 64
        centre = int(math.floor(mean / h))
        floor_index = int(math.floor(epsilon / h)) - 64
        low_start = centre - half_width
        if floor_index < low_start:
            low_start = floor_index - half_width
        chernoff_log = log_norm - lam * max(epsilon, mean)
        while True:
            low = max(self.lowest, low_start)
            anchor = centre if floor_index <= centre + half_width // 2 else floor_index
            high = min(self.highest, anchor + half_width)
            size = 1 << max(1, (high - low).bit_length())
            key = (lam, low, high)
            if key in self._passes:
                return self._passes[key]
            tail = 0.0 if high >= self.highest else self.tail_above((high + 1) * h)
            target = _TAIL_TARGET * math.exp(min(chernoff_log, 700.0))
            if tail <= target or high >= self.highest or 2 * size > MAX_FFT_SIZE:
                break
            half_width *= 2
        result = self._compute_pass(lam, low, high, size, tail)
        self._passes[key] = result
        return result

    def lattice_pass(self, target: float, floor_epsilon: float) -> _Pass:
        """The cached FFT pass tilted at the saddle point of ``target``, its window reaching down to
        ``floor_epsilon`` (and up until the Chernoff tail is negligible), a function of the two
        arguments only: the same arguments always give the same pass."""
        h = self.discretization
        lam = self.saddle_point(target)
        log_norm, mean, variance = self.steering_cumulants(lam)
        half_width = int(math.ceil(_WINDOW_SDS * math.sqrt(max(variance, 0.0)) / h)) + 64
        centre = int(math.floor(mean / h))
        floor_index = int(math.floor(floor_epsilon / h)) - 64
        chernoff_log = log_norm - lam * max(target, mean)
        while True:
            low = max(self.lowest, min(centre - half_width, floor_index))
            high = min(self.highest, max(centre, floor_index) + half_width)
            size = 1 << max(1, (high - low).bit_length())
            key = (lam, low, high)
            if key in self._passes:
                return self._passes[key]
            tail = 0.0 if high >= self.highest else self.tail_above((high + 1) * h)
            target_tail = _TAIL_TARGET * math.exp(min(chernoff_log, 700.0))
            if tail <= target_tail or high >= self.highest or 2 * size > MAX_FFT_SIZE:
                break
            half_width *= 2
        result = self._compute_pass(lam, low, high, size, tail)
        self._passes[key] = result
        return result

    def _compute_pass(self, lam: float, low: int, high: int, size: int, tail: float) -> _Pass:
        h = self.discretization
        spectrum = None
        log_constant = 0.0
        multiplications = 0
        c_n = fft_relative_error(size)
        # Tilted, normalised vectors with the log of their untilting constants (rounded up).
        vectors: list[tuple[np.ndarray, int, float]] = []
        small: list[tuple[np.ndarray, float]] = []
        for pmf, count in self.parts:
            tilted, weights = _tilt(pmf, lam)
            # Rounding of the tilted weights: the exponent's argument (three terms) and exp, all
            # relative and downward at most (the fold and normalisation are bounded below).
            positive = pmf.probs[pmf.probs > 0.0]
            magnitude = float(np.max(np.abs(np.log(positive)))) if positive.size else 0.0
            magnitude += abs(lam) * max(abs(pmf.lower), abs(pmf.upper)) * h + abs(tilted.log_normalizer)
            rho = 4.0 * UNIT_ROUNDOFF * (magnitude + 2.0)
            # a tilt so large that the rounding is not bounded (rho >= 1): this pass proves nothing
            # (an infinite constant makes every bound of the pass 1, see _Pass)
            log_part = tilted.log_normalizer - math.log1p(-rho) if rho < 1.0 else math.inf
            if count == 1 and weights.size <= _DIRECT_SIZE:
                small.append((weights, log_part))
            else:
                vectors.append((weights, count, count * log_part))
        # Single small components are merged by direct convolution first (sums of non-negative
        # products: each entry is at least (1 − γ_m) of the exact one, m the shorter length).
        accumulator: np.ndarray | None = None
        accumulated = 0.0
        for weights, log_part in small:
            if accumulator is not None and accumulator.size * weights.size > _DIRECT_WORK:
                vectors.append((accumulator, 1, accumulated))
                accumulator = None
            if accumulator is None:
                accumulator, accumulated = weights, log_part
                continue
            shorter = min(accumulator.size, weights.size)
            accumulator = fixed_order.convolve(accumulator, weights)
            accumulated += log_part - math.log1p(-_gamma(shorter + 1))
        if accumulator is not None:
            vectors.append((accumulator, 1, accumulated))
        factors = sum(count for _, count, _ in vectors)
        for weights, count, log_part in vectors:
            folded = _fold(weights, size)
            folds = -(-weights.size // size)
            # Fold (sums of non-negative terms) and division by s_i: relative, downward at most.
            rho = _gamma(folds + 1) + 2.0 * UNIT_ROUNDOFF
            s_i = float(np.sum(folded)) * (1.0 + _gamma(folded.size + 2))
            log_constant += log_part + count * (math.log(s_i) - math.log1p(-rho))
            powered, chain = _power(_fft().rfft(folded / s_i), count)
            multiplications += chain
            if spectrum is None:
                spectrum = powered
            else:
                spectrum = spectrum * powered
                multiplications += 1
        assert spectrum is not None
        composed = _fft().irfft(spectrum, n=size)
        nu = math.sqrt(2.0) * _gamma(2)
        tau = math.expm1(multiplications * math.log1p(nu))
        eps_max = factors * c_n * math.sqrt(size)
        if eps_max > 0.5:
            raise OverflowError("the FFT round-off bound is too large for this window")
        # ‖r̂ − r‖₂ <= e^{ε_max} [(K + 1) c_N (1 + τ) + τ] for the normalised vectors (S <= 1).
        error_2 = math.exp(eps_max) * ((factors + 1) * c_n * (1.0 + tau) + tau)
        # The normalised vectors sum to at most 1 + u each (division rounding): S <= (1 + u)^K.
        error_2 *= math.exp(2.0 * UNIT_ROUNDOFF * factors)
        indices = np.arange(low, high + 1)
        masses = np.maximum(composed[(indices - self.lowest) % size], 0.0)
        return _Pass(
            lam=lam,
            losses=indices * h,
            masses=masses,
            log_constant=log_constant,
            error_2=error_2,
            tail=tail,
            infinity_mass=self.infinity_mass,
            covers_from=-math.inf if low <= self.lowest else low * h,
            top=self.highest * h,
        )


class _Pass:
    """One tilted FFT composition: a valid δ(ε) bound for every ε at or above ``covers_from``.

    With ``a_ℓ = e^{C − λ L_ℓ}`` (the untilting factor) and ``b_ℓ = a_ℓ e^{−L_ℓ}``, the finite part
    of δ(ε) is ``Σ_{L_ℓ > ε} m_ℓ (a_ℓ − e^ε b_ℓ) = A(ε) − e^ε B(ε)`` with suffix sums ``A``, ``B``
    of non-negative terms (relative error at most ``γ_n`` each, so the difference is bounded from
    above explicitly), and the round-off term ``‖r̂ − r‖₂ ‖w‖₂ <= error_2 · (Σ_{L_ℓ > ε} a_ℓ²)^{1/2}``
    since ``0 <= w_ℓ <= a_ℓ``.  Each evaluation is then O(log n).
    """

    def __init__(
        self,
        lam: float,
        losses: np.ndarray,
        masses: np.ndarray,
        log_constant: float,
        error_2: float,
        tail: float,
        infinity_mass: float,
        covers_from: float,
        top: float,
    ) -> None:
        self.lam = lam
        self.losses = losses
        self.error_2 = error_2
        self.tail = tail
        self.infinity_mass = infinity_mass
        self.covers_from = covers_from
        self.top = top
        log_a = log_constant - lam * losses
        # B is kept relative to e^{-S} (S the lowest loss of the window) so that e^ε B is computed as
        # e^{ε − S} B' without overflow at large ε
        self.shift = float(losses[0]) if losses.size else 0.0
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            a = np.exp(log_a)
            b = np.exp(log_a - (losses - self.shift))
            terms_a = masses * a
            terms_b = masses * b
            squares = a * a
        # Suffix sums (sequential, non-negative terms); entry i sums indices >= i, entry n is 0.
        self._sum_a = _suffix_sums(terms_a)
        self._sum_b = _suffix_sums(terms_b)
        self._sum_squares = _suffix_sums(squares)
        magnitude = float(np.max(np.abs(log_a))) if log_a.size else 0.0
        magnitude += (2.0 + lam) * float(np.max(np.abs(losses))) if losses.size else 0.0
        # Relative error of each suffix sum: the exponent arguments, exp, one product, the sum.
        self._relative = _gamma(losses.size + 8) + 4.0 * UNIT_ROUNDOFF * (magnitude + abs(log_constant) + 2.0)
        # Terms below the smallest normal double may be flushed: an absolute allowance for them.
        self._underflow = 4.0 * losses.size * np.finfo(float).tiny

    @cached_property
    def _interval_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For ε in ``[L_i, L_{i+1})`` the bound is ``(ι + max(0, A_i − e^ε (1 − 4u) B_i) + C_i)(1 + 1e-12)``
        (capped at 1), with ``A_i``, ``B_i``, ``C_i`` constant on the interval: the terms of
        :meth:`delta_for`, each replaced by its largest value over the interval.  The result is
        non-increasing in ε on each interval (``np.exp`` and IEEE rounding are monotone)."""
        r = self._relative
        ends = self._ends
        with np.errstate(over="ignore", invalid="ignore"):  # a pass with r = inf proves nothing: NaN → 1
            total_a = self._sum_a[1:] * (1.0 + r) + self._underflow
            total_b = self._sum_b[1:] * (1.0 - r)
            squares = self._sum_squares[1:] * (1.0 + r) + self._underflow
            near_sums = np.concatenate((self._sum_a[:1], self._sum_a[:-2])) * (1.0 + r) + self._underflow
            near = near_sums * 8.0 * UNIT_ROUNDOFF * (np.maximum(np.abs(self.losses), np.abs(ends)) + 1.0)
            spread = (total_a + self._scaled(ends, total_b, exps=self._exp_gaps[1])) * 8.0 * UNIT_ROUNDOFF
            constant = (
                self.error_2 * np.sqrt(squares) * (1.0 + 4.0 * UNIT_ROUNDOFF) + spread + near + self.tail
            )
        bad = ~(np.isfinite(total_a) & np.isfinite(constant))
        total_a = np.where(bad, np.inf, total_a)
        return total_a, total_b, np.where(bad, np.inf, constant)

    @cached_property
    def _ends(self) -> np.ndarray:
        """``L_{i+1}``: the upper end of each interval (one grid step above the last loss)."""
        n = self.losses.size
        h = (self.losses[-1] - self.losses[0]) / (n - 1) if n > 1 else 1.0
        return np.concatenate((self.losses[1:], self.losses[-1:] + h))

    @cached_property
    def _exp_gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """``e^{L_i − S}`` and ``e^{L_{i+1} − S}`` as :meth:`_scaled` computes them (computed once
        for :attr:`_interval_terms` and :attr:`running_minimum`)."""
        with np.errstate(over="ignore"):
            starts = np.exp(self.losses - self.shift)
            last = np.exp(self._ends[-1:] - self.shift)
        return starts, np.concatenate((starts[1:], last))

    def interval_bounds(
        self, positions: np.ndarray | None, epsilons: np.ndarray, exps: np.ndarray | None = None
    ) -> np.ndarray:
        """The bound of :attr:`_interval_terms` for each ``epsilons[k]`` on interval ``positions[k]``
        (every interval in order if ``positions`` is None)."""
        total_a, total_b, constant = self._interval_terms
        if positions is not None:
            total_a, total_b, constant = total_a[positions], total_b[positions], constant[positions]
        with np.errstate(over="ignore", invalid="ignore"):
            finite = total_a - self._scaled(epsilons, total_b, down=True, exps=exps)
            value = (self.infinity_mass + np.maximum(finite, 0.0) + constant) * (1.0 + 1e-12)
        return np.where(np.isfinite(value), np.minimum(value, 1.0), 1.0)

    @cached_property
    def running_minimum(self) -> np.ndarray:
        """``M_i``: the least bound of this pass over ``[L_0, L_i]`` (ends of intervals included)."""
        n = self.losses.size
        exp_starts, exp_ends = self._exp_gaps
        starts = self.interval_bounds(None, self.losses, exp_starts)
        at_ends = self.interval_bounds(None, self._ends, exp_ends)
        # sequence F_0(L_0), F_0(L_1), F_1(L_1), F_1(L_2), ...: M_i is its running minimum at F_i(L_i)
        sequence = np.empty(2 * n)
        sequence[0::2] = starts
        sequence[1::2] = at_ends
        return np.minimum.accumulate(sequence)[0::2]

    def monotone_bound(self, epsilon: float) -> float:
        """``min(M_i, F_i(ε))`` for ``L_i <= ε < L_{i+1}``: valid (δ is non-increasing) and
        non-increasing in ε; 1 below the window."""
        if epsilon < self.losses[0] or (epsilon < self.covers_from):
            return 1.0
        position = int(np.searchsorted(self.losses, epsilon, side="right")) - 1
        value = self.interval_bounds(np.array([position]), np.array([epsilon]))[0]
        return float(min(self.running_minimum[position], value))

    def delta_for(self, epsilon: float) -> float:
        if epsilon < self.covers_from:
            return 1.0  # masses below the window are not represented: no claim from this pass
        if epsilon >= self.top:
            return min(1.0, self.infinity_mass * (1.0 + 1e-12))
        start = int(np.searchsorted(self.losses, epsilon, side="right"))
        r = self._relative
        total_a = float(self._sum_a[start]) * (1.0 + r) + self._underflow
        total_b = float(self._sum_b[start]) * (1.0 - r)
        squares = float(self._sum_squares[start]) * (1.0 + r) + self._underflow
        if not (math.isfinite(total_a) and math.isfinite(squares)):
            return 1.0
        difference = total_a - (self._exp_shifted(epsilon) * total_b if total_b > 0.0 else 0.0)
        finite = max(0.0, difference) + self.error_2 * math.sqrt(squares) * (1.0 + 4.0 * UNIT_ROUNDOFF)
        finite += abs(difference) * 8.0 * UNIT_ROUNDOFF + self.tail
        # Losses within a few ulp of ε may fall on either side of it as computed: their weight
        # 1 − e^{ε − L} is at most 8u(|ε| + 1); bound them with the suffix sum two entries lower.
        near = float(self._sum_a[max(0, start - 2)]) * (1.0 + r) + self._underflow
        finite += near * 8.0 * UNIT_ROUNDOFF * (abs(epsilon) + 1.0)
        return min(1.0, (self.infinity_mass + finite) * (1.0 + 1e-12))

    def _scaled(
        self, epsilons: np.ndarray, totals: np.ndarray, down: bool = False, exps: np.ndarray | None = None
    ) -> np.ndarray:
        """``e^{ε − S} B'`` elementwise (0 where ``B' = 0``), rounded down if ``down`` else up;
        ``exps``, if given, is ``np.exp(epsilons − S)`` already computed."""
        gaps = epsilons - self.shift
        slack = 4.0 * UNIT_ROUNDOFF + 2.0 * UNIT_ROUNDOFF * np.abs(gaps)
        with np.errstate(over="ignore", invalid="ignore"):
            values = (
                (np.exp(gaps) if exps is None else exps) * totals * ((1.0 - slack) if down else (1.0 + slack))
            )
        return np.where(totals > 0.0, values, 0.0)

    def _exp_shifted(self, epsilon: float) -> float:
        """``e^{ε − S}`` rounded down (the subtraction errs by at most u|ε − S|, exp by 4u)."""
        gap = epsilon - self.shift
        if gap > 709.0:
            return math.inf
        return math.exp(gap) * (1.0 - 4.0 * UNIT_ROUNDOFF - 2.0 * UNIT_ROUNDOFF * abs(gap))

    def smallest_epsilon(self, delta: float) -> float:
        """Smallest ε >= ``covers_from`` with ``delta_for(ε) <= delta`` on this pass (``top`` if none)."""
        start = max(0.0, self.covers_from)
        found = smallest_valid(lambda e: self.delta_for(e) - delta, start, self.top, grow=False)
        return min(self.top, found)


class _CumulantTable:
    """Cumulants ``K(λ)``, ``K'(λ)``, ``K''(λ)`` of a composition of pmfs with counts, memoised."""

    def __init__(self, pmfs: Sequence[LossPmf], counts: np.ndarray) -> None:
        self.sizes = np.array([p.probs.size for p in pmfs])
        self.starts = np.concatenate(([0], np.cumsum(self.sizes)[:-1]))
        self.log_probs = np.concatenate([p.log_probs for p in pmfs])
        self.losses = np.concatenate([p.losses for p in pmfs])
        self.counts = counts
        self._memo: dict[float, tuple[float, float, float]] = {}

    def evaluate(self, lam: float) -> tuple[float, float, float]:
        cached = self._memo.get(lam)
        if cached is not None:
            return cached
        exponents = self.log_probs + lam * self.losses if lam else self.log_probs
        peaks = np.maximum.reduceat(exponents, self.starts)
        weights = np.exp(exponents - np.repeat(peaks, self.sizes))
        sums = np.add.reduceat(weights, self.starts)
        first = np.add.reduceat(weights * self.losses, self.starts) / sums
        second = np.add.reduceat(weights * self.losses**2, self.starts) / sums
        log_norm = fixed_order.sum_of_products(self.counts, np.log(sums) + peaks)
        mean = fixed_order.sum_of_products(self.counts, first)
        variance = fixed_order.sum_of_products(self.counts, np.maximum(second - first**2, 0.0))
        self._memo[lam] = (log_norm, mean, variance)
        return log_norm, mean, variance


def _binned_means(pmf: LossPmf, points: int) -> LossPmf:
    """``pmf`` summed over bins of consecutive points (at most ``points`` bins), each bin's mass at its
    mean loss: close cumulants for steering (not a bound)."""
    factor = -(-pmf.probs.size // points)
    if factor <= 1:
        return pmf
    padded = np.zeros(-(-pmf.probs.size // factor) * factor)
    padded[: pmf.probs.size] = pmf.probs
    blocks = padded.reshape(-1, factor)
    sums = blocks.sum(axis=1)
    offsets = fixed_order.matvec(blocks, np.arange(factor, dtype=float))
    keep = sums > 0.0
    index = pmf.lower + factor * np.nonzero(keep)[0] + offsets[keep] / sums[keep]
    return _SparseLossPmf(pmf.discretization, int(pmf.lower), sums[keep], pmf.infinity_mass, index)


def _coarsened(pmf: LossPmf, points: int = _COARSE_POINTS) -> LossPmf:
    """``pmf`` with its losses rounded up to a grid of at most ``_COARSE_POINTS`` points.

    Bin sums of non-negative masses are inflated by ``γ_{m+1}`` so that they stay upper bounds; the
    result keeps the fine discretization (its losses are the bins' largest fine losses).
    """
    factor = -(-pmf.probs.size // points)
    if factor <= 1:
        return pmf
    padded = np.zeros(-(-pmf.probs.size // factor) * factor)
    padded[: pmf.probs.size] = pmf.probs
    sums = padded.reshape(-1, factor).sum(axis=1) * (1.0 + _gamma(factor + 1))
    losses_index = pmf.lower + factor * np.arange(sums.size) + factor - 1
    return _SparseLossPmf(pmf.discretization, int(losses_index[0]), sums, pmf.infinity_mass, losses_index)


class _SparseLossPmf(LossPmf):
    """A :class:`LossPmf` whose masses sit at the given grid indices (used for cumulants only)."""

    _index: np.ndarray

    def __init__(
        self, discretization: float, lower: int, probs: np.ndarray, infinity: float, index: np.ndarray
    ) -> None:
        super().__init__(discretization, lower, probs, infinity)
        object.__setattr__(self, "_index", index)

    @cached_property
    def losses(self) -> np.ndarray:
        return self._index * self.discretization

    @property
    def upper(self) -> int:
        return int(self._index[-1])


def _suffix_sums(values: np.ndarray) -> np.ndarray:
    """``out[i] = Σ_{j >= i} values[j]`` (sequential sums), with ``out[n] = 0``."""
    out = np.zeros(values.size + 1)
    with np.errstate(over="ignore", invalid="ignore"):  # an infinite sum makes its bound 1
        np.cumsum(values[::-1], out=out[-2::-1])
    return out


def _fold(weights: np.ndarray, size: int) -> np.ndarray:
    """``weights`` wrapped around a circle of ``size`` points (sums of non-negative terms)."""
    if weights.size <= size:
        out = np.zeros(size)
        out[: weights.size] = weights
        return out
    padded = np.zeros(-(-weights.size // size) * size)
    padded[: weights.size] = weights
    return padded.reshape(-1, size).sum(axis=0)


def _power(values: np.ndarray, count: int) -> tuple[np.ndarray, int]:
    """``values ** count`` by repeated squaring, and a bound on the round-off multiplicity."""
    result = None
    base = values
    remaining = count
    while remaining:
        if remaining & 1:
            if result is None:
                result = base.copy()
            else:
                np.multiply(result, base, out=result)
        remaining >>= 1
        if remaining:
            base = base * base if base is values else np.multiply(base, base, out=base)
    assert result is not None
    return result, 2 * count + 2 * count.bit_length()


def pld_self_composed_delta_for(single_pld: Any, count: int, epsilon: float) -> float:
    """Proven upper bound on δ(ε) of ``count`` compositions of a single-mechanism ``dp_accounting`` PLD.

    The composition is computed by :class:`ComposedLossBound`, whose
    floating-point round-off is bounded and added (see that module).
    """
    count = check.positive_int("count", count)
    remove, add = loss_pmfs(single_pld)
    directions = [ComposedLossBound([(remove, count)])]
    if add is not None:
        directions.append(ComposedLossBound([(add, count)]))
    return max(direction.delta_for(epsilon) for direction in directions)


def compose_delta_bound(directions: Sequence[ComposedLossBound], epsilon: float) -> float:
    """δ(ε) of a composition: the largest of its directions' proven bounds."""
    return float(max(direction.delta_for(epsilon) for direction in directions))


def _most_severe_first(directions: Sequence[ComposedLossBound]) -> list[ComposedLossBound]:
    """``directions`` ordered by the mean plus two standard deviations of their untilted composed loss,
    largest first (a stable sort; the cumulants are memoised and needed by every pass anyway).

    Only an order of work: the direction most likely to have the largest δ(ε) and the largest least ε
    (e.g. the shift pattern with the largest Σ a² of an ℓ2 profile) is evaluated first, so a failing
    claim is found after one direction's pass and an ε search starts from the answer of the others."""

    def severity(direction: ComposedLossBound) -> float:
        _, mean, variance = direction.steering_cumulants(0.0)
        return mean + 2.0 * math.sqrt(max(variance, 0.0))

    return sorted(directions, key=severity, reverse=True)


def compose_delta_meets(directions: Sequence[ComposedLossBound], epsilon: float, delta: float) -> bool:
    """``compose_delta_bound(directions, epsilon) <= delta``, stopping at the first direction whose
    bound exceeds ``delta`` (most severe first): the same decision, with one direction's pass for a
    claim that fails in its most severe direction."""
    return all(direction.delta_for(epsilon) <= delta for direction in _most_severe_first(directions))


def compose_epsilon_bound(directions: Sequence[ComposedLossBound], delta: float) -> float:
    """Least ε found with :func:`compose_delta_bound` ``<= delta`` (``inf`` if none).

    The most severe direction's own answer (:func:`_most_severe_first`) if every direction, as
    evaluated, gives at most ``delta`` there; else the largest of all directions' answers, nudged up
    until every direction gives at most ``delta``.  Either way every direction's bound at the
    returned ε is at most ``delta`` as evaluated (the point is always checked, never interpolated);
    the first answer needs no search in the other directions, only one evaluation each.
    """
    ordered = _most_severe_first(directions)
    epsilon = ordered[0].epsilon_for(delta)
    if not math.isfinite(epsilon) or compose_delta_meets(directions, epsilon, delta):
        return epsilon
    epsilon = max([epsilon, *(direction.epsilon_for(delta) for direction in ordered[1:])])
    if not math.isfinite(epsilon) or compose_delta_bound(directions, epsilon) <= delta:
        return epsilon
    top = max(direction.highest * direction.discretization for direction in directions)
    return nudge_up_until_valid(
        lambda e: compose_delta_bound(directions, e) - delta, epsilon, max(top, epsilon)
    )


class MonotoneDeltaCurve:
    """A proven δ(ε) of a composition that is non-increasing in ε, and its least ε for a δ.

    ``directions`` are the :class:`ComposedLossBound` of each direction of the composition (one for a
    symmetric pair, remove and add otherwise); δ(ε) is the largest of theirs.  In each direction the
    ε axis is cut into cells: cell 0 is ``[−w₀/2, w₀/2)`` with ``w₀ = max(2h, c σ₀)`` (σ₀ the largest
    standard deviation of the untilted composed losses, ``c = cell_sds``), its pass tilted at 0.
    Where the composition is nearly Gaussian (tilted to ``c₀ σ₀ / 2``, ``c₀ = first_cell_sds``, no
    direction spreads more than ``_GAUSSIAN_LIKE σ₀``), cell 0 reaches up to ``c₀ σ₀ / 2`` instead and
    its pass is tilted at the middle of ``[0, c₀ σ₀ / 2]``: one pass per direction then answers the
    usual δ (1e-5 … 1e-10), where two were needed.  Each next cell, from
    the previous cell's upper edge ``e``, is ``max(previous width, c σ_e)`` wide (the previous width
    of cell 0 counted as ``w₀``), σ_e the standard
    deviation of the composed loss tilted to mean ``e`` (steering cumulants), so that cells widen
    where tilting spreads the loss (subsampled mechanisms' heavy right tails).  The cells depend on
    the parameters only; cell ``j`` owns one FFT pass tilted at the saddle point of its centre, its
    window reaching down to its lower edge (:meth:`ComposedLossBound.lattice_pass`).  At ε in cell
    ``j`` the bound is the least, over the passes of cells ``0 … j``, of ``min(M_i, F_i(ε))``
    (:meth:`_Pass.monotone_bound`): every term is a valid bound at ε (a pass's bound at any
    ``ε' <= ε`` bounds the true δ(ε), which is non-increasing), each is non-increasing in ε, and the set
    of passes only grows with ε, so the minimum is non-increasing too.  The value depends on ε and
    the parameters only, never on which values were asked before.
    """

    def __init__(
        self,
        directions: Sequence[ComposedLossBound],
        cell_sds: float = 6.0,
        first_cell_sds: float | None = None,
    ) -> None:
        if not directions:
            raise ValueError("at least one direction is needed")
        self.directions = tuple(directions)
        steps = {direction.discretization for direction in self.directions}
        if len(steps) != 1:
            raise ValueError("all directions must share one discretization interval")
        self.discretization = steps.pop()
        spread = max(
            math.sqrt(max(direction.steering_cumulants(0.0)[2], 0.0)) for direction in self.directions
        )
        self.cell_width = max(2.0 * self.discretization, cell_sds * spread)
        self.cell_sds = cell_sds
        upper = 0.5 * self.cell_width
        self.wide_first_cell = False
        wide = 0.5 * (cell_sds if first_cell_sds is None else first_cell_sds) * spread
        if wide > upper:
            tilted = max(
                math.sqrt(max(direction.steering_cumulants(direction.saddle_point(wide))[2], 0.0))
                for direction in self.directions
            )
            if tilted <= _GAUSSIAN_LIKE * spread:
                upper, self.wide_first_cell = wide, True
        self._edges = [-0.5 * self.cell_width, upper]
        self.top = max(direction.highest * direction.discretization for direction in self.directions)
        self._lattice: dict[tuple[int, int], _Pass] = {}

    def _extend(self) -> None:
        start = self._edges[-1]
        spread = 0.0
        for direction in self.directions:
            lam = direction.saddle_point(start)
            spread = max(spread, math.sqrt(max(direction.steering_cumulants(lam)[2], 0.0)))
        previous = self._edges[-1] - self._edges[-2] if len(self._edges) > 2 else self.cell_width
        width = max(previous, self.cell_sds * spread)
        self._edges.append(start + width)

    def edges(self, cell: int) -> tuple[float, float]:
        """Lower and upper edge of ``cell``."""
        while len(self._edges) < cell + 2:
            self._extend()
        return self._edges[cell], self._edges[cell + 1]

    def cell(self, epsilon: float) -> int:
        """The cell holding ε (0 below it; the last of ``MAX_CELLS + 1`` cells above them)."""
        while self._edges[-1] <= epsilon and len(self._edges) <= MAX_CELLS + 1:
            self._extend()
        return min(max(0, bisect.bisect_right(self._edges, epsilon) - 1), MAX_CELLS)

    def passes(self, direction: int, cell: int) -> list[_Pass]:
        """The passes of cells ``0 … cell`` of one direction."""
        bound = self.directions[direction]
        result = []
        for j in range(cell + 1):
            key = (direction, j)
            if key not in self._lattice:
                self._lattice[key] = bound.lattice_pass(self._target(direction, j), self.edges(j)[0])
            result.append(self._lattice[key])
        return result

    def _target(self, direction: int, cell: int) -> float:
        """Where a direction's pass for ``cell`` is tilted: the cell's centre, but no further above
        its lower edge than ``cell_sds / 2`` of the direction's own tilted spread there (a direction
        whose losses end below the centre would otherwise be tilted so far that its pass overflows)."""
        if cell == 0:
            return 0.5 * self._edges[1] if self.wide_first_cell else 0.0
        low, high = self.edges(cell)
        bound = self.directions[direction]
        spread = math.sqrt(max(bound.steering_cumulants(bound.saddle_point(low))[2], 0.0))
        return min(0.5 * (low + high), low + 0.5 * self.cell_sds * spread)

    def delta_for(self, epsilon: float) -> float:
        """Proven upper bound on δ(ε), non-increasing in ε."""
        if math.isnan(epsilon):
            return 1.0
        if epsilon >= self.top:
            return min(1.0, max(d.infinity_mass for d in self.directions) * (1.0 + 1e-12))
        cell = self.cell(epsilon)
        return max(
            min(p.monotone_bound(epsilon) for p in self.passes(index, cell))
            for index in range(len(self.directions))
        )

    def _grid_bounds(self, cell: int, first: int, last: int) -> np.ndarray:
        """δ at the grid losses ``first … last`` (indices) of ``cell``: the running minima there."""
        values = np.zeros(last - first + 1)
        h = self.discretization
        grid = np.arange(first, last + 1) * h
        for index in range(len(self.directions)):
            least = np.ones_like(values)
            for p in self.passes(index, cell):
                positions = np.searchsorted(p.losses, grid, side="right") - 1
                inside = (positions >= 0) & (grid >= p.covers_from)
                minima = np.where(inside, p.running_minimum[np.maximum(positions, 0)], 1.0)
                least = np.minimum(least, minima)
            values = np.maximum(values, least)
        return values

    def epsilon_for(self, delta: float) -> float:
        """Least ε >= 0 with :meth:`delta_for` ``<= delta`` as evaluated (``inf`` if none).

        Cells are scanned upward at the grid losses (one FFT pass per cell and direction, no
        bisection across passes); inside the grid interval where the bound first meets ``delta`` the
        point is found by the monotone search (to a relative 1e-12) and checked.
        """
        if self.delta_for(self.top) > delta:
            return math.inf
        if self.delta_for(0.0) <= delta:
            return 0.0
        h = self.discretization
        cell = 0
        while True:
            if cell > MAX_CELLS:  # refuse rather than scan without end (no finite claim made)
                return math.inf
            low, high = self.edges(cell)
            first = max(0, int(math.ceil(low / h)))
            while first * h < low:
                first += 1
            last = int(math.ceil(high / h))
            while last * h >= high:
                last -= 1
            if (first - 1) * h > self.top:
                return self.top
            if last >= first:
                values = self._grid_bounds(cell, first, last)
                hits = np.nonzero(values <= delta)[0]
                if hits.size:
                    upper = float((first + int(hits[0])) * h)
                    return self._refine(delta, max(0.0, upper - h), upper)
            cell += 1

    def _refine(self, delta: float, low: float, high: float) -> float:
        """Least ε in ``[low, high]`` (to a relative 1e-12, rounded up) with ``delta_for <= delta``
        as evaluated (``high`` qualifies), by the monotone search of :mod:`dpcert._numerics`."""
        if self.delta_for(high) > delta:  # the grid value is a running minimum: high itself must pass
            return nudge_up_until_valid(lambda e: self.delta_for(e) - delta, high, max(self.top, high))
        return smallest_valid(lambda e: self.delta_for(e) - delta, low, high, grow=False)
