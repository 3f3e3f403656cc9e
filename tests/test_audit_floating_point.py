"""The low-order-bit test flags textbook floating-point noise and passes integer-exact samplers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcert.audits.floating_point import ZERO_EXPONENT, check_floating_point, lowest_bit_exponent
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.laplace import calibrate_laplace


def test_lowest_bit_exponent_against_exact_fractions():
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [rng.normal(0, 1e3, 200), rng.integers(-(2**40), 2**40, 200), [2.0**-1074, 3 * 2.0**-1070]]
    )
    exponents = lowest_bit_exponent(values)
    for value, exponent in zip(values, exponents, strict=True):
        numerator, denominator = float(value).as_integer_ratio()  # value = numerator / denominator exactly
        twos_numerator = (numerator & -numerator).bit_length() - 1
        twos_denominator = denominator.bit_length() - 1  # denominator is a power of two
        assert exponent == twos_numerator - twos_denominator
    assert lowest_bit_exponent([0.0])[0] == ZERO_EXPONENT
    assert lowest_bit_exponent(np.array([[0.5, 6.0], [1.0, 1.25]])).tolist() == [-1, -2]


def test_naive_numpy_laplace_is_flagged():
    def naive(value, rng, size):
        return value + rng.laplace(0.0, 1.0, size)

    report = check_floating_point(naive, 0.0, 1.0, 1.0, samples=50_000, seed=1)
    assert report.flagged
    assert report.only_on_a  # outputs of 0 + n near zero have finer granularity than any output of 1 + n
    assert report.share_only_on_a > 0.1


def test_dpcert_floating_point_laplace_is_flagged_on_non_dyadic_inputs():
    mechanism = calibrate_laplace(1.0).mechanism()  # the textbook sampler (documented as such)
    report = check_floating_point(mechanism, 0.3, 1.7, 1.4, samples=50_000, seed=2)
    assert report.flagged


@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_integer_exact_discrete_laplace_passes(epsilon):
    p = -math.expm1(-epsilon)

    def discrete_laplace(value, rng, size):  # difference of two geometrics: exact two-sided geometric
        return value + rng.geometric(p, size) - rng.geometric(p, size)

    report = check_floating_point(discrete_laplace, 0, 1, epsilon, samples=50_000, seed=3)
    assert not report.flagged  # a correct mechanism is flagged with probability <= 0.05
    assert report.audit.epsilon_lower_bound <= epsilon


def test_non_numeric_outputs_are_refused():
    with pytest.raises(InvalidParameter):
        lowest_bit_exponent(np.array(["a", "b"]))
    with pytest.raises(InvalidParameter):
        lowest_bit_exponent([1.0, math.inf])
