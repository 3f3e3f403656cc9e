"""Adversarial certificates: relabelled, misspelt, mistyped and forged claims are refused.

Each case is a certificate a user could write or edit by hand; every one of them used to load and
verify.  The references are exact rational arithmetic (``fractions``) and closed forms evaluated
with mpmath at 50 digits, independent of the profiles under test.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcert import Certificate, Guarantee, Neighbouring, TrustModel
from dpcert.accounting.composition import compose
from dpcert.certificates import approximate_dp_certificate
from dpcert.errors import CertificateFormatError, DPCertError
from dpcert.mechanisms.discrete_laplace import DiscreteLaplaceProfile, discrete_laplace_certificate
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import LaplaceProfile, laplace_certificate
from dpcert.mechanisms.shuffle.amplification import amplification_certificate
from dpcert.mechanisms.shuffle.binary_sum import binary_sum_certificate
from dpcert.mechanisms.shuffle.binomial_sum import BitSumParameters, binomial_sum_certificate
from dpcert.profiles import ParameterSpec, register_profile


def _edited(certificate: Certificate, **changes) -> str:
    """The certificate's JSON with top-level fields or parameters replaced (``None`` deletes)."""
    data = json.loads(certificate.to_json())
    for key, value in changes.items():
        target = data if key in data else data["parameters"]
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
    return json.dumps(data)


def _bit_sum() -> Certificate:
    return binomial_sum_certificate(BitSumParameters(g=4, b=60, p=0.5, users=50), delta=1e-5)


# --------------------------------------------------------------------------- trust model and relation
@pytest.mark.parametrize(
    "make",
    [
        _bit_sum,
        lambda: binary_sum_certificate(2000, delta=1e-5),
        lambda: amplification_certificate(1.0, 1000, delta=1e-6),
    ],
    ids=["binomial-sum", "binary-sum", "shuffle-amplification"],
)
def test_shuffle_protocol_relabelled_local_is_refused(make):
    certificate = make()
    assert certificate.trust_model is TrustModel.SHUFFLE
    with pytest.raises(CertificateFormatError, match="local"):
        Certificate.from_json(_edited(certificate, trust_model="local"))
    # a weaker claim (central) stays valid: the shuffled view is also what a curator sees
    assert (
        Certificate.from_json(_edited(certificate, trust_model="central")).trust_model is TrustModel.CENTRAL
    )


def test_event_level_gaussian_relabelled_user_level_is_refused():
    certificate = gaussian_certificate(3.0, delta=1e-5)
    with pytest.raises(CertificateFormatError, match="participations"):
        Certificate.from_json(_edited(certificate, neighbouring="user-level"))
    # stating the participations explicitly is a different, checkable claim
    user_level = gaussian_certificate(
        3.0, delta=1e-5, compositions=4, neighbouring="user-level", participations=4
    )
    assert Certificate.from_json(user_level.to_json()) == user_level
    # and an event-level certificate may not carry a participation count
    with pytest.raises(CertificateFormatError, match="participations"):
        Certificate.from_json(_edited(user_level, neighbouring="replace-one"))


def test_composition_labels_follow_their_components():
    local = laplace_certificate(1.0, trust_model="local")
    central = gaussian_certificate(5.0, delta=1e-6)
    composed = compose([local, central], method="basic", delta=2e-6)
    assert composed.trust_model is TrustModel.CENTRAL
    with pytest.raises(CertificateFormatError, match="trust model"):
        Certificate.from_json(_edited(composed, trust_model="local"))
    with pytest.raises(CertificateFormatError, match="relation"):
        Certificate.from_json(_edited(composed, neighbouring="add/remove"))
    # composing event-level participations gives a user-level guarantee
    assert (
        Certificate.from_json(_edited(composed, neighbouring="user-level")).neighbouring
        is Neighbouring.USER_LEVEL
    )


# --------------------------------------------------------------------------- typed parameters
@pytest.mark.parametrize(
    ("certificate", "edit", "named"),
    [
        (
            gaussian_certificate(3.0, delta=1e-5, sensitivity=10.0),
            {"sensitivity": None, "sensitivty": 10},
            "sensitivty",
        ),
        (_bit_sum(), {"dimensions": 5}, "dimensions"),
        (gaussian_certificate(3.0, delta=1e-5), {"sigma": "3.0"}, "sigma"),
        (gaussian_certificate(3.0, delta=1e-5), {"sigma": None}, "sigma"),
        (gaussian_certificate(3.0, delta=1e-5), {"compositions": 2.5}, "compositions"),
        (gaussian_certificate(3.0, delta=1e-5), {"compositions": True}, "compositions"),
        (laplace_certificate(2.0), {"scale": [2.0]}, "scale"),
        (discrete_laplace_certificate(0.5, sensitivity=2), {"sensitivity": 2.5}, "sensitivity"),
        (binary_sum_certificate(2000, delta=1e-5), {"noise_bits": "2000"}, "noise_bits"),
    ],
    ids=[
        "misspelt",
        "unknown-key",
        "string-number",
        "missing",
        "fractional-int",
        "bool",
        "list",
        "dlap",
        "bits",
    ],
)
def test_untyped_parameters_are_refused_by_name(certificate, edit, named):
    with pytest.raises(CertificateFormatError, match=named):
        Certificate.from_json(_edited(certificate, **edit))


def test_a_misspelt_key_no_longer_verifies_as_the_default():
    # "sensitivty": 10 used to verify as Delta = 1: the claim (epsilon at sigma 3, Delta 1) is 10x too small
    honest = gaussian_certificate(3.0, delta=1e-5, sensitivity=10.0)
    weak = gaussian_certificate(3.0, delta=1e-5, sensitivity=1.0)
    forged = json.loads(_edited(weak, sensitivity=None, sensitivty=10))
    with pytest.raises(CertificateFormatError):
        Certificate.from_dict(forged)
    assert honest.epsilon > 5 * weak.epsilon


def test_registration_requires_a_schema_and_checks_kinds():
    with pytest.raises(TypeError):
        register_profile("test-no-schema")  # the schema is not optional
    with pytest.raises(DPCertError):
        ParameterSpec("float")


def test_declared_zero_loss_needs_a_reason():
    with pytest.raises(CertificateFormatError, match="zero_loss_reason"):
        approximate_dp_certificate(0.0, 0.0)
    forged = {
        "format": "dpcert.certificate/1",
        "mechanism": "approximate-dp",
        "guarantee": {"epsilon": 0.0, "delta": 0.0},
        "trust_model": "central",
        "neighbouring": "replace-one",
        "parameters": {"epsilon": 0.0, "delta": 0.0},
        "basis": "declared",
        "notes": [],
    }
    with pytest.raises(CertificateFormatError, match="zero_loss_reason"):
        Certificate.from_dict(forged)
    constant = approximate_dp_certificate(0.0, 0.0, zero_loss_reason="the output is a constant")
    assert constant.guarantee == Guarantee(0.0, 0.0)
    assert Certificate.from_json(constant.to_json()) == constant


# --------------------------------------------------------------------------- rounding toward more loss
def test_laplace_pure_epsilon_rounds_up():
    certificate = laplace_certificate(3.0)
    assert Fraction(certificate.epsilon) >= Fraction(1, 3)
    assert certificate.epsilon == math.nextafter(1.0 / 3.0, math.inf)  # 1/3 rounds down to nearest


@given(
    scale=st.floats(1e-6, 1e6, allow_subnormal=False),
    sensitivity=st.floats(1e-6, 1e6, allow_subnormal=False),
)
@settings(max_examples=300, deadline=None)
def test_laplace_pure_epsilon_is_never_below_the_exact_ratio(scale, sensitivity):
    profile = LaplaceProfile({"scale": scale, "sensitivity": sensitivity})
    exact = Fraction(sensitivity) / Fraction(scale)
    assert Fraction(profile.pure_epsilon) >= exact
    assert Fraction(math.nextafter(profile.pure_epsilon, 0.0)) < exact  # and the least such float


@given(a=st.floats(1e-6, 50.0, allow_subnormal=False), sensitivity=st.integers(1, 10_000))
@settings(max_examples=300, deadline=None)
def test_discrete_laplace_pure_epsilon_is_never_below_the_exact_product(a, sensitivity):
    profile = DiscreteLaplaceProfile({"noise_parameter": a, "sensitivity": sensitivity})
    assert Fraction(profile.pure_epsilon) >= Fraction(a) * sensitivity


# --------------------------------------------------------------------------- hangs near delta = 1
def _laplace_epsilon_reference(pure_epsilon: Fraction, delta: float) -> mpmath.mpf:
    """ε(δ) = ε0 + 2 ln(1 − δ) of the Laplace profile, at 50 digits (0 if negative)."""
    with mpmath.workdps(50):
        value = mpmath.mpf(pure_epsilon.numerator) / pure_epsilon.denominator + 2 * mpmath.log(
            1 - mpmath.mpf(delta)
        )
        return max(mpmath.mpf(0), value)


@pytest.mark.parametrize("delta", [0.999999999, 1 - 1e-9, 0.9, 0.5, 1e-15])
@pytest.mark.parametrize("scale", [0.01, 0.3, 1.0, 1e3])
def test_laplace_epsilon_for_answers_near_delta_one_and_is_safe(scale, delta):
    profile = LaplaceProfile({"scale": scale})
    epsilon = profile.epsilon_for(delta)  # used to step one float at a time for hours
    reference = _laplace_epsilon_reference(Fraction(profile.pure_epsilon), delta)
    assert epsilon >= reference
    # near delta = 1 the float delta itself pins epsilon only to ~ulp(delta) / (d delta / d epsilon)
    conditioning = 64 * 2.0**-53 / (1 - delta)
    assert epsilon <= reference * (1 + 1e-9) + conditioning
    assert profile.delta_for(epsilon) <= delta


@pytest.mark.parametrize("delta", [0.999999999, 1 - 1e-9, 0.99, 1e-15])
@pytest.mark.parametrize(("epsilon", "delta0"), [(50.0, 0.0), (5.0, 1e-6), (0.1, 0.0)])
def test_approximate_dp_epsilon_for_answers_near_delta_one_and_is_safe(epsilon, delta0, delta):
    certificate = approximate_dp_certificate(epsilon, delta0)
    result = certificate.epsilon_for(delta)
    if delta < delta0:  # no epsilon reaches a delta below the declared one
        assert result == math.inf
        return
    assert certificate.delta_for(result) <= delta
    # canonical pair: delta(e) = delta0 + (1 - delta0)(e^eps - e^e)/(1 + e^eps), inverted at 50 digits
    with mpmath.workdps(50):
        e_eps = mpmath.exp(epsilon)
        remaining = e_eps - (mpmath.mpf(delta) - delta0) * (1 + e_eps) / (1 - mpmath.mpf(delta0))
        reference = mpmath.log(remaining) if remaining > 1 else mpmath.mpf(0)
        # d delta / d e at the answer: a float delta pins e only to ~ulp(delta) / slope
        slope = (1 - delta0) * mpmath.exp(reference - epsilon) / (1 + mpmath.exp(-epsilon))
    assert result >= min(reference, epsilon)
    assert result <= reference * (1 + 1e-9) + 1e-12 + 64 * 2.0**-53 / float(slope)


# --------------------------------------------------------------------------- l2 shift patterns
def _maximal_multisets_brute_force(coordinates: int, g: int) -> set[tuple[int, ...]]:
    """Every non-increasing tuple in [1, g]^m with sum (a - 1)^2 <= g^2 that no +1 keeps feasible."""
    import itertools

    feasible = {
        t
        for t in itertools.combinations_with_replacement(range(g, 0, -1), coordinates)
        if sum((a - 1) ** 2 for a in t) <= g * g
    }
    maximal = set()
    for t in feasible:
        grown = (
            tuple(sorted(t[:i] + (t[i] + 1,) + t[i + 1 :], reverse=True)) for i in range(len(t)) if t[i] < g
        )
        if not any(u in feasible for u in grown):
            maximal.add(t)
    return maximal


@pytest.mark.parametrize(
    ("coordinates", "g"), [(1, 1), (1, 4), (2, 3), (3, 4), (4, 3), (5, 2), (6, 4), (3, 6)]
)
def test_l2_shift_multisets_match_brute_force(coordinates, g):
    from dpcert.theory.binomial import l2_shift_multisets

    assert set(l2_shift_multisets(coordinates, g)) == _maximal_multisets_brute_force(coordinates, g)


def test_l2_accounting_refuses_at_once_instead_of_hanging_or_recursing():

    from dpcert.errors import InvalidParameter
    from dpcert.theory.binomial import (
        TooManyShiftPatterns,
        l2_pattern_count,
        l2_shift_multisets,
    )

    # 50-dimensional P_Vec statistic: 50 + 50*51/2 = 1325 coordinates (used to raise RecursionError)
    assert l2_pattern_count((50, 1275), 3) is not None
    with pytest.raises(TooManyShiftPatterns):  # a bounded search, not millions of multisets
        l2_shift_multisets(1325, 40)
    with pytest.raises(InvalidParameter, match="l2 shift patterns"):
        BitSumParameters(g=30, b=10, p=0.5, users=100, dimension=20, shape="vector", norm="l2")
