"""Certificates: JSON round trip, verification, the generic (epsilon, delta) profile."""

from __future__ import annotations

import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcert import (
    Certificate,
    CertificateFormatError,
    CertificateMismatch,
    DPCertError,
    Guarantee,
    Neighbouring,
    TrustModel,
    approximate_dp_certificate,
    compose,
)
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate


@given(
    sigma=st.floats(0.05, 100.0),
    sensitivity=st.floats(0.01, 10.0),
    compositions=st.integers(1, 1000),
    delta=st.floats(1e-12, 0.5),
    trust=st.sampled_from(list(TrustModel)),
    neighbouring=st.sampled_from(list(Neighbouring)),
)
@settings(max_examples=100, deadline=None)
def test_gaussian_json_round_trip_is_exact(sigma, sensitivity, compositions, delta, trust, neighbouring):
    user_level = neighbouring is Neighbouring.USER_LEVEL  # a user-level claim states the participations
    certificate = gaussian_certificate(
        sigma,
        delta=delta,
        sensitivity=sensitivity,
        compositions=compositions,
        trust_model=trust,
        neighbouring=neighbouring,
        participations=compositions if user_level else None,
    )
    again = Certificate.from_json(certificate.to_json())
    assert again == certificate
    assert again.guarantee == certificate.guarantee
    assert again.trust_model is trust and again.neighbouring is neighbouring


@given(st.floats(0.01, 10.0), st.floats(0.0, 0.5))
@settings(max_examples=100, deadline=None)
def test_laplace_json_round_trip(scale, delta):
    certificate = laplace_certificate(scale, delta=delta)
    assert Certificate.from_json(certificate.to_json()) == certificate


@given(st.floats(0.0, 5.0), st.floats(0.0, 0.5), st.floats(0.0, 6.0), st.floats(0.0, 6.0))
@settings(max_examples=200, deadline=None)
def test_approximate_dp_profile_is_monotone_and_matches_claim(epsilon, delta, a, b):
    reason = "constant output" if epsilon == delta == 0.0 else ""  # (0, 0) must say why
    certificate = approximate_dp_certificate(epsilon, delta, zero_loss_reason=reason)
    low, high = sorted((a, b))
    assert certificate.delta_for(high) <= certificate.delta_for(low)
    assert certificate.delta_for(epsilon) == delta
    # At epsilon = 0 the canonical pair's total variation is delta + (1 - delta)(e^eps - 1)/(e^eps + 1).
    expected_tv = delta + (1 - delta) * math.tanh(epsilon / 2)
    assert certificate.delta_for(0.0) == pytest.approx(expected_tv, rel=1e-12, abs=1e-15)


def test_approximate_dp_epsilon_for_is_safe_inverse():
    certificate = approximate_dp_certificate(2.0, 1e-6)
    for target in (1e-6, 1e-3, 0.1, 0.5):
        epsilon = certificate.epsilon_for(target)
        assert certificate.delta_for(epsilon) <= target
    assert certificate.epsilon_for(1e-7) == math.inf


def test_verify_rejects_overclaim_and_unknown_mechanism():
    honest = gaussian_certificate(3.0, delta=1e-5)
    with pytest.raises(CertificateMismatch):
        Certificate(
            "gaussian", Guarantee(honest.epsilon * 0.99, 1e-5), parameters=dict(honest.parameters), basis="x"
        ).verify()
    with pytest.raises(CertificateFormatError, match="unknown mechanism"):
        Certificate("mystery", Guarantee(1.0, 0.0)).verify()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"mechanism": "gaussian"}',
        '{"format": "other/9", "mechanism": "laplace"}',
        '{"mechanism": "laplace", "guarantee": {"epsilon": "x", "delta": 0}, "trust_model": "central",'
        ' "neighbouring": "replace-one", "parameters": {"scale": 1}}',
    ],
)
def test_corrupted_json_gives_clear_error(text):
    with pytest.raises(CertificateFormatError):
        Certificate.from_json(text)


def test_certificate_is_immutable():
    certificate = laplace_certificate(1.0)
    with pytest.raises(AttributeError):
        certificate.basis = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        certificate.parameters["scale"] = 0.1  # type: ignore[index]


@pytest.mark.parametrize(
    "epsilon, delta",
    [(-0.1, 0.0), (math.inf, 0.0), (math.nan, 0.0), (1.0, 1.0), (1.0, -1e-9), (1.0, math.nan)],
)
def test_guarantee_validates(epsilon, delta):
    with pytest.raises(DPCertError):
        Guarantee(epsilon, delta)


def test_bad_enum_values_raise():
    with pytest.raises(DPCertError, match="trust_model"):
        Certificate("laplace", Guarantee(1.0), trust_model="cloud", parameters={"scale": 1.0})
    with pytest.raises(DPCertError, match="neighbouring"):
        Certificate("laplace", Guarantee(1.0), neighbouring="swap", parameters={"scale": 1.0})


def test_every_builtin_certificate_reverifies_in_a_fresh_interpreter():
    """A certificate read back in a process that imported nothing but dpcert.certificates re-verifies."""
    import json
    import subprocess
    import sys

    from dpcert.accounting.composition import compose
    from dpcert.mechanisms.discrete_gaussian import calibrate_discrete_gaussian
    from dpcert.mechanisms.discrete_gaussian_l2 import discrete_gaussian_l2_certificate
    from dpcert.mechanisms.discrete_laplace import discrete_laplace_certificate
    from dpcert.mechanisms.randomized_response import randomized_response_certificate
    from dpcert.mechanisms.sampled_without_replacement import sampled_without_replacement_certificate
    from dpcert.mechanisms.shuffle.amplification import amplification_certificate
    from dpcert.mechanisms.shuffle.binary_sum import binary_sum_certificate
    from dpcert.mechanisms.shuffle.binomial_sum import calibrate_binomial_sum
    from dpcert.mechanisms.shuffle.pamp import calibrate_pamp, secure_pamp_certificate
    from dpcert.mechanisms.subsampled_gaussian import poisson_sampled_gaussian_certificate
    from dpcert.mechanisms.tree_aggregation import tree_aggregation_certificate
    from dpcert.mechanisms.zcdp import zcdp_certificate
    from dpcert.profiles import builtin_profile_modules

    certificates = [
        gaussian_certificate(2.0, delta=1e-5),
        laplace_certificate(1.0),
        discrete_laplace_certificate(0.5),
        approximate_dp_certificate(1.0, 1e-6),
        compose([laplace_certificate(1.0), approximate_dp_certificate(0.5, 1e-6)], delta=1e-5),
        calibrate_binomial_sum(1.0, 1e-5, users=100).certificate,
        binary_sum_certificate(80, delta=1e-6),
        amplification_certificate(1.0, 1000, delta=1e-6),
        calibrate_pamp(1.0, 1e-5, users=1000, dimension=2).certificate,
        secure_pamp_certificate(4096, 1000.0, 20, 2.0**-10, 3.0, 1e-9, 1000, delta=1e-5),
        randomized_response_certificate(0.3, 4),
        zcdp_certificate(0.125, delta=1e-5),
        calibrate_discrete_gaussian(1.0, 1e-5).certificate,
        discrete_gaussian_l2_certificate(40.0, l2_sensitivity=9.5, coordinates=20, delta=1e-5),
        poisson_sampled_gaussian_certificate(2.0, 0.05, 10, delta=1e-5),
        sampled_without_replacement_certificate(2.0, 50, 1000, 10, delta=1e-5),
        tree_aggregation_certificate(4.0, [7, 3], epochs=2, delta=1e-5),
    ]
    # Every built-in kind (other tests may register extra profiles of their own in this process).
    assert {c.mechanism for c in certificates} == set(builtin_profile_modules())
    script = (
        "import json, sys\n"
        "from dpcert.certificates import Certificate\n"
        "for text in json.load(sys.stdin):\n"
        "    Certificate.from_json(text)\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps([c.to_json() for c in certificates]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_certificates_cross_process_boundaries_by_pickle():
    # a certificate pickles as its JSON and is re-verified on the way back: the same document, the same
    # profile (compositions included), so results holding certificates can come back from worker processes
    for certificate in (
        gaussian_certificate(2.0, delta=1e-5),
        compose([laplace_certificate(1.0), gaussian_certificate(3.0, delta=1e-6)], delta=1e-5),
    ):
        copied = pickle.loads(pickle.dumps(certificate))
        assert copied.to_json() == certificate.to_json()
        assert copied.epsilon_for(1e-6) == certificate.epsilon_for(1e-6)
    honest = gaussian_certificate(2.0, delta=1e-5)
    text = honest.to_json()
    value = text.split('"epsilon": ', 1)[1].split(",", 1)[0]
    smaller = "0." + "0" * (len(value) - 3) + "1"  # same length: the pickle's framing stays valid
    forged = pickle.dumps(honest).replace(text.encode(), text.replace(value, smaller, 1).encode())
    assert forged != pickle.dumps(honest)
    with pytest.raises(CertificateMismatch):
        pickle.loads(forged)  # a claim edited on the way is refused like a JSON one
