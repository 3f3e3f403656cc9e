"""Discrete Laplace: exact profile against brute-force summation of the two PMFs, sampler law."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcert import DPCertError
from dpcert.mechanisms.discrete_laplace import (
    DiscreteLaplaceMechanism,
    DiscreteLaplaceProfile,
    discrete_laplace_certificate,
)


def brute_force_delta(epsilon: float, a: float, shift: int, radius: int = 4000) -> float:
    """Σ_x max(0, p(x) − e^ε p(x − Δ)) over a wide integer window (tails beyond it are < 1e-300)."""
    x = np.arange(-radius, radius + 1)
    p = math.tanh(a / 2) * np.exp(-a * np.abs(x))
    q = math.tanh(a / 2) * np.exp(-a * np.abs(x - shift))
    return float(np.sum(np.maximum(0.0, p - math.exp(epsilon) * q)))


@pytest.mark.parametrize(
    "epsilon, a, shift",
    [(0.0, 0.5, 1), (0.2, 0.5, 1), (0.5, 0.3, 3), (1.0, 0.1, 20), (0.0, 1.0, 5), (2.9, 0.6, 5)],
)
def test_profile_matches_brute_force(epsilon, a, shift):
    profile = DiscreteLaplaceProfile({"noise_parameter": a, "sensitivity": shift})
    exact = brute_force_delta(epsilon, a, shift)
    assert profile.delta_for(epsilon) == pytest.approx(exact, rel=1e-10, abs=1e-15)
    assert profile.delta_for(epsilon) >= exact


def test_pure_epsilon_and_inverse():
    mechanism = DiscreteLaplaceMechanism.for_epsilon(1.0, sensitivity=4)
    assert mechanism.noise_parameter * 4 <= 1.0
    assert mechanism.certificate.epsilon == pytest.approx(1.0)
    certificate = discrete_laplace_certificate(0.25, sensitivity=4, delta=0.05)
    assert certificate.delta_for(certificate.epsilon) <= 0.05
    assert certificate.epsilon < 1.0


def test_pld_from_dp_accounting_is_consistent():
    from dp_accounting.pld import pld_privacy_accountant

    certificate = discrete_laplace_certificate(0.5, sensitivity=2, delta=1e-3)
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(certificate.to_dp_event())
    assert accountant.get_epsilon(1e-3) == pytest.approx(certificate.epsilon, abs=2e-3)


def test_sampler_matches_pmf():
    mechanism = DiscreteLaplaceMechanism.for_epsilon(0.7)
    draws = mechanism(0, np.random.default_rng(11), size=200_000)
    assert draws.dtype.kind == "i"
    support = np.arange(-6, 7)
    observed = np.array([(draws == x).sum() for x in support] + [(np.abs(draws) > 6).sum()])
    a = mechanism.noise_parameter
    probabilities = math.tanh(a / 2) * np.exp(-a * np.abs(support))
    expected = np.append(probabilities, 1 - probabilities.sum()) * draws.size
    # Chi-square goodness of fit; false-positive rate 1e-3.
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_non_integer_values_are_refused():
    mechanism = DiscreteLaplaceMechanism.for_epsilon(1.0)
    with pytest.raises(DPCertError, match="integers"):
        mechanism(0.5, np.random.default_rng(0))
    with pytest.raises(DPCertError, match="sensitivity"):
        DiscreteLaplaceMechanism.for_epsilon(1.0, sensitivity=1.5)
