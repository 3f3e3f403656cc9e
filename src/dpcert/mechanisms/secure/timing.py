"""The release-time term of certificates of the fixed-work integer-exact samplers.

The samplers of :mod:`dpcert.mechanisms.secure.samplers` do a fixed amount of work per release except
on an event of probability p <= :func:`~dpcert.mechanisms.secure.samplers.timing_failure`, so the view
(output, release time) is within total variation p of the output followed by a delay that depends on
neither the values nor the input, and is (ε, δ(ε) + (1 + e^ε) p)-DP where the output is (ε, δ(ε))-DP
(Jin, McMurtry, Rubinstein & Ohrimenko 2022 on timing side channels of DP samplers).  A certificate
records p as its ``"release_time_failure"`` parameter, and its profile then includes the term
(:class:`~dpcert.certificates.ReleaseTimeProfile`; composition adds the terms of its components).  The
functions here put p into a certificate: :func:`with_timing` at a point of the timed profile,
:func:`covering_release_time` for a certificate handed to a mechanism, and :func:`calibrated_with_timing`
for a calibration in whole noise units that takes one more unit when the asked (ε, δ) leaves no room.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dpcert.certificates import RELEASE_TIME_FAILURE, Certificate, Guarantee, timing_delta
from dpcert.errors import InvalidParameter


def timed(certificate: Certificate, failure: float, guarantee: Guarantee | None = None) -> Certificate:
    """``certificate`` (of the output) stating release-time failure probability ``failure``, at its own
    claim or at ``guarantee``; not verified."""
    parameters = dict(certificate.parameters)
    parameters[RELEASE_TIME_FAILURE] = failure
    return Certificate(
        certificate.mechanism,
        certificate.guarantee if guarantee is None else guarantee,
        certificate.trust_model,
        certificate.neighbouring,
        parameters,
        certificate.basis,
        certificate.notes,
    )


def room(certificate: Certificate, epsilon: float, delta: float, failure: float) -> bool:
    """δ_out(ε) + timing_delta(ε, p) <= δ (summed exactly, rounded up) for the output's ``certificate``."""
    return timed(certificate, failure).delta_for(epsilon) <= delta


TIMING_NOTE_PREFIX = "release time: "


def timing_note(epsilon: float, failure: float) -> str:
    """The note a certificate carries for the release-time term at ε."""
    return (
        f"{TIMING_NOTE_PREFIX}fixed work per release except with probability <= {failure:.3g}; "
        f"delta includes (1 + e^epsilon) x that = {timing_delta(epsilon, failure):.3g} for an observer "
        "of release times"
    )


def _no_room(epsilon: float, delta: float, failure: float) -> None:
    """Refuse a point whose δ cannot hold the release-time term (1 + e^ε) p, naming ε when the term
    is only that large because ε is (it is below δ at ε = 0), else δ."""
    if timing_delta(0.0, failure) < delta:
        raise InvalidParameter(
            "epsilon",
            epsilon,
            f"an epsilon at which the release-time term (1 + e^epsilon) x {failure:.3g} stays below "
            f"delta = {delta:.3g}",
        )
    raise InvalidParameter(
        "delta", delta, f"delta > {timing_delta(epsilon, failure):.3g} (the release-time term at epsilon)"
    )


def _check_covered(certificate: Certificate, failure: float) -> None:
    if failure >= 1.0:
        raise InvalidParameter(
            "sigma", certificate.parameters.get("sigma"), "a sigma the fixed-work sampler covers"
        )


def with_timing(certificate: Certificate, failure: float, *, keep_delta: bool) -> Certificate:
    """The output's ``certificate`` stating release-time failure probability ``failure``, at a point
    whose δ covers the output and the release times (:class:`~dpcert.certificates.ReleaseTimeProfile`).

    ``keep_delta``: the caller asked for this δ; ε is the least where the timed profile is within it.
    Otherwise ε is kept and δ is the timed profile's there.
    """
    _check_covered(certificate, failure)
    epsilon, delta = certificate.epsilon, certificate.delta
    draft = timed(certificate, failure)
    if keep_delta:
        if timing_delta(epsilon, failure) >= delta:
            _no_room(epsilon, delta, failure)
        if not draft.delta_for(epsilon) <= delta:
            epsilon = draft.epsilon_for(delta)
            if not math.isfinite(epsilon):
                raise InvalidParameter("delta", delta, "a delta with room for the release-time term")
    else:
        delta = draft.delta_for(epsilon)
        if not delta < 1.0:  # (1 + e^epsilon) x failure: no claim is left at this epsilon
            raise InvalidParameter(
                "epsilon",
                epsilon,
                f"an epsilon at which the release-time term (1 + e^epsilon) x {failure:.3g} stays below 1",
                hint="less noise than the fixed-work sampler's timing leaves room for",
            )
    result = timed(certificate, failure, Guarantee(epsilon, delta))
    return Certificate(
        result.mechanism,
        result.guarantee,
        result.trust_model,
        result.neighbouring,
        dict(result.parameters),
        result.basis,
        result.notes + (timing_note(epsilon, failure),),
    ).verify()


def covering_release_time(certificate: Certificate, failure: float) -> Certificate:
    """``certificate`` as the certificate of a mechanism whose releases may be timed.

    Returned unchanged when it already states at least ``failure``; its point (ε, δ) kept when that
    leaves room for the term; otherwise δ is raised by the term at the same ε.  A certificate stating a
    smaller failure is restated from its output (which its claim also covers).
    """
    _check_covered(certificate, failure)
    if certificate.release_time_failure >= failure:
        return certificate
    if certificate.release_time_failure > 0.0:
        parameters = dict(certificate.parameters)
        del parameters[RELEASE_TIME_FAILURE]
        certificate = Certificate(
            certificate.mechanism,
            certificate.guarantee,
            certificate.trust_model,
            certificate.neighbouring,
            parameters,
            certificate.basis,
            tuple(n for n in certificate.notes if not n.startswith(TIMING_NOTE_PREFIX)),
        ).verify()
    epsilon, delta = certificate.epsilon, certificate.delta
    return with_timing(certificate, failure, keep_delta=room(certificate, epsilon, delta, failure))


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
                _no_room(certificate.epsilon, certificate.delta, failure)
            if not room(certificate, certificate.epsilon, certificate.delta, failure):
                units = more(units)  # no room at (ε, δ) (not seen in practice): more noise
                continue
        return units, with_timing(certificate, failure, keep_delta=keep_delta)
