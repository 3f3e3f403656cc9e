"""dp_accounting events in, re-verifiable certificates out, checked against independent references."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld

from dpcert import Certificate
from dpcert.errors import InvalidParameter
from dpcert.interop.dp_accounting import certificate_from_dp_event
from dpcert.mechanisms.randomized_response import RandomizedResponseProfile


def _gaussian_epsilon_reference(mu: float, delta: float) -> float:
    """Balle & Wang 2018 Thm 8 inverted by bisection at 40 digits."""
    with mpmath.workdps(40):

        def excess(e):
            return mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu) - delta

        return float(mpmath.findroot(excess, (0, 50), solver="bisect", tol=1e-30))


def test_gaussian_event_is_the_exact_gaussian():
    certificate = certificate_from_dp_event(
        dp_event.GaussianDpEvent(1.0), delta=1e-5, neighbouring="add/remove"
    )
    reference = _gaussian_epsilon_reference(1.0, 1e-5)
    assert round(reference, 4) == 4.3772  # the value the analytic Gaussian gives at sigma 1, delta 1e-5
    assert reference <= certificate.epsilon <= reference * (1 + 1e-9)
    assert Certificate.from_json(certificate.to_json()) == certificate


def test_self_composed_gaussian_is_one_gaussian_with_sqrt_n_sensitivity():
    event = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(10.0), 100)
    certificate = certificate_from_dp_event(event, delta=1e-5, neighbouring="add/remove")
    reference = _gaussian_epsilon_reference(math.sqrt(100) / 10.0, 1e-5)
    assert reference <= certificate.epsilon <= reference * (1 + 1e-6)


def test_laplace_and_discrete_laplace_events_are_pure():
    laplace = certificate_from_dp_event(dp_event.LaplaceDpEvent(2.0), neighbouring="add/remove")
    assert laplace.delta == 0.0 and laplace.epsilon == 0.5
    discrete = certificate_from_dp_event(dp_event.DiscreteLaplaceDpEvent(0.25, 3), neighbouring="add/remove")
    assert discrete.delta == 0.0 and discrete.epsilon == 0.75


@pytest.mark.parametrize(("p", "k"), [(0.5, 2), (0.2, 2), (0.9, 5), (0.05, 10), (1.0, 3)])
def test_randomized_response_profile_matches_the_output_laws(p, k):
    profile = RandomizedResponseProfile({"noise_parameter": p, "buckets": k})
    upper = np.full(k, p / k)
    upper[0] += 1 - p
    lower = np.full(k, p / k)
    lower[1] += 1 - p
    for epsilon in np.linspace(0.0, profile.pure_epsilon * 1.2 + 0.1, 25):
        with mpmath.workdps(30):
            true = sum(
                max(mpmath.mpf(0), mpmath.mpf(a) - mpmath.exp(epsilon) * mpmath.mpf(b))
                for a, b in zip(upper, lower, strict=True)
            )
        claimed = profile.delta_for(float(epsilon))
        assert claimed >= true
        assert claimed <= true + 1e-15
    # the pure epsilon is ln(1 + k(1-p)/p), rounded up
    assert profile.pure_epsilon >= float(mpmath.log(1 + k * (1 - mpmath.mpf(p)) / p))


def test_randomized_response_agrees_with_dp_accountings_pld():
    event = dp_event.RandomizedResponseDpEvent(noise_parameter=0.3, num_buckets=4)
    certificate = certificate_from_dp_event(event, trust_model="local")
    reference = pld.from_randomized_response(
        0.3, 4, pessimistic_estimate=True, value_discretization_interval=1e-6
    )
    for epsilon in (0.1, 0.5, 1.0, 2.0):
        # the PLD is pessimistic: never below the exact profile, close to it at a fine grid
        assert certificate.delta_for(epsilon) <= reference.get_delta_for_epsilon(epsilon) + 1e-12
        assert certificate.delta_for(epsilon) == pytest.approx(
            reference.get_delta_for_epsilon(epsilon), abs=1e-5
        )


def test_composed_event_is_a_valid_composition():
    event = dp_event.ComposedDpEvent([dp_event.LaplaceDpEvent(10.0), dp_event.GaussianDpEvent(5.0)])
    certificate = certificate_from_dp_event(event, delta=1e-6)
    assert certificate.delta_for(certificate.epsilon) <= 1e-6
    # never below the Gaussian part alone nor the Laplace part's pure epsilon alone
    assert certificate.epsilon >= _gaussian_epsilon_reference(0.2, 1e-6)
    assert certificate.epsilon >= 0.1
    assert Certificate.from_json(certificate.to_json()).guarantee == certificate.guarantee


def test_no_op_event_is_zero_with_its_reason_and_unprovable_events_are_refused():
    nothing = certificate_from_dp_event(dp_event.NoOpDpEvent())
    assert nothing.epsilon == 0.0 and nothing.delta == 0.0
    assert "releases nothing" in nothing.parameters["zero_loss_reason"]
    for event in (
        dp_event.NonPrivateDpEvent(),
        dp_event.PoissonSampledDpEvent(0.01, dp_event.LaplaceDpEvent(1.0)),
    ):
        with pytest.raises(InvalidParameter, match="event"):
            certificate_from_dp_event(event, delta=1e-5)
    with pytest.raises(InvalidParameter, match="delta"):
        certificate_from_dp_event(dp_event.GaussianDpEvent(1.0))  # an approximate-DP event needs its delta
    with pytest.raises(InvalidParameter, match="neighbouring"):
        certificate_from_dp_event(dp_event.LaplaceDpEvent(1.0), neighbouring="user-level")
