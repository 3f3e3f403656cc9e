"""Certificates for other libraries' mechanisms: ``dp_accounting`` events, Opacus histories and OpenDP
measurements in.

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

:func:`certificate_from_opacus_history` composes an Opacus accountant's ``history`` of
``(noise_multiplier, sample_rate, steps)`` entries: Poisson-subsampled Gaussian steps under
add/remove, noise ``noise_multiplier × max_grad_norm`` for gradients clipped to ``max_grad_norm``.

:func:`certificate_from_opendp` reads an OpenDP measurement through its privacy map at ``d_in``:
pure DP (``MaxDivergence``) and ``Approximate(MaxDivergence)`` become declared (ε, δ) certificates,
zCDP (``ZeroConcentratedDivergence``) a ``zcdp`` certificate whose profile dpcert re-derives from ρ,
and a ``SmoothedMaxDivergence`` profile is read at the requested δ (declared).  A declared certificate
is only as good as the library's privacy map; it is re-verifiable as the (ε, δ) it states.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
from dpcert.theory.zcdp import ZCDP_BASIS, zcdp_certificate


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


def certificate_from_opacus_history(
    history: Iterable[Any], *, delta: float, trust_model: TrustModel | str = TrustModel.CENTRAL
) -> Certificate:
    """One certificate of the DP-SGD run an Opacus accountant recorded.

    Parameters
    ----------
    history
        Opacus 1.x ``RDPAccountant.history`` / ``PRVAccountant.history``: ``(noise_multiplier,
        sample_rate, steps)`` entries, each ``steps`` Poisson-subsampled Gaussian steps with sampling
        probability ``sample_rate`` and noise ``noise_multiplier × max_grad_norm`` on gradients
        clipped to ``max_grad_norm`` (sensitivity ``max_grad_norm``, add/remove: Opacus's meaning).
    delta
        The δ of the claimed point (``0 < delta < 1``).
    trust_model
        The trust model of the claim (central for DP-SGD on a trusted server).

    Entries with the same noise multiplier and sample rate are merged (their steps added); each
    distinct one is :func:`~dpcert.mechanisms.subsampled_gaussian.poisson_sampled_gaussian_certificate`
    and several are composed by :func:`~dpcert.accounting.composition.compose`.  No torch or Opacus
    import is needed.
    """
    delta = check.positive_delta(delta)
    trust_model = TrustModel(trust_model)
    if isinstance(history, (str, bytes)) or not isinstance(history, Iterable):
        raise InvalidParameter(
            "history", type(history).__name__, "a list of (noise_multiplier, sample_rate, steps)"
        )
    steps_of: dict[tuple[float, float], int] = {}
    for index, entry in enumerate(history):
        name = f"history[{index}]"
        try:
            if isinstance(entry, (str, bytes, Mapping)) or len(entry) != 3:
                raise TypeError
            values = (entry[0], entry[1], entry[2])
        except (TypeError, IndexError, KeyError):
            raise InvalidParameter(name, entry, "a (noise_multiplier, sample_rate, steps) triple") from None
        sigma = check.positive_finite(f"{name}.noise_multiplier", values[0])
        rate = check.probability(f"{name}.sample_rate", values[1], open_low=True)
        steps = check.positive_int(f"{name}.steps", values[2])
        steps_of[(sigma, rate)] = steps_of.get((sigma, rate), 0) + steps
    if not steps_of:
        raise InvalidParameter("history", [], "at least one (noise_multiplier, sample_rate, steps) entry")
    if len(steps_of) == 1:
        (((sigma, rate), steps),) = steps_of.items()
        return poisson_sampled_gaussian_certificate(sigma, rate, steps, delta=delta, trust_model=trust_model)
    share = delta / (2 * len(steps_of))
    parts = [
        poisson_sampled_gaussian_certificate(sigma, rate, steps, delta=share, trust_model=trust_model)
        for (sigma, rate), steps in steps_of.items()
    ]
    return compose(parts, delta=delta)


def certificate_from_opendp(
    measurement: Any,
    d_in: Any,
    *,
    delta: float | None = None,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
) -> Certificate:
    """The certificate of an OpenDP ``measurement`` for inputs at distance ``d_in`` (its privacy map).

    ``delta`` is required for zCDP and smoothed-max-divergence measures (the point of the profile to
    claim).  The measurement's own description is kept in the certificate's ``name``.
    """
    if delta is not None:
        delta = check.delta(delta)
    measure = str(getattr(measurement, "output_measure", ""))
    if not measure or not callable(getattr(measurement, "map", None)):
        raise InvalidParameter("measurement", type(measurement).__name__, "an OpenDP Measurement")
    try:
        distance = measurement.map(d_in)
    except Exception as exc:  # OpenDP raises its own exception type for an invalid d_in
        raise InvalidParameter(
            "d_in", d_in, f"an input distance the measurement's privacy map accepts ({exc})"
        ) from exc
    metric = getattr(measurement, "input_metric", "?")
    name = f"OpenDP measurement ({measure}, input metric {metric}, d_in={d_in!r})"
    labels = {"neighbouring": Neighbouring(neighbouring), "trust_model": TrustModel(trust_model)}
    basis = f"OpenDP privacy map at d_in={d_in!r} ({measure})"
    if measure == "MaxDivergence":
        return approximate_dp_certificate(float(distance), 0.0, mechanism_name=name, basis=basis, **labels)
    if measure.startswith("Approximate(MaxDivergence"):
        epsilon, declared_delta = distance
        return approximate_dp_certificate(
            float(epsilon), float(declared_delta), mechanism_name=name, basis=basis, **labels
        )
    if measure == "ZeroConcentratedDivergence":
        if delta is None:
            raise InvalidParameter("delta", delta, "0 <= delta < 1: the point of the zCDP profile to claim")
        return zcdp_certificate(
            float(distance), delta=delta, name=name, basis=f"{basis}; {ZCDP_BASIS}", **labels
        )
    if measure == "SmoothedMaxDivergence":
        if delta is None or delta == 0.0:
            raise InvalidParameter("delta", delta, "0 < delta < 1: the point of the privacy profile to claim")
        epsilon = float(distance.epsilon(delta))
        return approximate_dp_certificate(epsilon, delta, mechanism_name=name, basis=basis, **labels)
    raise InvalidParameter(
        "measurement",
        measure,
        "an OpenDP measurement with a pure, approximate, smoothed or zCDP output measure",
    )


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
