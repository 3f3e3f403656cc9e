"""k-ary randomized response and its exact privacy profile.

With noise parameter ``p`` the mechanism outputs its input bucket with probability ``1 − p`` and
otherwise a bucket drawn uniformly from the ``k`` buckets (Warner 1965; the parametrisation of
``dp_accounting.dp_event.RandomizedResponseDpEvent``).  For neighbouring inputs ``x ≠ x'`` the two
output laws differ only on ``x`` and ``x'``, so the hockey-stick divergence is

    δ(ε) = max(0, (1 − p + p/k) − e^ε p/k) = max(0, (1 − p) − (p/k)(e^ε − 1)),

which is 0 from ε0 = ln(1 + k(1 − p)/p) on (pure ε0-DP; Kairouz, Oh & Viswanath 2016 for k-ary RR).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpcert import _validation as check
from dpcert._numerics import UNIT_ROUNDOFF, nudge_up
from dpcert.certificates import (
    ALL_TRUST_MODELS,
    EVENT_LEVEL,
    Certificate,
    Neighbouring,
    ParameterSpec,
    TrustModel,
    point_on_profile,
    register_profile,
)

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
        trust_model,
        neighbouring,
        parameters,
        RANDOMIZED_RESPONSE_BASIS,
    ).verify()
