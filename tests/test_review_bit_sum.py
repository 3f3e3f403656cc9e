"""Brute-force cross-checks of the bit-sum protocol's exact accounting (Li, Zhou & Ji 2022, Alg. 2/4; P_Vec).

For tiny instances the exact law of the shuffled view (per coordinate, the count of ones among the
``n(g + b)`` bits) is enumerated from the randomizer itself: each user's value ``v ∈ [−B, B]`` is
encoded as ``u = (v + B)g/(2B)``, rounded at random, and joined by ``b`` Bernoulli(p) bits.  The
largest hockey-stick divergence over replace-one neighbours on a grid of inputs (negative values,
fractional encodings and the range ends included) must never exceed the certified δ(ε), and for
entry-bounded data it must reach it (the worst case is attained at the ends of the range).
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpcert.theory import binomial as exact

EPSILONS = np.linspace(0.0, 3.0, 13)


def user_count_pmf(value: float, bound: float, g: int, b: int, p: float) -> np.ndarray:
    """Law of one user's number of ones (encoded value plus noise bits) on ``0..g + b``."""
    scaled = (value + bound) * g / (2.0 * bound)
    floor = math.floor(scaled)
    encoded = np.zeros(g + 1)
    encoded[min(floor, g)] += 1.0 - (scaled - floor)
    if scaled > floor:
        encoded[floor + 1] += scaled - floor
    return np.convolve(encoded, stats.binom.pmf(np.arange(b + 1), b, p))


def view_pmf(values, bound: float, g: int, b: int, p: float) -> np.ndarray:
    out = np.array([1.0])
    for value in values:
        out = np.convolve(out, user_count_pmf(value, bound, g, b, p))
    return out


def view_pmf_2d(vectors, bound: float, g: int, b: int, p: float) -> np.ndarray:
    """Two coordinates: independent rounding and noise, so the view is the product of the counts."""
    first = view_pmf([v[0] for v in vectors], bound, g, b, p)
    second = view_pmf([v[1] for v in vectors], bound, g, b, p)
    return np.outer(first, second).ravel()


def hockey_stick(upper: np.ndarray, lower: np.ndarray, epsilon: float) -> float:
    return float(np.maximum(upper - math.exp(epsilon) * lower, 0.0).sum())


def worst_case(view, grid, others_grid, epsilons) -> np.ndarray:
    best = np.zeros(len(epsilons))
    for others in others_grid:
        for x, y in itertools.product(grid, grid):
            upper, lower = view((x,) + tuple(others)), view((y,) + tuple(others))
            best = np.maximum(best, [hockey_stick(upper, lower, e) for e in epsilons])
    return best


@pytest.mark.parametrize(("users", "g", "b", "p"), [(2, 2, 2, 0.5), (3, 2, 3, 0.3), (2, 3, 3, 0.7)])
def test_one_coordinate_profile_is_the_exact_worst_case(users: int, g: int, b: int, p: float) -> None:
    bound = 1.5
    grid = np.linspace(-bound, bound, 7)  # includes negative values and fractional encodings
    others = itertools.combinations_with_replacement(grid, users - 1)
    brute = worst_case(lambda values: view_pmf(values, bound, g, b, p), grid, others, EPSILONS)
    certified = np.array([exact.shift_delta(e, users * b, p, g) for e in EPSILONS])
    assert np.all(brute <= certified)
    np.testing.assert_allclose(certified, brute, rtol=1e-9, atol=1e-9)  # attained at the range ends


@pytest.mark.parametrize("p", [0.5, 0.3])
def test_two_entry_bounded_coordinates_compose_conservatively(p: float) -> None:
    users, g, b, bound = 2, 2, 3, 1.0
    grid = [(x, y) for x in (-1.0, 0.3, 1.0) for y in (-1.0, -0.4, 1.0)]
    brute = worst_case(lambda vs: view_pmf_2d(vs, bound, g, b, p), grid, [(o,) for o in grid], EPSILONS)
    certified = np.array([exact.composed_delta(e, users * b, p, g, 2) for e in EPSILONS])
    assert np.all(brute <= certified)
    # The PLD discretisation (interval 1e-4, losses rounded up) costs little.
    np.testing.assert_allclose(certified, brute, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("g", [2, 3, 4])
def test_l2_bounded_profile_covers_every_pair_on_the_circle(g: int) -> None:
    users, b, bound = 2, 3, 1.0
    angles = np.linspace(0.0, 2.0 * np.pi, 25)[:-1]
    grid = [(math.cos(t), math.sin(t)) for t in angles] + [(0.0, 0.0), (0.6, 0.0)]
    others = [((0.0, 0.0),), ((0.37, -0.55),)]
    brute = worst_case(lambda vs: view_pmf_2d(vs, bound, g, b, 0.5), grid, others, EPSILONS)
    certified = np.array([exact.l2_delta(e, users * b, g, 2) for e in EPSILONS])
    entry = np.array([exact.composed_delta(e, users * b, 0.5, g, 2) for e in EPSILONS])
    assert np.all(brute <= certified)
    assert np.all(certified <= entry + 1e-12)  # the l2 bound never costs more than entry bounds


@pytest.mark.parametrize(
    ("trials", "p"), [(1, 0.5), (7, 0.3), (40, 0.5), (1_000, 0.01), (100_000, 0.5), (10**9, 0.25)]
)
def test_log_binomial_pmf_matches_exact_arithmetic(trials: int, p: float) -> None:
    mean, std = trials * p, math.sqrt(trials * p * (1 - p))
    ks = np.unique(np.clip(np.round(mean + np.array([-30, -8, -1, 0, 1, 3, 30]) * std), 0, trials))
    values = exact.log_binomial_pmf(ks, trials, p)
    with mpmath.workdps(40):
        for k, value in zip(ks, values, strict=True):
            k = int(k)
            reference = (
                mpmath.log(mpmath.binomial(trials, k))
                + k * mpmath.log(mpmath.mpf(p))
                + (trials - k) * mpmath.log(1 - mpmath.mpf(p))
            )
            if reference > -700:  # PMFs that are representable at all
                assert abs(float(mpmath.mpf(value) - reference)) < 1e-12


@pytest.mark.parametrize(("trials", "p", "g", "coordinates"), [(2000, 0.5, 20, 5), (600, 0.3, 8, 4)])
def test_composed_coordinates_against_a_direct_lower_bound(trials, p, g, coordinates) -> None:
    # Independent reference: exact per-coordinate losses of (N, N + g), rounded *down* to a grid,
    # convolved directly (non-negative terms, no FFT); for p != 1/2 every split of the coordinates
    # between the two directions.  This bounds the true δ from below, so the certified δ must not
    # be smaller, and the pessimistic discretisation must cost little.
    outcomes = np.arange(0, trials + g + 1)
    log_n = stats.binom.logpmf(outcomes, trials, p)
    log_shifted = stats.binom.logpmf(outcomes - g, trials, p)
    interval = 2e-3

    def loss_pmf(log_upper, log_lower):
        # Outcomes below 1e-25 are dropped (that only lowers the reference) to keep the grid short.
        finite = np.isfinite(log_upper) & np.isfinite(log_lower) & (log_upper > math.log(1e-25))
        infinite = float(np.exp(log_upper[np.isfinite(log_upper) & ~np.isfinite(log_lower)]).sum())
        index = np.floor((log_upper[finite] - log_lower[finite]) / interval).astype(int)
        return int(index.min()), np.bincount(index - index.min(), weights=np.exp(log_upper[finite])), infinite

    up, down = loss_pmf(log_n, log_shifted), loss_pmf(log_shifted, log_n)
    splits = [coordinates] if p == 0.5 else range(coordinates + 1)
    for epsilon in np.linspace(0.0, 4.0, 9):
        reference = 0.0
        for n_up in splits:
            lowest, probs, survive = 0, np.array([1.0]), 1.0
            for part, count in ((up, n_up), (down, coordinates - n_up)):
                for _ in range(count):
                    lowest, probs, survive = (
                        lowest + part[0],
                        np.convolve(probs, part[1]),
                        survive * (1 - part[2]),
                    )
            losses = (np.arange(probs.size) + lowest) * interval
            above = losses > epsilon
            value = (1 - survive) + float(np.sum(probs[above] * -np.expm1(epsilon - losses[above])))
            reference = max(reference, value)
        certified = exact.composed_delta(float(epsilon), trials, p, g, coordinates)
        assert certified >= reference
        assert certified <= reference * 1.05 + 1e-12


@pytest.mark.parametrize("path", ["materialize", "simulate_counts"])
def test_emitted_view_follows_the_accounted_law(path: str) -> None:
    # The accounting assumes the analyzer sees, per coordinate, exactly the enumerated count law.
    # Seeded chi-square goodness-of-fit test of the mechanism's own output against it; the level
    # 1e-3 is the false-positive rate of an unseeded run (the seed makes the test deterministic).
    from scipy.stats import chisquare

    from dpcert.mechanisms.shuffle.binomial_sum import (
        BinomialSumMechanism,
        BitSumParameters,
        binomial_sum_certificate,
    )

    parameters = BitSumParameters(g=2, b=2, p=0.3, users=3, bound=1.5)
    mechanism = BinomialSumMechanism(parameters, binomial_sum_certificate(parameters, delta=0.5))
    values = np.array([-1.5, 0.2, 1.1])
    draws = 20_000
    rng = np.random.default_rng(20261122)
    batch = np.broadcast_to(values, (draws, 3))
    if path == "materialize":
        counts = mechanism.materialize(batch, rng)[..., 0, :].sum(axis=-1)
    else:
        counts = mechanism.simulate_counts(batch, rng)[..., 0]
    expected = view_pmf(values, 1.5, 2, 2, 0.3) * draws
    observed = np.bincount(counts, minlength=expected.size)
    keep = expected >= 5  # pool the sparse cells into one
    f_obs = np.append(observed[keep], observed[~keep].sum())
    f_exp = np.append(expected[keep], expected[~keep].sum())
    assert chisquare(f_obs, f_exp).pvalue > 1e-3
