"""The multivariate discrete Gaussian on a grid, certified through its ℓ2 sensitivity by zCDP.

A vector query of ℓ2-sensitivity Δ over m coordinates, rounded to the grid ``g ℤ`` (g = 2^k) and
released as ``g (round(x/g) + Z)`` with Z of m independent N_Z(0, σ²) coordinates (σ in grid units):

* Rounding moves each coordinate by at most ``|a_i − b_i|/g + 1`` grid steps, so by the triangle
  inequality the integer shift has ℓ2 norm at most ``Δ/g + √m`` (:func:`grid_l2_sensitivity`).
* For integer shifts the Rényi divergence of two discrete Gaussians is at most that of the continuous
  ones, ``α Δ_j²/(2σ²)`` per coordinate (Canonne, Kamath & Steinke 2020, Prop. 4), and independent
  coordinates add, so the release is ``ρ = Δ_Z²/(2σ²)``-zCDP with Δ_Z the ℓ2 bound of the integer
  shift (CKS 2020, Thm 14, the multivariate discrete Gaussian).
* k such releases (adaptively chosen) are ``kρ``-zCDP (Bun & Steinke 2016, Lemma 2.3), exactly
  additive; the (ε, δ) profile is the optimal conversion of CKS 2020, Prop. 12 / Cor. 13
  (:func:`dpcert.theory.zcdp.zcdp_delta`), a proven upper bound at every ε.

An entry-wise certificate (m composed one-dimensional discrete Gaussians, each at the entry bound
Δ) would charge ``mΔ²`` instead of ``Δ²``: about √m times the noise for the same guarantee.

The profile is never a Gaussian privacy-loss distribution: it exposes no ``dp_event`` and no
``privacy_loss_parts``, so the accountants compose its certificates only by methods valid for any
(ε, δ) profile.  Floating point: ρ is evaluated with a relative allowance of 2^-40 upward, and the
grid sensitivity carries the same allowance (a statistic computed in float64 may differ from the
exact one by a few units in the last place).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert._numerics import least_noise, least_valid_integer
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.secure.noise import (
    GAUSSIAN_GRID_BITS,
    MAX_GAUSSIAN_STEPS,
    Grid,
    _check_bits,
    _source,
)
from dpcert.mechanisms.secure.samplers import sample_discrete_gaussian, timing_failure
from dpcert.mechanisms.secure.timing import calibrated_with_timing
from dpcert.profiles import ALL_TRUST_MODELS, EVENT_LEVEL, ParameterSpec, register_profile
from dpcert.theory.zcdp import zcdp_delta, zcdp_epsilon

L2_BASIS = (
    "Canonne, Kamath & Steinke 2020, Thm 14 (multivariate discrete Gaussian: "
    "rho = Delta_2^2 / (2 sigma^2)-zCDP for integer shifts of l2 norm Delta_2), "
    "Bun & Steinke 2016, Lemma 2.3 (zCDP adds over compositions), "
    "CKS 2020, Cor. 13 (conversion to (epsilon, delta))"
)
SLACK = 2.0**-40  # relative allowance on ρ and on the grid sensitivity (float64 evaluation)
MAX_SIGMA_UNITS = 2.0**40


def grid_l2_sensitivity(sensitivity: float, coordinates: int, grid: Grid, fine_bits: int = 0) -> float:
    """ℓ2 bound, in grid steps, of the shift of ``round(x/g)`` when ``x`` moves by ℓ2 at most Δ.

    ``Δ/g + √m`` (each of the m coordinates gains at most one step from rounding; triangle
    inequality), with a relative allowance of 2^-40 upward.  With ``fine_bits = b > 0`` each
    coordinate is first rounded to the finer grid ``g 2^-b`` (exact integer sums there) and the sum
    rounded to g afterwards; the first rounding adds ``√m 2^-b`` steps of g and the second ``√m``.
    """
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    coordinates = check.positive_int("coordinates", coordinates)
    fine_bits = check.positive_int("fine_bits", fine_bits, minimum=0)
    root = math.sqrt(coordinates)
    units = math.ldexp(sensitivity, -int(grid.exponent)) + root
    if fine_bits:
        units += math.ldexp(root, -fine_bits)
    return units * (1.0 + SLACK)


@register_profile(
    "discrete-gaussian-l2",
    parameters={
        "sigma": ParameterSpec("number"),
        "l2_sensitivity": ParameterSpec("number"),
        "coordinates": ParameterSpec("integer"),
        "compositions": ParameterSpec("integer", required=False),
        "sampler": ParameterSpec("string", required=False, choices=("integer-exact",)),
        "granularity": ParameterSpec("number", required=False),
    },
    trust_models=ALL_TRUST_MODELS,
    neighbourings=EVENT_LEVEL,
)
class DiscreteGaussianL2Profile:
    """Profile of k releases of m-dimensional discrete Gaussian noise on integer vector queries.

    Parameters (certificate keys)
    -----------------------------
    ``sigma``
        σ > 0 of each coordinate's N_Z(0, σ²), in integer (grid) units.
    ``l2_sensitivity``
        Bound Δ_Z on the ℓ2 norm of the integer shift between neighbours (grid units), e.g. from
        :func:`grid_l2_sensitivity`.
    ``coordinates``
        Number m of coordinates (informational: the bound does not depend on m).
    ``compositions``
        Number k >= 1 of releases (default 1): ``ρ = k Δ_Z² / (2σ²)``.
    ``sampler``, ``granularity``
        Informational: ``"integer-exact"`` and the grid step g in the query's units.
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.sigma = check.positive_finite("sigma", parameters.get("sigma"))
        self.sensitivity = check.positive_finite("l2_sensitivity", parameters.get("l2_sensitivity"))
        self.coordinates = check.positive_int("coordinates", parameters.get("coordinates"))
        self.compositions = check.positive_int("compositions", parameters.get("compositions", 1))
        if self.sigma > MAX_SIGMA_UNITS:
            raise InvalidParameter("sigma", self.sigma, "sigma <= 2^40 (integer units)")

    @property
    def rho(self) -> float:
        """``k Δ_Z² / (2σ²)``, rounded upward."""
        return rho_of(self.sigma, self.sensitivity, self.compositions)

    def delta_for(self, epsilon: float) -> float:
        return zcdp_delta(check.nonnegative_finite("epsilon", epsilon), self.rho)

    def epsilon_for(self, delta: float) -> float:
        return zcdp_epsilon(delta, self.rho)

    def dp_event(self) -> Any:
        return None


def rho_of(sigma: float, sensitivity: float, compositions: int = 1) -> float:
    """zCDP ρ of k releases at ℓ2 shift Δ and noise σ: ``k Δ²/(2σ²)`` with a 2^-40 relative allowance."""
    return compositions * sensitivity * sensitivity / (2.0 * sigma * sigma) * (1.0 + SLACK)


def discrete_gaussian_l2_certificate(
    sigma: float,
    *,
    l2_sensitivity: float,
    coordinates: int,
    compositions: int = 1,
    granularity: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    notes: tuple[str, ...] = (),
) -> Certificate:
    """Certificate of k releases of the m-dimensional discrete Gaussian at a point of its profile.

    Give ``delta`` (the least ε is computed), ``epsilon`` (the least δ) or both (verified).
    """
    parameters: dict[str, Any] = {
        "sigma": check.positive_finite("sigma", sigma),
        "l2_sensitivity": check.positive_finite("l2_sensitivity", l2_sensitivity),
        "coordinates": check.positive_int("coordinates", coordinates),
        "compositions": check.positive_int("compositions", compositions),
        "sampler": "integer-exact",
    }
    if granularity is not None:
        parameters["granularity"] = check.positive_finite("granularity", granularity)
    if epsilon is not None:
        check.epsilon(epsilon)
    elif delta is not None:
        check.positive_delta(delta)
    profile = DiscreteGaussianL2Profile(parameters)
    guarantee = point_on_profile(profile, epsilon, delta)
    return Certificate(
        "discrete-gaussian-l2", guarantee, trust_model, neighbouring, parameters, L2_BASIS, notes
    ).verify()


def least_l2_sigma_units(epsilon: float, delta: float, l2_sensitivity: float, compositions: int = 1) -> int:
    """Least whole number of grid steps σ whose k releases at ℓ2 shift Δ_Z meet (ε, δ) by zCDP.

    The monotone search (:func:`dpcert._numerics.least_noise`) on the converted profile, rounded up
    to an integer, then the integer search (:func:`dpcert._numerics.least_valid_integer`) from
    there: the least whole σ at which the profile, as evaluated, gives at most δ.
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    l2_sensitivity = check.positive_finite("l2_sensitivity", l2_sensitivity)
    compositions = check.positive_int("compositions", compositions)

    def delta_of(sigma: float) -> float:
        return zcdp_delta(epsilon, rho_of(sigma, l2_sensitivity, compositions))

    guess = l2_sensitivity * math.sqrt(compositions * 2.0 * math.log(1.25 / delta)) / epsilon
    start = max(1, math.ceil(least_noise(delta_of, delta, guess)))
    units = least_valid_integer(lambda u: delta_of(float(u)) <= delta, start, below=0)
    if units is None or units > MAX_SIGMA_UNITS:
        raise InvalidParameter("granularity", l2_sensitivity, "a grid with sigma <= 2^40 steps")
    return units


@dataclass(frozen=True)
class SecureL2Gaussian:
    """Integer-exact m-dimensional Gaussian noise on the grid ``g ℤ``, certified through ℓ2 (zCDP).

    ``sigma`` is in grid steps (an integer), ``real_sigma = g σ``; ``certificate`` covers
    ``compositions`` releases of a vector of ``coordinates`` entries whose ℓ2 sensitivity (real
    units) is ``sensitivity``.  ``bits="rng"`` draws the sampler's bits from the Generator passed
    in (reproducible), ``"os"`` from the operating system.
    """

    grid: Grid
    sigma: int
    sensitivity: float
    coordinates: int
    certificate: Certificate
    bits: str = "os"

    def __post_init__(self) -> None:
        _check_bits(self.bits)
        parameters = self.certificate.parameters
        if parameters.get("sigma") != self.sigma or parameters.get("granularity") != self.grid.granularity:
            raise InvalidParameter("certificate", self.certificate.mechanism, "its grid and sigma")

    @property
    def real_sigma(self) -> float:
        return self.sigma * self.grid.granularity

    def noise_units(self, count: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """``count`` integer draws of N_Z(0, σ²) (grid steps)."""
        return sample_discrete_gaussian(Fraction(self.sigma) ** 2, count, _source(self.bits, rng))

    def __call__(self, value: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        """``g (round(value/g) + Z)`` for one vector of ``coordinates`` entries."""
        units = self.grid.to_units(value)
        if units.size != self.coordinates:
            raise InvalidParameter("value", value, f"{self.coordinates} coordinate(s)")
        return self.grid.from_units(units + self.noise_units(units.size, rng).reshape(units.shape))


def secure_l2_gaussian(
    epsilon: float | None = None,
    delta: float | None = None,
    *,
    sigma: float | None = None,
    sensitivity: float,
    coordinates: int,
    compositions: int = 1,
    granularity: float | None = None,
    fine_bits: int = 0,
    bits: str = "os",
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    notes: tuple[str, ...] = (),
) -> SecureL2Gaussian:
    """The ℓ2-certified secure Gaussian for k releases meeting (ε, δ), or at a given real ``sigma``.

    Parameters
    ----------
    epsilon, delta
        Target of the k releases together (least whole-step σ), or with ``sigma`` the point at which
        the certificate is stated (``delta``, or ``epsilon``, or both to be verified).
    sigma
        Real noise level; σ = ⌈sigma/g⌉ grid steps.
    sensitivity
        ℓ2-sensitivity Δ of the real vector query.
    coordinates
        Number m of coordinates (each rounded: ``Δ/g + √m`` steps, :func:`grid_l2_sensitivity`).
    compositions
        Number k of releases the certificate covers (ρ adds).
    granularity
        Grid step g (a power of two); default ``2^(⌊log2 σ₀⌋ − 13)`` with σ₀ the σ of the target
        under zCDP without rounding (or the given ``sigma``).
    fine_bits
        Coordinates first rounded to ``g 2^-fine_bits`` (see :func:`grid_l2_sensitivity`).

    Release time: each release (one call, ``coordinates`` draws of the fixed-work sampler) leaves the
    fixed-work path with probability at most p
    (:func:`~dpcert.mechanisms.secure.samplers.timing_failure`); the certificate's δ includes
    (1 + e^ε) k p for the k releases (:mod:`dpcert.mechanisms.secure.timing`; Jin, McMurtry, Rubinstein
    & Ohrimenko 2022).  With (ε, δ) asked, that term fits under δ (one more grid step of σ when the
    least σ leaves no room); with ``sigma`` and ``delta``, ε is raised by ulps; with ``sigma`` and
    ``epsilon`` only, δ is.  σ is limited to 2^26 grid steps, within the sampler's fixed-work range
    (about 2^27): a coarser grid is needed beyond.  Draws taken in bulk through :meth:`noise_units`
    or a pool are outside this per-release bound.
    """
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    coordinates = check.positive_int("coordinates", coordinates)
    compositions = check.positive_int("compositions", compositions)
    target: tuple[float, float] | None = None  # the (ε, δ) σ is calibrated to, if not given
    if sigma is None:
        if epsilon is None or delta is None:
            raise InvalidParameter("epsilon/delta", (epsilon, delta), "both epsilon and delta (or sigma)")
        epsilon, delta = check.epsilon(epsilon), check.positive_delta(delta)
        target = (epsilon, delta)
        reference = least_l2_real_sigma(epsilon, delta, sensitivity, compositions)
    else:
        reference = check.positive_finite("sigma", sigma)
        if epsilon is None and delta is None:
            raise InvalidParameter("epsilon/delta", None, "epsilon or delta at which to state the guarantee")
    grid = Grid.finer_than(reference, GAUSSIAN_GRID_BITS) if granularity is None else Grid.of(granularity)
    shift = grid_l2_sensitivity(sensitivity, coordinates, grid, fine_bits)
    if target is not None:
        units = least_l2_sigma_units(target[0], target[1], shift, compositions)
    else:
        units = math.ceil(math.ldexp(reference, -int(grid.exponent)))
    _check_sampler_range(units, grid)

    def certify(steps: float) -> Certificate:
        return discrete_gaussian_l2_certificate(
            steps,
            l2_sensitivity=shift,
            coordinates=coordinates,
            compositions=compositions,
            granularity=grid.granularity,
            epsilon=epsilon,
            delta=delta,
            trust_model=trust_model,
            neighbouring=neighbouring,
            notes=notes,
        )

    def failure_of(steps: float) -> float:
        return compositions * timing_failure("discrete-gaussian", Fraction(steps) ** 2, coordinates)

    steps, certificate = calibrated_with_timing(
        certify, float(units), failure_of, asked=sigma is None, keep_delta=delta is not None
    )
    units = int(steps)
    _check_sampler_range(units, grid)
    return SecureL2Gaussian(grid, units, sensitivity, coordinates, certificate, _check_bits(bits))


def _check_sampler_range(units: int, grid: Grid) -> None:
    """Refuse σ beyond the fixed-work range of the integer-exact sampler (its release-time bound)."""
    if units > MAX_GAUSSIAN_STEPS:
        raise InvalidParameter(
            "granularity",
            grid.granularity,
            f"a grid with sigma <= 2^{MAX_GAUSSIAN_STEPS.bit_length() - 1} steps (sigma = {units} steps is "
            "beyond the range the fixed-work sampler covers)",
        )


def least_l2_real_sigma(epsilon: float, delta: float, sensitivity: float, compositions: int = 1) -> float:
    """Least real σ whose k releases at ℓ2-sensitivity Δ meet (ε, δ) by zCDP (no rounding)."""

    def delta_of(sigma: float) -> float:
        return zcdp_delta(epsilon, rho_of(sigma, sensitivity, compositions))

    guess = sensitivity * math.sqrt(compositions * 2.0 * math.log(1.25 / delta)) / epsilon
    return least_noise(delta_of, delta, guess)
