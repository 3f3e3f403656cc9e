"""Zero-concentrated DP (Bun & Steinke 2016): its (ε, δ) profile.

A ρ-zCDP mechanism has Rényi divergence at most αρ at every order α > 1, and is therefore (ε, δ)-DP
for every α > 1 with (Canonne, Kamath & Steinke 2020, Prop. 12 and Cor. 13)

    δ(ε) = exp((α − 1)(αρ − ε)) / α · (1 − 1/α)^(α − 1).

Every α gives a valid δ, so :func:`zcdp_delta` evaluates the infimum by a bounded scalar search in log space:
whatever α the search returns, the value is a proven bound (only its tightness depends on the search),
and the floating-point evaluation carries an allowance toward larger δ.
"""

from __future__ import annotations

import math

from dpcert._numerics import UNIT_ROUNDOFF, smallest_valid

ZCDP_BASIS = "Bun & Steinke 2016 (zCDP); Canonne, Kamath & Steinke 2020, Cor. 13 (conversion to (eps, delta))"


def log_delta_at_order(alpha: float, rho: float, epsilon: float) -> float:
    """ln δ of the CKS 2020 Cor. 13 bound at the Rényi order ``alpha`` (> 1)."""
    return (
        (alpha - 1.0) * (alpha * rho - epsilon) - math.log(alpha) + (alpha - 1.0) * math.log1p(-1.0 / alpha)
    )


def zcdp_delta(epsilon: float, rho: float) -> float:
    """δ(ε) of a ρ-zCDP mechanism: the CKS 2020 bound minimised over α, rounded toward larger δ."""
    from scipy.optimize import minimize_scalar

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


def zcdp_epsilon(delta: float, rho: float) -> float:
    """Least ε (rounded up) with :func:`zcdp_delta` (ε, ρ) <= δ; 0 for ρ = 0, ``inf`` for δ = 0."""
    if rho == 0.0:
        return 0.0
    if delta <= 0.0:
        return math.inf
    # ε <= ρ + 2 sqrt(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3) brackets the root
    high = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)) + 1.0
    return smallest_valid(lambda e: zcdp_delta(e, rho) - delta, 0.0, high)
