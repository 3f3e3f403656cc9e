"""The privacy profile of a ``dp_accounting`` event by Rényi DP, under a stated neighbouring relation.

``dp_accounting.rdp.RdpAccountant`` computes an upper bound on the Rényi divergence of the event at
a grid of orders (Mironov 2017) and converts it to (ε, δ) by the conversion of Canonne, Kamath &
Steinke (2020, Prop. 12) / Asoodeh et al. (2021), which is an upper bound on δ(ε) at every ε.  This
module wraps the accountant as a :class:`~dpcert.certificates.PrivacyProfile` whose ``epsilon_for``
is nudged upward until ``delta_for`` confirms it, so a returned ε is never on the optimistic side of
the accountant's own δ(ε).

It is dpcert's one RDP path: the profile of events that dp_accounting supports only through RDP
(sampling without replacement, :mod:`dpcert.mechanisms.sampled_without_replacement`), the ``"rdp"``
method of :func:`dpcert.accounting.composition.compose` (built for the components' common relation),
and the "RDP conversion" comparison curve of :func:`dpcert.viz.plots.plot_profile`.

The events it is given are those of dpcert's profiles (``PrivacyProfile.dp_event``), which describe
a mechanism's *dominating pair*: ``GaussianDpEvent(s)`` is ``N(0, s²)`` against ``N(1, s²)``,
``LaplaceDpEvent(b)`` is a shift of 1 under Laplace noise of scale ``b``, the inner Gaussian of
``SampledWithoutReplacementDpEvent`` has the batch query's replace-one sensitivity as its unit
(Wang, Balle & Kasiviswanathan 2019, Thm 27).  That is how dp_accounting's RDP accountant computes
these events under either relation (its Gaussian and Laplace RDP do not depend on the relation), so
the accountant's result is the profile of the pair.  Events written by users with dp_accounting's
documented meaning (a sum of values of norm at most ``C``: a shift of ``2C`` when one is replaced)
are translated by :func:`dpcert.interop.dp_accounting.certificate_from_dp_event`, never passed here as
they are.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from dpcert._numerics import nudge_up_until_valid
from dpcert.errors import InvalidParameter

ADD_REMOVE = "add/remove"
REPLACE_ONE = "replace-one"

RDP_BASIS = (
    "Renyi DP (Mironov 2017) converted to (epsilon, delta) by dp_accounting (Canonne, Kamath & Steinke 2020)"
)


def _relation_value(neighbouring: str) -> str:
    """The plain value of a relation (a ``Neighbouring`` member is a ``str`` enum)."""
    return str(getattr(neighbouring, "value", neighbouring))


def accountant_relation(neighbouring: str) -> Any:
    """dp_accounting's ``NeighboringRelation`` for a dpcert relation value, or ``None`` (any other).

    ``neighbouring`` is the relation's value (``"add/remove"``, ``"replace-one"``, ...) or the
    ``Neighbouring`` member itself.
    """
    from dp_accounting.privacy_accountant import NeighboringRelation

    relation = _relation_value(neighbouring)
    if relation == ADD_REMOVE:
        return NeighboringRelation.ADD_OR_REMOVE_ONE
    if relation == REPLACE_ONE:
        return NeighboringRelation.REPLACE_ONE
    return None


class RdpEventProfile:
    """δ(ε) and ε(δ) of a ``dp_accounting`` event from its RDP curve (an upper bound).

    Parameters
    ----------
    event
        A ``dp_accounting.dp_event.DpEvent`` (compositions included).
    neighbouring
        The relation the event's parameters refer to (``add/remove`` or ``replace-one``).

    The curve is the one dp_accounting's ``RdpAccountant`` (default orders) composes: RDP adds up
    over compositions (Mironov 2017, Prop. 1), so the event is flattened into its distinct
    mechanisms with their counts, each mechanism's RDP vector is computed by the accountant once
    (and remembered), and the vectors are added with their counts in a fixed order.

    Raises
    ------
    ValueError
        (:class:`~dpcert.errors.InvalidParameter`) if the accountant does not support the event
        under that relation; :func:`rdp_supports` asks first.
    """

    def __init__(self, event: Any, neighbouring: str) -> None:
        relation = _relation_value(neighbouring)
        if accountant_relation(relation) is None:
            raise InvalidParameter("neighbouring", relation, "add/remove or replace-one for RDP")
        if not rdp_supports(event, relation):
            raise InvalidParameter(
                "event",
                type(event).__name__,
                f"an event dp_accounting's RDP accountant supports under {relation}",
            )
        total: np.ndarray | None = None
        for leaf, count in _leaves(event):
            curve = count * _leaf_curve(leaf, relation)
            total = curve if total is None else total + curve
        orders = np.array(_leaf_orders())
        self.orders = orders
        self.rdp = np.zeros_like(orders) if total is None else total
        self.event = event

    def delta_for(self, epsilon: float) -> float:
        from dp_accounting.rdp import rdp_privacy_accountant

        delta = float(rdp_privacy_accountant.compute_delta(self.orders, self.rdp, epsilon)[0])
        return min(1.0, max(0.0, delta))

    def epsilon_for(self, delta: float) -> float:
        from dp_accounting.rdp import rdp_privacy_accountant

        if delta <= 0.0:
            return math.inf
        candidate = float(rdp_privacy_accountant.compute_epsilon(self.orders, self.rdp, delta)[0])
        if not math.isfinite(candidate):
            return math.inf
        candidate = max(0.0, candidate)
        ceiling = max(1.0, 2.0 * candidate) + 1.0
        if self.delta_for(ceiling) > delta:
            return candidate if self.delta_for(candidate) <= delta else math.inf
        return nudge_up_until_valid(lambda e: self.delta_for(e) - delta, candidate, ceiling)

    def dp_event(self) -> Any:
        return self.event


def _leaves(event: Any) -> list[tuple[Any, int]]:
    """The mechanisms of nested ``SelfComposedDpEvent`` / ``ComposedDpEvent`` with their counts, in order."""
    from dp_accounting import dp_event

    result: list[tuple[Any, int]] = []
    pending: list[tuple[Any, int]] = [(event, 1)]
    while pending:
        current, count = pending.pop()
        if isinstance(current, dp_event.SelfComposedDpEvent):
            pending.append((current.event, count * int(current.count)))
        elif isinstance(current, dp_event.ComposedDpEvent):
            pending.extend((inner, count) for inner in reversed(current.events))
        else:
            result.append((current, count))
    return result


def _leaf_orders() -> tuple[float, ...]:
    from dp_accounting.rdp import rdp_privacy_accountant

    return tuple(float(order) for order in rdp_privacy_accountant.DEFAULT_RDP_ORDERS)


def _leaf_curve(event: Any, relation: str) -> np.ndarray:
    """The accountant's RDP vector of one run of ``event`` (remembered for hashable events)."""
    try:
        return np.array(_cached_leaf_curve(event, relation))
    except TypeError:  # an event holding a list (e.g. tree step counts) is not hashable
        return np.array(_compute_leaf_curve(event, relation))


@lru_cache(maxsize=1024)
def _cached_leaf_curve(event: Any, relation: str) -> tuple[float, ...]:
    return _compute_leaf_curve(event, relation)


def _compute_leaf_curve(event: Any, relation: str) -> tuple[float, ...]:
    from dp_accounting.rdp import rdp_privacy_accountant

    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=accountant_relation(relation))
    accountant.compose(event)
    return tuple(float(value) for value in accountant.rdp)


def rdp_supports(event: Any, neighbouring: str) -> bool:
    """True if dp_accounting's RDP accountant supports ``event`` under ``neighbouring``."""
    from dp_accounting.rdp import rdp_privacy_accountant

    relation = accountant_relation(neighbouring)
    if event is None or relation is None:
        return False
    return bool(rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation).supports(event))


def rdp_profile_of(certificate: Any) -> RdpEventProfile | None:
    """The RDP-conversion profile of a certificate's dp_accounting event, or ``None`` if unsupported."""
    event = certificate.to_dp_event()
    if not rdp_supports(event, certificate.neighbouring):
        return None
    return RdpEventProfile(event, certificate.neighbouring)
