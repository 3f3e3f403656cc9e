"""dpcert.testing.assert_release_stops_at_refusal: passes when a refused charge stops the release."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.testing import assert_release_stops_at_refusal

CERTIFICATE = gaussian_certificate(2.0, sensitivity=1.0, delta=1e-5)


def charge_then_draw(session, rng):
    session.charge([0], CERTIFICATE)
    return rng.normal(0.0, 2.0)


def draw_then_charge(session, rng):
    noise = rng.normal(0.0, 2.0)
    session.charge([0], CERTIFICATE)
    return noise


def catch_refusal_and_draw(session, rng):
    try:
        session.charge([0], CERTIFICATE)
    except Exception:  # a release that swallows the refusal and goes on
        pass
    return rng.normal(0.0, 2.0)


def test_a_release_charged_first_passes_and_nothing_is_drawn() -> None:
    rng = np.random.default_rng(1)
    before = json.dumps(rng.bit_generator.state)
    seen = []
    at, after = assert_release_stops_at_refusal(lambda s: charge_then_draw(s, rng), rng, inspect=seen.append)
    assert at == after == before
    assert seen == [CERTIFICATE]


def test_drawing_first_is_caught_by_the_state_comparison_with_the_start() -> None:
    # the refusal comes after the draw: the helper passes (nothing after the refusal), but the state at
    # the refusal differs from the state before the call, which is the check a caller adds for this
    rng = np.random.default_rng(2)
    before = json.dumps(rng.bit_generator.state)
    at, after = assert_release_stops_at_refusal(lambda s: draw_then_charge(s, rng), rng)
    assert at == after != before


def test_a_release_that_goes_on_after_a_refusal_fails() -> None:
    rng = np.random.default_rng(3)
    with pytest.raises(AssertionError, match="no BudgetExceeded"):
        assert_release_stops_at_refusal(lambda s: catch_refusal_and_draw(s, rng), rng)


def test_randomness_drawn_after_the_refusal_fails() -> None:
    rng = np.random.default_rng(4)

    def draw_on_the_way_out(session):
        try:
            session.charge([0], CERTIFICATE)
        finally:
            rng.normal()

    with pytest.raises(AssertionError, match="drawn after"):
        assert_release_stops_at_refusal(draw_on_the_way_out, rng)
