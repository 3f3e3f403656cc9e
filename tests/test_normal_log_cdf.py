"""log Φ without SciPy (dpcert.theory.normal) and the Gaussian profile built on it, against mpmath.

Every reference value is computed by mpmath at 50 significant digits (80 for δ, whose two terms
cancel), independently of the code under test.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest

from dpcert.theory.gaussian import analytic_gaussian_sigma, gaussian_delta
from dpcert.theory.normal import LOG_NDTR_ULPS, SERIES_BELOW, log_ndtr

U = 2.0**-53  # unit roundoff
TINY = 2.0**-1074


def _exact_log_ndtr(x: float) -> mpmath.mpf:
    with mpmath.workdps(50):
        value = mpmath.mpf(x)
        if x > 0:  # log1p(-Q(x)): Φ(x) itself would round to 1 at 50 digits for x > 15
            return mpmath.log1p(-mpmath.ncdf(-value))
        return mpmath.log(mpmath.ncdf(value))


def _grid() -> list[float]:
    points = list(np.linspace(-60.0, 40.0, 2001)) + list(-np.geomspace(1.0, 1e5, 301))
    for switch in (SERIES_BELOW, 0.0):
        near = switch
        for _ in range(3):
            near = math.nextafter(near, -math.inf)
            points.append(near)
        near = switch
        for _ in range(3):
            near = math.nextafter(near, math.inf)
            points.append(near)
        points += [switch, switch - 1e-9, switch + 1e-9]
    points += [5e-324, -5e-324, 1e-300, -1e-300, 1e-8, -1e-8, 37.5, 38.5, 39.0]
    return sorted({float(x) for x in points})


GRID = _grid()


def _stated_bound(x: float, exact: mpmath.mpf) -> float:
    """The bound the module states for |log_ndtr(x) - log Φ(x)| (u = 2^-53, erfc within 10 u)."""
    magnitude = abs(float(exact))
    if x < SERIES_BELOW:
        return 5 * U * magnitude
    if x <= 0:
        return 21.5 * U * magnitude
    relative = (4 * x * x + 4 * x + 22) * U * magnitude + TINY
    absolute = 13 * U + U * magnitude
    return min(relative, absolute)


def test_log_ndtr_within_the_stated_bound_on_a_dense_grid() -> None:
    worst = 0.0
    for x in GRID:
        exact = _exact_log_ndtr(x)
        error = float(abs(mpmath.mpf(log_ndtr(x)) - exact))
        assert error <= _stated_bound(x, exact), (x, error, _stated_bound(x, exact))
        assert error <= LOG_NDTR_ULPS * 2 * U * (1 + abs(float(exact))), x
        worst = max(worst, error / (2 * U * (1 + abs(float(exact)))))
    assert worst > 0.0  # the grid reaches values with rounding error (the comparison is not vacuous)


def test_log_ndtr_relative_error_where_the_value_is_a_normal_float() -> None:
    """Relative error: a few u for x <= 0 (series and erfc), (4x² + 4x + 22) u for x > 0."""
    for x in GRID:
        exact = _exact_log_ndtr(x)
        if abs(exact) < 1e-300:
            continue
        relative = float(abs((mpmath.mpf(log_ndtr(x)) - exact) / exact))
        allowed = 21.5 * U if x <= 0 else (4 * x * x + 4 * x + 22) * U
        assert relative <= allowed, (x, relative / U)


def test_log_ndtr_special_values() -> None:
    assert math.isnan(log_ndtr(math.nan))
    assert log_ndtr(-math.inf) == -math.inf
    assert log_ndtr(math.inf) == 0.0
    assert log_ndtr(-1e200) == -math.inf  # log Φ(-1e200) ≈ -5e399: beyond the float range
    assert log_ndtr(0.0) == math.log(0.5)
    # far in the series range the value is -x²/2 - ln(-x) - ln √(2π) to within 1/x²
    x = -1e100
    assert log_ndtr(x) == pytest.approx(-0.5 * x * x - math.log(-x) - 0.5 * math.log(2 * math.pi), rel=1e-15)


def _exact_delta(epsilon: float, mu: float) -> mpmath.mpf:
    """Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle & Wang 2018, Thm 8) at 80 digits."""
    with mpmath.workdps(80):
        e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)


def test_gaussian_delta_never_below_the_exact_profile_and_within_1e_10() -> None:
    """Never below the exact δ; above it by at most twice the rounding allowance (the error it covers
    plus the allowance added), which is within 1e-10 of δ wherever δ is not a cancellation of two
    terms more than 10 times its size (where only the allowance bound holds, as it did with SciPy)."""
    checked = 0
    for epsilon, mu in itertools.product(
        [0.0, 1e-6, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0, 400.0],
        list(np.geomspace(1e-3, 1e2, 41)),
    ):
        mu = float(mu)
        exact = _exact_delta(epsilon, mu)
        value = gaussian_delta(epsilon, mu)
        assert mpmath.mpf(value) >= exact, (epsilon, mu, value, exact)
        a, b = mu / 2 - epsilon / mu, -mu / 2 - epsilon / mu
        with mpmath.workdps(50):
            first = mpmath.ncdf(a)
            magnitude = 1 + abs(mpmath.log(first)) + epsilon + abs(mpmath.log(mpmath.ncdf(b)))
            allowance = 16 * 2 * U * magnitude * first
            assert mpmath.mpf(value) - exact <= 2 * allowance + TINY, (epsilon, mu)
            if exact > 1e-300 and first <= 10 * exact:
                assert float((mpmath.mpf(value) - exact) / exact) <= 1e-10, (epsilon, mu)
                checked += 1
    assert checked > 150


@pytest.mark.parametrize(
    ("epsilon", "delta", "sensitivity", "compositions"),
    [
        (1.0, 1e-5, 1.0, 1),
        (0.1, 1e-12, 3.7, 7),
        (5.0, 1e-3, 1e4, 1),
        (0.01, 0.1, 1e-5, 1),
        (10.0, 1e-100, 1.0, 7),
        (2.0, 0.5, 1.0, 1),
    ],
)
def test_calibrated_sigma_is_certified_by_the_exact_profile(
    epsilon: float, delta: float, sensitivity: float, compositions: int
) -> None:
    sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity, compositions)
    mu = sensitivity * math.sqrt(compositions) / sigma
    assert _exact_delta(epsilon, mu) <= delta
    # and it is nearly the least: 1e-8 less noise breaks the target in exact arithmetic
    assert _exact_delta(epsilon, mu / (1 - 1e-8)) > delta
