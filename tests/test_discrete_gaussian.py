"""The discrete Gaussian's profile against an independent summation, its calibration and composition."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpcert import Certificate
from dpcert.errors import CertificateMismatch, InvalidParameter
from dpcert.mechanisms.discrete_gaussian import (
    DiscreteGaussianMechanism,
    DiscreteGaussianProfile,
    calibrate_discrete_gaussian,
    discrete_gaussian_certificate,
    discrete_gaussian_delta,
)
from dpcert.theory.gaussian import analytic_gaussian_sigma


def reference_delta(epsilon: float, sigma: float, shift: int) -> mpmath.mpf:
    """Σ_y max(0, P(y) − e^ε P(y − Δ)) over |y| <= 40σ + 10 + Δ, in 50-digit arithmetic (mpmath).

    The mass beyond 40σ is below e^-800 of the total, far under the 1e-12 tolerance.
    """
    with mpmath.workdps(50):
        variance = mpmath.mpf(sigma) ** 2
        eps = mpmath.mpf(epsilon)
        reach = int(40 * sigma) + 10 + shift
        weights = {
            y: mpmath.exp(-(mpmath.mpf(y) ** 2) / (2 * variance)) for y in range(-reach - shift, reach + 1)
        }
        normaliser = mpmath.fsum(weights[y] for y in range(-reach, reach + 1))
        excess = mpmath.fsum(
            max(weights[y] - mpmath.exp(eps) * weights[y - shift], 0) for y in range(-reach, reach + 1)
        )
        return excess / normaliser


GRID = [
    (1.0, 3.7, 1),
    (0.5, 10.0, 1),
    (2.0, 1.3, 2),
    (0.1, 0.6, 1),
    (0.01, 5.0, 1),
    (1.0, 30.0, 3),
    (3.0, 2.0, 1),
    (0.3, 4.25, 5),
    (0.0, 2.0, 1),
    (0.05, 200.0, 1),
    (5.0, 1.0, 1),
    (0.0, 0.3, 1),
    (1.0, 0.125, 1),
    (10.0, 0.5, 2),
    (0.5, 3.0, 40),
]


@pytest.mark.parametrize("epsilon, sigma, shift", GRID)
def test_profile_matches_an_independent_summation(epsilon, sigma, shift):
    computed = discrete_gaussian_delta(epsilon, sigma, shift)
    exact = reference_delta(epsilon, sigma, shift)
    assert computed >= exact  # an upper bound ...
    assert float((computed - exact) / exact) <= 1e-12  # ... within 1e-12 relative


def test_profile_agrees_with_cks_theorem_7_tail_form():
    # δ = P[X > εσ²/Δ − Δ/2] − e^ε P[X > εσ²/Δ + Δ/2] for X ~ N_Z(0, σ²) (CKS 2020, Thm 7), by direct sums.
    epsilon, sigma, shift = 0.7, 6.0, 2
    y = np.arange(-400, 401, dtype=float)
    pmf = np.exp(-(y**2) / (2 * sigma**2))
    pmf /= pmf.sum()
    first = pmf[y > epsilon * sigma**2 / shift - shift / 2].sum()
    second = pmf[y > epsilon * sigma**2 / shift + shift / 2].sum()
    expected = first - math.exp(epsilon) * second
    assert discrete_gaussian_delta(epsilon, sigma, shift) == pytest.approx(expected, rel=1e-10)


def test_largest_shift_dominates_smaller_ones():
    for epsilon in (0.0, 0.3, 1.0, 2.5):
        deltas = [discrete_gaussian_delta(epsilon, 2.5, shift) for shift in (1, 2, 3, 4)]
        assert deltas == sorted(deltas)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
def test_calibration_returns_the_least_sigma(epsilon, delta):
    result = calibrate_discrete_gaussian(epsilon, delta)
    assert discrete_gaussian_delta(epsilon, result.sigma) <= delta
    assert discrete_gaussian_delta(epsilon, result.sigma * (1 - 1e-9)) > delta
    assert result.certificate.epsilon == epsilon and result.certificate.delta == delta
    # the continuous analytic Gaussian's sigma is a sanity anchor: same order, within 5 %
    assert result.sigma == pytest.approx(analytic_gaussian_sigma(epsilon, delta), rel=0.05)


def exact_composed_delta(epsilon: float, sigma: float, k: int) -> float:
    """δ of k releases at shift 1: the loss is affine in S = Σ Y_i, S's PMF by direct convolution."""
    reach = int(30 * sigma) + 5
    y = np.arange(-reach, reach + 1)
    pmf = np.exp(-(y.astype(float) ** 2) / (2 * sigma**2))
    pmf /= pmf.sum()
    total = np.array([1.0])
    for _ in range(k):
        total = np.convolve(total, pmf)
    s = np.arange(-k * reach, k * reach + 1, dtype=float)
    loss = (k - 2.0 * s) / (2 * sigma**2)
    return float(np.sum(np.where(loss > epsilon, total * -np.expm1(epsilon - loss), 0.0)))


@pytest.mark.parametrize("epsilon", [0.5, 1.5])
def test_composition_bounds_the_exact_k_fold_profile(epsilon):
    sigma, k = 3.0, 4
    profile = DiscreteGaussianProfile({"sigma": sigma, "compositions": k})
    exact = exact_composed_delta(epsilon, sigma, k)
    bound = profile.delta_for(epsilon)
    assert exact <= bound <= exact * 1.02 + 1e-12


def test_single_release_composition_with_pld_is_consistent():
    profile = DiscreteGaussianProfile({"sigma": 4.0})
    from dpcert.theory.pld import ComposedLossBound

    pmf = profile.single_release_loss_pmf(1e-4)
    single = ComposedLossBound([(pmf, 1)])
    for epsilon in (0.2, 0.8):
        exact = profile.delta_for(epsilon)
        assert exact <= single.delta_for(epsilon)
        assert single.delta_for(epsilon) <= exact * 1.01 + 1e-12


def test_certificate_round_trip_and_tamper_detection():
    certificate = discrete_gaussian_certificate(5.0, delta=1e-6, sensitivity=2)
    again = Certificate.from_json(certificate.to_json())
    assert again == certificate and again.parameters["sampler"] == "integer-exact"
    assert certificate.epsilon_for(1e-6) == certificate.epsilon
    tampered = certificate.to_dict()
    tampered["guarantee"]["epsilon"] = certificate.epsilon * 0.9
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(tampered)


def test_mechanism_releases_integers_reproducibly():
    result = calibrate_discrete_gaussian(1.0, 1e-5)
    mechanism = DiscreteGaussianMechanism(result.sigma, result.certificate, secure=False)
    first = mechanism(np.array([3, -2]), np.random.default_rng(7), size=200)
    second = mechanism(np.array([3, -2]), np.random.default_rng(7), size=200)
    assert first.shape == (200, 2) and first.dtype == np.int64 and np.array_equal(first, second)
    assert isinstance(DiscreteGaussianMechanism(result.sigma, result.certificate)(4, None), int)


@pytest.mark.parametrize(
    "call",
    [
        lambda: calibrate_discrete_gaussian(0.0, 1e-5),
        lambda: calibrate_discrete_gaussian(1.0, 0.0),
        lambda: calibrate_discrete_gaussian(1.0, 1e-5, sensitivity=1.5),
        lambda: calibrate_discrete_gaussian(1.0, 1e-5, compositions=0),
        lambda: discrete_gaussian_certificate(-1.0, delta=1e-5),
        lambda: discrete_gaussian_delta(-0.1, 2.0),
        lambda: DiscreteGaussianMechanism(2.0, discrete_gaussian_certificate(3.0, delta=1e-3)),
        lambda: DiscreteGaussianMechanism(3.0, discrete_gaussian_certificate(3.0, delta=1e-3))(0.5, None),
    ],
)
def test_invalid_input_is_refused(call):
    with pytest.raises(InvalidParameter):
        call()


@pytest.mark.parametrize(
    "epsilon, sigma, shift", [(0.1, 300.0, 2), (0.01, 20.0, 1), (2.0, 3.0, 1), (0.3, 4.25, 5)]
)
def test_wide_noise_bound_is_above_the_sum(epsilon, sigma, shift):
    from fractions import Fraction

    from dpcert.mechanisms.discrete_gaussian import _delta_from_cdf_bounds

    top = math.ceil(Fraction(shift) / 2 - Fraction(sigma) ** 2 * Fraction(epsilon) / shift) - 1
    assert _delta_from_cdf_bounds(epsilon, sigma, shift, top) >= discrete_gaussian_delta(
        epsilon, sigma, shift
    )


def test_very_wide_noise_is_bounded_close_to_the_continuous_gaussian():
    from dpcert.theory.gaussian import gaussian_delta

    # σ = 2^21 at ε = 1e-6 would need about 10^7 terms: the CDF bound is used (the two mechanisms agree
    # to O(1/σ) there).
    bound = discrete_gaussian_delta(1e-6, 2.0**21)
    continuous = gaussian_delta(1e-6, 2.0**-21)
    assert bound == pytest.approx(continuous, rel=1e-4)
