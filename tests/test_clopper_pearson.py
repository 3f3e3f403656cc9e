"""Clopper–Pearson limits against 40-digit arithmetic, where SciPy's inverse of the incomplete beta
function misses (k = 1000 of n = 2·10⁸ or 10⁹: its lower limit lies above the observed rate), and an
audit's bound from such counts."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpcert.audits.clopper_pearson import clopper_pearson
from dpcert.audits.epsilon_lower_bound import EvaluationCounts, bound_from_counts

mp.mp.dps = 40


def _at_least(k: int, n: int, p: float) -> mp.mpf:
    """P(Bin(n, p) >= k) at 40 digits."""
    return mp.betainc(k, n - k + 1, 0, mp.mpf(p), regularized=True)


def _at_most(k: int, n: int, p: float) -> mp.mpf:
    """P(Bin(n, p) <= k) at 40 digits."""
    return mp.betainc(k + 1, n - k, mp.mpf(p), 1, regularized=True)


@pytest.mark.parametrize(
    ("k", "n"),
    [
        (1000, 200_000_000),
        (1000, 1_000_000_000),
        (1, 200_000_000),
        (7, 30),
        (0, 50),
        (50, 50),
        (2_000, 10**8),
    ],
)
@pytest.mark.parametrize("alpha", [0.05, 1e-4])
def test_limits_are_the_exact_ones_on_their_safe_side(k, n, alpha):
    """The exact root of each tail equation lies within 1e-9 relative of the limit: the tail changes
    sign across lower·(1 ± 1e-9) and upper·(1 ± 1e-9) (40-digit arithmetic)."""
    lower, upper = (float(x) for x in clopper_pearson(k, n, alpha))
    tail = mp.mpf(alpha) / 2
    assert lower <= k / n <= upper
    if k == 0:
        assert lower == 0.0
    else:
        assert _at_least(k, n, lower * (1 - 1e-9)) < tail < _at_least(k, n, lower * (1 + 1e-9))
    if k == n:
        assert upper == 1.0
    else:
        assert _at_most(k, n, upper * (1 - 1e-9)) > tail > _at_most(k, n, upper * (1 + 1e-9))


def test_elementwise_and_at_the_ends():
    lower, upper = clopper_pearson(np.array([0, 3, 10]), 10, 0.1)
    assert lower[0] == 0.0 and upper[2] == 1.0
    assert lower.shape == upper.shape == (3,)
    assert np.all(lower <= np.array([0, 3, 10]) / 10) and np.all(upper >= np.array([0, 3, 10]) / 10)


def test_an_audit_bound_from_large_counts_is_not_too_high():
    """1000 of 2·10⁸ against 500 of 2·10⁸: the bound is at most ln(p_lower / p_upper) with limits just
    outside the exact ones (SciPy's inverse alone gave a lower limit of 7.6e-6, above the rate 5e-6)."""
    counts = EvaluationCounts("a", 1000, 200_000_000, 500, 200_000_000)
    report = bound_from_counts(counts, 0.0, 0.95)
    tail = mp.mpf(0.025)
    assert _at_least(1000, 200_000_000, report.numerator_lower * (1 - 1e-9)) < tail  # p_lower is not too high
    assert _at_most(500, 200_000_000, report.denominator_upper * (1 + 1e-9)) < tail  # p_upper is not too low
    assert report.numerator_lower < 5e-6
    assert 0.0 < report.epsilon_lower_bound <= math.log(report.numerator_lower / report.denominator_upper)
