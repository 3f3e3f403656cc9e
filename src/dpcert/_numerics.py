"""THE monotone search of dpcert: continuous and integer, always landing on the privacy-safe side.

Every calibration and inversion in dpcert is a search for the boundary of a monotone validity
condition, in the spirit of ``dp_accounting.mechanism_calibration.calibrate_dp_mechanism`` and
OpenDP's ``binary_search_param``:

* :func:`smallest_valid` / :func:`largest_valid`: the least (largest) real ``x`` with
  ``excess(x) <= 0`` for a non-increasing (non-decreasing) ``excess``: bracket by doubling, Brent's
  method, then a nudge toward the valid side until the condition holds *as evaluated*;
* :func:`least_valid_integer`: the least integer for which a monotone predicate holds: bracket by
  doubling steps from a starting guess, then bisection (the bracket's valid end is returned);
* :func:`least_noise`: :func:`smallest_valid` on a noise level, from a guess;
* :func:`nudge_up` / :func:`nudge_up_until_valid`: the safe-side nudges of closed-form inversions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction

from dpcert.errors import InvalidParameter

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
    root = _bracketed_root(is_decreasing_excess, low, high, xtol_relative)
    return nudge_up_until_valid(is_decreasing_excess, root, high, step=first_step)


def largest_valid(
    is_increasing_excess: Callable[[float], float],
    low: float,
    high: float,
    *,
    xtol_relative: float = 1e-12,
    grow: bool = True,
    ceiling: float = math.inf,
    first_step: float = 1e-12,
) -> float:
    """Largest ``x`` in ``[low, ceiling]`` with ``excess(x) <= 0`` for a non-decreasing ``excess``.

    ``low`` must be valid (the caller knows it; it is not evaluated).  The boundary is bracketed
    (``high`` is doubled while ``excess(high) <= 0``, when ``grow`` is true; a valid ``high`` whose
    double would pass ``ceiling`` is returned), located with Brent's method to ``xtol_relative``
    of ``high``, then nudged downward by relative steps (the first ``first_step``, each next four
    times larger) until ``excess(x) <= 0`` holds as evaluated, never below ``low``.
    """
    steps = 0
    while is_increasing_excess(high) <= 0.0:
        if not grow or steps >= _MAX_BRACKET_STEPS or not math.isfinite(high) or 2.0 * high > ceiling:
            return high
        low, high = high, 2.0 * high
        steps += 1
    candidate = min(_bracketed_root(is_increasing_excess, low, high, xtol_relative), high)
    step = first_step
    while candidate > low and is_increasing_excess(candidate) > 0.0:
        candidate = max(low, candidate * (1.0 - step))
        step *= 4.0
    return candidate


def _bracketed_root(excess: Callable[[float], float], low: float, high: float, xtol_relative: float) -> float:
    """Brent's method on ``[low, high]`` (a sign change of ``excess``) to ``xtol_relative · |high|``.

    An infinite value of ``excess`` is passed to the root finder as ±1e300 (its sign is all a
    bracketing method needs); the caller re-checks the point it returns.
    """

    def finite(x: float) -> float:
        value = excess(x)
        return value if math.isfinite(value) else math.copysign(1e300, value)

    tolerance = max(1e-300, xtol_relative * abs(high))
    return brent_root(finite, low, high, xtol=tolerance, rtol=8.9e-16, maxiter=500)


def _divide(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` as IEEE 754 (and C) define it: ±inf or NaN for a zero denominator,
    where Python raises; a step that is not finite then falls back to bisection, as in brentq.c."""
    if denominator != 0.0:
        return numerator / denominator
    if numerator == 0.0 or math.isnan(numerator):
        return math.nan
    return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)


def brent_root(
    function: Callable[[float], float], a: float, b: float, *, xtol: float, rtol: float, maxiter: int
) -> float:
    """A root of ``function`` in ``[a, b]`` (a sign change) by Brent's method (Brent 1973, ch. 4).

    The same operations in the same order as ``scipy.optimize.brentq`` (Charles Harris's
    ``brentq.c``: inverse quadratic extrapolation or secant steps, bisection when a step is not short
    enough), so the returned float is the one SciPy returns for the same arguments, without importing
    ``scipy.optimize`` (most of a command's start-up time).  Stops when half the bracket is below
    ``(xtol + rtol·|x|)/2`` or ``function`` is 0; ``ValueError`` for no sign change or a NaN value,
    ``RuntimeError`` after ``maxiter`` steps.
    """
    if xtol <= 0.0:
        raise ValueError(f"xtol too small ({xtol:g} <= 0)")
    if rtol < 4.0 * 2.0**-52:
        raise ValueError(f"rtol too small ({rtol:g} < {4.0 * 2.0**-52:g})")

    def value(x: float) -> float:
        fx = float(function(x))
        if math.isnan(fx):
            raise ValueError(f"The function value at x={x} is NaN; solver cannot continue.")
        return fx

    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre = value(xpre)
    fcur = value(xcur)
    # signs compared by sign bit, as brentq.c does: a product of two tiny values underflows to 0
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur) and fpre != 0 and fcur != 0:
        raise ValueError("f(a) and f(b) must have different signs")
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate
                stry = _divide(-fcur * (xcur - xpre), fcur - fpre)
            else:  # extrapolate
                dpre = _divide(fpre - fcur, xpre - xcur)
                dblk = _divide(fblk - fcur, xblk - xcur)
                stry = _divide(-fcur * (fblk * dblk - fpre * dpre), dblk * dpre * (fblk - fpre))
            shorter = abs(spre) if abs(spre) < 3 * abs(sbis) - delta else 3 * abs(sbis) - delta
            if 2 * abs(stry) < shorter:  # good short step
                spre, scur = scur, stry
            else:  # bisect
                spre = scur = sbis
        else:  # bisect
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = value(xcur)
    raise RuntimeError(f"Failed to converge after {maxiter} iterations, value is {xcur}.")


def least_valid_integer(
    is_valid: Callable[[int], bool],
    start: int,
    *,
    below: int = 0,
    step: int = 1,
    ceiling: int | None = None,
) -> int | None:
    """Least integer ``n > below`` with ``is_valid(n)``, for a predicate false below some ``n*`` and
    true from ``n*`` on; ``None`` if no ``n <= ceiling`` is valid.

    From ``start`` (> ``below``) the bracket moves by ``step``, then twice that, and so on: down while
    valid (never below ``below``, which is taken as invalid without evaluating it), or up while
    invalid (never past ``ceiling``).  Bisection then keeps ``low`` invalid (or ``below``) and ``high``
    valid, and ``high`` is returned: a point the predicate accepted.
    """
    high = start
    if is_valid(high):
        low = max(below, high - step)
        while low > below and is_valid(low):
            step *= 2
            high, low = low, max(below, low - step)
    else:
        while True:
            if ceiling is not None and high >= ceiling:
                return None
            low, high = high, high + step
            if ceiling is not None:
                high = min(high, ceiling)
            step *= 2
            if is_valid(high):
                break
    while high - low > 1:
        middle = (low + high) // 2
        if is_valid(middle):
            high = middle
        else:
            low = middle
    return high


def least_noise(
    delta_of_noise: Callable[[float], float],
    target_delta: float,
    initial: float,
    *,
    ratio: float = 2.0,
    relative_tolerance: float | None = None,
) -> float:
    """Least noise level ``s`` with ``delta_of_noise(s) <= target_delta`` (δ non-increasing in ``s``).

    ``initial`` is any positive starting guess; the bracket shrinks from it by the factor ``ratio``
    (> 1) until invalid, then spans ``[low, ratio * low]`` (grown by doubling if needed): a guess
    known to lie within a few per cent of the answer saves evaluations with a ratio near 1.
    ``relative_tolerance`` (default: about 1e-12) stops the search once the least valid level is
    located within that relative distance; the returned level is valid as evaluated either way.
    """
    low = initial
    for _ in range(200):  # shrink until invalid so that the least valid point is bracketed
        if delta_of_noise(low) > target_delta:
            break
        low /= ratio
    else:
        return low

    def excess(s: float) -> float:
        return delta_of_noise(s) - target_delta

    if relative_tolerance is None:
        return smallest_valid(excess, low, ratio * low)
    return smallest_valid(
        excess, low, ratio * low, xtol_relative=relative_tolerance, first_step=relative_tolerance
    )


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


def sum_rounded_up(terms: Iterable[tuple[float, int]]) -> float:
    """Σ value × count computed exactly (rationals) and rounded up to the next float if inexact."""
    exact = sum((Fraction(value) * count for value, count in terms), Fraction(0))
    try:
        result = float(exact)
    except OverflowError:
        raise InvalidParameter(
            "certificates",
            "a sum of epsilons times counts above 1.8e308",
            "a sum of epsilons (or deltas) times counts below the largest float (about 1.8e308)",
        ) from None
    return math.nextafter(result, math.inf) if Fraction(result) < exact else result
