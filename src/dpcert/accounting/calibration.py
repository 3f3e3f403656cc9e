"""The least noise meeting a privacy target, returned with its certificate.

Calibration is a monotone search against an exact (or conservative) privacy profile, in the spirit of
``dp_accounting.mechanism_calibration``: the search brackets the least valid noise, locates it with
Brent's method, then steps upward until the computed δ(ε) is at most the target, so the returned noise
is always valid and within a relative 1e-9 of the exact minimum.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from dpcert import _validation as check
from dpcert._numerics import ratio_rounded_up, smallest_valid
from dpcert.certificates import Certificate, Neighbouring, TrustModel
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.gaussian import (
    ANALYTIC_BASIS,
    CLASSICAL_BASIS,
    GaussianMechanism,
    classical_sigma,
    gaussian_certificate,
    gaussian_delta,
)
from dpcert.mechanisms.laplace import LaplaceMechanism, laplace_certificate

GAUSSIAN_METHODS = ("analytic", "classical")


@dataclass(frozen=True)
class GaussianCalibration:
    """Result of :func:`calibrate_gaussian`: the noise ``sigma`` and the certificate it earns."""

    sigma: float
    certificate: Certificate
    method: str

    def mechanism(self) -> GaussianMechanism:
        return GaussianMechanism(self.sigma, self.certificate)


@dataclass(frozen=True)
class LaplaceCalibration:
    """Result of :func:`calibrate_laplace`: the noise ``scale`` and the certificate it earns."""

    scale: float
    certificate: Certificate

    def mechanism(self) -> LaplaceMechanism:
        return LaplaceMechanism(self.scale, self.certificate)


def least_noise(
    delta_of_noise: Callable[[float], float],
    target_delta: float,
    initial: float,
    *,
    ratio: float = 2.0,
    relative_tolerance: float | None = None,
) -> float:
    """Least noise level ``s`` with ``delta_of_noise(s) <= target_delta`` (δ non-increasing in ``s``).

    ``initial`` is any positive starting guess; the bracket shrinks from it by the factor ``ratio``
    (> 1) until invalid, then spans ``[low, ratio * low]`` (grown by doubling if needed): a guess
    known to lie within a few per cent of the answer saves evaluations with a ratio near 1.
    ``relative_tolerance`` (default: about 1e-12) stops the search once the least valid level is
    located within that relative distance; the returned level is valid as evaluated either way.
    """
    low = initial
    for _ in range(200):  # shrink until invalid so that the least valid point is bracketed
        if delta_of_noise(low) > target_delta:
            break
        low /= ratio
    else:
        return low

    def excess(s: float) -> float:
        return delta_of_noise(s) - target_delta

    if relative_tolerance is None:
        return smallest_valid(excess, low, ratio * low)
    return smallest_valid(
        excess, low, ratio * low, xtol_relative=relative_tolerance, first_step=relative_tolerance
    )


def analytic_gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float = 1.0, compositions: int = 1
) -> float:
    """Least σ whose k-fold Gaussian mechanism is (ε, δ)-DP by the exact profile (Balle & Wang 2018)."""
    scale = sensitivity * math.sqrt(compositions)
    guess = scale * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    return least_noise(lambda s: gaussian_delta(epsilon, scale / s), delta, guess)


def calibrate_gaussian(
    epsilon: float,
    delta: float,
    *,
    sensitivity: float = 1.0,
    compositions: int = 1,
    method: str = "analytic",
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> GaussianCalibration:
    """The least Gaussian noise meeting (ε, δ) over ``compositions`` releases.

    Parameters
    ----------
    epsilon, delta
        Target guarantee of the whole k-fold composition (ε > 0, 0 < δ < 1).
    sensitivity
        ℓ2-sensitivity Δ of each release.
    compositions
        Number k of releases with the same σ (exact: they compose to one Gaussian with Δ√k).
    method
        ``"analytic"`` (Balle & Wang 2018, Thm 8; exact) or ``"classical"`` (Dwork & Roth 2014,
        Thm A.1, ε < 1 only; for k > 1 it is applied to the equivalent sensitivity Δ√k).
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    compositions = check.positive_int("compositions", compositions)
    if method == "analytic":
        sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity, compositions)
        basis = ANALYTIC_BASIS
    elif method == "classical":
        sigma = classical_sigma(epsilon, delta, sensitivity * math.sqrt(compositions))
        basis = CLASSICAL_BASIS
    else:
        raise InvalidParameter("method", method, "one of " + ", ".join(GAUSSIAN_METHODS))
    certificate = gaussian_certificate(
        sigma,
        epsilon=epsilon,
        delta=delta,
        sensitivity=sensitivity,
        compositions=compositions,
        basis=basis,
        trust_model=trust_model,
        neighbouring=neighbouring,
    )
    return GaussianCalibration(sigma, certificate, method)


def calibrate_laplace(
    epsilon: float,
    *,
    sensitivity: float = 1.0,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> LaplaceCalibration:
    """The least float Laplace scale b with Δ/b <= ε in exact arithmetic, for ε-DP."""
    epsilon = check.epsilon(epsilon)
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    scale = ratio_rounded_up(sensitivity, epsilon)  # b >= Δ/ε exactly, so Δ/b <= ε exactly
    if not math.isfinite(scale):
        raise InvalidParameter(
            "epsilon", epsilon, "epsilon > 0 large enough that sensitivity/epsilon is finite"
        )
    certificate = laplace_certificate(
        scale, sensitivity=sensitivity, trust_model=trust_model, neighbouring=neighbouring
    )
    return LaplaceCalibration(scale, certificate)
