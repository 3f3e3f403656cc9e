"""The discrete Gaussian mechanism: its exact privacy profile, calibration and integer-exact sampler.

Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential Privacy": N_Z(0, σ²) has mass
``exp(−x²/(2σ²)) / Z`` on the integers, ``Z = Σ_y exp(−y²/(2σ²))``.  Adding it to an integer query of
sensitivity Δ (an integer) releases Y or Y + Δ; the privacy loss at y is the affine
``L(y) = (Δ² − 2Δy)/(2σ²)``, so the hockey-stick profile is (CKS 2020, Thm 7)

    δ(ε) = Σ_{y < c} P(y) (1 − e^{ε − L(y)}),    c = Δ/2 − σ²ε/Δ,

a sum of positive terms over the integers below c.  It is computed term by term in float64 from an exact
rational starting point: the first excess ``L(y) − ε`` is evaluated in exact rational arithmetic (σ and
ε are taken exactly as floats), the following ones add the positive step Δ/σ² (no cancellation), the sum
stops once the remaining tail is below 1e-18 of it by the bound
``Σ_{|y| >= n} e^{−y²/(2σ²)} <= e^{−n²/(2σ²)} / (1 − e^{−n/σ²})``, that bound is added, and the result is
raised by a float-rounding allowance.  Z is summed directly for σ < 1 and by the Poisson summation
``Z = σ√(2π) (1 + 2 Σ_{k>=1} e^{−2π²σ²k²})`` otherwise.

The shift Δ is the worst neighbouring change: N_Z(0, σ²) is log-concave on the integers, so its shifts
have monotone likelihood ratios, the Neyman–Pearson tests of (P, P shifted by d) are the same threshold
tests for every d > 0, and their type-II errors grow as d shrinks: the pair at shift Δ dominates every
smaller shift (and, by symmetry, every negative one), and k releases compose to the k-fold pair.

k-fold compositions (k > 1), and composition with other mechanisms, use the pessimistic
privacy-loss distribution of a truncated pair that dominates the mechanism: the noise is cut at ±B and
the tail mass beyond (bounded as above) becomes an outcome of infinite privacy loss
(:meth:`DiscreteGaussianProfile.single_release_loss_pmf`), composed with the proven round-off bound of
:mod:`dpcert.theory.pld`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert._numerics import least_noise, smallest_valid
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.errors import InvalidParameter
from dpcert.mechanisms._common import release_shape, require_certificate_for
from dpcert.mechanisms.secure.samplers import (
    RandomSource,
    SecureRandom,
    sample_discrete_gaussian,
    timing_failure,
)
from dpcert.mechanisms.secure.timing import calibrated_with_timing, covering_release_time
from dpcert.profiles import ALL_TRUST_MODELS, EVENT_LEVEL, ParameterSpec, register_profile
from dpcert.theory.gaussian import analytic_gaussian_sigma
from dpcert.theory.pld import LossPmf, loss_pmf_from_masses, pld_self_composed_delta_for

DISCRETE_GAUSSIAN_BASIS = "Canonne, Kamath & Steinke 2020, Thm 7 (discrete Gaussian, exact profile)"
COMPOSED_BASIS = "Canonne, Kamath & Steinke 2020 + dp_accounting pessimistic PLD (discrete Gaussian)"
_CHUNK = 1 << 14
_MAX_TERMS = 1 << 22
_RELATIVE_TAIL = 1e-18
_ROUNDING = 32 * np.finfo(float).eps  # relative float allowance per unit of log magnitude of a term
_PLD_INTERVAL = 1e-4
_MAX_LOSS_POINTS = 2**20  # grid steps the losses of one release may span in its PLD
_MAX_PLD_REACH = 2_000_000  # outcomes per side of the truncated pair (memory of the PMF dictionaries)


def log_normaliser(sigma: float) -> float:
    """log Z with Z = Σ_y exp(−y²/(2σ²)) over the integers (an upper bound within rounding)."""
    if sigma >= 1.0:
        k = np.arange(1, 40, dtype=float)
        theta = float(np.sum(np.exp(-2.0 * math.pi**2 * sigma**2 * k * k)))
        return math.log(sigma) + 0.5 * math.log(2.0 * math.pi) + math.log1p(2.0 * theta)
    y = np.arange(1, 64, dtype=float)
    return math.log1p(2.0 * float(np.sum(np.exp(-(y * y) / (2.0 * sigma * sigma)))))


def tail_mass_bound(n: int, sigma: float) -> float:
    """Upper bound on Σ_{|y| >= n} P(y) for N_Z(0, σ²) and n >= 1 (both tails, normalised)."""
    ratio = -math.expm1(-n / sigma**2)
    return 2.0 * math.exp(-(n * n) / (2.0 * sigma * sigma) - log_normaliser(sigma)) / ratio


def _delta_from_cdf_bounds(epsilon: float, sigma: float, shift: int, top: int) -> float:
    """δ = [F(m) − F(m − Δ)] − (e^ε − 1) F(m − Δ) bounded from above without summing the tail.

    F is the CDF of N_Z(0, σ²) and m = ``top``.  The Δ masses of the first bracket are summed with
    Z >= σ√(2π) (Poisson summation); F(k) >= Φ(k/σ) / (1 + 2θ) for k <= 0 (each e^{−y²/(2σ²)} with
    y <= 0 exceeds its integral over [y − 1, y]) and F(k) >= Φ(k/σ) for k >= 0 (the same bound on
    the upper tail).  Used only when the direct sum would need more than 2^22 terms (σ beyond ~10^5).
    """
    from scipy.special import log_ndtr, ndtr

    if shift > _MAX_TERMS or sigma < 1.0:
        return 1.0
    y = np.arange(top - shift + 1, top + 1, dtype=float)
    log_floor_z = math.log(sigma) + 0.5 * math.log(2.0 * math.pi)
    window = math.fsum(np.exp(-(y * y) / (2.0 * sigma * sigma) - log_floor_z))
    k = top - shift
    if k <= 0:
        lower = math.exp(float(log_ndtr(k / sigma))) / math.exp(log_normaliser(sigma) - log_floor_z)
    else:
        lower = float(ndtr(k / sigma))
    # (e^ε − 1) F(m − Δ): beyond ε ≈ 709 e^ε overflows; a positive F then leaves nothing of δ
    growth = math.expm1(epsilon) if epsilon < 709.0 else math.inf
    subtracted = growth * lower * (1.0 - 1e-12) if lower > 0.0 else 0.0
    value = window * (1.0 + 1e-12) - subtracted
    return min(1.0, max(value, math.ulp(0.0)))


MAX_DELTA_SIGMA = 1e150
"""Largest σ :func:`discrete_gaussian_delta` evaluates: 2σ² stays a finite float."""
MIN_DELTA_SIGMA = 1e-140
"""Least σ :func:`discrete_gaussian_delta` evaluates: y²/(2σ²) stays a finite float for every |y| <= 2^23
it sums (at most 2^22 terms below a boundary of magnitude at most 2^22), and 2σ² a normal one; below it
(and below 2^-20 in certificates) the mass is all at 0 and δ(ε) is 1 within rounding for every ε < 1e28."""


def discrete_gaussian_delta(epsilon: float, sigma: float, sensitivity: int = 1) -> float:
    """δ(ε) of one release of N_Z(0, σ²) noise on an integer query of sensitivity Δ (CKS 2020, Thm 7).

    An upper bound within a relative ~1e-14 of the exact value (see the module docstring); never 0.
    """
    epsilon = check.nonnegative_finite("epsilon", epsilon)
    shift = Fraction(check.positive_int("sensitivity", sensitivity))
    sigma = check.positive_finite("sigma", sigma)
    if not MIN_DELTA_SIGMA <= sigma <= MAX_DELTA_SIGMA:
        raise InvalidParameter(
            "sigma",
            sigma,
            f"{MIN_DELTA_SIGMA:g} <= sigma <= {MAX_DELTA_SIGMA:g} (sigma^2 and 1/sigma^2 normal floats)",
        )
    variance = Fraction(sigma) ** 2
    boundary = shift / 2 - variance * Fraction(epsilon) / shift  # terms y < boundary
    top = math.ceil(boundary) - 1
    if top < -(10**300):  # only y <= top contribute, each at most P(y): δ <= P(Y <= top) <= (with
        # n = −top >= 1e300, σ <= 1e150: n/σ >= 1e150, n/σ² >= 1) e^{−n²/(2σ²)} / (1 − e^{−n/σ²}), which is
        # below the least positive float (CKS 2020 tail bound, as in tail_mass_bound)
        return math.ulp(0.0)
    if abs(top) > _MAX_TERMS:  # before any float of the terms: the excess of a huge shift may overflow
        return _delta_from_cdf_bounds(epsilon, sigma, int(shift), top)
    first_excess = (shift * shift - 2 * shift * top) / (2 * variance) - Fraction(epsilon)  # > 0
    excess0 = float(first_excess)
    step = float(shift / variance)
    two_var = 2.0 * sigma * sigma
    log_z = log_normaliser(sigma)
    total = 0.0
    allowance = 0.0
    start = 0
    while True:
        if start >= _MAX_TERMS:  # very wide noise: bound instead of summing millions of terms
            return _delta_from_cdf_bounds(epsilon, sigma, int(shift), top)
        j = np.arange(start, start + _CHUNK, dtype=float)
        y = float(top) - j
        log_mass = -(y * y) / two_var - log_z
        excess = excess0 + j * step
        terms = np.exp(log_mass) * -np.expm1(-excess)
        total += math.fsum(terms)
        allowance += math.fsum(terms * (1.0 + np.abs(log_mass) + epsilon))
        start += _CHUNK
        last = top - (start - 1)
        if last < 0:
            n = -last + 1  # every remaining y has |y| >= n
            tail = 0.5 * tail_mass_bound(n, sigma)
            if tail <= _RELATIVE_TAIL * total or tail < 1e-300:
                total += tail
                break
    value = total + _ROUNDING * allowance
    return min(1.0, max(value, math.ulp(0.0)))


@register_profile(
    "discrete-gaussian",
    parameters={
        "sigma": ParameterSpec("number"),
        "sensitivity": ParameterSpec("integer", required=False),
        "compositions": ParameterSpec("integer", required=False),
        "sampler": ParameterSpec("string", required=False, choices=("integer-exact",)),
        "granularity": ParameterSpec("number", required=False),
    },
    trust_models=ALL_TRUST_MODELS,
    neighbourings=EVENT_LEVEL,
)
class DiscreteGaussianProfile:
    """Profile of k releases of discrete Gaussian noise on integer queries.

    Parameters (certificate keys)
    -----------------------------
    ``sigma``
        The scale σ > 0 of N_Z(0, σ²) in integer units (σ² = sigma² exactly).
    ``sensitivity``
        Integer sensitivity Δ >= 1 of each release (default 1).
    ``compositions``
        Number k >= 1 of releases (default 1); k = 1 is exact, k > 1 uses the pessimistic PLD.
    ``sampler``
        ``"integer-exact"`` (informational; the profile does not depend on it).
    ``granularity``
        For releases on a grid (the secure Gaussian): the grid step g > 0 in the query's units
        (informational; Δ and σ are already in grid units).
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.sigma = check.positive_finite("sigma", parameters.get("sigma"))
        self.sensitivity = check.positive_int("sensitivity", parameters.get("sensitivity", 1))
        self.compositions = check.positive_int("compositions", parameters.get("compositions", 1))
        if self.sigma < 2.0**-20 or self.sigma > 2.0**40:
            raise InvalidParameter("sigma", self.sigma, "2^-20 <= sigma <= 2^40 (integer units)")
        if self.sensitivity > 1 << 30:
            raise InvalidParameter("sensitivity", self.sensitivity, "1 <= sensitivity <= 2^30")

    def single_release_loss_pmf(self, interval: float) -> LossPmf:
        """A pessimistic loss PMF of one release that dominates the untruncated pair.

        The pair (N_Z(0, σ²), N_Z(Δ, σ²)) is truncated to ±B around each centre, B = ⌈11.6σ⌉ + 2; the
        mass outside, bounded by :func:`tail_mass_bound`, is moved to an outcome only that distribution
        has (infinite privacy loss), as are the outcomes y < Δ − B that only the first one takes.  For
        every ε the hockey-stick divergence of the new pair is the truncated part plus that bound, at
        least the original's, so the pair dominates and its compositions bound the mechanism's.  The
        reflection y -> Δ − y swaps the two laws: one PMF stands for both directions.  The loss at y
        is (Δ² − 2yΔ)/(2σ²), rounded up to the grid ``interval``.
        """
        interval = check.positive_finite("interval", interval)
        if not self._pld_fits(interval):
            raise InvalidParameter(
                "sigma",
                self.sigma,
                f"a sigma whose privacy losses span at most {_MAX_LOSS_POINTS} grid steps of {interval:g} "
                "(larger), for PLD composition (k > 1)",
            )
        reach = math.ceil(11.6 * self.sigma) + 2
        if reach > _MAX_PLD_REACH:
            raise InvalidParameter(
                "sigma", self.sigma, f"sigma <= {_MAX_PLD_REACH / 11.6:.3g} for PLD composition (k > 1)"
            )
        shift = self.sensitivity
        variance2 = 2.0 * self.sigma**2
        log_z = log_normaliser(self.sigma)
        y = np.arange(-reach, reach + 1, dtype=float)
        masses = np.exp(-(y * y) / variance2 - log_z)
        shared = y >= shift - reach  # outcomes the shifted law also takes
        losses = (shift * shift - 2.0 * shift * y[shared]) / variance2
        infinity = float(np.sum(masses[~shared])) + tail_mass_bound(reach + 1, self.sigma)
        # exp of an argument of magnitude <= 70 + |ln Z| carries a few ulp of it; the losses are
        # rounded up to the grid after an error of a few ulp of their magnitude, covered by the
        # slack added to each loss before rounding.
        magnitude = 70.0 + abs(log_z)
        losses = losses + 8.0 * np.finfo(float).eps * (np.abs(losses) + 1.0)
        return loss_pmf_from_masses(
            interval, losses, masses[shared], infinity, 8.0 * np.finfo(float).eps * magnitude
        )

    def privacy_loss_parts(self, interval: float) -> list[tuple[Any, int]]:
        """``[(loss PMF of one release, compositions)]``, composed by dpcert's proven PLD bound."""
        return [(self.single_release_loss_pmf(interval), self.compositions)]

    def _pld_fits(self, interval: float) -> bool:
        """The losses (Δ² − 2yΔ)/(2σ²), y in [Δ − B, B], span Δ(2B − Δ)/σ²: at most ``_MAX_LOSS_POINTS``
        steps of ``interval``."""
        reach = math.ceil(11.6 * self.sigma) + 2
        return (
            self.sensitivity * (2 * reach - self.sensitivity) / self.sigma**2 <= _MAX_LOSS_POINTS * interval
        )

    @cached_property
    def _single(self) -> LossPmf:
        return self.single_release_loss_pmf(_PLD_INTERVAL)

    def delta_for(self, epsilon: float) -> float:
        if self.compositions == 1:
            return discrete_gaussian_delta(epsilon, self.sigma, self.sensitivity)
        if not self._pld_fits(_PLD_INTERVAL):
            # noise so small that the PLD grid would not fit: basic composition of the exact single
            # profile (Dwork & Roth 2014, Thm 3.16), k releases each (ε/k, δ_1(ε/k))-DP
            k = self.compositions
            return min(
                1.0, k * discrete_gaussian_delta(epsilon / k, self.sigma, self.sensitivity) * (1 + 1e-12)
            )
        return pld_self_composed_delta_for(self._single, self.compositions, epsilon)

    def epsilon_for(self, delta: float) -> float:
        if delta <= 0.0:
            return math.inf
        guess = self.sensitivity * math.sqrt(self.compositions) / self.sigma
        return smallest_valid(lambda e: self.delta_for(e) - delta, 0.0, max(1.0, guess * guess))

    def dp_event(self) -> Any:
        return None


def discrete_gaussian_certificate(
    sigma: float,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    sensitivity: int = 1,
    compositions: int = 1,
    granularity: float | None = None,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> Certificate:
    """Certificate of k releases of N_Z(0, σ²) noise at a point of the profile.

    Give ``delta`` (the least ε is computed), ``epsilon`` (the least δ) or both (verified).
    """
    parameters: dict[str, Any] = {
        "sigma": check.positive_finite("sigma", sigma),
        "sensitivity": check.positive_int("sensitivity", sensitivity),
        "compositions": check.positive_int("compositions", compositions),
        "sampler": "integer-exact",
    }
    if granularity is not None:
        parameters["granularity"] = check.positive_finite("granularity", granularity)
    if epsilon is not None:
        check.epsilon(epsilon)
    elif delta is not None:
        check.positive_delta(delta)
    profile = DiscreteGaussianProfile(parameters)
    guarantee = point_on_profile(profile, epsilon, delta)
    basis = DISCRETE_GAUSSIAN_BASIS if compositions == 1 else COMPOSED_BASIS
    return Certificate("discrete-gaussian", guarantee, trust_model, neighbouring, parameters, basis).verify()


def least_discrete_gaussian_sigma(
    epsilon: float, delta: float, sensitivity: int = 1, compositions: int = 1
) -> float:
    """Least σ (to a relative 1e-12, rounded up) whose k-fold discrete Gaussian is (ε, δ)-DP."""

    def delta_of(sigma: float) -> float:
        if sigma < 2.0**-20:
            return 1.0
        parameters = {"sigma": sigma, "sensitivity": sensitivity, "compositions": compositions}
        return DiscreteGaussianProfile(parameters).delta_for(epsilon)

    try:
        guess = analytic_gaussian_sigma(epsilon, delta, float(sensitivity), compositions)
        if not guess < math.inf:
            raise InvalidParameter("sigma", guess, "a finite sigma")
        return least_noise(delta_of, delta, guess)
    except InvalidParameter as exc:
        if exc.name != "sigma":
            raise
        # the search reached a sigma beyond what the profile or its composition grid evaluates: the
        # target and sensitivity (and releases) together ask for it
        raise InvalidParameter(
            "epsilon/delta/sensitivity/compositions",
            (epsilon, delta, sensitivity, compositions),
            f"values whose least sigma stays within {exc.allowed}",
            hint="a larger epsilon or delta, a smaller sensitivity or fewer compositions",
        ) from None


def release_time_failure(sigma: float, compositions: int = 1) -> float:
    """Bound on the probability that k = ``compositions`` draws of N_Z(0, σ²), made in any number of
    calls of the fixed-work sampler, leave its fixed-work path: ``k · p(k)``.

    A certificate covers k draws, made in at most k calls of at most k draws each; the bound p(n) of
    :func:`~dpcert.mechanisms.secure.samplers.timing_failure` for a call of n draws is nondecreasing in
    n (more rounds, more coins), so the calls together leave the path with probability at most
    k p(k).  For k = 1 it is the one-draw bound.  1 (no claim) when σ is beyond the fixed-work range.
    """
    compositions = check.positive_int("compositions", compositions)
    failure = timing_failure("discrete-gaussian", Fraction(sigma) ** 2, compositions)
    return min(1.0, math.nextafter(compositions * failure, math.inf))


@dataclass(frozen=True)
class DiscreteGaussianCalibration:
    """Result of :func:`calibrate_discrete_gaussian`: the noise ``sigma`` and its certificate."""

    sigma: float
    certificate: Certificate

    def mechanism(self) -> DiscreteGaussianMechanism:
        return DiscreteGaussianMechanism(self.sigma, self.certificate)


def calibrate_discrete_gaussian(
    epsilon: float,
    delta: float,
    *,
    sensitivity: int = 1,
    compositions: int = 1,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> DiscreteGaussianCalibration:
    """The least discrete Gaussian σ whose k releases meet (ε, δ), release times included, with its
    certificate.

    The certificate's δ covers the output and the release-time term of the fixed-work sampler
    (:func:`release_time_failure`); when the least σ for the output leaves no room under δ for that
    term, σ is raised by a relative 2^-40 until it does (never a weaker claim).

    Parameters
    ----------
    epsilon, delta
        Target guarantee of the whole k-fold composition (ε > 0, 0 < δ < 1).
    sensitivity
        Integer sensitivity Δ of each release.
    compositions
        Number k of releases with the same σ.
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta, "delta")
    sensitivity = check.positive_int("sensitivity", sensitivity)
    compositions = check.positive_int("compositions", compositions)
    least = least_discrete_gaussian_sigma(epsilon, delta, sensitivity, compositions)

    def certify(sigma: float) -> Certificate:
        return discrete_gaussian_certificate(
            sigma,
            epsilon=epsilon,
            delta=delta,
            sensitivity=sensitivity,
            compositions=compositions,
            trust_model=trust_model,
            neighbouring=neighbouring,
        )

    sigma, certificate = calibrated_with_timing(
        certify,
        least,
        lambda sigma: release_time_failure(sigma, compositions),
        asked=True,
        keep_delta=True,
        more=lambda sigma: sigma * (1.0 + 2.0**-40),
    )
    return DiscreteGaussianCalibration(sigma, certificate)


@dataclass(frozen=True)
class DiscreteGaussianMechanism:
    """Adds N_Z(0, σ²) noise to integer query answers with the integer-exact sampler (CKS 2020, Alg. 3).

    ``secure=True`` (default) draws the random bits from the operating system (``secrets``) and ignores
    the ``rng`` argument; ``secure=False`` draws them from ``rng`` (reproducible, for tests and research).
    Either way the draws come from the fixed-work sampler, so the ``certificate`` is the one given with
    the release-time term of its k = ``compositions`` draws added (:func:`release_time_failure`,
    :func:`~dpcert.mechanisms.secure.timing.covering_release_time`; Jin, McMurtry, Rubinstein &
    Ohrimenko 2022): unchanged when it already claims it, its (ε, δ) kept when δ leaves room, else δ
    raised by (1 + e^ε) k p(k).  A σ beyond the sampler's fixed-work range (about 2^27) is refused.
    """

    sigma: float
    certificate: Certificate
    secure: bool = True

    def __post_init__(self) -> None:
        check.positive_finite("sigma", self.sigma)
        require_certificate_for(
            self.certificate,
            "discrete-gaussian",
            "sigma",
            self.sigma,
            "a discrete-Gaussian certificate for this sigma",
        )
        compositions = int(self.certificate.parameters.get("compositions", 1))
        failure = release_time_failure(self.sigma, compositions)
        object.__setattr__(self, "certificate", covering_release_time(self.certificate, failure))

    def source(self, rng: np.random.Generator | None) -> RandomSource:
        """Where the random bits come from."""
        return SecureRandom() if self.secure else check.generator(rng)

    def __call__(self, value: Any, rng: np.random.Generator | None, size: int | None = None) -> Any:
        """Release integer ``value`` plus noise; with ``size``, ``size`` releases (leading axis)."""
        array = check.finite_array("value", value)
        if not np.all(array == np.round(array)) or np.any(np.abs(array) > 2.0**52):
            raise InvalidParameter("value", value, "integers of magnitude <= 2^52")
        shape = release_shape(array, size)
        count = int(np.prod(shape, dtype=np.int64))
        noise = sample_discrete_gaussian(Fraction(self.sigma) ** 2, count, self.source(rng))
        released = array.astype(np.int64) + noise.reshape(shape)
        return int(released) if released.ndim == 0 else released
