"""Exact hockey-stick divergence of discrete PMFs, against brute force over subsets and dp_accounting."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpcert.audits.exact import delta_for, epsilon_for, estimate_profile, pmf_pair
from dpcert.errors import InvalidParameter


def brute_force_delta(p: np.ndarray, q: np.ndarray, epsilon: float) -> float:
    """max over every subset S of P(S) − e^ε Q(S), both directions (the definition of (ε, δ)-DP)."""
    best = 0.0
    cells = range(len(p))
    for size in range(1, len(p) + 1):
        for subset in itertools.combinations(cells, size):
            index = list(subset)
            best = max(best, p[index].sum() - math.exp(epsilon) * q[index].sum())
            best = max(best, q[index].sum() - math.exp(epsilon) * p[index].sum())
    return best


def random_pmf_pairs(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        cells = int(rng.integers(2, 8))
        p = rng.dirichlet(np.ones(cells))
        q = rng.dirichlet(np.ones(cells))
        yield p, q


@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0, 2.5])
def test_delta_matches_brute_force_over_all_subsets(epsilon):
    for p, q in random_pmf_pairs(30, seed=int(epsilon * 10)):
        exact = delta_for(p, q, epsilon)
        brute = brute_force_delta(p, q, epsilon)
        assert exact >= brute  # rounded up, never optimistic
        assert exact == pytest.approx(brute, abs=1e-13)


def test_epsilon_for_inverts_delta_for_on_the_safe_side():
    for p, q in random_pmf_pairs(40, seed=99):
        for delta in (0.0, 1e-3, 0.05, 0.2):
            epsilon = epsilon_for(p, q, delta)
            assert delta_for(p, q, epsilon) <= delta
            if epsilon > 1e-9:
                assert brute_force_delta(p, q, epsilon * (1 - 1e-7)) > delta


def test_randomized_response_closed_form():
    keep = 0.8
    p, q = [keep, 1 - keep], [1 - keep, keep]
    pure = math.log(keep / (1 - keep))
    assert epsilon_for(p, q, 0.0) == pytest.approx(pure, rel=1e-12)
    assert epsilon_for(p, q, 0.0) >= pure
    for epsilon in (0.0, 0.5, 1.0):
        assert delta_for(p, q, epsilon) == pytest.approx(keep - math.exp(epsilon) * (1 - keep), rel=1e-12)
    assert delta_for(p, q, pure + 1e-9) == 0.0


def test_disjoint_support_gives_infinite_epsilon_below_its_mass():
    p = {"x": 0.5, "y": 0.5}
    q = {"x": 0.5, "z": 0.5}
    assert epsilon_for(p, q, 0.4) == math.inf
    assert epsilon_for(p, q, 0.5) <= 1e-9  # δ = total variation 0.5 is met at ε = 0
    assert delta_for(p, q, 5.0) == pytest.approx(0.5)


def test_matches_dp_accounting_privacy_loss_distribution():
    from dp_accounting.pld import privacy_loss_distribution

    # Binomial count with one user's bit flipped: Bin(20, 0.3) vs 1 + Bin(19, 0.3) (support 0..20).
    support = np.arange(21)
    p = stats.binom.pmf(support, 20, 0.3)
    q = np.concatenate([[0.0], stats.binom.pmf(support[:-1], 19, 0.3)])
    q = q + 1e-12
    q = q / q.sum()
    pld = privacy_loss_distribution.from_two_probability_mass_functions(
        {int(k): math.log(v) for k, v in zip(support, p, strict=True)},
        {int(k): math.log(v) for k, v in zip(support, q, strict=True)},
        value_discretization_interval=1e-5,
        symmetric=False,  # both directions (remove and add), as our delta_for
    )
    for epsilon in (0.5, 1.0, 2.0):
        ours = delta_for(p, q, epsilon)
        theirs = pld.get_delta_for_epsilon(epsilon)  # pessimistic: an upper bound
        assert ours <= theirs + 1e-12
        assert ours == pytest.approx(theirs, rel=1e-3, abs=1e-9)


@pytest.mark.parametrize(
    "p, q",
    [([0.5, 0.6], [0.5, 0.5]), ([-0.1, 1.1], [0.5, 0.5]), ([0.5, 0.5], [1.0]), ({0: 1.0}, [1.0]), ([], [])],
)
def test_bad_pmfs_are_refused(p, q):
    with pytest.raises(InvalidParameter):
        pmf_pair(p, q)


def test_estimate_from_samples_covers_the_truth():
    """20 seeded estimates of a 3-outcome mechanism at confidence 0.95.

    The simultaneous intervals miss with probability <= 0.05 each; the binomial tail of the number of
    misses has a false-positive rate <= 0.001.
    """
    p = np.array([0.6, 0.3, 0.1])
    q = np.array([0.3, 0.3, 0.4])
    truth = pmf_pair(p, q)
    misses = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        on_a, on_b = rng.choice(3, 20_000, p=p), rng.choice(3, 20_000, p=q)
        estimate = estimate_profile(on_a, on_b, support=[0, 1, 2])
        covered = all(
            estimate.delta_lower(e) <= truth.delta_for(e) <= estimate.delta_upper(e) for e in (0.0, 0.5, 1.0)
        ) and all(
            estimate.epsilon_lower(d) <= truth.epsilon_for(d) <= estimate.epsilon_upper(d)
            for d in (0.0, 0.05)
        )
        misses += not covered
    assert stats.binom.sf(misses - 1, 20, 0.05) > 1e-3
    # And the bounds are informative: the interval around ε(0) = ln 2 is narrower than 0.3.
    assert estimate.epsilon_upper(0.0) - estimate.epsilon_lower(0.0) < 0.3


def test_estimate_without_support_gives_lower_bounds_only():
    rng = np.random.default_rng(1)
    estimate = estimate_profile(rng.integers(0, 2, 1000), rng.integers(0, 2, 1000))
    assert estimate.delta_upper(0.5) is None and estimate.epsilon_upper(0.0) is None
    assert estimate.epsilon_lower(0.0) >= 0.0
    with pytest.raises(InvalidParameter, match="support"):
        estimate_profile([0, 1, 2], [0, 1], support=[0, 1])
