"""k-ary randomized response and its exact privacy profile.

With noise parameter ``p`` the mechanism outputs its input bucket with probability ``1 − p`` and
otherwise a bucket drawn uniformly from the ``k`` buckets (Warner 1965; the parametrisation of
``dp_accounting.dp_event.RandomizedResponseDpEvent``).  For neighbouring inputs ``x ≠ x'`` the two
output laws differ only on ``x`` and ``x'``, so the hockey-stick divergence is

    δ(ε) = max(0, (1 − p + p/k) − e^ε p/k) = max(0, (1 − p) − (p/k)(e^ε − 1)),

which is 0 from ε0 = ln(1 + k(1 − p)/p) on (pure ε0-DP; Kairouz, Oh & Viswanath 2016 for k-ary RR).

Its privacy loss ``ln(P/Q)`` under ``P`` takes three values: ε0 on the output ``x`` (mass
``1 − p + p/k``), −ε0 on ``x'`` (mass ``p/k``) and 0 elsewhere (mass ``(k − 2) p/k``); swapping ``x``
and ``x'`` exchanges ``P`` and ``Q``, so both directions have this law.  The profile gives it to the
PLD composition (:class:`dpcert.profiles.PrivacyLossParts`), so that many runs compose
through their exact loss distribution instead of as generic ε0-DP mechanisms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert._numerics import UNIT_ROUNDOFF, nudge_up
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.errors import InvalidParameter
from dpcert.profiles import ALL_TRUST_MODELS, EVENT_LEVEL, ParameterSpec, register_profile
from dpcert.theory.pld import LossPmf, loss_pmf_from_masses

RANDOMIZED_RESPONSE_BASIS = (
    "Warner 1965; Kairouz, Oh & Viswanath 2016 (k-ary randomized response, exact profile)"
)


@register_profile(
    "randomized-response",
    parameters={"noise_parameter": ParameterSpec("number"), "buckets": ParameterSpec("integer")},
    trust_models=ALL_TRUST_MODELS,
    neighbourings=EVENT_LEVEL,
)
class RandomizedResponseProfile:
    """Exact profile.  Parameters: ``noise_parameter`` p in (0, 1] and ``buckets`` k >= 2."""

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.noise_parameter = check.probability(
            "noise_parameter", parameters.get("noise_parameter"), open_low=True
        )
        self.buckets = check.positive_int("buckets", parameters.get("buckets"), minimum=2)
        p, k = self.noise_parameter, self.buckets
        ratio = k * (1.0 - p) / p
        # ε0 = log1p(k(1 − p)/p), rounded up: three operations of relative error u, then log1p
        self.pure_epsilon = nudge_up(lambda e: self.delta_for(e) <= 0.0, math.log1p(ratio), math.inf)

    def delta_for(self, epsilon: float) -> float:
        p, k = self.noise_parameter, self.buckets
        keep, growth = 1.0 - p, (p / k) * math.expm1(epsilon)
        value = keep - growth
        # each term carries at most 3u relative error (1 − p is exact for p >= 1/2, u otherwise)
        allowance = 4.0 * UNIT_ROUNDOFF * (keep + growth)
        bound = value + allowance
        return 0.0 if bound <= 0.0 else min(1.0, bound)

    def epsilon_for(self, delta: float) -> float:
        p, k = self.noise_parameter, self.buckets
        if delta >= 1.0 - p:
            return 0.0
        candidate = math.log1p(k * ((1.0 - p) - delta) / p)
        return nudge_up(lambda e: self.delta_for(e) <= delta, max(0.0, candidate), self.pure_epsilon)

    def dp_event(self) -> Any:
        from dp_accounting import dp_event

        return dp_event.RandomizedResponseDpEvent(
            noise_parameter=self.noise_parameter, num_buckets=self.buckets
        )

    def privacy_loss_parts(self, interval: float) -> list[tuple[Any, int]]:
        """The exact loss distribution on the grid ``interval`` (symmetric; see the module docstring)."""
        return [(randomized_response_loss_pmf(self.noise_parameter, self.buckets, interval), 1)]


MAX_PLD_POINTS = 2**22
# Relative error of the computed masses (1 − p) + p/k, p/k and (k − 2)p/k: at most three roundings.
_MASS_ALLOWANCE = 8.0 * UNIT_ROUNDOFF
# Relative error of the computed ε0 = log1p(k(1 − p)/p): the ratio's 3u relative error moves it by at
# most 3u r/(1 + r) <= 3u ε0, log1p adds 2u; 16u covers both, then the division by the interval.
_LOSS_ALLOWANCE = 16.0 * UNIT_ROUNDOFF


@lru_cache(maxsize=256)
def randomized_response_loss_pmf(noise_parameter: float, buckets: int, interval: float) -> LossPmf:
    """Pessimistic pmf of the privacy loss of k-ary randomized response (both directions).

    The losses ±ε0 are replaced by upper bounds (ε0 computed, then moved up by ``_LOSS_ALLOWANCE``
    relative; −ε0 moved toward zero as much) before :func:`~dpcert.theory.pld.loss_pmf_from_masses`
    rounds them up to the grid, and the masses are inflated by ``_MASS_ALLOWANCE`` relative.
    """
    p = check.probability("noise_parameter", noise_parameter, open_low=True)
    k = check.positive_int("buckets", buckets, minimum=2)
    h = check.positive_finite("interval", interval)
    epsilon0 = math.log1p(k * (1.0 - p) / p)
    if not 2.0 * epsilon0 / h <= MAX_PLD_POINTS:
        raise InvalidParameter(
            "value_discretization_interval",
            interval,
            f"an interval above {2.0 * epsilon0 / MAX_PLD_POINTS:.3g} for this randomized response (its "
            f"losses span ±{epsilon0:.3g}; at most {MAX_PLD_POINTS} grid points), or another method",
        )
    up = epsilon0 * (1.0 + _LOSS_ALLOWANCE) + 4.0 * UNIT_ROUNDOFF * h
    down = -epsilon0 * (1.0 - _LOSS_ALLOWANCE) + 4.0 * UNIT_ROUNDOFF * h
    losses = np.array([up, down, 0.0])
    masses = np.array([(1.0 - p) + p / k, p / k, (k - 2) * p / k])
    return loss_pmf_from_masses(h, losses, masses, 0.0, _MASS_ALLOWANCE)


def randomized_response_certificate(
    noise_parameter: float,
    buckets: int,
    *,
    delta: float = 0.0,
    trust_model: TrustModel | str = TrustModel.LOCAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> Certificate:
    """Certificate of k-ary randomized response at the point ``delta`` of its exact profile."""
    parameters = {
        "noise_parameter": check.probability("noise_parameter", noise_parameter, open_low=True),
        "buckets": check.positive_int("buckets", buckets, minimum=2),
    }
    profile = RandomizedResponseProfile(parameters)
    return Certificate(
        "randomized-response",
        point_on_profile(profile, delta=delta),
        TrustModel(trust_model),
        Neighbouring(neighbouring),
        parameters,
        RANDOMIZED_RESPONSE_BASIS,
    ).verify()
