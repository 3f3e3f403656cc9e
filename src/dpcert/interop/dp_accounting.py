"""Certificates of ``dp_accounting`` events, read with the meaning dp_accounting documents.

:func:`certificate_from_dp_event` maps a ``dp_accounting.dp_event.DpEvent`` to a re-verifiable
certificate, so a mechanism described for dp_accounting can be charged to a :class:`~dpcert.Ledger`
and audited like dpcert's own.  Each event is read with the meaning dp_accounting 0.6 documents for
it (``dp_event.py``), under the neighbouring relation asked for: ``GaussianDpEvent(s)`` releases
``Σ v_i + N(0, s²C²)`` for values of norm ``‖v_i‖ <= C``, so removing or adding a record moves the
sum by ``C`` and *replacing* one moves it by ``2C`` (dp_accounting's PLD accountant uses sensitivity
``2C`` under ``REPLACE_ONE``; its RDP accountant does not, and is not followed).  The same holds for
Laplace and discrete Laplace sums.  A relation under which dp_accounting does not account the event
(randomized response, batches sampled without replacement and tree aggregation under add/remove; the
tree is accounted only under zero-out, and its replace-one reading follows from its documentation),
or for which dpcert has no certificate of it (Poisson sampling under replace-one), is refused naming
the relation:

======================================  ======================  ==========================================
event                                   ``add/remove``          ``replace-one`` (the default)
======================================  ======================  ==========================================
``GaussianDpEvent(s)``                  Gaussian, Δ = 1, σ = s  Gaussian, Δ = 2, σ = s (Balle & Wang 2018)
``LaplaceDpEvent(s)``                   Laplace, Δ = 1, b = s   Laplace, Δ = 2, b = s
``DiscreteLaplaceDpEvent(a, C)``        DLap(a), Δ = C          DLap(a), Δ = 2C (Canonne et al. 2020)
``RandomizedResponseDpEvent(p, k)``     refused                 k-ary randomized response (exact)
``PoissonSampledDpEvent(q, Gauss(s))``  DP-SGD steps, Δ = 1     refused
``SampledWithoutReplacementDpEvent``    refused                 fixed-size batches, Δ = 2 (the batch
(``n``, ``m``, ``Gaussian(s)``)                                 sum's replace-one sensitivity; WBK 2019)
``SingleEpochTreeAggregationDpEvent``   refused                 one Gaussian of sensitivity 2 sqrt(h)
``SelfComposedDpEvent(e, n)``           ``n`` runs of ``e``     ``n`` runs of ``e`` (``compose``)
``ComposedDpEvent([e1, …])``            the composition         the composition
``NoOpDpEvent()``                       (0, 0), reason stated   (0, 0), reason stated
======================================  ======================  ==========================================

dp_accounting's RDP accountant reads the Gaussian inside ``SampledWithoutReplacementDpEvent`` with
the batch query's *replace-one* sensitivity as unit (Wang, Balle & Kasiviswanathan 2019, Thm 27),
while ``GaussianDpEvent`` documents ``C`` as a bound on each value's norm: replacing a record of the
batch moves the sum by ``2C``, so dpcert certifies Δ = 2 (the accountant's ε for noise multiplier
``s/2``).  For a batch query whose replace-one sensitivity really is ``C``, certify it directly with
:func:`~dpcert.mechanisms.sampled_without_replacement.sampled_without_replacement_certificate`.

:meth:`Certificate.to_dp_event` goes the other way with another convention: it describes the
certificate's dominating pair (``GaussianDpEvent(σ/Δ)`` is ``N(0, σ²)`` against ``N(Δ, σ²)``), which is
dp_accounting's ``add/remove`` reading of the event; read it back with ``neighbouring="add/remove"``.

``NonPrivateDpEvent`` and ``UnsupportedDpEvent`` are refused (no finite guarantee exists), and so are
the other sampled events (with replacement, or of mechanisms other than the Gaussian) and mixtures.
"""

from __future__ import annotations

from typing import Any

from dpcert import _validation as check
from dpcert.accounting.composition import compose, compose_counts
from dpcert.certificates import Certificate, Neighbouring, TrustModel, approximate_dp_certificate
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.discrete_laplace import discrete_laplace_certificate
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate
from dpcert.mechanisms.randomized_response import randomized_response_certificate
from dpcert.mechanisms.sampled_without_replacement import sampled_without_replacement_certificate
from dpcert.mechanisms.subsampled_gaussian import poisson_sampled_gaussian_certificate
from dpcert.mechanisms.tree_aggregation import tree_aggregation_certificate


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
        A ``dp_accounting.dp_event.DpEvent``, read with dp_accounting's documented meaning under
        ``neighbouring`` (see the module docstring: a Gaussian, Laplace or discrete Laplace event's
        sensitivity doubles under ``replace-one``).
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
    labels: dict[str, Any] = {"neighbouring": neighbouring, "trust_model": trust_model}
    # dp_accounting's values have norm at most C: a replaced record moves their sum by 2C
    shift = 2 if neighbouring is Neighbouring.REPLACE_ONE else 1

    if isinstance(event, dp_event.GaussianDpEvent):
        if delta is None or delta == 0.0:
            raise InvalidParameter("delta", delta, "0 < delta < 1 for a Gaussian event")
        sigma = check.positive_finite("noise_multiplier", event.noise_multiplier)
        return gaussian_certificate(sigma, sensitivity=float(shift), delta=delta, **labels)
    if isinstance(event, dp_event.LaplaceDpEvent):
        scale = check.positive_finite("noise_multiplier", event.noise_multiplier)
        return laplace_certificate(scale, sensitivity=float(shift), delta=delta or 0.0, **labels)
    if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        sensitivity = check.positive_int("sensitivity", event.sensitivity)
        return discrete_laplace_certificate(
            event.noise_parameter, sensitivity=shift * sensitivity, delta=delta or 0.0, **labels
        )
    if isinstance(event, dp_event.RandomizedResponseDpEvent):
        if neighbouring is not Neighbouring.REPLACE_ONE:
            raise InvalidParameter(
                "neighbouring",
                neighbouring.value,
                "replace-one for a randomized response event (its input bucket is replaced by another; "
                "dp_accounting defines no add/remove accounting of it)",
            )
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
    sampled = _poisson_sampled_gaussian(event)
    if sampled is not None:
        _require_relation_and_delta(
            neighbouring,
            Neighbouring.ADD_REMOVE,
            "add/remove for a Poisson-subsampled event (dpcert certifies Poisson subsampling under "
            "add/remove only)",
            delta,
            "a subsampled Gaussian event",
        )
        q, sigma, steps = sampled
        return poisson_sampled_gaussian_certificate(sigma, q, steps, delta=delta, trust_model=trust_model)
    without_replacement = _sampled_without_replacement_gaussian(event)
    if without_replacement is not None:
        _require_relation_and_delta(
            neighbouring,
            Neighbouring.REPLACE_ONE,
            "replace-one (sampling a fixed-size batch without replacement is accounted with the "
            "dataset size public)",
            delta,
            "a subsampled Gaussian event",
        )
        n, m, sigma, steps = without_replacement
        return sampled_without_replacement_certificate(
            sigma, m, n, steps, sensitivity=2.0, delta=delta, trust_model=trust_model
        )
    tree = _tree_aggregation(event)
    if tree is not None:
        _require_relation_and_delta(
            neighbouring,
            Neighbouring.REPLACE_ONE,
            "replace-one (a tree aggregation's steps are fixed positions: a record is replaced, "
            "not added or removed)",
            delta,
            "a tree aggregation event",
        )
        sigma, counts, epochs = tree
        return tree_aggregation_certificate(
            sigma, counts, epochs=epochs, delta=delta, trust_model=trust_model
        )
    if isinstance(event, dp_event.SelfComposedDpEvent):
        count = check.positive_int("count", event.count)
        inner = _component(event.event, delta, count, labels)
        return compose_counts([(inner, count)], delta=delta)
    if isinstance(event, dp_event.ComposedDpEvent):
        if not event.events:
            raise InvalidParameter("event", "ComposedDpEvent([])", "a composition of at least one event")
        parts = [_component(e, delta, len(event.events), labels) for e in event.events]
        return compose(parts, delta=delta)
    raise InvalidParameter(
        "event",
        type(event).__name__,
        "a Gaussian, Laplace, discrete Laplace, randomized response, no-op, Gaussian subsampled (Poisson or "
        "without replacement), tree aggregation, self-composed or composed dp_accounting event (no proven "
        "certificate is available for this one)",
    )


def _component(event: Any, delta: float | None, count: int, labels: dict[str, Any]) -> Certificate:
    """A part of a composition, claiming a small share of δ (the composition re-points along profiles)."""
    try:
        return certificate_from_dp_event(event, delta=0.0, **labels)
    except InvalidParameter as refusal:
        if refusal.name != "delta":
            raise
        if delta is None or delta == 0.0:
            raise InvalidParameter(
                "delta", delta, "0 < delta < 1 for a composition with approximate-DP parts"
            ) from None
        return certificate_from_dp_event(event, delta=delta / (2 * count), **labels)


def _unwrap_self_composed(event: Any) -> tuple[Any, int]:
    """The innermost event of nested ``SelfComposedDpEvent`` wrappers and their product of counts."""
    from dp_accounting import dp_event

    count = 1
    while isinstance(event, dp_event.SelfComposedDpEvent):
        count *= check.positive_int("count", event.count)
        event = event.event
    return event, count


def _sampled_without_replacement_gaussian(event: Any) -> tuple[int, int, float, int] | None:
    """(n, m, σ, steps) of ``SampledWithoutReplacement(n, m, Gaussian(σ))`` or its self-composition."""
    from dp_accounting import dp_event

    event, steps = _unwrap_self_composed(event)
    if isinstance(event, dp_event.SampledWithoutReplacementDpEvent) and isinstance(
        event.event, dp_event.GaussianDpEvent
    ):
        return (
            check.positive_int("source_dataset_size", event.source_dataset_size),
            check.positive_int("sample_size", event.sample_size),
            check.positive_finite("noise_multiplier", event.event.noise_multiplier),
            steps,
        )
    return None


def _tree_aggregation(event: Any) -> tuple[float, list[int], int] | None:
    """(σ, step counts, epochs) of ``SingleEpochTreeAggregation(σ, counts)`` or its self-composition."""
    from dp_accounting import dp_event

    event, epochs = _unwrap_self_composed(event)
    if isinstance(event, dp_event.SingleEpochTreeAggregationDpEvent):
        counts = event.step_counts
        counts = [counts] if isinstance(counts, int) else list(counts)
        return check.positive_finite("noise_multiplier", event.noise_multiplier), counts, epochs
    return None


def _require_relation_and_delta(
    neighbouring: Neighbouring, required: Neighbouring, allowed: str, delta: float | None, event: str
) -> None:
    """Refuse a subsampled or tree event under another relation than the one its accounting assumes,
    or without a positive δ at which to state it."""
    if neighbouring is not required:
        raise InvalidParameter("neighbouring", neighbouring.value, allowed)
    if delta is None or delta == 0.0:
        raise InvalidParameter("delta", delta, f"0 < delta < 1 for {event}")


def _poisson_sampled_gaussian(event: Any) -> tuple[float, float, int] | None:
    """(q, σ, steps) of ``PoissonSampled(q, Gaussian(σ))`` or its self-composition, else ``None``."""
    from dp_accounting import dp_event

    event, steps = _unwrap_self_composed(event)
    if isinstance(event, dp_event.PoissonSampledDpEvent) and isinstance(
        event.event, dp_event.GaussianDpEvent
    ):
        return float(event.sampling_probability), float(event.event.noise_multiplier), steps
    return None
