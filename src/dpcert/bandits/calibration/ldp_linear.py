"""Noise of the local randomizer of Improved-rate LDP linear bandits (the pair (x̃, ỹ)): the paper's σ
and the least analytic σ."""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpcert import _validation as check
from dpcert.accounting.calibration import analytic_gaussian_sigma
from dpcert.bandits.calibration.common import earned_gaussian_certificate, paper_gaussian_sigma
from dpcert.certificates import Certificate, Guarantee, Neighbouring, TrustModel
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.gaussian import CLASSICAL_BASIS

PAIR_SENSITIVITY = 2.0 * math.sqrt(2.0)
CALIBRATIONS = ("analytic_joint", "paper")


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


def calibrate_randomizer(
    epsilon: float, delta: float, calibration: str = "analytic_joint", *, sigma: float | None = None
) -> LocalCalibration:
    """σ for the claimed (ε, δ)-LDP and the certificate of what that σ guarantees.

    ``analytic_joint``: least σ with the exact profile at sensitivity 2√2 meeting (ε, δ).
    ``paper``: ``2√(2 ln(1.25/δ))/ε``; its certificate is the exact profile of the pair, which fails
    the claim at ε = 10 (any δ) and at ε = 1, δ = 1e-5 (docs/PAPER_NOTES.md, PN-IRL-1).  ``sigma``
    overrides both.
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    notes = [
        "pair (x~, y~) released with one Gaussian each: l2 sensitivity 2*sqrt(2) for ||x|| <= 1, |y| <= 1",
        "the deliberate feature perturbation zeta is not counted (it only adds noise)",
    ]
    if sigma is not None:
        noise = check.positive_finite("sigma", sigma)
        notes.append("user-supplied noise level")
        used = "user"
    elif calibration == "analytic_joint":
        noise = analytic_gaussian_sigma(epsilon, delta, PAIR_SENSITIVITY)
        used = calibration
    elif calibration == "paper":
        noise = paper_sigma(epsilon, delta)
        notes.append(
            f"paper noise (Alg. 1; {CLASSICAL_BASIS}) treats x~ and y~ separately with sensitivity 2"
        )
        used = calibration
    else:
        raise InvalidParameter("calibration", calibration, "one of " + ", ".join(CALIBRATIONS))
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
