"""Gaussian mechanism: exact profile against an independent integration of the privacy-loss density."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from dpcert import DPCertError, Guarantee
from dpcert.certificates import Certificate
from dpcert.mechanisms.gaussian import GaussianMechanism, classical_sigma, gaussian_certificate
from dpcert.theory.gaussian import gaussian_delta, gaussian_epsilon


def delta_by_integration(epsilon: float, sigma: float, sensitivity: float) -> float:
    """∫ max(0, p(x) − e^ε q(x)) dx for p = N(0, σ²), q = N(Δ, σ²), by adaptive quadrature."""
    # The integrand is positive exactly where x < Δ/2 − ε σ²/Δ.
    boundary = sensitivity / 2.0 - epsilon * sigma**2 / sensitivity

    def integrand(x: float) -> float:
        return stats.norm.pdf(x, 0, sigma) - math.exp(epsilon) * stats.norm.pdf(x, sensitivity, sigma)

    value, error = integrate.quad(integrand, -np.inf, boundary, epsabs=1e-14, epsrel=1e-10, limit=200)
    return value


@pytest.mark.parametrize(
    "epsilon, sigma, sensitivity",
    [(0.1, 5.0, 1.0), (1.0, 3.7306, 1.0), (2.0, 1.0, 1.0), (0.5, 10.0, 3.0), (4.0, 0.5, 1.0)],
)
def test_profile_matches_numerical_integration(epsilon, sigma, sensitivity):
    exact = gaussian_delta(epsilon, sensitivity / sigma)
    integrated = delta_by_integration(epsilon, sigma, sensitivity)
    assert exact == pytest.approx(integrated, rel=1e-6, abs=1e-15)
    assert exact >= integrated * (1 - 1e-9)  # never optimistic beyond quadrature error


def test_epsilon_for_inverts_delta_for_on_the_safe_side():
    mu = 0.5
    for delta in (1e-3, 1e-6, 1e-10):
        epsilon = gaussian_epsilon(delta, mu)
        assert gaussian_delta(epsilon, mu) <= delta
        assert gaussian_delta(epsilon * (1 - 1e-6), mu) > delta


@given(
    st.floats(0.05, 20.0),
    st.floats(0.1, 50.0),
    st.floats(0.0, 5.0),
)
@settings(max_examples=200, deadline=None)
def test_profile_is_monotone_in_epsilon_and_sigma(sigma, sensitivity, epsilon):
    mu = sensitivity / sigma
    assert gaussian_delta(epsilon + 0.01, mu) <= gaussian_delta(epsilon, mu)
    assert gaussian_delta(epsilon, sensitivity / (sigma * 1.01)) <= gaussian_delta(epsilon, mu)


def test_composition_equals_one_gaussian_with_sqrt_k_sensitivity():
    composed = gaussian_certificate(10.0, delta=1e-5, compositions=100)
    single = gaussian_certificate(1.0, delta=1e-5)
    assert composed.epsilon == pytest.approx(single.epsilon, rel=1e-12)


def test_dp_event_matches_dp_accounting_pld():
    from dp_accounting.pld import pld_privacy_accountant

    certificate = gaussian_certificate(2.0, delta=1e-5, compositions=10)
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(certificate.to_dp_event())
    # dp_accounting's PLD is pessimistic, so it can only be (slightly) above the exact value.
    assert accountant.get_epsilon(1e-5) == pytest.approx(certificate.epsilon, rel=2e-3)
    assert accountant.get_epsilon(1e-5) >= certificate.epsilon


def test_classical_is_valid_but_looser_and_refused_at_epsilon_one():
    sigma = classical_sigma(0.5, 1e-5)
    certificate = gaussian_certificate(sigma, epsilon=0.5, delta=1e-5)
    assert certificate.delta_for(0.5) <= 1e-5
    with pytest.raises(DPCertError, match="analytic"):
        classical_sigma(1.0, 1e-5)


def test_mechanism_samples_with_the_certified_sigma():
    certificate = gaussian_certificate(2.0, delta=1e-5)
    mechanism = GaussianMechanism(2.0, certificate)
    rng = np.random.default_rng(7)
    draws = mechanism(np.array([1.0, -1.0]), rng, size=50_000)
    assert draws.shape == (50_000, 2)
    # Chi-square test of the variance of the first coordinate (false-positive rate 1e-3).
    n = draws.shape[0]
    statistic = (n - 1) * draws[:, 0].var(ddof=1) / 4.0
    p_value = 2 * min(stats.chi2.cdf(statistic, n - 1), stats.chi2.sf(statistic, n - 1))
    assert p_value > 1e-3
    assert isinstance(mechanism(0.0, rng), float)


def test_tampered_certificate_is_rejected():
    certificate = gaussian_certificate(2.0, delta=1e-5)
    data = certificate.to_dict()
    data["guarantee"]["epsilon"] = certificate.epsilon / 2
    with pytest.raises(DPCertError, match="only give"):
        Certificate.from_dict(data)
    assert Certificate.from_dict(data, verify=False).guarantee == Guarantee(certificate.epsilon / 2, 1e-5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sigma": 0.0, "delta": 1e-5},
        {"sigma": -1.0, "delta": 1e-5},
        {"sigma": float("nan"), "delta": 1e-5},
        {"sigma": float("inf"), "delta": 1e-5},
        {"sigma": 1.0, "delta": 1.0},
        {"sigma": 1.0, "delta": -0.1},
        {"sigma": 1.0, "delta": 0.0},
        {"sigma": 1.0, "delta": 1e-5, "compositions": 0},
        {"sigma": 1.0, "delta": 1e-5, "compositions": 2.5},
        {"sigma": 1.0, "delta": 1e-5, "sensitivity": 0.0},
        {"sigma": 1.0},
    ],
)
def test_bad_inputs_raise(kwargs):
    sigma = kwargs.pop("sigma")
    with pytest.raises(DPCertError):
        gaussian_certificate(sigma, **kwargs)
