"""Poisson-subsampled Gaussian (DP-SGD) certificates: never below the truth, close to dp_accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld

from dpcert import Certificate, Guarantee
from dpcert.certificates import Neighbouring
from dpcert.errors import CertificateFormatError, InvalidParameter
from dpcert.interop.dp_accounting import certificate_from_dp_event
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.subsampled_gaussian import PoissonSampledGaussianProfile
from dpcert.theory.gaussian import gaussian_delta


@pytest.mark.parametrize("epsilon", [0.5, 1.5, 3.0])
def test_without_subsampling_it_is_the_composed_gaussian(epsilon):
    # q = 1: every step is a plain Gaussian, and k of them compose exactly to mu = sqrt(k)/sigma
    profile = PoissonSampledGaussianProfile({"sigma": 4.0, "sampling_probability": 1.0, "steps": 50})
    exact = gaussian_delta(epsilon, math.sqrt(50) / 4.0)
    claimed = profile.delta_for(epsilon)
    assert claimed >= exact
    assert claimed <= exact * 1.01 + 1e-9  # pessimistic discretisation at interval 1e-4 plus round-off


def test_dp_sgd_steps_are_never_below_dp_accountings_estimate():
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 1000
    )
    certificate = certificate_from_dp_event(event, delta=1e-5, neighbouring="add/remove")
    single = pld.from_gaussian_mechanism(1.1, sampling_prob=0.01, value_discretization_interval=1e-4)
    composed = single.self_compose(1000)
    # dp_accounting's own composition (its FFT round-off unbounded) is the estimate; dpcert adds the bound
    for epsilon in (0.5, 1.0, certificate.epsilon):
        estimate = composed.get_delta_for_epsilon(epsilon)
        assert estimate <= certificate.delta_for(epsilon) <= estimate * 1.1 + 1e-9
    assert (
        composed.get_epsilon_for_delta(1e-5)
        <= certificate.epsilon
        <= composed.get_epsilon_for_delta(1e-5) * 1.02
    )
    assert certificate.neighbouring.value == "add/remove"
    assert Certificate.from_json(certificate.to_json()) == certificate


def test_dp_sgd_certificate_is_charged_to_every_participating_user(tmp_path):
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 1000
    )
    certificate = certificate_from_dp_event(event, delta=1e-5, neighbouring="add/remove")
    with Ledger(tmp_path / "ledger.db") as ledger:
        ledger.set_budget(None, Guarantee(2 * certificate.epsilon, 1e-5))
        ledger.charge(np.arange(1000), certificate, run_id="dp-sgd")
        spent = ledger.spent(7, delta=1e-5)
        # the ledger composes its one release through the PLD path (tilted at ε itself), the
        # certificate reads its own monotone curve: two proven bounds, equal to 1e-6
        assert spent.epsilon == pytest.approx(certificate.epsilon, rel=1e-6)
        optimistic = pld.from_gaussian_mechanism(
            1.1, sampling_prob=0.01, pessimistic_estimate=False, use_connect_dots=False
        ).self_compose(1000)
        assert spent.epsilon >= optimistic.get_epsilon_for_delta(1e-5)  # never below the truth


def test_relations_and_inputs_are_checked():
    event = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1))
    with pytest.raises(InvalidParameter, match="add/remove"):
        certificate_from_dp_event(event, delta=1e-5)  # replace-one is not what Poisson subsampling amplifies
    certificate = certificate_from_dp_event(event, delta=1e-5, neighbouring="add/remove")
    data = certificate.to_dict()
    data["neighbouring"] = "replace-one"
    with pytest.raises(CertificateFormatError, match="replace-one"):
        Certificate.from_dict(data)
    with pytest.raises(InvalidParameter, match="sampling_probability"):
        PoissonSampledGaussianProfile({"sigma": 1.0, "sampling_probability": 0.0, "steps": 1})


def test_profile_is_below_the_pld_and_rdp_bounds_and_stays_above_the_optimistic_pld():
    """The profile's own single-step masses (relative error bounds, no RDP fallback) give at most
    what dp_accounting's pessimistic PLD composed with the proven round-off bound or the RDP
    conversion give, and never less than dp_accounting's optimistic PLD (a lower estimate)."""
    from dpcert.theory.pld import pld_self_composed_delta_for
    from dpcert.theory.rdp import RdpEventProfile

    sigma, q, steps = 1.1, 0.01, 300
    profile = PoissonSampledGaussianProfile({"sigma": sigma, "sampling_probability": q, "steps": steps})
    single = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4)
    rdp = RdpEventProfile(profile.dp_event(), Neighbouring.ADD_REMOVE)
    optimistic = pld.from_gaussian_mechanism(
        sigma, sampling_prob=q, pessimistic_estimate=False, value_discretization_interval=1e-4
    ).self_compose(steps)
    for epsilon in (1.0, 1.5, 2.0, 2.5):
        ours = profile.delta_for(epsilon)
        by_pld = pld_self_composed_delta_for(single, steps, epsilon)
        assert ours <= min(by_pld * (1 + 1e-3), rdp.delta_for(epsilon))
        assert ours >= float(optimistic.get_delta_for_epsilon(epsilon))
