"""Certificates for other libraries' mechanisms: ``dp_accounting`` events in, dpcert certificates out.

:func:`certificate_from_dp_event` maps a ``dp_accounting.dp_event.DpEvent`` to a re-verifiable
certificate, so a mechanism described for dp_accounting can be charged to a :class:`~dpcert.Ledger`
and audited like dpcert's own.  Each event gets the exact closed-form profile where one exists:

======================================  =========================================================
``GaussianDpEvent(σ)``                  Gaussian, ℓ2 sensitivity 1 (Balle & Wang 2018, Thm 8)
``LaplaceDpEvent(b)``                   Laplace, ℓ1 sensitivity 1 (exact profile)
``DiscreteLaplaceDpEvent(a, Δ)``        discrete Laplace (Canonne, Kamath & Steinke 2020)
``RandomizedResponseDpEvent(p, k)``     k-ary randomized response (exact profile)
``SelfComposedDpEvent(e, n)``           ``n`` adaptive runs of ``e``, composed (``compose``, ``best``)
``ComposedDpEvent([e1, …])``            the adaptive composition of the events
``NoOpDpEvent()``                       nothing data-dependent: (0, 0) with its reason stated
======================================  =========================================================

``NonPrivateDpEvent`` and ``UnsupportedDpEvent`` are refused (no finite guarantee exists), and so are
sampled events (Poisson, with or without replacement), tree aggregation and mixtures, whose
profiles would need a privacy loss distribution with a proven error bound.
"""

from __future__ import annotations

from typing import Any

from dpcert import _validation as check
from dpcert.certificates import Certificate, Neighbouring, TrustModel, approximate_dp_certificate
from dpcert.errors import InvalidParameter


def certificate_from_dp_event(
    event: Any,
    *,
    delta: float | None = None,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
) -> Certificate:
    """The certificate of a ``dp_accounting`` event at the point ``delta`` of its profile.

    Parameters
    ----------
    event
        A ``dp_accounting.dp_event.DpEvent``.
    delta
        The δ of the claimed point; required unless the event is pure DP (then it defaults to 0).
    neighbouring, trust_model
        The relation and the trust model of the claim (dp_accounting events do not carry them).
    """
    from dp_accounting import dp_event

    if delta is not None:
        delta = check.delta(delta)
    neighbouring = Neighbouring(neighbouring)
    trust_model = TrustModel(trust_model)
    if neighbouring is Neighbouring.USER_LEVEL:
        raise InvalidParameter(
            "neighbouring",
            neighbouring.value,
            "an event-level relation (compose a user's events for user-level)",
        )
    labels = {"neighbouring": neighbouring, "trust_model": trust_model}

    if isinstance(event, dp_event.GaussianDpEvent):
        from dpcert.mechanisms.gaussian import gaussian_certificate

        if delta is None or delta == 0.0:
            raise InvalidParameter("delta", delta, "0 < delta < 1 for a Gaussian event")
        return gaussian_certificate(
            check.positive_finite("noise_multiplier", event.noise_multiplier), delta=delta, **labels
        )
    if isinstance(event, dp_event.LaplaceDpEvent):
        from dpcert.mechanisms.laplace import laplace_certificate

        return laplace_certificate(
            check.positive_finite("noise_multiplier", event.noise_multiplier), delta=delta or 0.0, **labels
        )
    if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        from dpcert.mechanisms.discrete_laplace import discrete_laplace_certificate

        return discrete_laplace_certificate(
            event.noise_parameter, sensitivity=event.sensitivity, delta=delta or 0.0, **labels
        )
    if isinstance(event, dp_event.RandomizedResponseDpEvent):
        from dpcert.mechanisms.randomized_response import randomized_response_certificate

        return randomized_response_certificate(
            event.noise_parameter, event.num_buckets, delta=delta or 0.0, **labels
        )
    if isinstance(event, dp_event.NoOpDpEvent):
        return approximate_dp_certificate(
            0.0,
            0.0,
            mechanism_name="dp_accounting NoOpDpEvent",
            zero_loss_reason="NoOpDpEvent: the operation releases nothing that depends on the data",
            **labels,
        )
    if isinstance(event, dp_event.SelfComposedDpEvent):
        from dpcert.accounting.composition import compose_counts

        count = check.positive_int("count", event.count)
        inner = _component(event.event, delta, count, labels)
        return compose_counts([(inner, count)], delta=delta)
    if isinstance(event, dp_event.ComposedDpEvent):
        from dpcert.accounting.composition import compose

        if not event.events:
            raise InvalidParameter("event", "ComposedDpEvent([])", "a composition of at least one event")
        parts = [_component(e, delta, len(event.events), labels) for e in event.events]
        return compose(parts, delta=delta)
    raise InvalidParameter(
        "event",
        type(event).__name__,
        "a Gaussian, Laplace, discrete Laplace, randomized response, no-op, self-composed or composed "
        "dp_accounting event (no proven certificate is available for this one)",
    )


def _component(event: Any, delta: float | None, count: int, labels: dict[str, Any]) -> Certificate:
    """A part of a composition, claiming a small share of δ (the composition re-points along profiles)."""
    try:
        return certificate_from_dp_event(event, delta=0.0, **labels)
    except InvalidParameter:
        if delta is None or delta == 0.0:
            raise InvalidParameter(
                "delta", delta, "0 < delta < 1 for a composition with approximate-DP parts"
            ) from None
        return certificate_from_dp_event(event, delta=delta / (2 * count), **labels)
