"""Zero-concentrated DP (Bun & Steinke 2016) as a privacy profile.

A ρ-zCDP mechanism has Rényi divergence at most αρ at every order α > 1, and is therefore (ε, δ)-DP
for every α > 1 with (Canonne, Kamath & Steinke 2020, Prop. 12 and Cor. 13)

    δ(ε) = exp((α − 1)(αρ − ε)) / α · (1 − 1/α)^(α − 1).

Every α gives a valid δ, so the profile evaluates the infimum by a bounded scalar search in log space:
whatever α the search returns, the value is a proven bound (only its tightness depends on the search),
and the floating-point evaluation carries an allowance toward larger δ.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scipy.optimize import minimize_scalar

from dpcert import _validation as check
from dpcert._numerics import UNIT_ROUNDOFF, smallest_valid
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.profiles import ALL_TRUST_MODELS, EVENT_LEVEL, ParameterSpec, register_profile

ZCDP_BASIS = "Bun & Steinke 2016 (zCDP); Canonne, Kamath & Steinke 2020, Cor. 13 (conversion to (eps, delta))"


def log_delta_at_order(alpha: float, rho: float, epsilon: float) -> float:
    """ln δ of the CKS 2020 Cor. 13 bound at the Rényi order ``alpha`` (> 1)."""
    return (
        (alpha - 1.0) * (alpha * rho - epsilon) - math.log(alpha) + (alpha - 1.0) * math.log1p(-1.0 / alpha)
    )


def zcdp_delta(epsilon: float, rho: float) -> float:
    """δ(ε) of a ρ-zCDP mechanism: the CKS 2020 bound minimised over α, rounded toward larger δ."""
    if rho == 0.0:
        return 0.0
    # the unconstrained optimum is near α* = (ε + ρ)/(2ρ); search a bracket well around it
    high = max(2.0, 4.0 * (epsilon + rho) / (2.0 * rho) + 2.0)
    result = minimize_scalar(
        lambda a: log_delta_at_order(a, rho, epsilon),
        bounds=(1.0 + 1e-12, high),
        method="bounded",
        options={"xatol": 1e-10},
    )
    alpha = float(result.x)
    exponent = log_delta_at_order(alpha, rho, epsilon)
    # four terms, each with a few ulp of its magnitude: allow 64u of the largest magnitude in the exponent
    magnitude = abs((alpha - 1.0) * alpha * rho) + abs((alpha - 1.0) * epsilon) + abs(math.log(alpha)) + 1.0
    # ρ > 0 never implies pure DP: an underflow to 0 is reported as the least positive float instead
    return min(1.0, max(math.ulp(0.0), math.exp(exponent + 64.0 * UNIT_ROUNDOFF * magnitude)))


@register_profile(
    "zcdp",
    parameters={"rho": ParameterSpec("number"), "name": ParameterSpec("string", required=False)},
    trust_models=ALL_TRUST_MODELS,
    neighbourings=EVENT_LEVEL,
)
class ZCDPProfile:
    """Profile implied by ρ-zCDP.  Parameters: ``rho`` (ρ >= 0) and optionally ``name``."""

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.rho = check.nonnegative_finite("rho", parameters.get("rho"))

    def delta_for(self, epsilon: float) -> float:
        return zcdp_delta(epsilon, self.rho)

    def epsilon_for(self, delta: float) -> float:
        if self.rho == 0.0:
            return 0.0
        if delta <= 0.0:
            return math.inf
        # ε <= ρ + 2 sqrt(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3) brackets the root
        high = self.rho + 2.0 * math.sqrt(self.rho * math.log(1.0 / delta)) + 1.0
        return smallest_valid(lambda e: zcdp_delta(e, self.rho) - delta, 0.0, high)

    def dp_event(self) -> Any:
        return None


def zcdp_certificate(
    rho: float,
    *,
    delta: float,
    name: str = "",
    basis: str = ZCDP_BASIS,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> Certificate:
    """Certificate of a ρ-zCDP mechanism at the point ``delta`` of the converted profile."""
    parameters: dict[str, Any] = {"rho": check.nonnegative_finite("rho", rho)}
    if name:
        parameters["name"] = str(name)
    guarantee = point_on_profile(ZCDPProfile(parameters), delta=check.delta(delta))
    return Certificate("zcdp", guarantee, trust_model, neighbouring, parameters, basis).verify()
