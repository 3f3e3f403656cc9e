"""Monotone root finding that always lands on the privacy-safe side."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

_MAX_BRACKET_STEPS = 200
UNIT_ROUNDOFF = 2.0**-53
"""The unit round-off u of IEEE double precision: a correctly rounded operation errs by at most u relative."""


def smallest_valid(
    is_decreasing_excess: Callable[[float], float],
    low: float,
    high: float,
    *,
    xtol_relative: float = 1e-12,
    grow: bool = True,
    first_step: float = 1e-15,
) -> float:
    """Smallest ``x`` in ``[low, inf)`` with ``excess(x) <= 0`` for a non-increasing ``excess``.

    The root of the continuous, non-increasing function ``excess`` is bracketed (``high`` is doubled
    until ``excess(high) <= 0`` when ``grow`` is true), located with Brent's method, then nudged
    upward until ``excess(x) <= 0`` holds *as evaluated*: the returned point is always valid, never
    an optimistic approximation.  ``first_step`` is the first relative step of that nudge: a search
    with a loose ``xtol_relative`` nudges at its own scale instead of from 1e-15 upward.

    Returns ``low`` if ``excess(low) <= 0`` and ``math.inf`` if no valid point is found.
    """
    if is_decreasing_excess(low) <= 0.0:
        return low
    steps = 0
    while is_decreasing_excess(high) > 0.0:
        if not grow or steps >= _MAX_BRACKET_STEPS or not math.isfinite(high):
            return math.inf
        low, high = high, 2.0 * high
        steps += 1
    from scipy.optimize import brentq  # imported here: dpcert.certificates needs this module, not scipy

    root = brentq(
        is_decreasing_excess,
        low,
        high,
        xtol=max(1e-300, xtol_relative * abs(high)),
        rtol=8.9e-16,
        maxiter=500,
    )
    return nudge_up_until_valid(is_decreasing_excess, root, high, step=first_step)


def nudge_up_until_valid(
    excess: Callable[[float], float], x: float, ceiling: float, step: float = 1e-15
) -> float:
    """Increase ``x`` by relative steps of growing size until ``excess(x) <= 0``; ``ceiling`` is valid.

    The first relative step is ``step``; each next one is four times larger.
    """
    while excess(x) > 0.0:
        x = min(ceiling, x * (1.0 + step) + 1e-300)
        if x >= ceiling:
            return ceiling
        step *= 4.0
    return x


def ratio_rounded_up(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` rounded toward +inf (the exact quotient of the two floats, or above)."""
    result = numerator / denominator
    if math.isfinite(result) and Fraction(result) < Fraction(numerator) / Fraction(denominator):
        result = math.nextafter(result, math.inf)
    return result


def product_rounded_up(left: float, right: float) -> float:
    """``left * right`` rounded toward +inf (the exact product of the two floats, or above)."""
    result = left * right
    if math.isfinite(result) and Fraction(result) < Fraction(left) * Fraction(right):
        result = math.nextafter(result, math.inf)
    return result


def nudge_up(is_valid: Callable[[float], bool], x: float, ceiling: float) -> float:
    """The first of ``x``, ``x + u``, ``x + 3u``, ``x + 7u``, … (u = one ulp of ``x``) that ``is_valid``.

    Guards a closed-form inversion against rounding on the optimistic side.  The step doubles, so
    the search ends after about 60 evaluations however far the valid point is; ``ceiling`` (assumed
    valid) is returned if it is reached first.
    """
    step = math.ulp(x) if x > 0.0 else math.ulp(1.0)
    while not is_valid(x):
        x += step
        if x >= ceiling:
            return ceiling
        step *= 2.0
    return x
