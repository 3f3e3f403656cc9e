"""Returning users: the paper's per-batch split against its formula, and the tight split against it."""

from __future__ import annotations

import math

import pytest

from dpcert import Guarantee
from dpcert.accounting.composition import compose_counts
from dpcert.accounting.returning_users import paper_split, split_budget
from dpcert.certificates import Certificate, approximate_dp_certificate
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.gaussian import gaussian_certificate


def thm_3_20(epsilon: float, k: int, delta_slack: float) -> float:
    return math.sqrt(2 * k * math.log(1 / delta_slack)) * epsilon + k * epsilon * (math.exp(epsilon) - 1)


def test_paper_split_matches_the_spec_example():
    # docs/PAPER_NOTES.md, PN-CZ-6: M = 100, ε = 0.5, δ = 1e-5 gives ε_m = 0.00506, δ_m = 5e-8
    # and, by Thm 3.20 with δ' = δ/2, a total of ε_tot = 0.2526.
    epsilon_m, delta_m = paper_split(Guarantee(0.5, 1e-5), 100)
    assert epsilon_m == pytest.approx(0.5 / (2 * math.sqrt(200 * math.log(2e5))), rel=1e-14)
    assert epsilon_m == pytest.approx(0.00506, abs=5e-6)
    assert delta_m == pytest.approx(5e-8, rel=1e-14)
    split = split_budget(Guarantee(0.5, 1e-5), 100)
    assert split.paper.total_certificate.epsilon == pytest.approx(thm_3_20(epsilon_m, 100, 0.5e-5), rel=1e-10)
    assert split.paper.total_certificate.epsilon == pytest.approx(0.2526, abs=1e-4)
    assert split.paper_meets_target


@pytest.mark.parametrize(
    "total, m", [(Guarantee(0.5, 1e-5), 100), (Guarantee(1.0, 1e-6), 10), (Guarantee(0.2, 1e-3), 1000)]
)
def test_tight_generic_split_gives_each_batch_at_least_the_papers_epsilon(total, m):
    split = split_budget(total, m)
    assert split.tight.epsilon >= split.paper.epsilon
    assert split.tight.delta == split.paper.delta
    assert split.tight.total_certificate.guarantee.covers(total)
    Certificate.from_json(split.tight.total_certificate.to_json())
    # Near-maximal: 1e-6 more per batch breaks the total (the exact KOV composition, computed afresh).
    larger = approximate_dp_certificate(split.tight.epsilon * (1 + 1e-6), split.tight.delta)
    assert compose_counts([(larger, m)], method="optimal", delta=total.delta).epsilon > total.epsilon


@pytest.mark.parametrize("total, m", [(Guarantee(0.5, 1e-5), 100), (Guarantee(2.0, 1e-6), 20)])
def test_tight_gaussian_split_is_exact_and_needs_less_noise(total, m):
    split = split_budget(total, m, "gaussian", sensitivity=2.0)
    assert split.tight.sigma <= split.paper.sigma
    assert split.tight.epsilon >= split.paper.epsilon
    # The tight σ makes the M-fold composition meet the total exactly (to calibration precision).
    composed = gaussian_certificate(split.tight.sigma, delta=total.delta, sensitivity=2.0, compositions=m)
    assert composed.epsilon <= total.epsilon
    assert composed.epsilon == pytest.approx(total.epsilon, rel=1e-6)
    assert split.paper.total_certificate.epsilon <= total.epsilon


def test_paper_split_is_checked_not_assumed_for_large_epsilon():
    # PN-CZ-6: Cor. 3.21 needs ε < 1 but Thm E.5 claims ε <= 15; the exact Thm 3.20 total
    # is ≈ ε/2 + ε²/(8 ln(2/δ)), which exceeds ε for ε = 15 at δ = 0.1.
    total = Guarantee(15.0, 0.1)
    m = 10
    epsilon_m, _ = paper_split(total, m)
    expected_total = thm_3_20(epsilon_m, m, 0.05)
    assert expected_total > 15.0
    split = split_budget(total, m)
    assert not split.paper_meets_target
    assert split.paper.total_certificate.epsilon == pytest.approx(expected_total, rel=1e-10)
    assert split.tight.total_certificate.epsilon <= 15.0


@pytest.mark.parametrize(
    "args",
    [
        ((0.5, 1e-5), 10),
        (Guarantee(0.5, 0.0), 10),
        (Guarantee(0.0, 1e-5), 10),
        (Guarantee(0.5, 1e-5), 0),
        (Guarantee(0.5, 1e-5), 2.5),
    ],
)
def test_bad_inputs(args):
    with pytest.raises(InvalidParameter):
        split_budget(*args)
    with pytest.raises(InvalidParameter):
        split_budget(Guarantee(0.5, 1e-5), 10, mechanism="laplace")
