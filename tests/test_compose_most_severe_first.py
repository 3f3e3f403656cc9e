"""The composition's decisions and ε searches that evaluate its directions most severe first
(:func:`dpcert.theory.pld.compose_delta_meets`, :func:`~dpcert.theory.pld.compose_epsilon_bound`),
against the definitions they shortcut: the largest of all directions' bounds, and the largest of all
directions' own least ε nudged until every direction holds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcert._numerics import nudge_up_until_valid
from dpcert.mechanisms.shuffle.binomial_sum import BinomialSumProfile, BitSumParameters
from dpcert.theory import binomial as exact
from dpcert.theory import pld

# ℓ2 bit-sum profiles with several shift patterns (P_Vec's shape, small enough to be quick)
CASES = [(60, 3, (9,)), (200, 4, (4, 3)), (120, 3, (9, 9)), (300, 4, (16,))]


def _directions(trials: int, g: int, groups: tuple[int, ...]) -> tuple[pld.ComposedLossBound, ...]:
    return exact._l2_bounds(trials, g, groups)


def _epsilon_by_every_direction(directions, delta: float) -> float:
    """The definition: the largest of the directions' least ε, nudged up until all hold."""
    epsilon = max(direction.epsilon_for(delta) for direction in directions)
    if not math.isfinite(epsilon) or pld.compose_delta_bound(directions, epsilon) <= delta:
        return epsilon
    top = max(direction.highest * direction.discretization for direction in directions)
    return nudge_up_until_valid(lambda e: pld.compose_delta_bound(directions, e) - delta, epsilon, top)


@pytest.mark.parametrize(("trials", "g", "groups"), CASES)
def test_meets_decides_as_the_largest_bound_does(trials, g, groups):
    directions = _directions(trials, g, groups)
    assert len(directions) > 1
    decided = 0
    for epsilon in (0.05, 0.2, 0.5, 1.0, 2.0, 4.0):
        largest = pld.compose_delta_bound(directions, epsilon)
        for delta in (largest * 0.999, largest, largest * 1.001, 1e-6, 0.05, 0.5):
            assert pld.compose_delta_meets(directions, epsilon, delta) == (largest <= delta)
            assert exact.l2_delta_meets(epsilon, delta, trials, g, groups) == (largest <= delta)
            decided += 1
    assert decided == 36


@pytest.mark.parametrize(("trials", "g", "groups"), CASES)
def test_a_failing_claim_is_decided_by_the_most_severe_direction_alone(trials, g, groups, monkeypatch):
    directions = _directions(trials, g, groups)
    bounds = {id(d): d.delta_for(0.5) for d in directions}
    worst = max(bounds.values())
    # the ordering picks the direction with the largest bound here (mean + 2 sd of the loss)
    assert bounds[id(pld._most_severe_first(directions)[0])] == worst
    calls = []
    original = pld.ComposedLossBound.delta_for

    def counted(self, epsilon):
        calls.append(id(self))
        return original(self, epsilon)

    monkeypatch.setattr(pld.ComposedLossBound, "delta_for", counted)
    assert not pld.compose_delta_meets(directions, 0.5, worst * 0.999)
    assert len(calls) == 1
    calls.clear()
    assert pld.compose_delta_meets(directions, 0.5, worst)
    assert len(calls) == len(directions)


@pytest.mark.parametrize(("trials", "g", "groups"), CASES)
def test_the_epsilon_search_is_valid_and_never_above_the_definition(trials, g, groups):
    directions = _directions(trials, g, groups)
    for delta in (1e-12, 1e-7, 1e-4, 1e-2, 0.1):
        fast = pld.compose_epsilon_bound(directions, delta)
        reference = _epsilon_by_every_direction(directions, delta)
        assert math.isfinite(fast) and math.isfinite(reference)
        assert fast <= reference
        assert pld.compose_delta_bound(directions, fast) <= delta
        # and it is the least ε to the search's resolution: a little less fails
        assert pld.compose_delta_bound(directions, fast * (1 - 1e-6)) > delta or fast == 0.0


def test_one_direction_is_its_own_least_epsilon():
    (direction,) = _directions(300, 3, (3,))
    for delta in (1e-12, 1e-6, 0.05):
        assert pld.compose_epsilon_bound([direction], delta) == direction.epsilon_for(delta)
        assert pld.compose_delta_meets([direction], 0.7, delta) == (direction.delta_for(0.7) <= delta)


def test_the_least_noise_search_and_the_profile_agree_with_delta_for():
    template = BitSumParameters(g=3, b=1, p=0.5, users=4, dimension=2, shape="vector+matrix", norm="l2")
    profile = BinomialSumProfile({**template.to_dict(), "b": 40})
    for epsilon in np.linspace(0.2, 3.0, 8):
        delta = profile.delta_for(float(epsilon))
        assert profile.meets(float(epsilon), delta)
        assert not profile.meets(float(epsilon), delta * (1 - 1e-9))
