"""compose(): one relation-aware RDP path, and exact-PLD composition for certificates that carry one.

References are computed here independently: dp_accounting's own accountants under the same relation,
its optimistic and pessimistic PLDs (a bracket around the truth), and the exact privacy profile of
k-fold randomized response from its trinomial privacy-loss distribution at 40 digits.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import rdp_privacy_accountant

from dpcert import Guarantee
from dpcert.accounting.composition import compose, compose_counts
from dpcert.errors import InvalidParameter
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.discrete_laplace import discrete_laplace_certificate
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate
from dpcert.mechanisms.randomized_response import randomized_response_certificate
from dpcert.mechanisms.sampled_without_replacement import sampled_without_replacement_certificate
from dpcert.mechanisms.shuffle.binary_sum import binary_sum_certificate
from dpcert.profiles import PrivacyLossParts

INTERVAL = 1e-4  # compose()'s default PLD grid


def _rdp_epsilon(event, relation, delta):
    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def _k_fold_randomized_response_epsilon(p: float, k: int, n: int, delta: float) -> float:
    """Exact ε(δ) of n runs of k-ary randomized response, replace-one.

    One run's privacy loss is +ε0 (mass 1 - p + p/k), -ε0 (mass p/k) or 0 (mass (k - 2) p/k),
    ε0 = ln(1 + k(1 - p)/p); the n-fold loss is ℓ ε0 with ℓ = (ups − downs) of a trinomial draw, and
    δ(ε) = Σ_ℓ P(ℓ) (1 − e^{ε − ℓ ε0})⁺ (exact for this symmetric pair).  40 digits throughout.
    """
    with mpmath.workdps(40):
        p_ = mpmath.mpf(p)
        up, down = 1 - p_ + p_ / k, p_ / k
        same = 1 - up - down
        epsilon0 = mpmath.log(up / down)
        mass: dict[int, mpmath.mpf] = {}
        for ups in range(n + 1):
            for downs in range(n - ups + 1):
                term = (
                    mpmath.factorial(n)
                    / (mpmath.factorial(ups) * mpmath.factorial(downs) * mpmath.factorial(n - ups - downs))
                    * up**ups
                    * down**downs
                    * same ** (n - ups - downs)
                )
                mass[ups - downs] = mass.get(ups - downs, mpmath.mpf(0)) + term

        def excess(e):
            return (
                sum(m * (1 - mpmath.exp(e - ell * epsilon0)) for ell, m in mass.items() if ell * epsilon0 > e)
                - delta
            )

        return float(mpmath.findroot(excess, (0, n * epsilon0), solver="bisect", tol=1e-25))


# --------------------------------------------------------------------------- one RDP path
def test_rdp_method_accepts_replace_one_and_is_dp_accountings_rdp_of_the_pair():
    # a replace-one Gaussian certificate of sensitivity 1 is the pair N(0, 4), N(1, 4): its RDP is
    # alpha / 8, which dp_accounting computes for GaussianDpEvent(2) (under either relation)
    certificate = gaussian_certificate(2.0, delta=1e-6)
    assert certificate.neighbouring.value == "replace-one"
    composed = compose_counts([(certificate, 10)], method="rdp", delta=1e-5)
    reference = _rdp_epsilon(
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(2.0), 10),
        NeighboringRelation.ADD_OR_REMOVE_ONE,
        1e-5,
    )
    assert reference <= composed.epsilon <= reference * (1 + 1e-9)
    # randomized response is accounted by dp_accounting's RDP only under replace-one
    rr = randomized_response_certificate(0.5, 3)
    composed = compose_counts([(rr, 40)], method="rdp", delta=1e-6)
    event = dp_event.SelfComposedDpEvent(dp_event.RandomizedResponseDpEvent(0.5, 3), 40)
    reference = _rdp_epsilon(event, NeighboringRelation.REPLACE_ONE, 1e-6)
    assert reference <= composed.epsilon <= reference * (1 + 1e-9)
    # a relation the accountant has no accounting for is refused naming the relation
    add_remove = randomized_response_certificate(0.5, 3, neighbouring="add/remove")
    with pytest.raises(InvalidParameter, match="add/remove"):
        compose([add_remove, add_remove], method="rdp", delta=1e-6)


def test_per_step_fixed_batch_certificates_compose_to_the_single_event():
    # n = 60 000, m = 600, sigma = 1.1 (replace-one sensitivity 1), 50 steps, delta = 1e-5
    step = sampled_without_replacement_certificate(1.1, 600, 60_000, 1, delta=1e-5 / 50)
    single = dp_event.SelfComposedDpEvent(
        dp_event.SampledWithoutReplacementDpEvent(60_000, 600, dp_event.GaussianDpEvent(1.1)), 50
    )
    reference = _rdp_epsilon(single, NeighboringRelation.REPLACE_ONE, 1e-5)
    assert reference == pytest.approx(1.0422, abs=1e-4)
    composed = compose([step] * 50, delta=1e-5)
    # RDP adds up over steps, so the composition is the single event's RDP curve (before, 58.6)
    assert reference <= composed.epsilon <= reference * (1 + 1e-9)
    assert composed.delta_for(composed.epsilon) <= 1e-5
    assert compose([step] * 50, method="rdp", delta=1e-5).epsilon == composed.epsilon


def test_ledger_accepts_fifty_shuffled_batch_steps_within_budget_eight(tmp_path):
    step = sampled_without_replacement_certificate(1.1, 600, 60_000, 1, delta=1e-5 / 50)
    single = dp_event.SelfComposedDpEvent(
        dp_event.SampledWithoutReplacementDpEvent(60_000, 600, dp_event.GaussianDpEvent(1.1)), 50
    )
    reference = _rdp_epsilon(single, NeighboringRelation.REPLACE_ONE, 1e-5)
    with Ledger(tmp_path / "ledger.db") as ledger:
        ledger.set_budget(None, Guarantee(8.0, 1e-5))
        for index in range(50):  # a refusal raises: every step must be accepted
            ledger.charge(np.array([7]), step, run_id=f"step-{index}")
        spent = ledger.spent(7, delta=1e-5)
    assert reference <= spent.epsilon <= reference * 1.03


# --------------------------------------------------------------------------- exact PLD
def test_profiles_with_a_loss_distribution_follow_the_protocol():
    for certificate in (
        randomized_response_certificate(0.3, 4),
        laplace_certificate(2.0),
        discrete_laplace_certificate(0.5, sensitivity=2),
    ):
        assert isinstance(certificate.profile, PrivacyLossParts)
    assert not isinstance(gaussian_certificate(1.0, delta=1e-5).profile, PrivacyLossParts)


def test_k_fold_randomized_response_composes_through_its_exact_loss_distribution():
    p, k, n, delta = 0.97, 4, 125, 1e-5
    exact = _k_fold_randomized_response_epsilon(p, k, n, delta)
    certificate = compose_counts([(randomized_response_certificate(p, k), n)], delta=delta)
    # pessimistic grid: each run's loss is rounded up by less than one interval
    assert exact <= certificate.epsilon <= exact + n * INTERVAL
    assert certificate.delta_for(certificate.epsilon) <= delta
    # dp_accounting's own pessimistic PLD of the same composition (replace-one, its default here)
    dp_accounting = (
        pld.from_randomized_response(p, k, value_discretization_interval=INTERVAL)
        .self_compose(n)
        .get_epsilon_for_delta(delta)
    )
    assert certificate.epsilon <= dp_accounting * 1.005
    assert certificate.epsilon < 4.1  # generic ε0-DP composition gave 5.88


def test_k_fold_randomized_response_small_cases_are_exact():
    for p, k, n, delta in ((0.5, 2, 10, 1e-3), (0.8, 5, 40, 1e-6), (0.2, 3, 3, 1e-2)):
        exact = _k_fold_randomized_response_epsilon(p, k, n, delta)
        certificate = compose_counts([(randomized_response_certificate(p, k), n)], method="pld", delta=delta)
        assert exact <= certificate.epsilon <= exact + n * INTERVAL + 1e-9, (p, k, n)


def test_a_thousand_mixed_certificates_lie_between_dp_accountings_optimistic_and_pessimistic_plds():
    parts = [
        (
            randomized_response_certificate(0.97, 4),
            500,
            lambda pes: pld.from_randomized_response(0.97, 4, pessimistic_estimate=pes),
        ),
        (
            randomized_response_certificate(0.9, 2),
            300,
            lambda pes: pld.from_randomized_response(0.9, 2, pessimistic_estimate=pes),
        ),
        (
            laplace_certificate(40.0),
            150,
            lambda pes: pld.from_laplace_mechanism(40.0, pessimistic_estimate=pes),
        ),
        (
            gaussian_certificate(30.0, delta=1e-9),
            50,
            lambda pes: pld.from_gaussian_mechanism(30.0, pessimistic_estimate=pes),
        ),
    ]
    certificates = [certificate for certificate, count, _ in parts for _ in range(count)]
    assert len(certificates) == 1000
    delta = 1e-6
    composed = compose(certificates, delta=delta)

    def reference(pessimistic: bool) -> float:
        total = None
        for _, count, build in parts:
            single = build(pessimistic).self_compose(count)
            total = single if total is None else total.compose(single)
        return total.get_epsilon_for_delta(delta)

    lower, upper = reference(False), reference(True)
    # dp_accounting's optimistic discretisation (losses rounded down, tails dropped) is below the truth
    assert lower - 1e-6 <= composed.epsilon <= upper * 1.005
    assert composed.epsilon <= lower * 1.02
    assert composed.delta_for(composed.epsilon) <= delta


def test_binary_sums_compose_through_their_binomial_loss_distribution():
    # (N, N + 1) with N ~ Bin(200, 1/2): dp_accounting's optimistic and pessimistic PLDs of the same two
    # pmfs (built here from exact log-binomials at 30 digits) bracket the 20-fold composition
    bits, runs, delta = 200, 20, 1e-6
    certificate = binary_sum_certificate(bits, delta=1e-3)
    assert isinstance(certificate.profile, PrivacyLossParts)
    with mpmath.workdps(30):
        log_pmf = {
            k: float(mpmath.log(mpmath.binomial(bits, k)) - bits * mpmath.log(2)) for k in range(bits + 1)
        }
    upper = log_pmf
    lower = {k + 1: value for k, value in log_pmf.items()}

    def reference(pessimistic: bool) -> float:
        single = pld.from_two_probability_mass_functions(
            lower, upper, pessimistic_estimate=pessimistic, value_discretization_interval=INTERVAL
        )
        return single.self_compose(runs).get_epsilon_for_delta(delta)

    composed = compose_counts([(certificate, runs)], delta=delta)
    assert reference(False) - 1e-6 <= composed.epsilon <= reference(True) + 1e-6
    # each run's loss is rounded up (pessimistic) or down (optimistic) by less than one interval
    assert composed.epsilon <= reference(False) + 2 * runs * INTERVAL
    assert composed.delta_for(composed.epsilon) <= delta


def test_a_loss_grid_too_large_is_refused_naming_the_interval_and_best_goes_without_it():
    nearly_exact = randomized_response_certificate(1e-200, 4)  # losses ±462
    with pytest.raises(InvalidParameter, match="value_discretization_interval"):
        compose_counts([(nearly_exact, 3)], method="pld", delta=1e-6)
    # "best" goes on with the other methods: never above basic composition (three times the pure epsilon)
    assert compose_counts([(nearly_exact, 3)], delta=1e-6).epsilon <= 3 * nearly_exact.epsilon * (1 + 1e-15)
