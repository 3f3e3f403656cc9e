"""Laplace mechanism: closed forms and the exact profile against numerical integration."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from dpcert import DPCertError
from dpcert.mechanisms.laplace import LaplaceMechanism, LaplaceProfile, calibrate_laplace, laplace_certificate


def delta_by_integration(epsilon: float, scale: float, sensitivity: float) -> float:
    """∫ max(0, p(x) − e^ε q(x)) dx for p = Lap(0, b), q = Lap(Δ, b), split at the kinks."""

    def integrand(x: float) -> float:
        return max(
            0.0, stats.laplace.pdf(x, 0, scale) - math.exp(epsilon) * stats.laplace.pdf(x, sensitivity, scale)
        )

    pieces = [(-np.inf, 0.0), (0.0, sensitivity), (sensitivity, np.inf)]
    return sum(integrate.quad(integrand, a, b, epsabs=1e-13, limit=200)[0] for a, b in pieces)


@pytest.mark.parametrize(
    "epsilon, scale, sensitivity", [(0.0, 1.0, 1.0), (0.3, 1.0, 1.0), (0.9, 0.5, 1.0), (0.5, 4.0, 3.0)]
)
def test_profile_matches_numerical_integration(epsilon, scale, sensitivity):
    profile = LaplaceProfile({"scale": scale, "sensitivity": sensitivity})
    assert profile.delta_for(epsilon) == pytest.approx(
        delta_by_integration(epsilon, scale, sensitivity), rel=1e-7, abs=1e-12
    )


def test_pure_epsilon_is_sensitivity_over_scale():
    for epsilon, sensitivity in [(1.0, 1.0), (0.1, 2.0), (3.0, 0.7), (1 / 3, 1.0)]:
        result = calibrate_laplace(epsilon, sensitivity=sensitivity)
        assert result.scale == pytest.approx(sensitivity / epsilon, rel=1e-15)
        assert Fraction(sensitivity) / Fraction(result.scale) <= Fraction(epsilon)  # exact arithmetic
        assert Fraction(sensitivity) / Fraction(math.nextafter(result.scale, 0.0)) > Fraction(
            epsilon
        )  # least
        assert result.certificate.delta == 0.0
        assert result.certificate.delta_for(epsilon) == 0.0


@given(st.floats(0.01, 10.0), st.floats(0.01, 10.0), st.floats(1e-12, 0.99))
@settings(max_examples=200, deadline=None)
def test_epsilon_for_inverts_delta_for(scale, sensitivity, delta):
    profile = LaplaceProfile({"scale": scale, "sensitivity": sensitivity})
    epsilon = profile.epsilon_for(delta)
    assert 0.0 <= epsilon <= sensitivity / scale
    assert profile.delta_for(epsilon) <= delta
    if epsilon > 1e-9:
        assert profile.delta_for(epsilon * (1 - 1e-6)) > delta


def test_dp_event_is_dp_accountings_laplace():
    from dp_accounting import dp_event

    event = laplace_certificate(2.0, sensitivity=1.0).to_dp_event()
    assert event == dp_event.LaplaceDpEvent(noise_multiplier=2.0)


def test_mechanism_noise_scale():
    result = calibrate_laplace(0.5)
    mechanism = LaplaceMechanism(result.scale, result.certificate)
    draws = mechanism(np.zeros(3), np.random.default_rng(3), size=40_000)
    assert draws.shape == (40_000, 3)
    # Kolmogorov–Smirnov against Lap(0, 2); false-positive rate 1e-3.
    assert stats.kstest(draws[:, 0], stats.laplace(scale=2.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("inf"), float("nan"), "1", True])
def test_bad_epsilon_raises(epsilon):
    with pytest.raises(DPCertError, match="epsilon"):
        calibrate_laplace(epsilon)


def test_mismatched_certificate_is_refused():
    certificate = laplace_certificate(1.0)
    with pytest.raises(DPCertError):
        LaplaceMechanism(2.0, certificate)
    with pytest.raises(DPCertError, match="rng"):
        LaplaceMechanism(1.0, certificate)(0.0, 42)
    with pytest.raises(DPCertError, match="value"):
        LaplaceMechanism(1.0, certificate)(float("nan"), np.random.default_rng(0))
