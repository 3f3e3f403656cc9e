"""dp_accounting events read with dp_accounting's documented meaning under each neighbouring relation.

``GaussianDpEvent(s)`` releases Σ v_i + N(0, s²C²) for ‖v_i‖ <= C (dp_accounting 0.6, dp_event.py):
removing a record moves the sum by C, replacing one by 2C, which is what dp_accounting's PLD accountant
computes under REPLACE_ONE.  References are dp_accounting's own accountants under the same relation,
closed forms at 40 digits, and values published in dp_accounting's test files (google/differential-privacy,
python/dp_accounting/dp_accounting/...; file and test named at each use).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import rdp_privacy_accountant

from dpcert.errors import InvalidParameter
from dpcert.interop.dp_accounting import certificate_from_dp_event
from dpcert.interop.opacus import certificate_from_opacus_history
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.subsampled_gaussian import poisson_sampled_gaussian_certificate

REPLACE = NeighboringRelation.REPLACE_ONE
ADD_REMOVE = NeighboringRelation.ADD_OR_REMOVE_ONE


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε(δ) of the Gaussian pair at distance mu (Balle & Wang 2018, Thm 8), 40 digits."""
    with mpmath.workdps(40):

        def excess(e):
            return mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu) - delta

        return float(mpmath.findroot(excess, (0, 200), solver="bisect", tol=1e-30))


def _pld_epsilon(event, relation, delta):
    accountant = pld_privacy_accountant.PLDAccountant(relation, value_discretization_interval=1e-4)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


# --------------------------------------------------------------------------- Gaussian
@pytest.mark.parametrize("noise", [1.0, 2.5])
def test_gaussian_event_under_replace_one_has_sensitivity_two_c(noise):
    event = dp_event.GaussianDpEvent(noise)
    certificate = certificate_from_dp_event(event, delta=1e-5)  # replace-one is the default
    assert certificate.neighbouring.value == "replace-one"
    exact = _gaussian_epsilon(2.0 / noise, 1e-5)
    assert exact <= certificate.epsilon <= exact * (1 + 1e-9)
    # dp_accounting's PLD accountant under REPLACE_ONE: pessimistic, so at or slightly above
    reference = _pld_epsilon(event, REPLACE, 1e-5)
    assert certificate.epsilon <= reference + 1e-6
    assert reference == pytest.approx(certificate.epsilon, rel=1e-3)
    if noise == 1.0:
        assert round(reference, 3) == 9.997  # the sensitivity-C reading certified 4.377


@pytest.mark.parametrize("noise", [1.0, 2.5])
def test_gaussian_event_under_add_remove_has_sensitivity_c(noise):
    event = dp_event.GaussianDpEvent(noise)
    certificate = certificate_from_dp_event(event, delta=1e-5, neighbouring="add/remove")
    exact = _gaussian_epsilon(1.0 / noise, 1e-5)
    assert exact <= certificate.epsilon <= exact * (1 + 1e-9)
    reference = _pld_epsilon(event, ADD_REMOVE, 1e-5)
    assert certificate.epsilon <= reference + 1e-6
    assert reference == pytest.approx(certificate.epsilon, rel=1e-3)


def test_composed_gaussian_events_under_replace_one_match_dp_accountings_pld():
    event = dp_event.ComposedDpEvent(
        [dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(2.0), 3), dp_event.GaussianDpEvent(3.0)]
    )
    certificate = certificate_from_dp_event(event, delta=1e-6)
    exact = _gaussian_epsilon(2.0 * math.sqrt(3 / 4 + 1 / 9), 1e-6)
    assert exact <= certificate.epsilon <= exact * (1 + 1e-6)
    reference = _pld_epsilon(event, REPLACE, 1e-6)
    assert certificate.epsilon <= reference + 1e-6
    assert reference == pytest.approx(certificate.epsilon, rel=2e-3)


# --------------------------------------------------------------------------- Laplace
@pytest.mark.parametrize("noise", [0.5, 3.0])
def test_laplace_events_double_their_sensitivity_under_replace_one(noise):
    replaced = certificate_from_dp_event(dp_event.LaplaceDpEvent(noise))
    removed = certificate_from_dp_event(dp_event.LaplaceDpEvent(noise), neighbouring="add/remove")
    # pure ε = shift / scale, shift 2C or C (Dwork, McSherry, Nissim & Smith 2006)
    for certificate, shift in ((replaced, 2), (removed, 1)):
        exact = Fraction(shift) / Fraction(noise)  # rounded up to the next float when inexact
        assert exact <= Fraction(certificate.epsilon) <= exact + Fraction(math.ulp(float(exact)))
    # δ(ε) of the replaced pair: dp_accounting's pessimistic PLD of Laplace noise with shift 2
    # (its accountant refuses Laplace under REPLACE_ONE, so the pair is built directly)
    pair = pld.from_laplace_mechanism(noise, sensitivity=2.0, value_discretization_interval=1e-4)
    for epsilon in (0.2 / noise, 1.0 / noise, 1.9 / noise):
        exact = -math.expm1((epsilon - 2.0 / noise) / 2.0)  # 1 - e^{(ε - ε0)/2}
        assert exact <= replaced.delta_for(epsilon) <= exact * (1 + 1e-12)
        assert replaced.delta_for(epsilon) <= pair.get_delta_for_epsilon(epsilon) + 1e-9
    assert not pld_privacy_accountant.PLDAccountant(REPLACE).supports(dp_event.LaplaceDpEvent(noise))


def test_discrete_laplace_events_double_their_sensitivity_under_replace_one():
    event = dp_event.DiscreteLaplaceDpEvent(0.25, 3)
    assert certificate_from_dp_event(event).epsilon == 1.5  # a · 2C
    assert certificate_from_dp_event(event, neighbouring="add/remove").epsilon == 0.75
    certificate = certificate_from_dp_event(event, delta=0.05)
    pair = pld.from_discrete_laplace_mechanism(0.25, sensitivity=6, value_discretization_interval=1e-5)
    assert certificate.delta_for(1.0) == pytest.approx(pair.get_delta_for_epsilon(1.0), rel=1e-3)
    assert certificate.delta_for(1.0) <= pair.get_delta_for_epsilon(1.0) + 1e-9


# --------------------------------------------------------------------------- relations refused
def test_relations_dp_accounting_does_not_account_are_refused_naming_the_relation():
    rr = dp_event.RandomizedResponseDpEvent(0.3, 4)
    # both of dp_accounting's accountants refuse randomized response under ADD_OR_REMOVE_ONE
    assert not pld_privacy_accountant.PLDAccountant(ADD_REMOVE).supports(rr)
    assert not rdp_privacy_accountant.RdpAccountant(neighboring_relation=ADD_REMOVE).supports(rr)
    with pytest.raises(InvalidParameter, match="neighbouring"):
        certificate_from_dp_event(rr, neighbouring="add/remove")
    with pytest.raises(InvalidParameter, match="neighbouring"):
        certificate_from_dp_event(dp_event.ComposedDpEvent([rr, rr]), neighbouring="add/remove")
    poisson = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0))
    with pytest.raises(InvalidParameter, match="neighbouring"):
        certificate_from_dp_event(poisson, delta=1e-5)  # replace-one
    batch = dp_event.SampledWithoutReplacementDpEvent(1000, 10, dp_event.GaussianDpEvent(1.0))
    with pytest.raises(InvalidParameter, match="neighbouring"):
        certificate_from_dp_event(batch, delta=1e-5, neighbouring="add/remove")
    tree = dp_event.SingleEpochTreeAggregationDpEvent(1.0, 8)
    with pytest.raises(InvalidParameter, match="neighbouring"):
        certificate_from_dp_event(tree, delta=1e-5, neighbouring="add/remove")


def test_randomized_response_under_replace_one_is_dp_accountings():
    event = dp_event.RandomizedResponseDpEvent(0.3, 4)
    certificate = certificate_from_dp_event(event, delta=1e-3)
    reference = pld.from_randomized_response(
        0.3, 4, value_discretization_interval=1e-6, neighboring_relation=REPLACE
    )
    assert certificate.epsilon == pytest.approx(reference.get_epsilon_for_delta(1e-3), abs=1e-5)


def test_fixed_batch_event_is_dp_accountings_rdp_with_the_batch_sums_replace_one_sensitivity():
    step = dp_event.SampledWithoutReplacementDpEvent(60_000, 600, dp_event.GaussianDpEvent(1.1))
    certificate = certificate_from_dp_event(dp_event.SelfComposedDpEvent(step, 50), delta=1e-5)
    # dp_accounting's RDP (Wang, Balle & Kasiviswanathan 2019, Thm 27) takes the inner multiplier
    # relative to the replace-one sensitivity of the batch sum, 2C: noise 1.1 C is 0.55 in that unit
    halved = dp_event.SampledWithoutReplacementDpEvent(60_000, 600, dp_event.GaussianDpEvent(0.55))
    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=REPLACE)
    accountant.compose(dp_event.SelfComposedDpEvent(halved, 50))
    reference = accountant.get_epsilon(1e-5)
    assert reference <= certificate.epsilon <= reference * (1 + 1e-9)
    assert certificate.parameters["sensitivity"] == 2.0


# --------------------------------------------------------------------------- published values
def test_dp_accounting_published_gaussian_basic():
    # pld/pld_privacy_accountant_test.py, test_gaussian_basic: GaussianDpEvent(sqrt(3)) composed
    # 1 + 2 times (add/remove) has delta 0.126936 at epsilon 1 (their tolerance 1e-3)
    event = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(math.sqrt(3)), 3)
    certificate = certificate_from_dp_event(event, delta=0.126936, neighbouring="add/remove")
    assert certificate.delta_for(1.0) == pytest.approx(0.126936, abs=1e-6)
    assert certificate.epsilon == pytest.approx(1.0, abs=1e-5)


def test_dp_accounting_published_laplace_and_discrete_laplace_basic():
    # pld/pld_privacy_accountant_test.py, test_laplace_basic and test_discrete_laplace_basic:
    # Laplace(1) x 3 and Laplace(2) x 2 (resp. DLap(1) x 3 and DLap(0.5) x 2) give epsilon 4 at delta ~0
    laplace = dp_event.ComposedDpEvent(
        [
            dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(1.0), 3),
            dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(2.0), 2),
        ]
    )
    discrete = dp_event.ComposedDpEvent(
        [
            dp_event.SelfComposedDpEvent(dp_event.DiscreteLaplaceDpEvent(1.0, 1), 3),
            dp_event.SelfComposedDpEvent(dp_event.DiscreteLaplaceDpEvent(0.5, 1), 2),
        ]
    )
    for event in (laplace, discrete):
        certificate = certificate_from_dp_event(event, delta=0.0, neighbouring="add/remove")
        assert certificate.delta == 0.0
        assert certificate.epsilon == pytest.approx(4.0, rel=1e-12)


def test_dp_accounting_published_randomized_response_replace_one():
    # pld/pld_privacy_accountant_test.py, test_randomized_response (REPLACE_ONE, 4 / (3 + e), 4, 1.0):
    # 4-ary randomized response with p = 4 / (3 + e) is pure 1-DP
    certificate = certificate_from_dp_event(dp_event.RandomizedResponseDpEvent(4 / (3 + math.e), 4))
    assert certificate.delta == 0.0
    assert certificate.epsilon == pytest.approx(1.0, abs=1e-12)
    assert certificate.delta_for(1.0 - 1e-6) > 0.0


def test_dp_accounting_published_self_composed_subsampled_gaussian():
    # pld/pld_privacy_accountant_test.py, test_self_composed_subsampled_gaussian: three steps of
    # PoissonSampled(0.2, Gaussian(0.5)) (add/remove) have delta 0.15594 at epsilon 1 (tolerance 1e-3)
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.2, dp_event.GaussianDpEvent(0.5)), 3
    )
    certificate = certificate_from_dp_event(event, delta=0.15594, neighbouring="add/remove")
    assert certificate.delta_for(1.0) == pytest.approx(0.15594, abs=1e-3)
    assert certificate.epsilon == pytest.approx(1.0, abs=1e-2)


# --------------------------------------------------------------------------- Opacus
def test_opacus_history_is_the_composition_of_its_poisson_sampled_gaussian_steps():
    history = [(1.1, 0.01, 60), (1.1, 0.01, 40)]
    merged = certificate_from_opacus_history(history, delta=1e-5)
    assert merged == poisson_sampled_gaussian_certificate(1.1, 0.01, 100, delta=1e-5)
    assert merged.neighbouring.value == "add/remove"
    two = certificate_from_opacus_history([(1.1, 0.01, 100), (2.0, 0.05, 30)], delta=1e-5)
    assert two.delta_for(two.epsilon) <= 1e-5
    events = dp_event.ComposedDpEvent(
        [
            dp_event.SelfComposedDpEvent(
                dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 100
            ),
            dp_event.SelfComposedDpEvent(
                dp_event.PoissonSampledDpEvent(0.05, dp_event.GaussianDpEvent(2.0)), 30
            ),
        ]
    )
    rdp = rdp_privacy_accountant.RdpAccountant(neighboring_relation=ADD_REMOVE)
    rdp.compose(events)
    # optimistic dp_accounting PLD (losses rounded down): below the truth, which dpcert bounds from above
    optimistic = (
        pld.from_gaussian_mechanism(1.1, sampling_prob=0.01, pessimistic_estimate=False)
        .self_compose(100)
        .compose(
            pld.from_gaussian_mechanism(2.0, sampling_prob=0.05, pessimistic_estimate=False).self_compose(30)
        )
    )
    assert optimistic.get_epsilon_for_delta(1e-5) <= two.epsilon <= rdp.get_epsilon(1e-5) * (1 + 1e-9)


def test_opacus_history_is_validated_naming_the_entry():
    for history, match in (
        ([(1.0, 0.01, 10), (1.0, 1.5, 10)], r"history\[1\]\.sample_rate"),
        ([(0.0, 0.01, 10)], r"history\[0\]\.noise_multiplier"),
        ([(1.0, 0.01, 2.5)], r"history\[0\]\.steps"),
        ([(1.0, 0.01)], r"history\[0\]"),
        ([], "history"),
        ([{"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 10}], r"history\[0\]"),
        (None, "history"),
        ("1.0,0.01,10", "history"),
    ):
        with pytest.raises(InvalidParameter, match=match):
            certificate_from_opacus_history(history, delta=1e-5)
    with pytest.raises(InvalidParameter, match="delta"):
        certificate_from_opacus_history([(1.0, 0.01, 10)], delta=0.0)
    # rows of an array are triples too (steps as an integral float)
    rows = certificate_from_opacus_history(np.array([[1.1, 0.01, 100.0]]), delta=1e-5)
    assert rows == certificate_from_opacus_history([(1.1, 0.01, 100)], delta=1e-5)


def test_a_certificates_own_event_is_its_dominating_pair_read_back_under_add_remove():
    # to_dp_event() describes the pair N(0, sigma^2), N(Delta, sigma^2) whatever the certificate's
    # relation: GaussianDpEvent(sigma / Delta) in dp_accounting's add/remove reading
    certificate = gaussian_certificate(2.0, sensitivity=1.5, delta=1e-5)
    assert certificate.neighbouring.value == "replace-one"
    back = certificate_from_dp_event(certificate.to_dp_event(), delta=1e-5, neighbouring="add/remove")
    assert back.epsilon == pytest.approx(certificate.epsilon, rel=1e-12)
    exact = _gaussian_epsilon(1.5 / 2.0, 1e-5)
    assert exact <= certificate.epsilon <= exact * (1 + 1e-9)
