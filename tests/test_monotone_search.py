"""The monotone search of dpcert._numerics: continuous (both directions) and integer.

Each search is checked against an independent answer: a closed-form root, or a brute-force scan of
the integers.  Every returned point must satisfy the condition as evaluated (the safe side).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcert._numerics import largest_valid, least_noise, least_valid_integer, smallest_valid


@pytest.mark.parametrize("target", [1e-9, 0.3, 2.0, 7.5, 1e6])
def test_smallest_valid_meets_the_closed_form_root_on_the_valid_side(target: float) -> None:
    # excess(x) = target / x - 1 is decreasing; its root is x = target
    found = smallest_valid(lambda x: target / x - 1.0, target / 1024.0, target / 512.0)
    assert target / found - 1.0 <= 0.0
    assert target * (1.0 - 1e-15) <= found <= target * (1.0 + 1e-11)  # 1e-15: rounding of the excess


@pytest.mark.parametrize("target", [0.01, 1.0, 3.0, 40.0])
def test_largest_valid_meets_the_closed_form_root_on_the_valid_side(target: float) -> None:
    # excess(x) = x² − target² is increasing on x >= 0; its root is x = target
    found = largest_valid(lambda x: x * x - target * target, 0.0, target / 8.0)
    assert found * found - target * target <= 0.0
    assert target * (1.0 - 1e-11) <= found <= target * (1.0 + 1e-15)


def test_largest_valid_stops_at_the_ceiling_with_a_valid_point() -> None:
    # always valid: the bracket doubles from 1 until its double would pass the ceiling 64
    assert largest_valid(lambda x: -1.0, 0.0, 1.0, ceiling=64.0) == 64.0
    assert largest_valid(lambda x: -1.0, 0.0, 1.0, ceiling=100.0) == 64.0


def test_largest_valid_treats_an_infinite_excess_by_its_sign() -> None:
    # invalid (infinite excess) beyond 2.5, valid below: the boundary is still located
    found = largest_valid(lambda x: math.inf if x > 2.5 else -1.0, 0.0, 1.0, xtol_relative=1e-9)
    assert 2.5 * (1.0 - 1e-8) <= found <= 2.5


def test_least_noise_against_a_closed_form_tail() -> None:
    # δ(s) = exp(−s) falls as s grows: the least s with exp(−s) <= 1e-6 is ln(1e6)
    exact = math.log(1e6)
    found = least_noise(lambda s: math.exp(-s), 1e-6, 1.0)
    assert math.exp(-found) <= 1e-6
    assert exact * (1.0 - 1e-15) <= found <= exact * (1.0 + 1e-11)


def _brute_force(threshold: int, below: int, ceiling: int) -> int | None:
    return next((n for n in range(below + 1, ceiling + 1) if n >= threshold), None)


def test_least_valid_integer_equals_a_scan_of_the_integers() -> None:
    rng = np.random.default_rng(20261128)
    for _ in range(400):
        threshold = int(rng.integers(1, 5000))
        below = int(rng.integers(0, 3))
        start = int(rng.integers(below + 1, 6000))
        step = int(rng.integers(1, 300))
        ceiling = int(rng.integers(start, 7000))
        calls: list[int] = []

        def valid(n: int, threshold: int = threshold, calls: list[int] = calls) -> bool:
            calls.append(n)
            return n >= threshold

        found = least_valid_integer(valid, start, below=below, step=step, ceiling=ceiling)
        assert found == _brute_force(threshold, below, ceiling)
        assert all(below < n for n in calls)  # ``below`` itself is never evaluated
        assert all(n <= max(start, ceiling) for n in calls)
        if found is not None:
            assert found >= threshold  # a point the predicate accepted


def test_least_valid_integer_matches_doubling_then_bisection_from_one() -> None:
    # the search used for the binary-sum noise bits: doubling 1, 2, 4, ... then bisection
    for threshold in (1, 2, 3, 5, 64, 65, 1000, 123457):
        calls: list[int] = []

        def valid(n: int, threshold: int = threshold, calls: list[int] = calls) -> bool:
            calls.append(n)
            return n >= threshold

        assert least_valid_integer(valid, 1) == threshold
        first_power = math.ceil(math.log2(threshold))  # 2**first_power is the first valid power of two
        assert calls[: first_power + 1] == [2**k for k in range(first_power + 1)]


def test_least_valid_integer_refuses_past_the_ceiling() -> None:
    assert least_valid_integer(lambda n: n >= 100, 1, ceiling=99) is None
    assert least_valid_integer(lambda n: n >= 100, 1, ceiling=100) == 100
