"""The release-time term in the certificates of the integer-exact mechanisms.

A release by the fixed-work samplers is within total variation p (the sampler's
``timing_failure``) of one whose duration reveals nothing, so (output, time) is
(ε, δ_out(ε) + (1 + e^ε) p)-DP (Jin, McMurtry, Rubinstein & Ohrimenko 2022).  Each test rebuilds
δ_out(ε) from the output's profile and p from the sampler, and compares exactly (``Fraction``).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from dpcert import Certificate, compose
from dpcert.bandits.algorithms.mab import CentralLaplaceSum
from dpcert.bandits.registry import RunConfig
from dpcert.bandits.runner import run_mab
from dpcert.errors import CertificateFormatError, InvalidParameter
from dpcert.mechanisms.discrete_gaussian import (
    DiscreteGaussianMechanism,
    DiscreteGaussianProfile,
    calibrate_discrete_gaussian,
    discrete_gaussian_certificate,
)
from dpcert.mechanisms.discrete_gaussian_l2 import DiscreteGaussianL2Profile, secure_l2_gaussian
from dpcert.mechanisms.discrete_laplace import (
    DiscreteLaplaceMechanism,
    DiscreteLaplaceProfile,
    discrete_laplace_certificate,
)
from dpcert.mechanisms.secure.samplers import MAX_DRAWS_PER_CALL, timing_failure


def term(epsilon: float, failure: float) -> Fraction:
    """(1 + e^ε) p from its parts, a lower bound: e^ε as a float is within a relative 2^-52."""
    return Fraction(1.0 + math.exp(epsilon)) * Fraction(failure) * (1 - Fraction(1, 2**50))


def covers(delta: float, output_delta: float, epsilon: float, failure: float) -> bool:
    return Fraction(delta) >= Fraction(output_delta) + term(epsilon, failure)


def test_secure_discrete_laplace_adds_the_term_per_release_of_its_coordinates() -> None:
    mechanism = DiscreteLaplaceMechanism.for_epsilon(0.75, 2, secure=True, dimension=3)
    certificate = mechanism.certificate
    a = mechanism.noise_parameter
    assert certificate.epsilon == 0.75  # the output's pure ε = aΔ, not raised
    output = DiscreteLaplaceProfile({"noise_parameter": a, "sensitivity": 2}).delta_for(certificate.epsilon)
    assert output == 0.0
    failure = timing_failure("discrete-laplace", 1 / Fraction(a), 3)
    assert 3 * timing_failure("discrete-laplace", 1 / Fraction(a), 1) <= failure * (1 + 1e-15)
    assert covers(certificate.delta, output, certificate.epsilon, failure)
    assert 0.0 < certificate.delta < 1e-30  # the term only: tiny, but claimed
    assert any(note.startswith("release time:") for note in certificate.notes)
    # a certificate that already claims the term is not charged twice
    again = DiscreteLaplaceMechanism(a, certificate, True, 3)
    assert again.certificate == certificate
    # the float sampler makes no timing claim: the output's certificate as given
    plain = DiscreteLaplaceMechanism.for_epsilon(0.75, 2)
    assert plain.certificate.delta == 0.0
    with pytest.raises(InvalidParameter) as error:
        mechanism(np.arange(4), None)
    assert error.value.name == "value"
    assert mechanism(np.arange(3), None).shape == (3,)


def test_secure_discrete_laplace_keeps_an_asked_delta_with_room() -> None:
    base = discrete_laplace_certificate(0.5, sensitivity=3, delta=1e-3)
    mechanism = DiscreteLaplaceMechanism(0.5, base, secure=True)
    certificate = mechanism.certificate
    failure = timing_failure("discrete-laplace", Fraction(2), 1)
    output = DiscreteLaplaceProfile({"noise_parameter": 0.5, "sensitivity": 3}).delta_for(certificate.epsilon)
    assert covers(certificate.delta, output, certificate.epsilon, failure)
    assert certificate.epsilon >= base.epsilon
    assert certificate.delta >= base.delta


def test_calibrated_discrete_gaussian_covers_release_times_within_the_asked_delta() -> None:
    epsilon, delta, k = 1.0, 1e-5, 4
    calibration = calibrate_discrete_gaussian(epsilon, delta, compositions=k)
    certificate = calibration.certificate
    assert (certificate.epsilon, certificate.delta) == (epsilon, delta)  # the asked point, kept
    sigma = calibration.sigma
    output = DiscreteGaussianProfile({"sigma": sigma, "compositions": k}).delta_for(epsilon)
    # k draws in at most k calls of at most k draws: k p(k)
    failure = k * timing_failure("discrete-gaussian", Fraction(sigma) ** 2, k)
    assert covers(certificate.delta, output, epsilon, failure)
    assert calibration.mechanism().certificate == certificate


def test_discrete_gaussian_mechanism_adds_the_term_to_an_output_certificate() -> None:
    sigma = 3.5
    base = discrete_gaussian_certificate(sigma, epsilon=0.5, sensitivity=2)
    for secure in (True, False):  # both draw with the fixed-work sampler
        certificate = DiscreteGaussianMechanism(sigma, base, secure=secure).certificate
        assert certificate.epsilon == 0.5
        output = DiscreteGaussianProfile({"sigma": sigma, "sensitivity": 2}).delta_for(0.5)
        failure = timing_failure("discrete-gaussian", Fraction(sigma) ** 2, 1)
        assert covers(certificate.delta, output, 0.5, failure)
        # raised by the term, rounded up to a float: at most one ulp of δ beyond it
        excess = Fraction(certificate.delta) - Fraction(output)
        assert excess <= Fraction(math.ulp(certificate.delta)) + Fraction(1, 10**30)


def test_the_gaussian_failure_bound_grows_with_the_draws_of_a_call() -> None:
    """The premise of the k p(k) bound: p(n) is nondecreasing in the draws n of one call."""
    variance = Fraction(7.25) ** 2
    bounds = [timing_failure("discrete-gaussian", variance, n) for n in [*range(1, 40), 100, 10**4]]
    assert all(b <= c for b, c in zip(bounds, bounds[1:], strict=False))


def test_discrete_gaussian_beyond_the_fixed_work_range_is_refused() -> None:
    sigma = 2.0**28
    assert timing_failure("discrete-gaussian", Fraction(sigma) ** 2, 1) == 1.0  # no timing claim there
    base = discrete_gaussian_certificate(sigma, epsilon=1e-6)
    with pytest.raises(InvalidParameter) as error:
        DiscreteGaussianMechanism(sigma, base)
    assert error.value.name == "sigma"


def test_secure_l2_gaussian_asked_point_leaves_room_for_the_term() -> None:
    epsilon, delta, m, k = 1.0, 1e-5, 5, 3
    mechanism = secure_l2_gaussian(epsilon, delta, sensitivity=1.0, coordinates=m, compositions=k, bits="rng")
    certificate = mechanism.certificate
    assert (certificate.epsilon, certificate.delta) == (epsilon, delta)
    parameters = dict(certificate.parameters)
    output = DiscreteGaussianL2Profile(parameters).delta_for(epsilon)
    failure = k * timing_failure("discrete-gaussian", Fraction(mechanism.sigma) ** 2, m)
    assert covers(certificate.delta, output, epsilon, failure)


def test_secure_l2_gaussian_at_a_given_sigma_adds_the_term() -> None:
    mechanism = secure_l2_gaussian(epsilon=0.8, sigma=4.0, sensitivity=1.0, coordinates=2, bits="rng")
    certificate = mechanism.certificate
    assert certificate.epsilon == 0.8
    output = DiscreteGaussianL2Profile(dict(certificate.parameters)).delta_for(0.8)
    failure = timing_failure("discrete-gaussian", Fraction(mechanism.sigma) ** 2, 2)
    assert covers(certificate.delta, output, 0.8, failure)
    kept = secure_l2_gaussian(delta=1e-6, sigma=4.0, sensitivity=1.0, coordinates=2, bits="rng")
    assert kept.certificate.delta == 1e-6
    output = DiscreteGaussianL2Profile(dict(kept.certificate.parameters)).delta_for(kept.certificate.epsilon)
    assert covers(1e-6, output, kept.certificate.epsilon, failure)


def test_secure_l2_gaussian_refuses_sigma_beyond_the_sampler_range() -> None:
    common = dict(delta=1e-6, sigma=1.0, sensitivity=1.0, coordinates=2, bits="rng")
    within = secure_l2_gaussian(granularity=2.0**-26, **common)  # 2^26 steps: covered
    assert within.sigma == 2**26
    with pytest.raises(InvalidParameter) as error:
        secure_l2_gaussian(granularity=2.0**-27, **common)  # 2^27 steps: beyond 2^26
    assert error.value.name == "granularity"


# ----------------------------------------------------------------------------- composition
def test_composition_adds_the_release_time_terms_of_its_components() -> None:
    """k releases are within total variation Σ k_i p_i of k timing-blind ones, so the composed view is
    (ε, δ_out(ε) + (1 + e^ε) Σ k_i p_i)-DP: every method's result states that p and covers the term at
    its own ε, rebuilt here from the components' p and the composed outputs' profile."""
    laplace = DiscreteLaplaceMechanism.for_epsilon(0.5, 1, secure=True).certificate
    gaussian = calibrate_discrete_gaussian(1.0, 1e-7).certificate
    p_laplace, p_gaussian = laplace.release_time_failure, gaussian.release_time_failure
    assert p_laplace > 0.0 and p_gaussian > 0.0
    total = 4 * Fraction(p_laplace) + 3 * Fraction(p_gaussian)
    for method in ("best", "basic", "advanced", "optimal", "pld"):
        composed = compose([laplace] * 4 + [gaussian] * 3, method=method, delta=1e-5)
        assert Fraction(composed.release_time_failure) >= total
        output = composed.output_profile.delta_for(composed.epsilon)
        assert covers(composed.delta, output, composed.epsilon, float(total)), method
        assert composed.delta_for(composed.epsilon) <= composed.delta
        again = Certificate.from_json(composed.to_json())
        assert (
            again.epsilon == composed.epsilon and again.release_time_failure == composed.release_time_failure
        )


def test_composition_at_the_default_delta_states_the_term_over_the_outputs_sum() -> None:
    """Pure outputs: the default δ is (1 + e^{Σε}) Σ p (the outputs' δ are 0), and ε stays the sum."""
    laplace = DiscreteLaplaceMechanism.for_epsilon(0.5, 1, secure=True).certificate
    composed = compose([laplace] * 10)
    p = 10 * Fraction(laplace.release_time_failure)
    assert composed.epsilon == pytest.approx(5.0, rel=1e-12)
    assert covers(composed.delta, 0.0, composed.epsilon, float(p))
    assert composed.delta < 1e-30
    with pytest.raises(InvalidParameter, match="delta"):
        compose([laplace] * 10, delta=0.0)  # release times rule out pure DP


def test_a_composition_stating_less_than_its_components_release_time_failure_is_refused() -> None:
    laplace = DiscreteLaplaceMechanism.for_epsilon(0.5, 1, secure=True).certificate
    data = json.loads(compose([laplace] * 3, delta=1e-9).to_json())
    for forged in (0.0, data["parameters"]["release_time_failure"] / 2):
        data["parameters"]["release_time_failure"] = forged
        with pytest.raises(CertificateFormatError, match="release_time_failure"):
            Certificate.from_dict(data)
    data["parameters"]["release_time_failure"] = 2.0
    with pytest.raises(CertificateFormatError, match=r"\[0, 1\]"):
        Certificate.from_dict(data)


def test_secure_central_mab_needs_a_positive_delta_and_states_its_release_term() -> None:
    summation = CentralLaplaceSum(1.0, secure=True)
    certificate = summation.certificate
    a = certificate.parameters["noise_parameter"]
    failure = timing_failure("discrete-laplace", 1 / Fraction(a), MAX_DRAWS_PER_CALL)
    assert certificate.release_time_failure == failure
    assert covers(certificate.delta, 0.0, certificate.epsilon, failure)
    with pytest.raises(InvalidParameter, match="delta"):
        run_mab(RunConfig("mab-se", "central", 1.0, None, 200, options={"secure": True}))
