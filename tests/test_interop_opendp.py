"""OpenDP measurements in: certificates that match their privacy maps; zCDP against independent curves."""

from __future__ import annotations

import math

import mpmath
import pytest

from dpcert import Certificate
from dpcert.errors import InvalidParameter
from dpcert.interop.opendp import certificate_from_opendp
from dpcert.mechanisms.zcdp import ZCDPProfile
from dpcert.theory.gaussian import gaussian_delta
from dpcert.theory.zcdp import log_delta_at_order, zcdp_delta


@pytest.mark.parametrize("rho", [0.001, 0.125, 1.0, 8.0])
@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0, 4.0])
def test_zcdp_profile_dominates_the_gaussian_it_describes(rho, epsilon):
    # N(0, sigma^2) with sensitivity 1 is rho-zCDP for rho = 1/(2 sigma^2) (Bun & Steinke 2016, Prop. 1.6),
    # and its exact profile has mu = 1/sigma = sqrt(2 rho): the generic zCDP bound can never be below it.
    assert zcdp_delta(epsilon, rho) >= gaussian_delta(epsilon, math.sqrt(2 * rho))


def test_zcdp_profile_is_the_infimum_over_orders():
    # a grid search over alpha at 40 digits, independent of the bounded search in zcdp_delta
    rho, epsilon = 0.125, 2.0
    with mpmath.workdps(40):
        best = min(
            mpmath.exp((a - 1) * (a * rho - epsilon)) / a * (1 - 1 / a) ** (a - 1)
            for a in (1 + mpmath.mpf(i) / 200 for i in range(1, 6000))
        )
    value = zcdp_delta(epsilon, rho)
    assert value >= best * (1 - 1e-4)  # the grid's minimum is within its step of the true infimum
    assert value <= best * (1 + 1e-6)
    assert math.isclose(
        log_delta_at_order(3.0, rho, epsilon),
        float(mpmath.log(mpmath.exp(2 * (3 * rho - epsilon)) / 3 * (mpmath.mpf(2) / 3) ** 2)),
        rel_tol=1e-12,
    )


def test_zcdp_epsilon_for_is_a_safe_inverse():
    profile = ZCDPProfile({"rho": 0.5})
    for delta in (1e-15, 1e-9, 1e-5, 0.1):
        epsilon = profile.epsilon_for(delta)
        assert profile.delta_for(epsilon) <= delta
        assert profile.delta_for(epsilon * (1 - 1e-6)) > delta


opendp = pytest.importorskip("opendp.prelude")


@pytest.fixture(scope="module")
def dp():
    opendp.enable_features("contrib")
    return opendp


def test_laplace_measurement_certificate_matches_its_privacy_map(dp):
    measurement = dp.m.make_laplace(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=2.0
    )
    certificate = certificate_from_opendp(measurement, 1.0)
    assert certificate.epsilon == measurement.map(1.0) == 0.5 and certificate.delta == 0.0
    assert "OpenDP" in certificate.basis
    assert Certificate.from_json(certificate.to_json()) == certificate
    assert certificate_from_opendp(measurement, 3.0).epsilon == measurement.map(3.0)


def test_gaussian_measurement_zcdp_and_approximate_agree_with_opendp(dp):
    gaussian = dp.m.make_gaussian(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=2.0
    )
    zcdp = certificate_from_opendp(gaussian, 1.0, delta=1e-5)
    assert zcdp.mechanism == "zcdp" and zcdp.parameters["rho"] == gaussian.map(1.0)
    # OpenDP converts zCDP with the same Canonne-Kamath-Steinke bound: the same epsilon to 1e-6
    converted = dp.c.make_zCDP_to_approxDP(gaussian)
    assert zcdp.epsilon == pytest.approx(converted.map(1.0).epsilon(1e-5), rel=1e-6)
    smoothed = certificate_from_opendp(converted, 1.0, delta=1e-5)
    assert smoothed.epsilon == converted.map(1.0).epsilon(1e-5) and smoothed.delta == 1e-5
    fixed = certificate_from_opendp(dp.c.make_fix_delta(converted, 1e-5), 1.0)
    assert fixed.epsilon == converted.map(1.0).epsilon(1e-5) and fixed.delta == 1e-5
    with pytest.raises(InvalidParameter, match="delta"):
        certificate_from_opendp(gaussian, 1.0)
    with pytest.raises(InvalidParameter, match="measurement"):
        certificate_from_opendp(object(), 1.0)
