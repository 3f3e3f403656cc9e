"""ε lower bounds from samples: validity, power against broken mechanisms, and the report's counts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from dpcert import DPCertError
from dpcert.audits import AuditReport, audit, audit_samples
from dpcert.audits.epsilon_lower_bound import (
    EvaluationCounts,
    bound_from_counts,
    epsilon_ceiling,
    epsilon_lower_bound,
)
from dpcert.audits.reference_mechanisms import gaussian_noise, laplace_noise, randomized_response
from dpcert.audits.rejection_set import Feature, RejectionSet
from dpcert.audits.sampling import SamplePair, accepts_size, draw, draw_pair
from dpcert.errors import CertificateMismatch, InvalidParameter
from dpcert.mechanisms.gaussian import calibrate_gaussian
from dpcert.mechanisms.laplace import calibrate_laplace
from dpcert.theory.gaussian import gaussian_epsilon


# --------------------------------------------------------------------------- the bound from counts
@pytest.mark.parametrize(
    "k_num, n_num, k_den, n_den, delta, confidence",
    [(400, 1000, 150, 1000, 0.0, 0.95), (50, 200, 0, 300, 0.01, 0.9), (999, 1000, 1, 1000, 0.0, 0.99)],
)
def test_bound_from_counts_is_the_union_of_two_one_sided_beta_quantiles(
    k_num, n_num, k_den, n_den, delta, confidence
):
    alpha = 1 - confidence
    lower = stats.beta.ppf(alpha / 2, k_num, n_num - k_num + 1)  # Clopper & Pearson 1934
    upper = 1.0 if k_den == n_den else stats.beta.ppf(1 - alpha / 2, k_den + 1, n_den - k_den)
    expected = max(0.0, math.log((lower - delta) / upper))
    bound = bound_from_counts(EvaluationCounts("a", k_num, n_num, k_den, n_den), delta, confidence)
    # Rounded down by a relative 1e-9 (plus 1e-12): never above the exact value, and close to it.
    assert expected * (1 - 2e-9) - 2e-12 <= bound.epsilon_lower_bound <= expected
    assert bound.numerator_lower == pytest.approx(lower, rel=1e-9)
    assert bound.denominator_upper == pytest.approx(upper, rel=1e-9)


def test_ceiling_matches_closed_form_and_grows_like_log_n():
    for n in (100, 10_000, 500_000):
        q = 0.025 ** (1 / n)  # all n draws of one input in S: lower end (α/2)^(1/n); none of the other
        assert epsilon_ceiling(n, 0.0, 0.95) == pytest.approx(math.log(q / (1 - q)), rel=3e-9)
        assert epsilon_ceiling(n, 0.0, 0.95) <= math.log(q / (1 - q))
        # ln(q/(1-q)) = ln(n/ln(40)) + O(1/n) as n grows
        assert epsilon_ceiling(n, 0.0, 0.95) == pytest.approx(math.log(n / math.log(40.0)), abs=3.0 / n)


def test_counts_below_delta_give_zero_not_negative():
    bound = bound_from_counts(EvaluationCounts("b", 1, 1000, 1, 1000), 0.1, 0.95)
    assert bound.epsilon_lower_bound == 0.0


@pytest.mark.parametrize(
    "bad", [dict(confidence=1.0), dict(confidence=0.0), dict(delta=-0.1), dict(delta=1.0)]
)
def test_bound_rejects_bad_parameters(bad):
    arguments = dict(delta=0.0, confidence=0.95) | bad
    with pytest.raises(InvalidParameter):
        bound_from_counts(EvaluationCounts("a", 1, 10, 1, 10), **arguments)


def test_counts_are_validated():
    with pytest.raises(InvalidParameter, match="in_set_numerator"):
        EvaluationCounts("a", 11, 10, 1, 10)
    with pytest.raises(InvalidParameter, match="numerator"):
        EvaluationCounts("c", 1, 10, 1, 10)


# --------------------------------------------------------------------------- sampling
def test_sampling_uses_size_when_available_and_single_draws_otherwise():
    calls = []

    def scalar_only(value, rng):
        calls.append(1)
        return value + rng.integers(0, 2)

    assert not accepts_size(scalar_only)
    assert accepts_size(laplace_noise(1.0))
    outputs = draw(scalar_only, 3, 2500, np.random.default_rng(0))
    assert outputs.shape == (2500,) and len(calls) == 2500 and set(np.unique(outputs)) <= {3, 4}
    batched = draw(laplace_noise(1.0), [0.0, 1.0], 2500, np.random.default_rng(0), batch_size=1000)
    assert batched.shape == (2500, 2)


def test_sampling_rejects_wrong_batch_shapes():
    with pytest.raises(InvalidParameter, match="size"):
        draw(lambda v, rng, size: np.zeros(size + 1), 0, 10, np.random.default_rng(0))


# --------------------------------------------------------------------------- done-when criteria
def test_correct_laplace_is_consistent_and_tight_with_a_million_draws():
    mechanism = calibrate_laplace(1.0).mechanism()
    report = audit(mechanism, 0.0, 1.0, samples=1_000_000, seed=11)  # claim from the certificate
    assert report.verdict == "consistent"
    assert 0.95 <= report.epsilon_lower_bound <= 1.0


def test_laplace_with_half_the_noise_is_violated_from_ten_thousand_draws():
    report = audit(laplace_noise(0.5), 0.0, 1.0, 1.0, samples=10_000, seed=12)
    assert report.verdict == "violated"
    assert 1.0 < report.epsilon_lower_bound <= 2.0  # true ε = 2


def test_gaussian_calibrated_for_the_wrong_delta_is_violated():
    wrong = calibrate_gaussian(1.0, 1e-2).sigma  # claims (1, 1e-5) with the noise of (1, 1e-2)
    true_epsilon = gaussian_epsilon(1e-5, 1.0 / wrong)
    report = audit(gaussian_noise(wrong), 0.0, 1.0, 1.0, 1e-5, samples=400_000, seed=13)
    assert report.verdict == "violated"
    assert report.epsilon_lower_bound <= true_epsilon


def test_correct_gaussian_is_consistent():
    sigma = calibrate_gaussian(1.0, 1e-5).sigma
    report = audit(gaussian_noise(sigma), 0.0, 1.0, 1.0, 1e-5, samples=200_000, seed=14)
    assert report.verdict == "consistent"


def test_randomized_response_with_a_wrong_flip_probability_is_violated():
    keep = 0.85  # claimed ε = 1 needs keep = e/(1+e) ≈ 0.731; true ε = ln(0.85/0.15) ≈ 1.73
    report = audit(randomized_response(keep), 0, 1, 1.0, samples=50_000, seed=15)
    assert report.verdict == "violated"
    assert report.rejection_set.kind == "cells"
    assert report.epsilon_lower_bound <= math.log(keep / (1 - keep))


def test_vector_laplace_with_a_wrong_sensitivity_is_violated():
    # Scale 1 per coordinate is ε = 1 for l1-sensitivity 1, but these inputs differ by 2 in l1 (true ε = 2).
    report = audit(laplace_noise(1.0), [0.0] * 4, [1.0, 1.0, 0.0, 0.0], 1.0, samples=200_000, seed=16)
    assert report.verdict == "violated"
    assert report.rejection_set.feature.name in ("projection", "distance", "l1-contrast")
    assert report.epsilon_lower_bound <= 2.0


def test_vector_gaussian_with_a_wrong_sensitivity_is_violated_and_a_correct_one_is_not():
    sigma = calibrate_gaussian(1.0, 1e-5).sigma  # for l2-sensitivity 1
    neighbour = [1.0, 1.0, 1.0]  # l2 distance sqrt(3)
    wrong = audit(gaussian_noise(sigma), [0.0] * 3, neighbour, 1.0, 1e-5, samples=200_000, seed=17)
    assert wrong.verdict == "violated"
    assert wrong.epsilon_lower_bound <= gaussian_epsilon(1e-5, math.sqrt(3) / sigma)
    right = audit(gaussian_noise(sigma), [0.0] * 3, [0.6, 0.0, 0.8], 1.0, 1e-5, samples=200_000, seed=17)
    assert right.verdict == "consistent"


def test_false_violation_rate_of_correct_mechanisms_is_consistent_with_alpha():
    """200 seeded audits of correct mechanisms at confidence 0.9 (α = 0.1).

    The mix includes the canonical (ε, δ) pair (Kairouz, Oh & Viswanath 2015, Thm 2.1), for which
    ln((P_a(S) − δ)/P_b(S)) = ε exactly on the best set, so that a mis-spent α would show.  The
    binomial test of "rate <= α" has a false-positive rate of at most 0.001 when the audit is valid.
    """
    epsilon, delta = 1.0, 0.05
    keep = math.exp(epsilon) / (1 + math.exp(epsilon))
    canonical = np.array([delta, (1 - delta) * keep, (1 - delta) * (1 - keep), 0.0])

    def canonical_pair(value, rng, size):
        pmf = canonical if value == 0 else canonical[::-1]
        return rng.choice(4, size=size, p=pmf)

    mechanisms = [
        (canonical_pair, 0, 1, delta),
        (randomized_response(keep), 0, 1, 0.0),
        (laplace_noise(1.0), 0.0, 1.0, 0.0),
        (gaussian_noise(calibrate_gaussian(epsilon, 1e-3).sigma), 0.0, 1.0, 1e-3),
    ]
    violations = 0
    for index in range(200):
        mechanism, a, b, delta = mechanisms[index % len(mechanisms)]
        report = audit(mechanism, a, b, epsilon, delta, samples=4_000, seed=1000 + index, confidence=0.9)
        violations += report.violated
    assert stats.binomtest(violations, 200, 0.1, alternative="greater").pvalue > 1e-3


# --------------------------------------------------------------------------- validity of the split
def test_rejection_set_depends_on_the_selection_half_only():
    rng = np.random.default_rng(3)
    first_a, first_b = rng.laplace(0, 1, 5000), rng.laplace(1, 1, 5000)
    pair_one = SamplePair(
        np.concatenate([first_a, rng.laplace(0, 1, 5000)]), np.concatenate([first_b, rng.laplace(1, 1, 5000)])
    )
    pair_two = SamplePair(
        np.concatenate([first_a, rng.laplace(5, 1, 5000)]),
        np.concatenate([first_b, rng.laplace(-5, 1, 5000)]),
    )
    one, two = epsilon_lower_bound(pair_one), epsilon_lower_bound(pair_two)
    assert one.rejection_set == two.rejection_set
    assert one.counts != two.counts


def test_lower_bound_never_exceeds_the_exact_epsilon_of_randomized_response():
    keep = 0.7
    exact = math.log(keep / (1 - keep))
    bounds = [
        audit(randomized_response(keep), 0, 1, 5.0, samples=20_000, seed=seed).epsilon_lower_bound
        for seed in range(20)
    ]
    # Each bound exceeds the truth with probability <= 0.05; all 20 below holds with probability >= 0.36
    # even in the worst case, so test the count with a binomial tail (false-positive rate <= 0.001).
    exceed = sum(bound > exact for bound in bounds)
    assert stats.binom.sf(exceed - 1, 20, 0.05) > 1e-3
    assert max(bounds) > 0.5 * exact  # and the audit has power (a bound of 0 would be trivially valid)


def test_categorical_and_scalar_only_outputs():
    def colour(value, rng):
        return "red" if rng.random() < (0.6 if value else 0.4) else "blue"

    report = audit(colour, True, False, 2.0, samples=4_000, seed=5)
    assert report.verdict == "consistent"
    assert report.rejection_set.kind == "cells"
    assert set(report.rejection_set.cells) <= {"red", "blue"}


def test_user_score_is_used_for_the_rejection_set():
    report = audit(laplace_noise(1.0), 0.0, 1.0, 1.0, samples=20_000, seed=6, score=lambda x: -x)
    assert report.rejection_set.feature.name == "score"


# --------------------------------------------------------------------------- the report
def test_report_round_trips_and_rechecks_from_counts_alone():
    report = audit(laplace_noise(0.5), 0.0, 1.0, 1.0, samples=10_000, seed=7)
    text = report.to_json()
    data = json.loads(text)
    for key in ("verdict", "epsilon_lower_bound", "confidence", "samples", "method"):
        assert key in data
    again = AuditReport.from_json(text)
    assert again.epsilon_lower_bound == report.epsilon_lower_bound
    assert again.rejection_set == report.rejection_set
    # The saved rejection set reproduces the saved evaluation counts on the saved split of fresh draws.
    rng = np.random.default_rng(7)
    on_a, on_b = laplace_noise(0.5)(0.0, rng, 10_000), laplace_noise(0.5)(1.0, rng, 10_000)
    counts = again.counts
    in_a = int(np.count_nonzero(again.rejection_set.contains(on_a[5000:])))
    in_b = int(np.count_nonzero(again.rejection_set.contains(on_b[5000:])))
    assert (counts.in_set_numerator, counts.in_set_denominator) == (
        (in_a, in_b) if counts.numerator == "a" else (in_b, in_a)
    )


def test_tampered_report_is_refused():
    report = audit(randomized_response(0.9), 0, 1, 1.0, samples=10_000, seed=8)
    data = report.to_dict()
    data["verdict"] = "consistent"
    with pytest.raises(CertificateMismatch):
        AuditReport.from_dict(data)
    data = report.to_dict()
    data["counts"]["in_set_denominator"] += 200
    with pytest.raises(CertificateMismatch):
        AuditReport.from_dict(data)


def test_cells_rejection_set_round_trips_for_vector_outputs():
    def two_bits(value, rng, size):
        return (rng.random((size, 2)) < np.where(np.asarray(value) > 0, 0.8, 0.2)).astype(int)

    report = audit(two_bits, [0, 0], [1, 1], 1.0, samples=20_000, seed=9)
    assert report.rejection_set.kind == "cells"
    again = AuditReport.from_json(report.to_json())
    outputs = np.array([[0, 0], [1, 1], [0, 1]])
    assert np.array_equal(again.rejection_set.contains(outputs), report.rejection_set.contains(outputs))


def test_ceiling_is_reported_when_it_binds():
    report = audit(laplace_noise(0.01), 0.0, 1.0, 20.0, samples=200, seed=10)
    assert report.ceiling_binds
    assert any("ceiling" in note for note in report.notes)


@pytest.mark.parametrize(
    "arguments",
    [
        dict(epsilon=-1.0),
        dict(epsilon=1.0, delta=1.5),
        dict(epsilon=1.0, samples=1),
        dict(epsilon=1.0, confidence=1.2),
        dict(epsilon=1.0, seed="x"),
        dict(epsilon=1.0, seed=-1),
        dict(epsilon=1.0, seed=1, rng=np.random.default_rng(1)),
    ],
)
def test_audit_validates_its_inputs(arguments):
    with pytest.raises(DPCertError):
        audit(laplace_noise(1.0), 0.0, 1.0, **arguments)


def test_audit_samples_accepts_precomputed_draws():
    rng = np.random.default_rng(1)
    pair = SamplePair(rng.laplace(0, 1, 20_000), rng.laplace(1, 1, 20_000))
    report = audit_samples(pair, 1.0)
    assert report.verdict == "consistent" and report.samples == 20_000
    assert isinstance(report.rejection_set, RejectionSet)


def test_learned_vector_rejection_set_round_trips():
    report = audit(laplace_noise(1.0), [0.0] * 3, [1.0, 0.0, 0.0], 1.0, samples=20_000, seed=21)
    again = AuditReport.from_json(report.to_json())
    assert again.rejection_set == report.rejection_set
    outputs = np.random.default_rng(22).laplace(0.0, 1.0, (1000, 3))
    assert np.array_equal(again.rejection_set.contains(outputs), report.rejection_set.contains(outputs))


@pytest.mark.parametrize("have_tqdm", [True, False])
def test_progress_is_reported_on_stderr(capsys, monkeypatch, have_tqdm):
    import sys

    if not have_tqdm:
        monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails: plain percentages
    pair = draw_pair(
        laplace_noise(1.0), 0.0, 1.0, 3000, np.random.default_rng(0), batch_size=1000, progress=True
    )
    assert pair.samples == 3000
    assert "sampling" in capsys.readouterr().err


def test_rejection_set_is_validated_and_string_cells_match_exactly():
    with pytest.raises(InvalidParameter, match="side"):
        RejectionSet("threshold", Feature("value"), "<", 0.0)
    with pytest.raises(InvalidParameter, match="kind"):
        RejectionSet("ball")
    cells = RejectionSet("cells", cells=("green", "red"))
    assert cells.contains(np.array(["gree", "red", "blue"])).tolist() == [False, True, False]


def test_only_a_parameter_named_size_is_used_for_batches():
    def scaled(value, rng, scale=2.0):  # a third parameter that is not a batch size
        return value + scale * rng.laplace()

    def keyword_size(value, rng, *, size=None):
        return value + rng.laplace(size=size)

    assert not accepts_size(scaled)
    assert accepts_size(keyword_size)
    assert draw(scaled, 0.0, 10, np.random.default_rng(0)).shape == (10,)
    assert draw(keyword_size, 0.0, 10, np.random.default_rng(0)).shape == (10,)


def test_wide_discrete_support_keeps_its_power():
    """Discrete Laplace with ε = 0.2 has ~100 cells; sparse cells must not be chosen by chance."""
    epsilon = 0.2
    p = -math.expm1(-epsilon)

    def discrete_laplace(value, rng, size):
        return value + rng.geometric(p, size) - rng.geometric(p, size)

    report = audit(discrete_laplace, 0, 1, epsilon, samples=100_000, seed=31)
    assert report.verdict == "consistent"
    assert 0.1 < report.epsilon_lower_bound <= epsilon
