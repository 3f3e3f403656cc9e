"""The exact privacy profile of the Gaussian mechanism and its inversions.

Adding N(0, σ²) noise to a query of ℓ2-sensitivity Δ is (ε, δ)-DP if and only if (Balle & Wang 2018,
"Improving the Gaussian Mechanism for Differential Privacy: Analytical Calibration and Optimal
Denoising", Thm 8)

    δ >= Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).

The k-fold composition of Gaussian mechanisms with the same σ and Δ is exactly one Gaussian
mechanism with sensitivity Δ√k (Dong, Roth & Su 2019, Cor. 3.3), so every function here takes the
privacy parameter ``mu = Δ√k/σ``.
"""

from __future__ import annotations

import math
import sys

from dpcert._numerics import least_noise, smallest_valid
from dpcert.errors import InvalidParameter
from dpcert.theory.normal import log_ndtr

_FLOAT_SLACK = 16 * sys.float_info.epsilon  # per unit of log magnitude, for rounding in the two Φ terms
_SMALLEST_DELTA = math.ulp(0.0)  # δ(ε) > 0 at every ε: never report 0 (that would claim pure DP)


def gaussian_delta(epsilon: float, mu: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with privacy parameter ``mu = Δ√k/σ``.

    Computed in log space and rounded upward: each term ``exp(log Φ(·) [+ ε])`` carries a relative
    error of a few ulp of the size of its logarithm (``log_ndtr`` and the sum with ε), so an
    allowance of ``16 ulp · (1 + |log Φ(a)| + ε + |log Φ(b)|)`` of the larger term is added.  It
    covers the bounds of :func:`dpcert.theory.normal.log_ndtr` (u = 2^-53): 21.5 u |log Φ(x)| for
    x <= 0 and (3 + 10) u + u |log Φ(x)| for x > 0; with b < 0 (so |log Φ(b)| >= ln 2), the
    rounding of ε + log Φ(b) (u (ε + |log Φ(b)|)), of both ``exp`` (2u each) and of the difference
    (u), the two terms are off by at most 32 u (1 + |log Φ(a)| + ε + |log Φ(b)|) of the larger.
    δ(ε) is positive at every ε, so the result is never below the smallest positive float (the
    Gaussian mechanism is never pure DP, even where δ underflows).
    """
    if epsilon < 0:
        raise InvalidParameter("epsilon", epsilon, "0 <= epsilon < inf")
    if mu == 0.0 or not math.isfinite(epsilon / mu):  # both Φ terms are 0: the pair cannot be told apart
        return _SMALLEST_DELTA
    a = mu / 2.0 - epsilon / mu
    b = -mu / 2.0 - epsilon / mu
    log_first = log_ndtr(a)
    log_lower = log_ndtr(b)
    log_second = epsilon + log_lower
    first = math.exp(log_first)
    if first == 0.0:  # Φ(a) below the smallest float, and δ(ε) <= Φ(a)
        return _SMALLEST_DELTA
    second = math.exp(log_second) if log_second < 700 else math.inf
    if not math.isfinite(second):  # e^ε Φ(b) <= Φ(a) <= 1 in exact arithmetic; δ <= Φ(a)
        return max(min(1.0, first), _SMALLEST_DELTA)
    magnitude = 1.0 + abs(log_first) + epsilon + abs(log_lower)
    value = first - second + _FLOAT_SLACK * magnitude * max(first, second)
    return min(1.0, max(value, _SMALLEST_DELTA))


def gaussian_epsilon(delta: float, mu: float) -> float:
    """Smallest ε with :func:`gaussian_delta` (ε, μ) <= δ (rounded up); ``inf`` for δ = 0."""
    if delta <= 0.0:
        return math.inf
    return smallest_valid(lambda e: gaussian_delta(e, mu) - delta, 0.0, max(1.0, mu * mu))


def analytic_gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float = 1.0, compositions: int = 1
) -> float:
    """Least σ whose k-fold Gaussian mechanism is (ε, δ)-DP by the exact profile (Balle & Wang 2018)."""
    scale = sensitivity * math.sqrt(compositions)
    guess = scale * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    return least_noise(lambda s: gaussian_delta(epsilon, scale / s), delta, guess)
