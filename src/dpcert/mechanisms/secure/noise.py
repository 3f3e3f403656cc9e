"""Secure Laplace and Gaussian releases: integer-exact noise on a grid of declared granularity.

Textbook floating-point noise leaks through its low-order bits (Mironov 2012, "On significance of the
least significant bits for differential privacy").  As in Mironov's snapping mechanism and OpenDP's
``make_laplace`` / ``make_gaussian`` on floats, the real query answer x is rounded to the grid
``g ℤ`` (g = 2^k, so x/g is exact in floating point), integer noise is added with an integer-exact sampler
(:mod:`dpcert.mechanisms.secure.samplers`), and the release is ``g (round(x/g) + Z)``: a multiple of g
computed exactly, so every output bit is a function of the integer ``round(x/g) + Z``.

Rounding costs sensitivity: ``|round(a/g) − round(b/g)| <= |a − b|/g + 1`` for each coordinate, so a
query of ℓ1-sensitivity Δ over d coordinates has integer sensitivity ``Δ_g = ⌊Δ/g⌋ + d`` in grid units
(Laplace); the Gaussian takes an entry-wise bound Δ and composes d coordinates of ``⌊Δ/g⌋ + 1``.  The
certificate is the discrete mechanism's (the discrete Laplace's exact profile, or the discrete
Gaussian's of :mod:`dpcert.mechanisms.discrete_gaussian`) and records the grid (``granularity``) and
the sampler.

The noise parameters are chosen so that the sampler's integers stay small (the vectorised path): the
discrete Laplace parameter a is a dyadic rational with 20 significant bits (rounded down: more noise) and
the discrete Gaussian σ is an integer number of grid steps (rounded up), on a grid 2^13 times finer
than σ (Laplace: 2^20 times finer than Δ).

Release time.  The samplers do a fixed amount of work per release except on an event of probability
p <= :func:`~dpcert.mechanisms.secure.samplers.timing_failure` (10^-37 to 10^-35 per release), so the
view (output, release time) is within total variation p of the output followed by a delay that depends
on neither the values nor the input (the rounds a short discrete Gaussian batch adds depend only on
which rounds were accepted), and is (ε, δ(ε) + (1 + e^ε) p)-DP where the output is (ε, δ(ε))-DP.
The certificates claim that point: δ includes (1 + e^ε) p
(:func:`~dpcert.certificates.timing_delta`; for the Laplace, whose output is pure ε-DP, it
is the whole δ), and a note says so.  The profile the certificate names
is the output's: a composition in :mod:`dpcert.accounting` that re-derives points from the profiles
does not carry this term, which for k releases is at most (1 + e^ε) Σ p (the notes state each p).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.certificates import Certificate, Neighbouring, TrustModel
from dpcert.errors import DataOutOfBounds, InvalidParameter
from dpcert.mechanisms._common import certificate_at_delta
from dpcert.mechanisms.discrete_gaussian import (
    discrete_gaussian_certificate,
    least_discrete_gaussian_sigma,
)
from dpcert.mechanisms.discrete_laplace import DISCRETE_LAPLACE_BASIS, DiscreteLaplaceProfile
from dpcert.mechanisms.secure.samplers import (
    MAX_DRAWS_PER_CALL,
    RandomSource,
    SecureRandom,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    timing_failure,
)
from dpcert.mechanisms.secure.timing import calibrated_with_timing, with_timing
from dpcert.theory.gaussian import analytic_gaussian_sigma

LAPLACE_GRID_BITS = 20  # default grid: g = 2^(⌊log2 Δ⌋ − 20)
GAUSSIAN_GRID_BITS = 13  # default grid: g = 2^(⌊log2 σ⌋ − 13)
_PARAMETER_BITS = 20  # significant bits of the discrete Laplace parameter a
_MAX_UNITS = 2.0**52
MAX_GAUSSIAN_STEPS = 1 << 26  # sigma in grid steps the fixed-work discrete Gaussian covers
BITS = ("os", "rng")
MAX_DIMENSION = MAX_DRAWS_PER_CALL  # a release draws one noise value per coordinate in one call


@dataclass(frozen=True)
class Grid:
    """The grid ``g ℤ`` with ``g = 2**exponent``; values are rounded to it exactly (half to even)."""

    exponent: int

    def __post_init__(self) -> None:
        if isinstance(self.exponent, bool) or not isinstance(self.exponent, (int, np.integer)):
            raise InvalidParameter("granularity exponent", self.exponent, "an integer")
        if not -1000 <= int(self.exponent) <= 1000:
            raise InvalidParameter("granularity", f"2^{self.exponent}", "2^-1000 <= granularity <= 2^1000")

    @classmethod
    def of(cls, granularity: float) -> Grid:
        """The grid of a power-of-two ``granularity``."""
        granularity = check.positive_finite("granularity", granularity)
        mantissa, exponent = math.frexp(granularity)
        if mantissa != 0.5:
            raise InvalidParameter(
                "granularity", granularity, "a power of two (2^k, e.g. 2^-10 = 0.0009765625)"
            )
        return cls(exponent - 1)

    @classmethod
    def finer_than(cls, magnitude: float, bits: int) -> Grid:
        """The grid ``2^(⌊log2 magnitude⌋ − bits)``."""
        _, exponent = math.frexp(check.positive_finite("magnitude", magnitude))
        return cls(exponent - 1 - bits)

    @property
    def granularity(self) -> float:
        return math.ldexp(1.0, int(self.exponent))

    def integer_sensitivity(self, sensitivity: float, coordinates: int = 1) -> int:
        """``⌊Δ/g⌋ + d``: the sensitivity in grid units after rounding d coordinates."""
        sensitivity = check.positive_finite("sensitivity", sensitivity)
        try:
            scaled = math.ldexp(sensitivity, -int(self.exponent))
        except OverflowError:
            scaled = math.inf
        if not scaled <= _MAX_UNITS:
            raise InvalidParameter(
                "sensitivity/granularity",
                (sensitivity, self.granularity),
                "a grid coarser than sensitivity / 2^52",
            )
        units = math.floor(scaled)
        if units > _MAX_UNITS:
            raise InvalidParameter("granularity", self.granularity, "a grid coarser than sensitivity / 2^52")
        return units + check.positive_int("coordinates", coordinates)

    def to_units(self, value: Any) -> np.ndarray:
        """``round(value / g)`` as int64 (exact: division by a power of two, then round half to even).

        Integers beyond 2^53 are refused: their conversion to float64 would round them first.
        """
        if _has_wide_integer(value):
            raise DataOutOfBounds("value", value, "integers of magnitude <= 2^53 (exact in float64)")
        array = check.finite_array("value", value)
        scaled = np.rint(np.ldexp(array.astype(float), -int(self.exponent)))
        if np.any(np.abs(scaled) > _MAX_UNITS):
            raise DataOutOfBounds(
                "value", value, f"|value| <= 2^52 x granularity = {_MAX_UNITS * self.granularity:g}"
            )
        return scaled.astype(np.int64)

    def from_units(self, units: np.ndarray) -> np.ndarray:
        """``g × units`` in float64, exact for ``|units| <= 2^53``."""
        units = np.asarray(units)
        if units.size and np.max(np.abs(units)) > 2**53:
            raise DataOutOfBounds("release", "<beyond 2^53 grid steps>", "|release| <= 2^53 grid steps")
        return np.ldexp(units.astype(float), int(self.exponent))


def _has_wide_integer(value: Any) -> bool:
    """True if ``value`` holds an integer of magnitude beyond 2^53 (which float64 would round)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return abs(int(value)) > 2**53
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        return bool(value.size) and bool(np.any((value > 2**53) | (value < -(2**53))))
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.dtype == object):
        return any(_has_wide_integer(item) for item in value)
    return False


def _source(bits: str, rng: Any) -> RandomSource:
    if bits == "os":
        return SecureRandom()
    return check.generator(rng)


def _release(grid: Grid, units: np.ndarray, noise: np.ndarray) -> Any:
    released = grid.from_units(units + noise.reshape(units.shape))
    return float(released) if released.ndim == 0 else released


def _check_bits(bits: str) -> str:
    if bits not in BITS:
        raise InvalidParameter(
            "bits", bits, "'os' (secrets, for deployment) or 'rng' (the Generator passed in)"
        )
    return bits


def short_dyadic_below(value: float, bits: int = _PARAMETER_BITS) -> float:
    """The largest float ``<= value`` with at most ``bits`` significant bits."""
    mantissa, exponent = math.frexp(check.positive_finite("value", value))
    return math.ldexp(math.floor(math.ldexp(mantissa, bits)), exponent - bits)


def secure_laplace_certificate(
    noise_parameter: float,
    integer_sensitivity: int,
    grid: Grid,
    *,
    draws: int = 1,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> Certificate:
    """The ε = a·Δ_g certificate of discrete Laplace noise DLap(a) in grid units, grid recorded.

    The output is pure ε-DP; the claimed δ is the release-time term
    (:func:`~dpcert.certificates.timing_delta`) of a release
    of ``draws`` noise draws (the coordinates)."""
    parameters: dict[str, Any] = {
        "noise_parameter": check.positive_finite("noise_parameter", noise_parameter),
        "sensitivity": check.positive_int("sensitivity", integer_sensitivity),
        "granularity": grid.granularity,
        "sampler": "integer-exact",
    }
    output = certificate_at_delta(
        "discrete-laplace",
        DiscreteLaplaceProfile(parameters),
        parameters,
        0.0,
        trust_model,
        neighbouring,
        DISCRETE_LAPLACE_BASIS + "; integer-exact sampler on a grid (Mironov 2012 snapping)",
    )
    failure = timing_failure("discrete-laplace", 1 / Fraction(parameters["noise_parameter"]), draws)
    return with_timing(output, failure, keep_delta=False)


@dataclass(frozen=True)
class SecureLaplaceMechanism:
    """Releases ``g (round(x/g) + Z)`` with Z ~ DLap(a) drawn by the integer-exact sampler (CKS 2020, Alg. 2).

    ``bits="os"`` (default) draws random bits from the operating system and ignores ``rng``; ``"rng"``
    draws them from the Generator passed in (reproducible: tests, research, audits).  ``scale`` is the
    noise scale in the query's units (g/a).
    """

    grid: Grid
    noise_parameter: float
    certificate: Certificate
    dimension: int = 1
    bits: str = "os"

    def __post_init__(self) -> None:
        _check_bits(self.bits)
        if self.certificate.parameters.get("noise_parameter") != self.noise_parameter or (
            self.certificate.parameters.get("granularity") != self.grid.granularity
        ):
            raise InvalidParameter("certificate", self.certificate.mechanism, "its grid and noise parameter")

    @property
    def scale(self) -> float:
        return self.grid.granularity / self.noise_parameter

    def __call__(self, value: Any, rng: np.random.Generator | None = None, size: int | None = None) -> Any:
        units = self.grid.to_units(value)
        if units.size != self.dimension:
            raise InvalidParameter("value", value, f"{self.dimension} coordinate(s)")
        shape = units.shape if size is None else (check.positive_int("size", size),) + units.shape
        count = int(np.prod(shape, dtype=np.int64))
        noise = sample_discrete_laplace(1 / Fraction(self.noise_parameter), count, _source(self.bits, rng))
        return _release(self.grid, np.broadcast_to(units, shape), noise)

    def release_each(self, values: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        """Independent releases of a scalar query, one per entry of ``values`` (each user's own value):
        ``g (round(x/g) + Z)`` entry by entry, every Z a fresh DLap(a) draw."""
        if self.dimension != 1:
            raise InvalidParameter("dimension", self.dimension, "1 (one scalar release per entry)")
        units = self.grid.to_units(values)
        noise = sample_discrete_laplace(
            1 / Fraction(self.noise_parameter), units.size, _source(self.bits, rng)
        )
        return self.grid.from_units(units + noise.reshape(units.shape))


def secure_laplace(
    epsilon: float | None = None,
    *,
    scale: float | None = None,
    sensitivity: float = 1.0,
    dimension: int = 1,
    granularity: float | None = None,
    bits: str = "os",
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> SecureLaplaceMechanism:
    """The secure Laplace mechanism for ε-DP (rounding included), or at a given real ``scale`` b.

    Parameters
    ----------
    epsilon
        Target ε (the least noise meeting it after rounding), or ``None`` when ``scale`` is given.
    scale
        Real noise scale b; the certificate then states what b earns on the grid (a little more than
        Δ/b, the price of rounding).
    sensitivity
        ℓ1-sensitivity Δ of the real query.
    dimension
        Number d of coordinates released.
    granularity
        Grid step g (a power of two); default 2^(⌊log2 Δ⌋ − 20).
    bits
        ``"os"`` or ``"rng"`` (see :class:`SecureLaplaceMechanism`).
    """
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    dimension = check.positive_int("dimension", dimension)
    if dimension > MAX_DIMENSION:
        raise InvalidParameter(
            "dimension", dimension, f"at most {MAX_DIMENSION} coordinates (draws per call)"
        )
    grid = Grid.finer_than(sensitivity, LAPLACE_GRID_BITS) if granularity is None else Grid.of(granularity)
    shift = grid.integer_sensitivity(sensitivity, dimension)
    if (epsilon is None) == (scale is None):
        raise InvalidParameter("epsilon/scale", (epsilon, scale), "exactly one of epsilon, scale")
    if epsilon is not None:
        target = check.epsilon(epsilon) / shift
    else:
        target = grid.granularity / check.positive_finite("scale", scale)
    noise_parameter = short_dyadic_below(target)
    if not math.isfinite(1.0 / noise_parameter) or noise_parameter > 2.0**40:
        raise InvalidParameter(
            "epsilon/scale", target, "noise of at least 2^-40 grid steps; use a finer grid"
        )
    certificate = secure_laplace_certificate(
        noise_parameter, shift, grid, draws=dimension, trust_model=trust_model, neighbouring=neighbouring
    )
    return SecureLaplaceMechanism(grid, noise_parameter, certificate, dimension, _check_bits(bits))


@dataclass(frozen=True)
class SecureGaussianMechanism:
    """Releases ``g (round(x/g) + Z)`` with Z ~ N_Z(0, σ_g²) by the integer-exact sampler (CKS 2020, Alg. 3).

    ``sigma`` is in grid units (an integer); ``real_sigma`` = g σ_g.  Queries of ``dimension``
    coordinates (independent noise on each); ``bits`` as for :class:`SecureLaplaceMechanism`.
    """

    grid: Grid
    sigma: float
    certificate: Certificate
    bits: str = "os"
    dimension: int = 1

    def __post_init__(self) -> None:
        _check_bits(self.bits)
        if self.certificate.parameters.get("sigma") != self.sigma or (
            self.certificate.parameters.get("granularity") != self.grid.granularity
        ):
            raise InvalidParameter("certificate", self.certificate.mechanism, "its grid and sigma")

    @property
    def real_sigma(self) -> float:
        return self.sigma * self.grid.granularity

    def noise_units(self, count: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """``count`` integer draws of N_Z(0, σ_g²) (grid units), from the source ``bits`` selects."""
        return sample_discrete_gaussian(Fraction(self.sigma) ** 2, count, _source(self.bits, rng))

    def __call__(self, value: Any, rng: np.random.Generator | None = None, size: int | None = None) -> Any:
        units = self.grid.to_units(value)
        if units.size != self.dimension:
            raise InvalidParameter("value", value, f"{self.dimension} coordinate(s)")
        shape = units.shape if size is None else (check.positive_int("size", size),) + units.shape
        noise = self.noise_units(int(np.prod(shape, dtype=np.int64)), rng)
        return _release(self.grid, np.broadcast_to(units, shape), noise)


MAX_GRID_SENSITIVITY = 1 << 30
"""Largest sensitivity in grid steps of the secure Gaussian (the discrete Gaussian profile's range)."""


def secure_gaussian(
    epsilon: float | None = None,
    delta: float | None = None,
    *,
    sigma: float | None = None,
    sensitivity: float = 1.0,
    dimension: int = 1,
    compositions: int = 1,
    granularity: float | None = None,
    bits: str = "os",
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> SecureGaussianMechanism:
    """The secure Gaussian mechanism meeting (ε, δ) after rounding, or at a given real ``sigma``.

    With ``epsilon`` and ``delta``: the least discrete Gaussian σ_g for the grid sensitivity, rounded up
    to a whole number of grid steps.  With ``sigma`` (real units): σ_g = ⌈σ/g⌉ and the certificate is
    taken at ``delta`` (or at ``epsilon``).  Default grid 2^(⌊log2 σ⌋ − 13) with σ the analytic
    Gaussian's for (ε, δ) (or the given one).

    A query of ``dimension`` coordinates, each of sensitivity at most ``sensitivity`` (an entry-wise
    bound), gets independent noise on every coordinate; each rounded coordinate moves by at most
    ``⌊Δ/g⌋ + 1`` grid steps, and the shifted discrete Gaussians are log-concave, so the pair with
    every coordinate at that shift dominates (see :mod:`dpcert.mechanisms.discrete_gaussian`): the
    certificate composes ``dimension × compositions`` releases of that integer sensitivity.
    """
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    dimension = check.positive_int("dimension", dimension)
    if dimension > MAX_DIMENSION:
        raise InvalidParameter(
            "dimension", dimension, f"at most {MAX_DIMENSION} coordinates (draws per call)"
        )
    releases = check.positive_int("compositions", compositions)
    compositions = releases * dimension
    target: tuple[float, float] | None = None  # the (ε, δ) σ is calibrated to, if not given
    if sigma is None:
        if epsilon is None or delta is None:
            raise InvalidParameter("epsilon/delta", (epsilon, delta), "both epsilon and delta (or sigma)")
        epsilon, delta = check.epsilon(epsilon), check.positive_delta(delta)
        target = (epsilon, delta)
        reference = analytic_gaussian_sigma(epsilon, delta, sensitivity, compositions)
        if not (0.0 < reference < math.inf):
            raise InvalidParameter(
                "epsilon/sensitivity",
                (epsilon, sensitivity),
                "values whose noise sigma (proportional to sensitivity / epsilon) is a finite float",
            )
    else:
        reference = check.positive_finite("sigma", sigma)
    grid = Grid.finer_than(reference, GAUSSIAN_GRID_BITS) if granularity is None else Grid.of(granularity)
    shift = grid.integer_sensitivity(sensitivity)
    if shift > MAX_GRID_SENSITIVITY:
        if granularity is not None:
            raise InvalidParameter(
                "granularity", granularity, "a grid holding the sensitivity in at most 2^30 steps (coarser)"
            )
        name, value = ("epsilon", epsilon) if sigma is None else ("sigma", sigma)
        raise InvalidParameter(
            name,
            value,
            "noise of at least 2^-16 x the sensitivity (the default grid then holds the sensitivity in "
            "at most 2^30 steps): less epsilon, more sigma, or a coarser granularity",
        )
    if target is not None:
        least = least_discrete_gaussian_sigma(target[0], target[1], shift, compositions)
        units = float(math.ceil(least))
    else:
        units = float(math.ceil(math.ldexp(reference, -int(grid.exponent))))
        if epsilon is None and delta is None:
            raise InvalidParameter("epsilon/delta", None, "epsilon or delta at which to state the guarantee")
    if units > MAX_GAUSSIAN_STEPS:
        raise InvalidParameter(
            "granularity",
            grid.granularity,
            f"a grid with sigma <= 2^{MAX_GAUSSIAN_STEPS.bit_length() - 1} steps",
        )

    def certify(steps: float) -> Certificate:
        return discrete_gaussian_certificate(
            steps,
            epsilon=epsilon,
            delta=delta,
            sensitivity=shift,
            compositions=compositions,
            granularity=grid.granularity,
            trust_model=trust_model,
            neighbouring=neighbouring,
        )

    def failure_of(steps: float) -> float:
        return releases * timing_failure("discrete-gaussian", Fraction(steps) ** 2, dimension)

    units, certificate = calibrated_with_timing(
        certify, units, failure_of, asked=sigma is None, keep_delta=delta is not None
    )
    return SecureGaussianMechanism(grid, units, certificate, _check_bits(bits), dimension)
