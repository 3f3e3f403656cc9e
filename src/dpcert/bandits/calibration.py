"""The papers' noise choices that the bandit families share (the ``paper`` calibration).

Tight calibrations come from :mod:`dpcert.accounting.calibration` and the mechanisms themselves; this
module only states how the papers pick their noise, through the one implementation of each formula.
"""

from __future__ import annotations

from dpcert import _validation as check
from dpcert.mechanisms.gaussian import classical_sigma


def paper_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The papers' Gaussian noise ``σ = Δ √(2 ln(1.25/δ)) / ε`` (Dwork & Roth 2014, Thm A.1).

    Computed by :func:`dpcert.mechanisms.gaussian.classical_sigma`.  Thm A.1 is proven for ε < 1 only,
    yet the papers use the same formula at ε >= 1 (e.g. Li, Zhou & Ji 2022, Fig. 2 at ε = 10): there σ
    is the formula's value (it is linear in Δ/ε, so it equals ``classical_sigma`` at ε' = 1/2 with
    Δ' = Δ/(2ε)) and a run certifies what that noise earns by the exact profile, never the request.
    """
    epsilon = check.epsilon(epsilon)
    if epsilon < 1.0:
        return classical_sigma(epsilon, delta, sensitivity)
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    return classical_sigma(0.5, delta, sensitivity * 0.5 / epsilon)
