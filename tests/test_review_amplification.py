"""Cross-checks of amplification by shuffling (Feldman, McMillan & Talwar 2020, Thm 3.1 and 3.2).

References computed here independently:
* the exact shuffled privacy of binary randomized response (view = count of ones, worst case over the
  other users' bits) and of 3-ary randomized response (view = histogram, enumerated), small n;
* FMT Thm 3.2's pair ``P = (A + Δ, C − A + 1 − Δ)``, ``Q = (A + 1 − Δ, C − A + Δ)`` enumerated
  outcome by outcome (no threshold argument), against ``numeric_delta``'s evaluation of it.
The certified bounds must never be below the exact values.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpcert.theory import amplification as amp


def hockey_stick(upper: np.ndarray, lower: np.ndarray, epsilon: float) -> float:
    return float(np.maximum(upper - math.exp(epsilon) * lower, 0.0).sum())


def binary_rr_delta(epsilon: float, epsilon0: float, users: int) -> float:
    """Exact δ(ε) of shuffled binary RR: user 1 holds 0 vs 1, the others any bits (worst case)."""
    flip = 1.0 / (1.0 + math.exp(epsilon0))
    best = 0.0
    for ones in range(users):
        others = np.convolve(
            stats.binom.pmf(np.arange(ones + 1), ones, 1.0 - flip),
            stats.binom.pmf(np.arange(users - ones), users - 1 - ones, flip),
        )
        upper, lower = np.convolve(others, [1.0 - flip, flip]), np.convolve(others, [flip, 1.0 - flip])
        best = max(best, hockey_stick(upper, lower, epsilon), hockey_stick(lower, upper, epsilon))
    return best


def kary_rr_delta(epsilon: float, epsilon0: float, users: int, k: int = 3) -> float:
    """Exact δ(ε) of shuffled k-ary RR by enumerating histograms (user 1 holds 0 vs 1)."""
    stay = math.exp(epsilon0) / (math.exp(epsilon0) + k - 1)
    move = 1.0 / (math.exp(epsilon0) + k - 1)

    def histogram_law(data) -> dict:
        law = {(0,) * k: 1.0}
        for x in data:
            new: dict = {}
            for hist, weight in law.items():
                for y in range(k):
                    key = hist[:y] + (hist[y] + 1,) + hist[y + 1 :]
                    new[key] = new.get(key, 0.0) + weight * (stay if y == x else move)
            law = new
        return law

    best = 0.0
    for others in itertools.combinations_with_replacement(range(k), users - 1):
        first, second = histogram_law((0,) + others), histogram_law((1,) + others)
        keys = sorted(set(first) | set(second))
        upper = np.array([first.get(h, 0.0) for h in keys])
        lower = np.array([second.get(h, 0.0) for h in keys])
        best = max(best, hockey_stick(upper, lower, epsilon), hockey_stick(lower, upper, epsilon))
    return best


def fmt_pair_delta(epsilon: float, epsilon0: float, users: int) -> float:
    """FMT Thm 3.2's pair enumerated on every outcome (c, first coordinate), both directions."""
    alpha = math.exp(epsilon0) / (math.exp(epsilon0) + 1.0)
    total_forward = total_backward = 0.0
    for c in range(users):
        weight = stats.binom.pmf(c, users - 1, math.exp(-epsilon0))
        a = stats.binom.pmf(np.arange(c + 1), c, 0.5)
        upper = np.zeros(c + 2)
        lower = np.zeros(c + 2)
        upper[1:] += alpha * a  # A + 1 (Δ = 1)
        upper[:-1] += (1 - alpha) * a  # A (Δ = 0)
        lower[:-1] += alpha * a  # A + 1 − Δ with Δ = 1
        lower[1:] += (1 - alpha) * a
        total_forward += weight * hockey_stick(upper, lower, epsilon)
        total_backward += weight * hockey_stick(lower, upper, epsilon)
    return max(total_forward, total_backward)


@pytest.mark.parametrize("epsilon0", [0.5, 1.0, 2.0, 3.0])
@pytest.mark.parametrize("users", [2, 5, 20, 100])
def test_numeric_bound_covers_binary_randomized_response(epsilon0: float, users: int) -> None:
    for epsilon in np.linspace(0.0, epsilon0, 6):
        reference = binary_rr_delta(epsilon, epsilon0, users)
        assert amp.shuffled_delta(epsilon, epsilon0, users) >= reference - 1e-15  # reference round-off


@pytest.mark.parametrize("epsilon0", [0.5, 1.5, 3.0])
@pytest.mark.parametrize("users", [2, 4, 6])
def test_numeric_bound_covers_ternary_randomized_response(epsilon0: float, users: int) -> None:
    for epsilon in np.linspace(0.0, epsilon0, 5):
        reference = kary_rr_delta(epsilon, epsilon0, users)
        assert amp.shuffled_delta(epsilon, epsilon0, users) >= reference - 1e-15  # reference round-off


@pytest.mark.parametrize("epsilon0", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("users", [1, 3, 10, 60])
def test_numeric_delta_evaluates_theorem_3_2_exactly(epsilon0: float, users: int) -> None:
    for epsilon in np.linspace(0.0, epsilon0 * 0.99, 7):
        reference = fmt_pair_delta(epsilon, epsilon0, users)
        value = amp.numeric_delta(epsilon, epsilon0, users)
        # numeric_delta adds 1e-10 of the optimal set's mass for rounding: above, by at most that.
        assert reference - 1e-15 <= value <= reference + 1e-9


@pytest.mark.parametrize(("users", "delta"), [(200, 1e-3), (300, 1e-4)])
def test_closed_form_covers_binary_randomized_response(users: int, delta: float) -> None:
    largest = math.log(users / (16.0 * math.log(2.0 / delta)))
    for epsilon0 in (0.2, 0.5 * largest, 0.999 * largest):  # inside the precondition
        epsilon = amp.closed_form_epsilon(epsilon0, users, delta)
        assert binary_rr_delta(epsilon, epsilon0, users) <= delta
        assert amp.shuffled_delta(epsilon, epsilon0, users, method="closed-form") <= delta


@pytest.mark.parametrize("method", ["numeric", "closed-form"])
def test_largest_local_epsilon_lands_on_the_valid_side(method: str) -> None:
    epsilon, delta, users = 1.0, 1e-5, 2_000
    epsilon0 = amp.largest_local_epsilon(epsilon, delta, users, method=method)
    assert epsilon0 > epsilon
    assert amp.shuffled_delta(epsilon, epsilon0, users, method=method) <= delta
    assert amp.shuffled_delta(epsilon, epsilon0 * 1.01, users, method=method) > delta
