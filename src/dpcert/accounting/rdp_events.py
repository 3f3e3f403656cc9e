"""The privacy profile of a ``dp_accounting`` event by Rényi DP, under a stated neighbouring relation.

``dp_accounting.rdp.RdpAccountant`` computes an upper bound on the Rényi divergence of the event at
a grid of orders (Mironov 2017) and converts it to (ε, δ) by the conversion of Canonne, Kamath &
Steinke (2020, Prop. 12) / Asoodeh et al. (2021), which is an upper bound on δ(ε) at every ε.  This
module wraps the accountant as a :class:`~dpcert.certificates.PrivacyProfile` whose ``epsilon_for``
is nudged upward until ``delta_for`` confirms it, so a returned ε is never on the optimistic side of
the accountant's own δ(ε).

It serves two purposes: the profile of events that dp_accounting supports only through RDP
(sampling without replacement, :mod:`dpcert.accounting.sampled_without_replacement`), and the
"RDP conversion" comparison curve of :func:`dpcert.plots.plot_profile`.
"""

from __future__ import annotations

import math
from typing import Any

from dpcert._numerics import nudge_up_until_valid
from dpcert.certificates import Neighbouring

RDP_BASIS = (
    "Renyi DP (Mironov 2017) converted to (epsilon, delta) by dp_accounting (Canonne, Kamath & Steinke 2020)"
)


def accountant_relation(neighbouring: Neighbouring | str) -> Any:
    """dp_accounting's ``NeighboringRelation`` for a dpcert relation, or ``None`` (user-level)."""
    from dp_accounting.privacy_accountant import NeighboringRelation

    relation = Neighbouring(neighbouring)
    if relation is Neighbouring.ADD_REMOVE:
        return NeighboringRelation.ADD_OR_REMOVE_ONE
    if relation is Neighbouring.REPLACE_ONE:
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

    Raises
    ------
    ValueError
        (:class:`~dpcert.errors.InvalidParameter`) if the accountant does not support the event
        under that relation; :func:`rdp_supports` asks first.
    """

    def __init__(self, event: Any, neighbouring: Neighbouring | str) -> None:
        from dp_accounting.rdp import rdp_privacy_accountant

        from dpcert.errors import InvalidParameter

        relation = accountant_relation(neighbouring)
        if relation is None:
            raise InvalidParameter(
                "neighbouring", Neighbouring(neighbouring).value, "add/remove or replace-one for RDP"
            )
        self.accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation)
        if not self.accountant.supports(event):
            raise InvalidParameter(
                "event",
                type(event).__name__,
                f"an event dp_accounting's RDP accountant supports under {Neighbouring(neighbouring).value}",
            )
        self.accountant.compose(event)
        self.event = event

    def delta_for(self, epsilon: float) -> float:
        return min(1.0, max(0.0, float(self.accountant.get_delta(epsilon))))

    def epsilon_for(self, delta: float) -> float:
        if delta <= 0.0:
            return math.inf
        candidate = float(self.accountant.get_epsilon(delta))
        if not math.isfinite(candidate):
            return math.inf
        candidate = max(0.0, candidate)
        ceiling = max(1.0, 2.0 * candidate) + 1.0
        if self.delta_for(ceiling) > delta:
            return candidate if self.delta_for(candidate) <= delta else math.inf
        return nudge_up_until_valid(lambda e: self.delta_for(e) - delta, candidate, ceiling)

    def dp_event(self) -> Any:
        return self.event


def rdp_supports(event: Any, neighbouring: Neighbouring | str) -> bool:
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
