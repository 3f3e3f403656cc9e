"""Batches sampled without replacement and tree aggregation from dp_accounting events, checked against
independent references: the tree's structure counted by brute force, the exact Gaussian profile at 40
digits, dp_accounting's own RDP accountant, and a pair of neighbouring datasets that realises a lower
bound on the true privacy loss."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import rdp_privacy_accountant

from dpcert import Certificate, Guarantee
from dpcert.errors import CertificateFormatError, CertificateMismatch, InvalidParameter
from dpcert.interop.dp_accounting import certificate_from_dp_event
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.sampled_without_replacement import sampled_without_replacement_certificate
from dpcert.mechanisms.tree_aggregation import tree_aggregation_certificate, tree_depth


def _gaussian_epsilon_reference(mu: float, delta: float) -> float:
    """Balle & Wang 2018 Thm 8 inverted by bisection at 40 digits."""
    with mpmath.workdps(40):

        def excess(e):
            return mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu) - delta

        return float(mpmath.findroot(excess, (0, 200), solver="bisect", tol=1e-30))


def _rdp_epsilon(event, relation, delta):
    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def _blocks_containing_brute_force(steps: int) -> int:
    """Most completed dyadic blocks [k 2^j + 1, (k+1) 2^j] within [1, steps] that one step lies in."""
    most = 0
    for step in range(1, steps + 1):
        count = 0
        length = 1
        while length <= steps:
            start = (step - 1) // length * length + 1  # the block of this length holding the step
            if start + length - 1 <= steps:
                count += 1
            length *= 2
        most = max(most, count)
    return most


# --------------------------------------------------------------------------- tree aggregation
def test_tree_depth_is_the_brute_force_count_of_blocks_holding_one_step():
    for steps in range(1, 70):
        assert tree_depth(steps) == _blocks_containing_brute_force(steps), steps
    assert tree_depth([5, 0, 16, 3]) == _blocks_containing_brute_force(16)  # the longest tree


@pytest.mark.parametrize(("sigma", "steps", "epochs"), [(2.0, 7, 1), (1.0, 100, 1), (5.0, 1000, 3)])
def test_tree_aggregation_is_the_exact_gaussian_of_sensitivity_two_sqrt_depth(sigma, steps, epochs):
    event = dp_event.SingleEpochTreeAggregationDpEvent(sigma, steps)
    if epochs > 1:
        event = dp_event.SelfComposedDpEvent(event, epochs)
    certificate = certificate_from_dp_event(event, delta=1e-5)
    depth = _blocks_containing_brute_force(steps)
    # replacing a record by any other moves each of the depth blocks it lies in by at most 2 C
    reference = _gaussian_epsilon_reference(2.0 * math.sqrt(depth * epochs) / sigma, 1e-5)
    assert reference <= certificate.epsilon <= reference * (1 + 1e-9)
    assert certificate.neighbouring.value == "replace-one"
    # dp_accounting accounts the tree under zero-out (REPLACE_SPECIAL); with half the noise
    # multiplier that is the replace-one release, and its RDP conversion is an upper bound
    rdp = _rdp_epsilon(
        dp_event.SelfComposedDpEvent(dp_event.SingleEpochTreeAggregationDpEvent(sigma / 2, steps), epochs),
        NeighboringRelation.REPLACE_SPECIAL,
        1e-5,
    )
    assert certificate.epsilon <= rdp <= certificate.epsilon * 1.15
    assert Certificate.from_json(certificate.to_json()) == certificate


def test_dp_accountings_tree_rdp_is_that_of_the_gaussian_with_sigma_over_sqrt_depth():
    # dp_accounting's own tree RDP, against a Gaussian of multiplier sigma / sqrt(h) with h counted here
    for sigma, counts in ((1.3, [7, 3]), (0.7, [100]), (4.0, [1, 1, 1])):
        tree = rdp_privacy_accountant.RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_SPECIAL)
        tree.compose(dp_event.SingleEpochTreeAggregationDpEvent(sigma, counts))
        depth = _blocks_containing_brute_force(max(counts))
        gaussian = rdp_privacy_accountant.RdpAccountant()
        gaussian.compose(dp_event.GaussianDpEvent(sigma / math.sqrt(depth)))
        np.testing.assert_allclose(tree._rdp, gaussian._rdp, rtol=1e-12)
        certificate = tree_aggregation_certificate(sigma, counts, delta=1e-6)
        assert certificate.parameters["step_counts"] == tuple(counts)


def test_composed_tree_and_gaussian_never_below_their_exact_gaussian_composition():
    event = dp_event.ComposedDpEvent(
        [dp_event.SingleEpochTreeAggregationDpEvent(4.0, 15), dp_event.GaussianDpEvent(3.0)]
    )
    certificate = certificate_from_dp_event(event, delta=1e-6)
    # depth 4; a replaced value of norm at most C moves the Gaussian event's sum by 2 C
    exact = _gaussian_epsilon_reference(math.sqrt(4 * 4 / 4.0**2 + 4 / 3.0**2), 1e-6)
    assert exact <= certificate.epsilon <= exact * 1.02
    assert Certificate.from_json(certificate.to_json()).guarantee == certificate.guarantee


def test_forged_tree_certificates_are_refused():
    good = tree_aggregation_certificate(2.0, [7, 3], delta=1e-5).to_dict()
    for key, value, match in (
        ("step_counts", [7.5], "step_counts"),
        ("step_counts", [0, 0], "step_counts"),
        ("step_counts", "7", "list"),
        ("epochs", 0, "epochs"),
        ("noise_multiplier", "2.0", "number"),
        ("depth", 1, "unknown parameter 'depth'"),
    ):
        forged = {**good, "parameters": {**good["parameters"], key: value}}
        with pytest.raises((CertificateFormatError, InvalidParameter), match=match):
            Certificate.from_dict(forged)
    shallower = {**good, "parameters": {**good["parameters"], "step_counts": [1]}}
    # one step instead of seven: a smaller depth than the claim was computed with is still
    # consistent (less loss), but a larger one is not
    Certificate.from_dict(shallower)
    deeper = {**good, "parameters": {**good["parameters"], "step_counts": [1000]}}
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(deeper)
    for label, value in (("neighbouring", "add/remove"), ("trust_model", "local")):
        with pytest.raises(CertificateFormatError, match=value):
            Certificate.from_dict({**good, label: value})
    with pytest.raises(InvalidParameter, match="replace-one"):
        certificate_from_dp_event(
            dp_event.SingleEpochTreeAggregationDpEvent(2.0, 7), delta=1e-5, neighbouring="add/remove"
        )


# --------------------------------------------------------------------------- without replacement
WITHOUT_REPLACEMENT_CASES = [(1000, 10, 1.1, 300), (500, 100, 2.0, 50), (100, 100, 3.0, 10)]


@pytest.mark.parametrize(("n", "m", "sigma", "steps"), WITHOUT_REPLACEMENT_CASES)
def test_without_replacement_is_dp_accountings_rdp_and_never_below_a_realised_pair(n, m, sigma, steps):
    step = dp_event.SampledWithoutReplacementDpEvent(n, m, dp_event.GaussianDpEvent(sigma))
    certificate = certificate_from_dp_event(dp_event.SelfComposedDpEvent(step, steps), delta=1e-5)
    # dp_accounting's RDP takes the inner multiplier relative to the batch sum's replace-one
    # sensitivity, 2 C for values of norm at most C: the event's noise is s/2 in those units
    halved = dp_event.SampledWithoutReplacementDpEvent(n, m, dp_event.GaussianDpEvent(sigma / 2))
    rdp = _rdp_epsilon(dp_event.SelfComposedDpEvent(halved, steps), NeighboringRelation.REPLACE_ONE, 1e-5)
    assert rdp <= certificate.epsilon <= rdp * (1 + 1e-9)
    # Two neighbouring datasets (all values -C but one replaced by +C) realise at every step the
    # pair (N(0, s^2), (1 - m/n) N(0, s^2) + m/n N(2, s^2)); dp_accounting's optimistic PLD of its
    # composition is below its true profile (FFT round-off near 1e-13, far below delta = 1e-5)
    profile = certificate.profile
    lower = profile.realised_pair(interval=1e-3).epsilon_for(1e-5)
    assert 0.0 < lower <= certificate.epsilon
    if m == n:  # no sampling: RDP of the composed Gaussian, above its exact profile
        exact = _gaussian_epsilon_reference(2.0 * math.sqrt(steps) / sigma, 1e-5)
        assert exact <= certificate.epsilon <= exact * 1.1
    assert certificate.delta_for(certificate.epsilon) <= 1e-5
    assert Certificate.from_json(certificate.to_json()) == certificate


def test_without_replacement_is_charged_and_refuses_other_relations(tmp_path):
    certificate = sampled_without_replacement_certificate(1.1, 10, 1000, 300, delta=1e-5)
    with Ledger(tmp_path / "ledger.db") as ledger:
        ledger.set_budget(None, Guarantee(3 * certificate.epsilon, 1e-5))
        ledger.charge(np.arange(1000), certificate, run_id="fixed-batches")
        assert ledger.spent(999, delta=1e-5).epsilon >= certificate.epsilon
    step = dp_event.SampledWithoutReplacementDpEvent(1000, 10, dp_event.GaussianDpEvent(1.1))
    with pytest.raises(InvalidParameter, match="replace-one"):
        certificate_from_dp_event(step, delta=1e-5, neighbouring="add/remove")
    with pytest.raises(InvalidParameter, match="delta"):
        certificate_from_dp_event(step)
    laplace = dp_event.SampledWithoutReplacementDpEvent(1000, 10, dp_event.LaplaceDpEvent(1.0))
    with pytest.raises(InvalidParameter, match="event"):
        certificate_from_dp_event(laplace, delta=1e-5)


def test_forged_without_replacement_certificates_are_refused():
    good = sampled_without_replacement_certificate(2.0, 100, 500, 50, delta=1e-5).to_dict()
    for key, value, match in (
        ("sample_sise", 100, "unknown parameter 'sample_sise'"),
        ("sigma", "2.0", "number"),
        ("sample_size", 501, "sample_size"),
        ("dataset_size", 0, "dataset_size"),
        ("steps", 10**8, "steps"),
        ("sample_size", 100.5, "integer"),
    ):
        forged = {**good, "parameters": {**good["parameters"], key: value}}
        with pytest.raises((CertificateFormatError, InvalidParameter), match=match):
            Certificate.from_dict(forged)
    bigger_batches = {**good, "parameters": {**good["parameters"], "sample_size": 400}}
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(bigger_batches)  # four times the sampling ratio: the claim no longer holds
    for label, value in (("neighbouring", "add/remove"), ("trust_model", "local")):
        with pytest.raises(CertificateFormatError, match=value):
            Certificate.from_dict({**good, label: value})


def test_nested_self_compositions_are_the_flat_ones():
    batch = dp_event.SampledWithoutReplacementDpEvent(1000, 10, dp_event.GaussianDpEvent(1.1))
    tree = dp_event.SingleEpochTreeAggregationDpEvent(4.0, 15)
    poisson = dp_event.PoissonSampledDpEvent(0.05, dp_event.GaussianDpEvent(2.0))
    for inner, relation in ((batch, "replace-one"), (tree, "replace-one"), (poisson, "add/remove")):
        nested = dp_event.SelfComposedDpEvent(dp_event.SelfComposedDpEvent(inner, 5), 4)
        flat = dp_event.SelfComposedDpEvent(inner, 20)
        a = certificate_from_dp_event(nested, delta=1e-5, neighbouring=relation)
        b = certificate_from_dp_event(flat, delta=1e-5, neighbouring=relation)
        assert a == b and a.mechanism != "composition"
