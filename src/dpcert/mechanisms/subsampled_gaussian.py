"""The Poisson-subsampled Gaussian mechanism composed over many steps (the DP-SGD accounting).

Each step samples every record independently with probability ``q`` and releases the sum of the
sampled records' contributions (ℓ2 sensitivity Δ) plus N(0, σ²) noise (Abadi et al. 2016).  Under the
add/remove relation the pair ``P = (1 − q) N(0, 1) + q N(d, 1)``, ``Q = N(0, 1)`` with ``d = Δ/σ``
(rounded up) is a dominating pair: ``ln(P/Q)`` under ``P`` is the "remove" direction and ``ln(Q/P)``
under ``Q`` the "add" direction (Koskela, Jälkö & Honkela 2020; Zhu, Dong & Wang 2022).
δ(ε) of ``steps`` steps is the larger of the two directions' composed δ.

Single step: pessimistic connect-the-dots masses with relative error bounds
-------------------------------------------------------------------------
The loss is monotone in the output ``z``, so the output interval between the crossings ``z_i`` of
two grid losses ``ε_i = i h`` and ``ε_{i+1}`` holds exactly the losses between them.  Splitting each
output's mass between the two grid points in proportion linear in ``e^L`` (Doroshenko, Ghazi,
Kamath, Kumar & Manurangsi 2022, "connect the dots") keeps both the P- and Q-masses: the true pair
is a post-processing of the split one (merge the two points back), so the discrete pair dominates
it.  For the remove direction the Q-mass sent up from ``(z_i, z_{i+1}]`` is
``(q N_d(I) − c_i N_0(I)) / (c_{i+1} − c_i)`` and the rest goes down, ``c_i = expm1(ε_i) + q`` (the
add direction is the mirror image with ``c_i = expm1(−ε_i) + q``); the P-mass at a point is
``e^{ε_i}`` times its Q-mass.  Every quantity is carried with an upper and a lower bound:

* ``N_0(I)``, ``N_d(I)`` are differences of ``scipy.special.ndtr`` taken on the side away from the
  tail, with error ``NDTR_ULPS (1 + x²)`` ulp on each value (an assumption, checked against mpmath
  in the tests), so the error is relative to the local tail, not to 1: there is no floor;
* the crossings ``z_i = (ln c_i − ln q)/d + d/2`` are computed with an error bound ``η_i``; the
  masses are computed on the core ``[ẑ_i + m_i, ẑ_{i+1} − m_{i+1}]`` (``m_i >= η_i``, inside the true
  interval), and each sliver ``[ẑ_i − m_i, ẑ_i + m_i]`` (losses between the neighbouring grid points)
  is moved whole to the next grid point up, its mass bounded by its width times the largest density
  on it;
* the split parts are bounded above by interval arithmetic (products and differences widened by
  2u, elementary functions assumed within 4 ulp) and never by more than the interval's mass;
* outputs beyond ``TAIL_STANDARD_DEVIATIONS`` standard deviations are lumped: those with the largest
  losses at the infinite loss (their P-mass), those with the smallest at the lowest grid point.

Inflating masses or moving mass to larger losses can only increase the composed δ (a polynomial with
non-negative coefficients in the masses, non-decreasing in each loss), so the bounds compose.

Composition
-----------
The ``steps``-fold composition of each direction is computed by
:class:`~dpcert.theory.pld.ComposedLossBound` (exponentially tilted FFT with Higham's
round-off bound added) and read through :class:`~dpcert.theory.pld.MonotoneDeltaCurve`,
which makes δ(ε) non-increasing in ε and finds the least ε for a δ without new FFT passes per
bisection step.  No RDP fallback is used.  When the composed loss is spread over millions of grid
points the grid is coarsened by a power of two (:func:`effective_interval`, a function of the
parameters only; still a pessimistic discretisation).
:meth:`PoissonSampledGaussianProfile.privacy_loss_parts` hands the single-step pair to compositions
with other mechanisms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert._numerics import UNIT_ROUNDOFF, ratio_rounded_up
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.errors import InvalidParameter
from dpcert.profiles import ParameterSpec, register_profile
from dpcert.theory.pld import ComposedLossBound, LossPmf, LossPmfPair, MonotoneDeltaCurve

SAMPLED_GAUSSIAN_BASIS = (
    "Poisson-subsampled Gaussian (Abadi et al. 2016), add/remove: pessimistic connect-the-dots PLD "
    "(Doroshenko et al. 2022) of the dominating pair (Koskela, Jalko & Honkela 2020; Zhu, Dong & Wang 2022) "
    "with relative mass bounds, composed with a proven round-off bound (Higham 2002, Thm 24.2)"
)
DEFAULT_INTERVAL = 1e-4
MAX_STEPS = 10**7
WINDOW_POINTS = 2**19  # see effective_interval
# Width of the first cell of the δ(ε) curve in standard deviations of the composed loss: wide
# where the composition is nearly Gaussian (one pass per direction at the usual δ), and the narrow
# cells of earlier releases, kept to verify their certificates (theory.pld.MonotoneDeltaCurve).
WIDE_FIRST_CELL = 16.0
NARROW_FIRST_CELL = 6.0
_STEERING_POINTS = 8192  # per step, for the saddle points only (pld_bound.ComposedLossBound)


# --------------------------------------------------------------------------- single-step PLD
NDTR_ULPS = 16.0
"""Assumed bound on the relative error of ``scipy.special.ndtr(x)``: ``16 (1 + x²)`` ulp.  Cephes
computes it through ``erfc``, whose ``exp(−x²/2)`` factor loses about ``x²`` ulp; measured against
mpmath (tests/test_dp_sgd_profile.py) the error stays below ``2 (1 + x²)`` ulp for |x| <= 25.
``np.exp``, ``np.expm1``, ``np.log`` and ``math.log`` are assumed within 4 ulp (``_ELEMENTARY``).
These are the only assumptions of the single-step masses."""
_ELEMENTARY = 4.0 * UNIT_ROUNDOFF
_U = UNIT_ROUNDOFF
TAIL_STANDARD_DEVIATIONS = 12.0
"""Outputs further than this many standard deviations out are lumped (mass below 2e-33 per step)."""
MAX_SINGLE_STEP_POINTS = 2**23
_SQRT_2PI = math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class _Interval:
    """Arrays ``lo <= x <= hi`` bounding an exact quantity elementwise."""

    lo: np.ndarray
    hi: np.ndarray


def _widened(lo: np.ndarray, hi: np.ndarray, relative: float) -> _Interval:
    return _Interval(lo - np.abs(lo) * relative, hi + np.abs(hi) * relative)


def _times_nonnegative(x: _Interval, y: _Interval) -> _Interval:
    """``x · y`` for ``y >= 0`` (rounding covered by 2u)."""
    lo = np.where(x.lo >= 0.0, x.lo * y.lo, x.lo * y.hi)
    hi = np.where(x.hi >= 0.0, x.hi * y.hi, x.hi * y.lo)
    return _widened(lo, hi, 2.0 * _U)


def _minus(x: _Interval, y: _Interval) -> _Interval:
    lo = x.lo - y.hi
    hi = x.hi - y.lo
    return _widened(lo, hi, 2.0 * _U)


def _normal_mass(lo: np.ndarray, hi: np.ndarray) -> _Interval:
    """Standard normal mass of ``[lo, hi]`` (float end points, ``lo <= hi``, ±inf allowed), bounded.

    The difference of Φ is taken on the side away from the tail (complements when ``lo >= 0``), so
    the error, ``ndtr``'s relative error (``NDTR_ULPS``) on each value plus the subtraction's, is
    relative to the tail beyond the interval, not to 1.
    """
    from scipy.special import ndtr

    right = lo >= 0.0
    first = ndtr(np.where(right, -lo, lo))
    second = ndtr(np.where(right, -hi, hi))
    mass = np.where(right, first - second, second - first)
    error = _ndtr_error(lo, first) + _ndtr_error(hi, second) + 2.0 * _U * np.abs(mass)
    return _Interval(np.maximum(mass - error, 0.0), mass + error)


def _ndtr_error(x: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Bound on the error of a computed ``ndtr(±x)`` (exact at ±inf)."""
    finite = np.isfinite(x)
    square = np.where(finite, x, 0.0) ** 2
    return np.where(finite, NDTR_ULPS * _U * (1.0 + square) * (1.0 + 1e-9) * value, 0.0)


def _density_bound(x: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Upper bound on the standard normal density over ``[x − radius, x + radius]``."""
    distance = np.maximum(np.abs(x) - radius, 0.0) * (1.0 - 4.0 * _U)
    return np.exp(-0.5 * distance * distance) / _SQRT_2PI * (1.0 + 64.0 * _U * (1.0 + distance * distance))


def _shifted_mass(lo: np.ndarray, hi: np.ndarray, shift: float) -> _Interval:
    """Mass of N(shift, 1) on ``[lo, hi]``: the end points ``x − shift`` are rounded, each by at most
    ``u|x − shift|``; that moves the mass by at most that much times the density nearby."""
    with np.errstate(invalid="ignore"):
        lo_s = lo - shift
        hi_s = hi - shift
    mass = _normal_mass(lo_s, hi_s)
    slack = np.zeros_like(mass.hi)
    for x in (lo_s, hi_s):
        finite = np.isfinite(x)
        value = np.where(finite, x, 0.0)
        step = 2.0 * _U * np.abs(value)
        slack = slack + np.where(finite, step * _density_bound(value, step), 0.0)
    return _Interval(np.maximum(mass.lo - slack, 0.0), mass.hi + slack)


@dataclass(frozen=True)
class _Boundaries:
    """Where the privacy loss crosses the grid losses: ``q e^{z d − d²/2} = expm1(±ε_i) + q = c_i``.

    ``c`` bounds ``c_i`` for the exact grid loss ``i h``; ``z`` is the computed crossing (``-inf`` where
    ``c_i <= 0`` for certain), within ``margin / 2`` of the exact one; ``positive``/``negative`` say
    whether the sign of ``c_i`` is certain.
    """

    c: _Interval
    z: np.ndarray
    margin: np.ndarray
    positive: np.ndarray
    negative: np.ndarray


LARGEST_LOSS = 700.0
"""Largest privacy loss of one step's grid: beyond it e^ε (and the error bounds built on it) overflow
the floats, so the proven bound does not hold; such noise (one step's loss above 700) is refused."""


def _boundaries(signed_losses: np.ndarray, q: float, d: float) -> _Boundaries:
    if signed_losses.size and not float(np.max(signed_losses)) <= LARGEST_LOSS:
        raise InvalidParameter(
            "sigma",
            f"sensitivity / {d:.6g}",
            f"noise for which one step's privacy loss stays below {LARGEST_LOSS:g} (a larger sigma)",
        )
    e = np.expm1(signed_losses)
    c = e + q
    # expm1's error, the rounding of i·h (|ε|u, times the slope e^ε) and of the sum
    error = 8.0 * _U * (np.abs(e) + q + np.abs(signed_losses) * np.exp(np.maximum(signed_losses, 0.0)))
    positive = c > 2.0 * error
    negative = c < -2.0 * error
    safe = np.where(positive, c, 1.0)
    log_c = np.log(safe)
    log_q = math.log(q)
    t = (log_c - log_q) / d
    z = np.where(positive, t + 0.5 * d, -np.inf)
    finite_z = np.where(positive, z, 0.0)
    eta = (
        error / np.where(positive, safe - error, 1.0)
        + _ELEMENTARY * (np.abs(log_c) + abs(log_q))
        + _U * np.abs(log_c - log_q)
    ) / d + 2.0 * _U * (np.abs(t) + np.abs(finite_z))
    margin = np.where(positive, 2.0 * eta + 4.0 * _U * np.abs(finite_z) + 1e-300, 0.0)
    return _Boundaries(_Interval(c - error, c + error), z, margin, positive, negative)


def _split_bound(
    mass: _Interval, numerator: _Interval, denominator: np.ndarray, relative: np.ndarray
) -> np.ndarray:
    """Upper bound on ``numerator / denominator`` (a part of ``mass``), never above ``mass``."""
    low = denominator * (1.0 - relative - 2.0 * _U)
    return np.minimum(mass.hi, np.maximum(numerator.hi, 0.0) / low * (1.0 + 2.0 * _U))


def _check_points(first: int, last: int, interval: float) -> None:
    if last - first + 1 > MAX_SINGLE_STEP_POINTS:
        raise InvalidParameter(
            "value_discretization_interval",
            interval,
            f"an interval above {interval * (last - first + 1) / MAX_SINGLE_STEP_POINTS:.3g} for this "
            f"noise (at most {MAX_SINGLE_STEP_POINTS} grid points per step)",
        )


def _check_cores(lo: np.ndarray, hi: np.ndarray, interval: float) -> None:
    if not np.all(lo < hi):
        raise InvalidParameter(
            "value_discretization_interval", interval, "a coarser interval (grid finer than the round-off)"
        )


def _loss_at(z: float, q: float, d: float) -> float:
    """ln(1 − q + q e^{z d − d²/2}) (for steering only)."""
    t = z * d - 0.5 * d * d
    return float(np.logaddexp(math.log1p(-q), math.log(q) + t)) if q < 1.0 else t


def _remove_pmf(q: float, d: float, h: float) -> LossPmf:
    """P = (1 − q) N(0, 1) + q N(d, 1), Q = N(0, 1); loss ln(P/Q)(z) increasing in z."""
    tail = TAIL_STANDARD_DEVIATIONS
    last = math.ceil(_loss_at(d + tail, q, d) / h) + 1
    first = math.floor(_loss_at(-tail, q, d) / h) - 1
    if q < 1.0:
        first = max(first, math.floor(math.log1p(-q) / h) - 2)
    _check_points(first, last, h)
    indices = np.arange(first, last + 1)
    losses = indices * h
    bounds = _boundaries(losses, q, d)
    if bounds.negative[0]:
        bottom = int(np.nonzero(bounds.negative)[0][-1])  # a grid point below every loss: z = -inf
    elif bounds.positive[0]:
        bottom = -1  # a region below z_first, rounded up to the first grid point
    else:
        raise InvalidParameter("sampling_probability", q, "a value whose grid bottom is resolved")
    active = np.nonzero(bounds.positive)[0]
    if bottom >= 0:
        active = np.concatenate(([bottom], active[active > bottom]))
    z = bounds.z[active]
    margin = bounds.margin[active]
    lo = z[:-1] + margin[:-1]
    hi = z[1:] - margin[1:]
    _check_cores(lo, hi, h)
    q_mass = _normal_mass(lo, hi)
    shifted = _shifted_mass(lo, hi, d)
    q_b = _Interval(q * shifted.lo * (1.0 - _U), q * shifted.hi * (1.0 + _U))
    c_low = _Interval(bounds.c.lo[active[:-1]], bounds.c.hi[active[:-1]])
    c_high = _Interval(bounds.c.lo[active[1:]], bounds.c.hi[active[1:]])
    eps_low = losses[active[:-1]]
    steps = (indices[active[1:]] - indices[active[:-1]]) * h
    denominator = np.exp(eps_low) * np.expm1(steps)  # c_high − c_low = e^{ε_g}(e^{kh} − 1)
    relative = 4.0 * _ELEMENTARY + 4.0 * _U * (1.0 + np.abs(eps_low))
    upper = _split_bound(q_mass, _minus(q_b, _times_nonnegative(c_low, q_mass)), denominator, relative)
    lower = _split_bound(q_mass, _minus(_times_nonnegative(c_high, q_mass), q_b), denominator, relative)
    count = active.size
    q_masses = np.zeros(count)
    q_masses[:-1] += lower
    q_masses[1:] += upper
    # slivers around the computed crossings (within margin of the exact ones): their losses lie
    # between the neighbouring grid points, so all of their mass goes to the next point up
    finite = np.isfinite(z)
    sliver = np.where(finite, 2.0 * margin * _density_bound(np.where(finite, z, 0.0), margin), 0.0)
    q_masses[1:] += sliver[:-1]
    if bottom < 0:  # everything below the first crossing, rounded up to the first grid point
        q_masses[0] += _normal_mass(np.array([-np.inf]), np.array([z[0] - margin[0]])).hi[0]
    top = np.array([z[-1] + margin[-1]])
    q_masses[-1] += _normal_mass(top, np.array([np.inf])).hi[0]
    # above the last crossing: Q-mass at the last point, the rest of the P-mass (at most q N(d, 1)'s)
    # at the infinite loss, with the P-mass of the last sliver
    infinity = q * _shifted_mass(top, np.array([np.inf]), d).hi[0] * (1.0 + _U)
    infinity += float(
        2.0
        * margin[-1]
        * (_density_bound(z[-1:], margin[-1:])[0] + q * _density_bound(z[-1:] - d, margin[-1:])[0])
    )
    eps_active = losses[active]
    v_relative = _ELEMENTARY + 2.0 * _U * (1.0 + np.abs(eps_active))
    masses = q_masses * np.exp(eps_active) * (1.0 + v_relative + 4.0 * _U)
    probs = np.zeros(int(indices[active[-1]] - indices[active[0]]) + 1)
    probs[indices[active] - indices[active[0]]] = masses
    return _pmf(h, int(indices[active[0]]), probs, infinity)


def _add_pmf(q: float, d: float, h: float) -> LossPmf:
    """P = N(0, 1), Q = (1 − q) N(0, 1) + q N(d, 1); loss ln(P/Q)(z) decreasing in z.

    In ``w = −z`` the loss increases; the crossings are ``w_i = −z(−ε_i)`` and Q's second component
    is N(−d, 1).
    """
    tail = TAIL_STANDARD_DEVIATIONS
    first = math.floor(-_loss_at(tail, q, d) / h) - 1
    last = math.ceil(-_loss_at(-tail, q, d) / h) + 1
    if q < 1.0:
        last = min(last, math.ceil(-math.log1p(-q) / h) + 2)
    _check_points(first, last, h)
    indices = np.arange(first, last + 1)
    losses = indices * h
    bounds = _boundaries(-losses, q, d)
    w_all = -bounds.z  # +inf where c <= 0 for certain: grid points above every loss
    if bounds.negative[-1]:
        top = int(np.nonzero(bounds.negative)[0][0])
    elif bounds.positive[-1]:
        top = -1  # a region above the last crossing: its P-mass goes to the infinite loss
    else:
        raise InvalidParameter("sampling_probability", q, "a value whose grid top is resolved")
    active = np.nonzero(bounds.positive)[0]
    if top >= 0:
        active = np.concatenate((active[active < top], [top]))
    w = w_all[active]
    margin = bounds.margin[active]
    lo = w[:-1] + margin[:-1]
    hi = w[1:] - margin[1:]
    _check_cores(lo, hi, h)
    p_mass = _normal_mass(lo, hi)
    shifted = _shifted_mass(lo, hi, -d)
    q_b = _Interval(q * shifted.lo * (1.0 - _U), q * shifted.hi * (1.0 + _U))
    c_low = _Interval(bounds.c.lo[active[:-1]], bounds.c.hi[active[:-1]])
    c_high = _Interval(bounds.c.lo[active[1:]], bounds.c.hi[active[1:]])
    eps_low = losses[active[:-1]]
    steps = (indices[active[1:]] - indices[active[:-1]]) * h
    denominator = np.exp(-eps_low) * -np.expm1(-steps)  # c_low − c_high = e^{−ε_g}(1 − e^{−kh})
    relative = 4.0 * _ELEMENTARY + 4.0 * _U * (1.0 + np.abs(eps_low))
    upper = _split_bound(p_mass, _minus(_times_nonnegative(c_low, p_mass), q_b), denominator, relative)
    lower = _split_bound(p_mass, _minus(q_b, _times_nonnegative(c_high, p_mass)), denominator, relative)
    count = active.size
    masses = np.zeros(count)
    masses[:-1] += lower
    masses[1:] += upper
    finite = np.isfinite(w)
    sliver = np.where(finite, 2.0 * margin * _density_bound(np.where(finite, w, 0.0), margin), 0.0)
    masses[1:] += sliver[:-1]
    # below the first crossing (the far right of z): losses below the first grid point, rounded up
    masses[0] += _normal_mass(np.array([-np.inf]), np.array([w[0] - margin[0]])).hi[0]
    infinity = 0.0
    if top < 0:  # q = 1 (or nearly): the loss is unbounded above; the top region is moved to infinity
        start = np.array([w[-1] + margin[-1]])
        infinity = float(_normal_mass(start, np.array([np.inf])).hi[0] + sliver[-1])
    masses *= 1.0 + 4.0 * _U
    probs = np.zeros(int(indices[active[-1]] - indices[active[0]]) + 1)
    probs[indices[active] - indices[active[0]]] = masses
    return _pmf(h, int(indices[active[0]]), probs, infinity)


def _pmf(h: float, lower: int, probs: np.ndarray, infinity: float) -> LossPmf:
    probs.setflags(write=False)
    return LossPmf(h, lower, probs, min(1.0, infinity * (1.0 + 4.0 * _U)))


@lru_cache(maxsize=16)
def poisson_gaussian_loss_pmfs(
    standardised_shift: float, sampling_probability: float, interval: float
) -> LossPmfPair:
    """Pessimistic connect-the-dots PLD (Doroshenko et al. 2022) of one Poisson-subsampled Gaussian step.

    ``standardised_shift`` is d = Δ/σ (round it up: a larger d is less private), the pair is
    ``((1 − q) N(0, 1) + q N(d, 1), N(0, 1))`` (Koskela, Jälkö & Honkela 2020; Zhu, Dong & Wang 2022).
    See the module docstring for the construction and its error bounds.
    """
    d = check.positive_finite("standardised_shift", standardised_shift)
    q = check.probability("sampling_probability", sampling_probability, open_low=True)
    h = check.positive_finite("interval", interval)
    return LossPmfPair(_remove_pmf(q, d, h), _add_pmf(q, d, h))


@register_profile(
    "poisson-sampled-gaussian",
    parameters={
        "sigma": ParameterSpec("number"),
        "sampling_probability": ParameterSpec("number"),
        "steps": ParameterSpec("integer"),
        "sensitivity": ParameterSpec("number", required=False),
        "value_discretization_interval": ParameterSpec("number", required=False),
    },
    trust_models=(TrustModel.CENTRAL,),
    neighbourings=(Neighbouring.ADD_REMOVE,),  # Poisson subsampling amplifies under add/remove
)
class PoissonSampledGaussianProfile:
    """Profile of ``steps`` Poisson-subsampled Gaussian releases.

    Parameters: ``sigma`` (noise standard deviation), ``sampling_probability`` q in (0, 1], ``steps``,
    ``sensitivity`` (ℓ2, default 1) and ``value_discretization_interval`` of the PLD (default 1e-4).
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.sigma = check.positive_finite("sigma", parameters.get("sigma"))
        self.sampling_probability = check.probability(
            "sampling_probability", parameters.get("sampling_probability"), open_low=True
        )
        self.steps = check.positive_int("steps", parameters.get("steps"))
        self.sensitivity = check.positive_finite("sensitivity", parameters.get("sensitivity", 1.0))
        self.interval = check.positive_finite(
            "value_discretization_interval", parameters.get("value_discretization_interval", DEFAULT_INTERVAL)
        )
        if self.steps > MAX_STEPS:
            raise InvalidParameter("steps", self.steps, f"at most {MAX_STEPS:.0e} steps")

    @cached_property
    def standardised_shift(self) -> float:
        """d = Δ/σ rounded up (a larger shift is less private, so the bound stays valid)."""
        return ratio_rounded_up(self.sensitivity, self.sigma)

    def privacy_loss_parts(self, interval: float) -> list[tuple[LossPmfPair, int]]:
        """The single-step PLD pair at ``interval`` and the number of steps, for compositions.

        Each :class:`~dpcert.theory.pld.LossPmfPair` holds the remove and add directions
        (``pld_bound.loss_pmfs`` returns them as they are), already upper bounds.
        """
        interval = check.positive_finite("value_discretization_interval", interval)
        return [
            (
                poisson_gaussian_loss_pmfs(self.standardised_shift, self.sampling_probability, interval),
                self.steps,
            )
        ]

    @property
    def curve(self) -> MonotoneDeltaCurve:
        return _composed_curve(self.standardised_shift, self.sampling_probability, self.steps, self.interval)

    def delta_for(self, epsilon: float) -> float:
        """Proven upper bound on δ(ε), non-increasing in ε (module docstring)."""
        return self.curve.delta_for(float(epsilon))

    def former_delta_for(self, epsilon: float) -> float:
        """The bound of earlier releases: the same passes on narrow cells only (no wide first cell),
        so that the certificates they issued at their least ε still verify."""
        curve = _composed_curve(
            self.standardised_shift, self.sampling_probability, self.steps, self.interval, NARROW_FIRST_CELL
        )
        return curve.delta_for(float(epsilon))

    def epsilon_for(self, delta: float) -> float:
        if delta <= 0.0:
            return math.inf
        return self.curve.epsilon_for(float(delta))

    def dp_event(self) -> Any:
        from dp_accounting import dp_event

        step = dp_event.PoissonSampledDpEvent(
            self.sampling_probability, dp_event.GaussianDpEvent(self.sigma / self.sensitivity)
        )
        return step if self.steps == 1 else dp_event.SelfComposedDpEvent(step, self.steps)


def poisson_sampled_gaussian_certificate(
    sigma: float,
    sampling_probability: float,
    steps: int,
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    sensitivity: float = 1.0,
    value_discretization_interval: float = DEFAULT_INTERVAL,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
) -> Certificate:
    """Certificate of ``steps`` Poisson-subsampled Gaussian releases (e.g. DP-SGD) at a profile point."""
    parameters: dict[str, Any] = {
        "sigma": check.positive_finite("sigma", sigma),
        "sampling_probability": check.probability(
            "sampling_probability", sampling_probability, open_low=True
        ),
        "steps": check.positive_int("steps", steps),
        "sensitivity": check.positive_finite("sensitivity", sensitivity),
        "value_discretization_interval": check.positive_finite(
            "value_discretization_interval", value_discretization_interval
        ),
    }
    if steps > MAX_STEPS:
        raise InvalidParameter("steps", steps, f"at most {MAX_STEPS:.0e} steps")
    profile = PoissonSampledGaussianProfile(parameters)
    certificate = Certificate(
        "poisson-sampled-gaussian",
        point_on_profile(profile, epsilon, delta),
        trust_model,
        Neighbouring.ADD_REMOVE,
        parameters,
        SAMPLED_GAUSSIAN_BASIS,
    )
    certificate.__dict__["profile"] = profile  # the profile just evaluated: its FFT passes are reused
    return certificate.verify()


@lru_cache(maxsize=4)
def _composed_curve(
    shift: float,
    sampling_probability: float,
    steps: int,
    interval: float,
    first_cell_sds: float = WIDE_FIRST_CELL,
) -> MonotoneDeltaCurve:
    """The monotone δ(ε) of ``steps`` steps (both directions), kept for the parameters' next use;
    ``first_cell_sds`` as in :class:`~dpcert.theory.pld.MonotoneDeltaCurve`."""
    pair = poisson_gaussian_loss_pmfs(
        shift, sampling_probability, effective_interval(shift, sampling_probability, steps, interval)
    )
    return MonotoneDeltaCurve(
        [
            ComposedLossBound([(pair.remove, steps)], coarse_points=None, steering_points=_STEERING_POINTS),
            ComposedLossBound([(pair.add, steps)], coarse_points=None, steering_points=_STEERING_POINTS),
        ],
        first_cell_sds=first_cell_sds,
    )


def effective_interval(shift: float, sampling_probability: float, steps: int, interval: float) -> float:
    """``interval · 2^k`` for the least ``k >= 0`` at which 16 standard deviations of the composed
    loss (either direction) span at most ``WINDOW_POINTS`` grid points.

    A coarser grid is still a pessimistic discretisation (a valid upper bound); it is used only when
    the composed loss is so spread out (large q, many steps, little noise) that the FFT windows at
    ``interval`` would hold millions of points, where its effect on ε is far below 1e-4 relative
    (benchmarks/dp_sgd.py compares it with dp_accounting at 1e-4).  The spread is read from the
    single-step pmfs at ``interval · 256``: a function of the parameters only.
    """
    coarse = poisson_gaussian_loss_pmfs(shift, sampling_probability, interval * 256.0)
    variance = 0.0
    for pmf in (coarse.remove, coarse.add):
        weights = pmf.probs / float(np.sum(pmf.probs))
        mean = float(np.sum(weights * pmf.losses))
        variance = max(variance, float(np.sum(weights * (pmf.losses - mean) ** 2)))
    span = 16.0 * math.sqrt(steps * variance)
    k = max(0, math.ceil(math.log2(span / (interval * WINDOW_POINTS)))) if span > 0.0 else 0
    return interval * 2.0**k
