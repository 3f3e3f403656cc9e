"""The release-time term of certificates of the fixed-work integer-exact samplers.

The samplers of :mod:`dpcert.mechanisms.secure.samplers` do a fixed amount of work per release except
on an event of probability p <= :func:`~dpcert.mechanisms.secure.samplers.timing_failure`, so the view
(output, release time) is within total variation p of the output followed by a delay that depends on
neither the values nor the input, and is (ε, δ(ε) + (1 + e^ε) p)-DP where the output is (ε, δ(ε))-DP
(Jin, McMurtry, Rubinstein & Ohrimenko 2022 on timing side channels of DP samplers).  The functions
here put that term into a certificate: :func:`with_timing` at a point of the output's profile,
:func:`covering_release_time` for a certificate handed to a mechanism, and :func:`calibrated_with_timing`
for a calibration in whole noise units that takes one more unit when the asked (ε, δ) leaves no room.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from dpcert.certificates import Certificate, Guarantee
from dpcert.errors import InvalidParameter


def timing_delta(epsilon: float, failure: float) -> float:
    """(1 + e^ε)·p rounded up: what release times can add to δ when the fixed-work path is left with
    probability p (a view within total variation p of an (ε, δ)-DP one is (ε, δ + (1 + e^ε) p)-DP)."""
    if failure >= 1.0:
        return 1.0
    return min(1.0, math.nextafter((1.0 + math.exp(epsilon)) * failure * (1.0 + 1e-12), math.inf))


def room(certificate: Certificate, epsilon: float, delta: float, failure: float) -> bool:
    """δ_out(ε) + timing_delta(ε, p) <= δ, in exact rational arithmetic."""
    return Fraction(certificate.delta_for(epsilon)) + Fraction(timing_delta(epsilon, failure)) <= Fraction(
        delta
    )


def timing_note(epsilon: float, failure: float) -> str:
    """The note a certificate carries for the release-time term at ε."""
    return (
        f"release time: fixed work per release except with probability <= {failure:.3g}; delta includes "
        f"(1 + e^epsilon) x that = {timing_delta(epsilon, failure):.3g} for an observer of release times"
    )


def _check_covered(certificate: Certificate, failure: float) -> None:
    if failure >= 1.0:
        raise InvalidParameter(
            "sigma", certificate.parameters.get("sigma"), "a sigma the fixed-work sampler covers"
        )


def with_timing(certificate: Certificate, failure: float, *, keep_delta: bool) -> Certificate:
    """``certificate`` claiming a point that also covers release times: δ_out(ε) + timing_delta <= δ.

    ``keep_delta``: the caller asked for this δ; ε is raised (by ulps) until the output's δ leaves room
    for the timing term, checked in exact rational arithmetic.  Otherwise δ is raised instead.
    """
    _check_covered(certificate, failure)
    epsilon, delta = certificate.epsilon, certificate.delta

    if keep_delta:
        if timing_delta(epsilon, failure) >= delta:
            raise InvalidParameter(
                "delta",
                delta,
                f"delta > {timing_delta(epsilon, failure):.3g} (the release-time term at epsilon)",
            )
        step = math.ulp(epsilon) if epsilon > 0 else 2.0**-1074
        while not room(certificate, epsilon, delta, failure):
            if timing_delta(epsilon + step, failure) >= delta:
                raise InvalidParameter("delta", delta, "a delta with room for the release-time term")
            epsilon += step
            step *= 2.0
    else:
        delta = float(Fraction(certificate.delta_for(epsilon)) + Fraction(timing_delta(epsilon, failure)))
        while not room(certificate, epsilon, delta, failure):
            delta = math.nextafter(delta, math.inf)
    return Certificate(
        certificate.mechanism,
        Guarantee(epsilon, delta),
        certificate.trust_model,
        certificate.neighbouring,
        dict(certificate.parameters),
        certificate.basis,
        certificate.notes + (timing_note(epsilon, failure),),
    ).verify()


def covering_release_time(certificate: Certificate, failure: float) -> Certificate:
    """``certificate`` as the certificate of a mechanism whose releases may be timed.

    Returned unchanged when its point already leaves room for the term and says so; its point (ε, δ)
    kept, with the note added, when it leaves room; otherwise δ is raised by the term at the same ε.
    """
    _check_covered(certificate, failure)
    epsilon, delta = certificate.epsilon, certificate.delta
    if room(certificate, epsilon, delta, failure):
        if timing_note(epsilon, failure) in certificate.notes:
            return certificate
        return with_timing(certificate, failure, keep_delta=True)
    return with_timing(certificate, failure, keep_delta=False)


def calibrated_with_timing(
    certify: Callable[[float], Certificate],
    units: float,
    failure_of: Callable[[float], float],
    *,
    asked: bool,
    keep_delta: bool,
    more: Callable[[float], float] = lambda units: units + 1.0,
) -> tuple[float, Certificate]:
    """(noise units, certificate with the release-time term) starting from ``units`` whole units.

    ``certify(units)`` is the output's certificate and ``failure_of(units)`` the release-time failure
    probability it must cover.  ``asked``: the certificate's (ε, δ) is the caller's target, so the term
    must fit under that δ; when it does not, one more unit of noise (``more(units)``, default ``units +
    1``) is taken (never a weaker claim).
    Otherwise the term is added by :func:`with_timing` (``keep_delta`` as there).
    """
    while True:
        certificate = certify(units)
        failure = failure_of(units)
        _check_covered(certificate, failure)
        if asked:
            if timing_delta(certificate.epsilon, failure) >= certificate.delta:
                raise InvalidParameter(
                    "delta",
                    certificate.delta,
                    f"delta > {timing_delta(certificate.epsilon, failure):.3g} (the release-time term)",
                )
            if not room(certificate, certificate.epsilon, certificate.delta, failure):
                units = more(units)  # no room at (ε, δ) (not seen in practice): more noise
                continue
        return units, with_timing(certificate, failure, keep_delta=keep_delta)
