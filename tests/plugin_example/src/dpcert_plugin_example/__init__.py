"""k-ary randomized response, certified by a profile registered from outside dpcert.

Each user reports their value in ``{0, …, k-1}`` with probability ``p`` and each other value with
probability ``(1 - p) / (k - 1)`` (Warner 1965; Kairouz, Oh & Viswanath 2016 for ``k > 2``).  For
``p > 1/k`` two inputs give output laws that differ only at the two inputs, where one has ``p`` and the
other ``b = (1 - p) / (k - 1)``, so the exact hockey-stick profile (replace-one) is

    δ(ε) = max(0, p − e^ε b) + max(0, b − e^ε p) = max(0, p − e^ε b),

zero from ``ε₀ = ln(p / b) = ln(p (k − 1) / (1 − p))`` on: the mechanism is (ε₀, 0)-DP and no less.
The floating-point evaluation is rounded up by a stated allowance, so the profile is an upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpcert.certificates import Certificate, Guarantee, TrustModel
from dpcert.errors import InvalidParameter
from dpcert.profiles import ParameterSpec, register_profile

MECHANISM = "example-k-rr"
_U = 2.0**-53  # unit roundoff of binary64


def k_rr_epsilon(k: int, p: float) -> float:
    """ε₀ = ln(p (k − 1) / (1 − p)), rounded up: ``1 − p`` is exact for ``p >= 1/2`` (Sterbenz) and
    the product, quotient and log carry three roundings, covered by 8u relative plus 8u absolute."""
    return math.log(p * (k - 1) / (1.0 - p)) * (1.0 + 8.0 * _U) + 8.0 * _U


@register_profile(
    MECHANISM,
    parameters={"k": ParameterSpec("integer"), "p": ParameterSpec("number")},
    trust_models=[TrustModel.LOCAL, TrustModel.CENTRAL],
)
class KaryRandomizedResponseProfile:
    """The exact profile above, from the certificate's parameters ``k`` and ``p``."""

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.k = int(parameters["k"])
        self.p = float(parameters["p"])
        if self.k < 2:
            raise InvalidParameter("k", self.k, "an integer >= 2")
        if not 0.5 <= self.p < 1.0 or self.p <= 1.0 / self.k:
            raise InvalidParameter("p", self.p, "1/k < p < 1 and p >= 1/2")
        self.epsilon0 = k_rr_epsilon(self.k, self.p)

    def delta_for(self, epsilon: float) -> float:
        if epsilon >= self.epsilon0:
            return 0.0
        other = (1.0 - self.p) / (self.k - 1)
        # three roundings in p − e^ε b: 4u of p covers them
        return min(1.0, max(0.0, self.p - math.exp(epsilon) * other) + 4.0 * _U * self.p)

    def epsilon_for(self, delta: float) -> float:
        if delta <= 0.0:
            return self.epsilon0
        other = (1.0 - self.p) / (self.k - 1)
        slack = self.p - delta + 4.0 * _U * self.p
        if slack <= other:
            return 0.0
        epsilon = min(math.log(slack / other), self.epsilon0)
        while self.delta_for(epsilon) > delta:  # a few ulps up at most
            epsilon = math.nextafter(epsilon, math.inf)
        return epsilon

    def dp_event(self) -> Any:
        return None


def k_rr_certificate(k: int, p: float) -> Certificate:
    """The (ε₀, 0) certificate of one k-ary randomized response report (local trust model)."""
    epsilon = KaryRandomizedResponseProfile({"k": k, "p": p}).epsilon0
    return Certificate(
        MECHANISM,
        Guarantee(epsilon, 0.0),
        TrustModel.LOCAL,
        parameters={"k": k, "p": p},
        basis="k-ary randomized response: ln(p (k - 1) / (1 - p)) (Kairouz, Oh & Viswanath 2016)",
    ).verify()
