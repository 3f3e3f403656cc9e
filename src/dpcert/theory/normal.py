"""log Φ(x), the logarithm of the standard normal distribution function, from the standard library.

:func:`log_ndtr` evaluates log Φ(x) for every float x with a stated error bound, using only
:func:`math.erfc`, :func:`math.log`, :func:`math.log1p` and the Mills-ratio series, so that the exact
Gaussian profile (:mod:`dpcert.theory.gaussian`) does not need SciPy.

Error bound.  Write u = 2^-53 (half an ulp of 1) and E for the relative error of ``math.erfc`` in
units of u at arguments where its value is a normal float.  CPython 3.11 on Linux calls the C
library's ``erfc`` (CPython's own fallback is compiled only without a libm ``erfc``); glibc (2.36
here) lists in its ``libm-test-ulps`` a largest known error of at most 5 ulp for double ``erfc`` in
round-to-nearest, i.e. E <= 10 in units of u.  This is a documented, measured figure, not a proof;
``tests/test_normal_log_cdf.py`` measures the composite error against mpmath at 50 digits.  With
``E = 10`` the bounds below are

* x <= 0 (and x >= -37):   |error| <= (7 + 1.45 E) u |log Φ(x)| = 21.5 u |log Φ(x)|;
* x < -37 (series):        |error| <= 5 u |log Φ(x)|;
* x > 0:                   |error| <= ((4x² + 4x + 2E + 2) u) |log Φ(x)| + 2^-1074, and in
  absolute terms |error| <= (3 + E) u + u |log Φ(x)| (at most 14 u (1 + |log Φ(x)|)).

So in every case |error| <= 22 u (1 + |log Φ(x)|) = 11 ulp (1 + |log Φ(x)|), the form in which
:func:`dpcert.theory.gaussian.gaussian_delta` budgets for it.

Derivation.  t = |x|/√2 is formed as ``abs(x) * _INV_SQRT2`` with relative error θ, |θ| <= 2u(1+u).
As |d ln erfc(t)/dt| = 2 e^{-t²}/(√π erfc(t)) <= t + √(t² + 2) <= 2t + √2 (Abramowitz & Stegun 1964,
7.1.13), the rounded argument moves ln erfc by at most (2t + √2) t |θ| <= 2u (x² + |x|) (1 + 1e-15).
For x <= 0, log Φ(x) = log(erfc(t)/2) (the halving is exact for a normal float); the error is that
argument term, plus E u from ``erfc`` and u |log Φ| from ``math.log``, and with
|log Φ(x)| >= x²/2 + ln 2 (the Chernoff bound Φ(x) <= e^{-x²/2}/2 for x <= 0) the sum is at most
(6 + 1.45 E + 1) u |log Φ(x)|.  For x > 0, log Φ(x) = log1p(-Q) with Q = erfc(t)/2 <= 1/2, whose
relative error r <= 2u(x² + x) + E u moves log1p(-Q) by at most Q r / (1 - Q) <= 2 Q r; with
Q(x) <= φ(x)/x (Gordon 1941) this is at most 2u (2 x φ(x) + 2 φ(x)) + E u <= (2.6 + E) u in absolute
terms, and, relative to |log Φ(x)| >= Q, at most 2r; ``math.log1p`` adds u |log Φ|.  Where Q is
subnormal (x > 37.5) the rounding of Q adds at most 2^-1074.

For x < -37 the erfc route would lose accuracy to underflow, so the Mills-ratio series is used: for
t > 0 and n >= 0,

    1 - Φ(t) = φ(t)/t · (Σ_{k=0}^{n-1} (-1)^k (2k-1)!!/t^{2k} + R_n),

where R_n has the sign (-1)^n and |R_n| < (2n-1)!!/t^{2n}, the first omitted term (Abramowitz &
Stegun 1964, 26.2.12; its first two cases φ(t)/t (1 - 1/t²) < 1 - Φ(t) < φ(t)/t are Gordon 1941).
With n = 6 terms and t >= 37, |R_6| < 10395/37^12 < 1.6e-15, so the truncation moves log Φ by less
than 1.7e-15 while |log Φ(x)| > 684: below 1e-17 of the result, far under 1 ulp.  The rest,
-t²/2 - ln t - ln √(2π) + ln S with S in [0.999, 1], is rounded in five operations on terms of one
sign (no cancellation) whose sum is dominated by t²/2, hence within 5u |log Φ(x)|.  For
|x| > 1.3e154, t² overflows and the result is -inf, the correct rounding of a value below -1.8e308.
"""

from __future__ import annotations

import math

_INV_SQRT2 = 0.7071067811865476  # 1/√2 rounded to nearest (relative error < 2^-53)
_LOG_SQRT_2PI = 0.9189385332046728  # ln √(2π) rounded to nearest
SERIES_BELOW = -37.0
"""Below this x, log Φ(x) comes from the Mills-ratio series; at and above it from ``math.erfc``."""
_SERIES_TERMS = 6
"""Terms of the Mills-ratio series: the remainder is below 1.6e-15 for t >= 37 (see the module)."""

ERFC_ULPS = 5
"""glibc's documented largest known error of double ``erfc`` (round to nearest), in ulp."""
LOG_NDTR_ULPS = 11
"""The bound of :func:`log_ndtr`: |error| <= LOG_NDTR_ULPS ulp · (1 + |log Φ(x)|) (ulp of 1, 2^-52)."""


def _log_mills_series(t: float) -> float:
    """log of Σ_{k<6} (-1)^k (2k-1)!!/t^{2k}, the Mills-ratio series of 1 - Φ(t) (t >= 37)."""
    inverse_square = 1.0 / (t * t)
    term = 1.0
    total = 1.0
    for k in range(1, _SERIES_TERMS):
        term *= -(2 * k - 1) * inverse_square
        total += term
    return math.log(total)


def log_ndtr(x: float) -> float:
    """log Φ(x) for the standard normal Φ, within 11 ulp · (1 + |log Φ(x)|) (see the module).

    ``nan`` for ``nan``; ``-inf`` where log Φ(x) is below the largest negative float; ``0.0`` where
    it is above the smallest negative one.
    """
    x = float(x)
    if math.isnan(x):
        return math.nan
    if x > 0.0:
        return math.log1p(-0.5 * math.erfc(x * _INV_SQRT2))
    if x >= SERIES_BELOW:
        return math.log(0.5 * math.erfc(-x * _INV_SQRT2))
    t = -x
    if math.isinf(t):
        return -math.inf
    return -0.5 * (t * t) - math.log(t) - _LOG_SQRT_2PI + _log_mills_series(t)
