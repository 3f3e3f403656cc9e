"""Noise of the local randomizer of Improved-rate LDP linear bandits (the pair (x̃, ỹ)): the paper's σ
and the least analytic σ, or (``secure=True``) integer-exact noise on a grid certified through the pair's
ℓ2 sensitivity (:mod:`dpcert.mechanisms.discrete_gaussian_l2`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpcert import _validation as check
from dpcert.bandits.calibration.common import earned_gaussian_certificate, paper_gaussian_sigma
from dpcert.bandits.privatizers import Calibration, calibration_of
from dpcert.certificates import Certificate, Guarantee, Neighbouring, TrustModel
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.discrete_gaussian_l2 import SecureL2Gaussian, secure_l2_gaussian
from dpcert.mechanisms.gaussian import CLASSICAL_BASIS
from dpcert.theory.gaussian import analytic_gaussian_sigma

PAIR_SENSITIVITY = 2.0 * math.sqrt(2.0)
LEAST_NOISE_NAME = "analytic_joint"  # how LocalCalibration.calibration reports Calibration.LEAST_NOISE


def paper_sigma(epsilon: float, delta: float) -> float:
    """Algorithm 1's ``σ = 2 √(2 ln(1.25/δ)) / ε`` (classical Gaussian, sensitivity 2, ε < 1)."""
    return paper_gaussian_sigma(epsilon, delta, 2.0)


@dataclass(frozen=True)
class LocalCalibration:
    """Noise σ of the user's randomizer and the local guarantee it earns for the pair (x̃, ỹ)."""

    sigma: float
    certificate: Certificate
    claim: Guarantee
    claim_met: bool
    calibration: str
    secure: SecureL2Gaussian | None = None
    """With ``secure=True``: the integer-exact mechanism of the d + 1 released coordinates."""


def calibrate_randomizer(
    epsilon: float,
    delta: float,
    calibration: Calibration | str = Calibration.LEAST_NOISE,
    *,
    sigma: float | None = None,
    secure: bool = False,
    dimension: int | None = None,
) -> LocalCalibration:
    """σ for the claimed (ε, δ)-LDP and the certificate of what that σ guarantees.

    ``Calibration.LEAST_NOISE`` (reported as ``analytic_joint``, the name this calibration had, which is
    still accepted with a DeprecationWarning): least σ with the exact profile at sensitivity 2√2 meeting
    (ε, δ).  ``Calibration.PAPER``: ``2√(2 ln(1.25/δ))/ε``; its certificate is the exact profile of the
    pair, which fails the claim at ε = 10 (any δ) and at ε = 1, δ = 1e-5 (docs/PAPER_NOTES.md, PN-IRL-1).
    ``sigma`` overrides both.  ``secure=True`` (needs ``dimension`` d): see
    :func:`calibrate_secure_randomizer`.
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    mode = calibration_of(calibration)
    if not isinstance(secure, bool):
        raise InvalidParameter("secure", secure, "true or false")
    if secure:
        return calibrate_secure_randomizer(epsilon, delta, mode, sigma=sigma, dimension=dimension)
    notes = [
        "pair (x~, y~) released with one Gaussian each: l2 sensitivity 2*sqrt(2) for ||x|| <= 1, |y| <= 1",
        "the deliberate feature perturbation zeta is not counted (it only adds noise)",
    ]
    if sigma is not None:
        noise = check.positive_finite("sigma", sigma)
        notes.append("user-supplied noise level")
        used = "user"
    elif mode is Calibration.LEAST_NOISE:
        noise = analytic_gaussian_sigma(epsilon, delta, PAIR_SENSITIVITY)
        used = LEAST_NOISE_NAME
    else:
        noise = paper_sigma(epsilon, delta)
        notes.append(
            f"paper noise (Alg. 1; {CLASSICAL_BASIS}) treats x~ and y~ separately with sensitivity 2"
        )
        used = mode.value
    certificate, met = earned_gaussian_certificate(
        noise,
        epsilon,
        delta,
        sensitivity=PAIR_SENSITIVITY,
        trust_model=TrustModel.LOCAL,
        neighbouring=Neighbouring.REPLACE_ONE,
        notes=tuple(notes),
    )
    return LocalCalibration(noise, certificate, Guarantee(epsilon, delta), met, used)


def calibrate_secure_randomizer(
    epsilon: float,
    delta: float,
    calibration: Calibration | str = Calibration.LEAST_NOISE,
    *,
    sigma: float | None = None,
    dimension: int | None = None,
) -> LocalCalibration:
    """Integer-exact noise for the pair (x̃, ỹ): ``(x, y)`` rounded to the grid ``g ℤ``, N_Z(0, σ²) added.

    The d + 1 coordinates have ℓ2 sensitivity 2√2 (``‖x‖ <= 1``, ``|y| <= 1``); rounding adds at most
    √(d + 1) grid steps, and the release is ``ρ = (2√2/g + √(d + 1))²/(2σ²)``-zCDP (Canonne, Kamath & Steinke
    2020, Thm 14; :func:`dpcert.mechanisms.discrete_gaussian_l2.secure_l2_gaussian`), converted to (ε, δ)
    by their Cor. 13.  ``LEAST_NOISE``: the least whole-step σ meeting (ε, δ) that way; ``PAPER`` or a
    user ``sigma``: that σ rounded up to the grid, certified at δ (the claim may then fail, as for the
    float noise).  The deliberate perturbation ζ is added by the user after the release (post-processing).
    """
    mode = calibration_of(calibration)
    d = check.positive_int("dimension", dimension)
    notes = [
        f"pair (x~, y~) rounded to a grid and released with integer-exact noise: {d + 1} coordinates, "
        "l2 sensitivity 2*sqrt(2) plus sqrt(d + 1) grid steps of rounding",
        "the deliberate feature perturbation zeta is added after the release (post-processing)",
    ]
    common: dict[str, Any] = dict(
        sensitivity=PAIR_SENSITIVITY,
        coordinates=d + 1,
        bits="rng",
        trust_model=TrustModel.LOCAL,
        neighbouring=Neighbouring.REPLACE_ONE,
    )
    if sigma is not None:
        noise, used = check.positive_finite("sigma", sigma), "user"
        notes.append("user-supplied noise level")
    elif mode is Calibration.LEAST_NOISE:
        noise, used = None, LEAST_NOISE_NAME
    else:
        noise, used = paper_sigma(epsilon, delta), mode.value
        notes.append(f"paper noise (Alg. 1; {CLASSICAL_BASIS}) rounded up to the grid")
    if noise is None:
        mechanism = secure_l2_gaussian(epsilon, delta, notes=tuple(notes), **common)
    else:
        mechanism = secure_l2_gaussian(delta=delta, sigma=noise, notes=tuple(notes), **common)
    certificate = mechanism.certificate
    met = certificate.epsilon <= epsilon
    claim = Guarantee(epsilon, delta)
    return LocalCalibration(mechanism.real_sigma, certificate, claim, met, used, mechanism)
