"""Calibration pieces the bandit families share: the papers' Gaussian noise and what a noise level earns.

Tight calibrations come from the mechanisms themselves (:mod:`dpcert.mechanisms`); this
module states how the papers pick their noise, through the one implementation of each formula, the
certificate a Gaussian noise level earns against a request, and notes stated on a certificate.
"""

from __future__ import annotations

import dataclasses
from typing import Any, overload

from dpcert import _validation as check
from dpcert.certificates import Certificate
from dpcert.mechanisms.gaussian import classical_sigma, gaussian_certificate


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


def earned_gaussian_certificate(
    sigma: float,
    epsilon: float,
    delta: float,
    *,
    notes: tuple[str, ...] = (),
    unmet_note: str = "",
    **labels: Any,
) -> tuple[Certificate, bool]:
    """What Gaussian noise ``sigma`` earns against a requested (ε, δ), and whether it meets it.

    The exact (k-fold) Gaussian profile (Balle & Wang 2018, Thm 8) by
    :func:`dpcert.mechanisms.gaussian.gaussian_certificate`: the certificate claims (ε, δ) when
    δ(ε) <= δ on that profile, else the least ε that holds at δ, with ``unmet_note`` (formatted with
    ``epsilon``, the ε that holds) appended to ``notes``.  ``labels`` are passed on (``sensitivity``,
    ``compositions``, ``basis``, ``trust_model``, ``neighbouring``).
    """
    exact = gaussian_certificate(sigma, delta=delta, notes=notes, **labels)
    if exact.delta_for(epsilon) <= delta:
        return gaussian_certificate(sigma, epsilon=epsilon, delta=delta, notes=notes, **labels), True
    if not unmet_note:
        return exact, False
    note = unmet_note.format(epsilon=exact.epsilon)
    return gaussian_certificate(sigma, delta=delta, notes=(*notes, note), **labels), False


@overload
def with_notes(certificate: Certificate, *notes: str) -> Certificate: ...


@overload
def with_notes(certificate: None, *notes: str) -> None: ...


def with_notes(certificate: Certificate | None, *notes: str) -> Certificate | None:
    """The same certificate (mechanism, parameters, claim) with ``notes`` appended, re-verified.

    The profile already computed is reused (the parameters are unchanged); ``None`` stays ``None``.
    """
    if certificate is None:
        return None
    extended = dataclasses.replace(certificate, notes=(*certificate.notes, *notes))
    extended.__dict__["profile"] = certificate.profile
    return extended.verify()
