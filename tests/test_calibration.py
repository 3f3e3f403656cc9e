"""Calibration: validity, tightness against an independent bisection, monotonicity."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from dpcert import DPCertError
from dpcert.mechanisms.gaussian import calibrate_gaussian


def exact_minimum_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Independent reference: root of Balle & Wang's Thm 8 written with scipy.stats.norm directly."""

    def excess(sigma: float) -> float:
        a = sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
        b = -sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
        return stats.norm.cdf(a) - math.exp(epsilon) * stats.norm.cdf(b) - delta

    return optimize.bisect(excess, 1e-3, 1e4, xtol=1e-13, maxiter=500)


def test_reference_value_epsilon_one_delta_1e5():
    result = calibrate_gaussian(1.0, 1e-5)
    assert result.sigma == pytest.approx(3.7306, abs=5e-5)  # Balle & Wang 2018, Table/Fig. 1 value
    assert result.sigma == pytest.approx(exact_minimum_sigma(1.0, 1e-5), rel=1e-3)
    assert result.certificate.delta_for(1.0) <= 1e-5


@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-6), (0.5, 1e-3), (2.0, 1e-8), (8.0, 1e-5)])
def test_sigma_valid_and_within_a_tenth_of_a_percent(epsilon, delta):
    result = calibrate_gaussian(epsilon, delta)
    reference = exact_minimum_sigma(epsilon, delta)
    assert result.certificate.delta_for(epsilon) <= delta
    assert result.sigma == pytest.approx(reference, rel=1e-3)
    assert result.sigma >= reference * (1 - 1e-9)


def test_compositions_scale_sigma_by_sqrt_k():
    single = calibrate_gaussian(1.0, 1e-5).sigma
    assert calibrate_gaussian(1.0, 1e-5, compositions=25).sigma == pytest.approx(5 * single, rel=1e-9)


def test_classical_method_is_looser_than_analytic():
    classical = calibrate_gaussian(0.5, 1e-5, method="classical")
    analytic = calibrate_gaussian(0.5, 1e-5)
    assert classical.sigma == pytest.approx(math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5)
    assert classical.sigma > analytic.sigma
    assert classical.certificate.basis.startswith("Dwork & Roth")
    with pytest.raises(DPCertError, match="epsilon < 1"):
        calibrate_gaussian(1.0, 1e-5, method="classical")


@given(st.floats(0.05, 10.0), st.floats(1e-10, 0.1), st.floats(0.1, 10.0))
@settings(max_examples=100, deadline=None)
def test_sigma_decreases_in_epsilon_and_delta(epsilon, delta, sensitivity):
    base = calibrate_gaussian(epsilon, delta, sensitivity=sensitivity).sigma
    assert calibrate_gaussian(epsilon * 1.1, delta, sensitivity=sensitivity).sigma <= base
    assert calibrate_gaussian(epsilon, delta * 1.1, sensitivity=sensitivity).sigma <= base
    assert calibrate_gaussian(epsilon, delta, sensitivity=2 * sensitivity).sigma == pytest.approx(
        2 * base, rel=1e-9
    )


bad_numbers = st.one_of(
    st.just(float("nan")),
    st.just(float("inf")),
    st.just(-float("inf")),
    st.floats(max_value=0.0),
    st.booleans(),
)


@given(bad_numbers)
@settings(max_examples=50, deadline=None)
def test_bad_epsilon_always_raises(epsilon):
    with pytest.raises(DPCertError):
        calibrate_gaussian(epsilon, 1e-5)


@given(st.one_of(st.just(float("nan")), st.floats(max_value=0.0), st.floats(min_value=1.0)))
@settings(max_examples=50, deadline=None)
def test_bad_delta_always_raises(delta):
    with pytest.raises(DPCertError):
        calibrate_gaussian(1.0, delta)


@pytest.mark.parametrize(
    "kwargs",
    [{"sensitivity": 0}, {"sensitivity": -2}, {"compositions": 0}, {"compositions": 1.5}, {"method": "fast"}],
)
def test_bad_options_raise(kwargs):
    with pytest.raises(DPCertError):
        calibrate_gaussian(1.0, 1e-5, **kwargs)
