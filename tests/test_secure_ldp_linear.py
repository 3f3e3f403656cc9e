"""Integer-exact noise for the local randomizer of the improved-rate LDP linear bandits (``--secure``).

Independent references: the float Gaussian's exact profile at the same σ (a lower reference for the
secure certificate), the discrete Gaussian's variance by direct summation, and the grid (every released
value is an exact multiple of g).
"""

from __future__ import annotations

import json
import math
from functools import partial

import numpy as np
import pytest

from dpcert.bandits.algorithms.ldp_linear import ONLINE_UCB, run_ldp_linear, secure_release
from dpcert.bandits.calibration.ldp_linear import PAIR_SENSITIVITY, calibrate_randomizer
from dpcert.bandits.environments.contextual import vaswani_instance
from dpcert.cli import main
from dpcert.errors import DataOutOfBounds, InvalidParameter
from dpcert.mechanisms.secure.samplers import IntegerPool
from dpcert.testing import assert_release_stops_at_refusal

EPSILON, DELTA, DIMENSION = 1.0, 1e-5, 5


@pytest.fixture(scope="module")
def secure():
    return calibrate_randomizer(EPSILON, DELTA, secure=True, dimension=DIMENSION)


def test_secure_calibration_meets_the_claim_with_a_little_more_noise(secure) -> None:
    floating = calibrate_randomizer(EPSILON, DELTA)
    assert secure.claim_met and secure.certificate.epsilon <= EPSILON
    assert secure.certificate.mechanism == "discrete-gaussian-l2"
    assert secure.certificate.parameters["sampler"] == "integer-exact"
    assert secure.certificate.parameters["coordinates"] == DIMENSION + 1
    # zCDP conversion and rounding cost a few per cent of sigma, never less noise than the float run
    assert floating.sigma < secure.sigma <= 1.15 * floating.sigma
    # the float Gaussian's exact profile at the same sigma is a lower reference for the secure one
    same = calibrate_randomizer(EPSILON, DELTA, sigma=secure.sigma)
    for delta in (1e-5, 1e-9, 1e-13):
        assert secure.certificate.epsilon_for(delta) >= same.certificate.epsilon_for(delta)
    # the integer shift covers the real one: 2*sqrt(2)/g plus sqrt(d + 1) steps of rounding
    mechanism = secure.secure
    steps = PAIR_SENSITIVITY / mechanism.grid.granularity + math.sqrt(DIMENSION + 1)
    assert secure.certificate.parameters["l2_sensitivity"] >= steps
    assert mechanism.real_sigma == secure.sigma == mechanism.sigma * mechanism.grid.granularity


def test_paper_noise_on_the_grid_is_certified_at_what_it_gives() -> None:
    paper = calibrate_randomizer(EPSILON, DELTA, "paper", secure=True, dimension=DIMENSION)
    floating = calibrate_randomizer(EPSILON, DELTA, "paper")
    assert paper.sigma >= floating.sigma  # rounded up to the grid
    assert paper.certificate.delta == DELTA
    assert paper.claim_met == (paper.certificate.epsilon <= EPSILON)
    assert paper.certificate.epsilon >= floating.certificate.epsilon * (1 - 1e-9)


def test_released_pairs_are_grid_multiples_with_the_stated_noise(secure) -> None:
    mechanism = secure.secure
    g = mechanism.grid.granularity
    rng = np.random.default_rng(4)
    users = 4000
    features = rng.normal(size=(users, DIMENSION))
    features /= np.maximum(1.0, np.linalg.norm(features, axis=1))[:, None]
    rewards = rng.uniform(-1.0, 1.0, size=users)
    released_x, released_y = secure_release(features, rewards, mechanism, IntegerPool(mechanism.sigma, rng))
    for values in (released_x, released_y):
        assert np.array_equal(values / g, np.round(values / g))  # exact multiples of g
    noise = np.concatenate([released_x - features, (released_y - rewards)[:, None]], axis=1)
    # rounding moves each coordinate by at most g/2; the noise has mean 0 and variance <= sigma^2.
    # 24,000 draws: the sample variance's s.d. is sigma^2 sqrt(2/24000) = 0.009 sigma^2, so 6 s.d.
    # bounds give a false-positive rate below 1e-8 for each check.
    assert abs(noise.mean()) <= 6 * secure.sigma / math.sqrt(noise.size) + g
    assert noise.var() == pytest.approx(secure.sigma**2, rel=6 * math.sqrt(2 / noise.size))


def test_discrete_gaussian_variance_is_within_1e_6_of_sigma_squared() -> None:
    # the de-biased gradient subtracts sigma^2; the discrete Gaussian's variance, summed exactly
    for sigma in (1.0, 2.0, 37.0, 4096.0):
        z = np.arange(-int(40 * sigma) - 1, int(40 * sigma) + 2, dtype=float)
        weights = np.exp(-(z**2) / (2 * sigma**2))
        variance = float((z**2 * weights).sum() / weights.sum())
        assert sigma**2 * (1 - 1e-6) <= variance <= sigma**2 * (1 + 1e-12)


def test_secure_release_refuses_data_outside_the_unit_ball(secure) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(DataOutOfBounds):
        secure_release(np.full((1, DIMENSION), 0.9), np.zeros(1), secure.secure, IntegerPool(1, rng))
    with pytest.raises(DataOutOfBounds):
        secure_release(np.zeros((1, DIMENSION)), np.array([1.5]), secure.secure, IntegerPool(1, rng))


def test_engine_refuses_a_mechanism_of_another_size_or_sigma(secure) -> None:
    env = vaswani_instance(1, DIMENSION + 1, 3, np.random.default_rng(8))
    with pytest.raises(InvalidParameter, match="secure"):
        run_ldp_linear(env, [ONLINE_UCB], horizon=5, sigma=secure.sigma, epsilon=EPSILON, delta=DELTA,
                       rng=np.random.default_rng(1), secure=secure.secure)  # fmt: skip
    env = vaswani_instance(1, DIMENSION, 3, np.random.default_rng(8))
    with pytest.raises(InvalidParameter, match="secure"):
        run_ldp_linear(env, [ONLINE_UCB], horizon=5, sigma=2 * secure.sigma, epsilon=EPSILON, delta=DELTA,
                       rng=np.random.default_rng(1), secure=secure.secure)  # fmt: skip


def test_a_refused_charge_draws_nothing(secure) -> None:
    env = vaswani_instance(2, DIMENSION, 3, np.random.default_rng(8))
    rng = np.random.default_rng(9)
    learner = partial(
        run_ldp_linear, env, [ONLINE_UCB], horizon=20, sigma=secure.sigma, epsilon=EPSILON, delta=DELTA,
        rng=rng, certificate=secure.certificate, secure=secure.secure,
    )  # fmt: skip
    assert_release_stops_at_refusal(lambda session: learner(session=session), rng)


def test_secure_and_float_runs_have_comparable_regret_at_the_same_sigma(secure) -> None:
    # 8 runs each, T = 600, same instances; the difference of means is compared with 5 standard
    # errors of the difference (normal approximation: false-positive rate about 6e-7)
    env = vaswani_instance(8, DIMENSION, 20, np.random.default_rng(21))
    common = dict(horizon=600, sigma=secure.sigma, epsilon=EPSILON, delta=DELTA)
    exact = run_ldp_linear(env, [ONLINE_UCB], rng=np.random.default_rng(5), secure=secure.secure, **common)
    floating = run_ldp_linear(env, [ONLINE_UCB], rng=np.random.default_rng(6), **common)
    a, b = exact.final_regret, floating.final_regret
    spread = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) <= 5 * spread


def test_command_line_secure_run_meets_its_target(capsys) -> None:
    argv = ["bandit", "run", "ldp-linear", "--privacy", "local", "--epsilon", "1", "--delta", "1e-5",
            "--horizon", "300", "--json"]  # fmt: skip
    assert main(argv + ["--secure"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["target_met"] is True and payload["secure"] is True
    assert payload["certificate"]["parameters"]["sampler"] == "integer-exact"
    assert main(argv) == 0
    floating = json.loads(capsys.readouterr().out)
    assert floating["noise"]["sigma"] < payload["noise"]["sigma"]
    assert main(argv + ["--option", "secure=3"]) == 2
    assert "secure" in capsys.readouterr().err
