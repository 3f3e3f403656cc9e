"""DP-UCB (Mishra & Thakurta 2015): binary-mechanism sums, certificate, charges before draws, index."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from dpcert.bandits import registry
from dpcert.bandits.algorithms.dp_ucb import (
    BLOCK,
    BinaryMechanismSum,
    binary_mechanism_levels,
    dp_ucb,
    noise_count,
    prefix_noise_variance,
)
from dpcert.bandits.environments.mab import MultiArmedBandit
from dpcert.cli import main
from dpcert.errors import InvalidParameter
from dpcert.session import PrivacySession
from dpcert.testing import assert_release_stops_at_refusal


def _levels(horizon: int) -> int:
    """⌈log₂ T⌉ + 1 by exact integer search (no floating log)."""
    power = 0
    while 2**power < horizon:
        power += 1
    return power + 1


@pytest.mark.parametrize("horizon", [2, 3, 4, 5, 1000, 1024, 1025, 10**6, 2**20])
def test_tree_levels_are_ceil_log2_plus_one(horizon):
    assert binary_mechanism_levels(horizon) == _levels(horizon)


def test_noise_count_is_popcount_and_variance_is_nodes_times_two_b_squared():
    counts = np.arange(0, 5000)
    expected = np.array([bin(int(m)).count("1") for m in counts])
    assert np.array_equal(noise_count(counts), expected)
    assert np.array_equal(prefix_noise_variance(counts, 3.0), expected * 18.0)


def _decomposition_noise(m: int, noise: np.ndarray) -> float:
    """Noise of prefix m written from the dyadic decomposition: for each set bit, highest first, the
    block [s + 1, s + 2^j] ends at step e = s + 2^j and its node's noise is the draw made at step e."""
    total, start = 0.0, 0
    for j in reversed(range(m.bit_length())):
        if m >> j & 1:
            start += 1 << j
            total += noise[start - 1]
    return total


def test_private_prefix_sums_are_exact_sums_plus_the_decompositions_node_noises():
    rng = np.random.default_rng(4)
    values = rng.random(700)
    noise = rng.laplace(0.0, 2.0, 700)
    tree = BinaryMechanismSum(binary_mechanism_levels(700))
    exact = 0.0
    for m in range(1, 701):
        released = tree.append(float(values[m - 1]), float(noise[m - 1]))
        exact += values[m - 1]
        assert released == pytest.approx(exact + _decomposition_noise(m, noise), abs=1e-9)
        assert tree.private_sum == released and tree.count == m


def test_prefix_noise_variance_matches_a_monte_carlo_estimate():
    """20 000 independent trees of 11 steps (11 = 1011₂, popcount 3): the sample variance of the noise of
    S̃(11) is within 5 standard errors of 3·2b².  Var(s²) = σ⁴(2/(n−1) + κ/n) with κ the excess kurtosis,
    3 for one Laplace draw and 1 for a sum of three, so 3 bounds it; by the CLT the false-positive rate is
    about 6e-7.  Power: the variance of one node (2b², a count of 1) lies far outside the interval."""
    rng = np.random.default_rng(8)
    streams, b = 20_000, 1.5
    noise = rng.laplace(0.0, b, (streams, 11))
    finals = []
    for row in noise:
        tree = BinaryMechanismSum(4)
        for z in row:
            value = tree.append(0.0, float(z))
        finals.append(value)
    variance = float(np.var(finals, ddof=1))
    sigma2 = float(prefix_noise_variance(11, b))
    assert sigma2 == 3 * 2 * b * b
    standard_error = sigma2 * math.sqrt(2.0 / (streams - 1) + 3.0 / streams)
    assert abs(variance - sigma2) < 5 * standard_error
    assert abs(variance - 2 * b * b) > 5 * standard_error


def test_certificate_composes_the_node_over_ceil_log2_t_plus_one_levels():
    bandit = MultiArmedBandit(np.array([0.9, 0.4]))
    for epsilon, horizon in ((0.1, 5000), (1.0, 4096), (0.5, 4097)):
        result = dp_ucb(bandit, horizon, np.random.default_rng(0), epsilon=epsilon)
        certificate = result.certificate
        assert certificate is not None and certificate.trust_model.value == "central"
        levels = _levels(horizon)
        assert result.parameters["levels"] == levels
        assert result.parameters["node_scale"] == pytest.approx(levels / epsilon, rel=1e-12)
        # L releases of Laplace(L/ε) at sensitivity 1: L·(1/(L/ε)) = ε, the node's ε/L lowered by at most
        # a few ulps so that the composition meets the target exactly
        node_epsilon = 1.0 / result.parameters["node_scale"]
        assert levels * Fraction(node_epsilon) <= Fraction(epsilon)
        assert certificate.epsilon <= epsilon and certificate.epsilon == pytest.approx(epsilon, rel=1e-12)
        assert certificate.epsilon >= float(levels * Fraction(node_epsilon))  # never below the composition
        assert certificate.delta == 0.0 and certificate.delta_for(certificate.epsilon) == 0.0


def _reference_dp_ucb(means: np.ndarray, horizon: int, epsilon: float, seed: int) -> tuple[np.ndarray, float]:
    """An independent DP-UCB for one run of at most one block, from the documented draw order (each
    user's rewards for every arm, then one Laplace(L/ε) node noise per round) and the index written out:
    S̃_a/n_a + sqrt(2 ln t/n_a) + u_t/n_a, u_t = max(b·sqrt(32·L·ln t), 8√2·b·ln t)."""
    rng = np.random.default_rng(seed)
    k = means.size
    levels = _levels(horizon)
    b = 1.0 / (epsilon / levels)
    rewards = rng.binomial(np.ones((1, horizon, k), dtype=np.int64), means).astype(float)[0]
    noise = rng.laplace(0.0, b, (1, horizon))[0]
    history: list[list[tuple[float, float]]] = [[] for _ in range(k)]  # (reward, node noise) per pull
    regret = 0.0
    for t in range(horizon):
        if t < k:
            arm = t
        else:
            log_t = math.log(t)
            u = max(b * math.sqrt(32 * levels * log_t), 8 * math.sqrt(2) * b * log_t)
            index = []
            for a in range(k):
                n = len(history[a])
                node_noise = np.array([z for _, z in history[a]])
                private = sum(r for r, _ in history[a]) + _decomposition_noise(n, node_noise)
                index.append(private / n + math.sqrt(2 * log_t / n) + u / n)
            arm = int(np.argmax(index))
        history[arm].append((rewards[t, arm], noise[t]))
        regret += means.max() - means[arm]
    return np.array([len(h) for h in history]), regret


@pytest.mark.parametrize(("epsilon", "seed"), [(1.0, 1), (100.0, 2), (1e4, 3)])
def test_runs_match_an_independent_implementation_pull_for_pull(epsilon, seed):
    means = np.array([0.9, 0.7, 0.6, 0.2])
    horizon = 1500
    assert horizon <= BLOCK
    pulls, regret = _reference_dp_ucb(means, horizon, epsilon, seed)
    result = dp_ucb(MultiArmedBandit(means), horizon, np.random.default_rng(seed), epsilon=epsilon)
    assert np.array_equal(result.pulls[0], pulls)
    assert result.final_regret[0] == pytest.approx(regret, rel=1e-12)
    assert result.regret_curve[0, -1] == pytest.approx(regret, rel=1e-12)


def test_charges_precede_draws_and_every_user_is_charged_once():
    bandit = MultiArmedBandit(np.array([0.9, 0.8, 0.5]))
    rng = np.random.default_rng(5)
    initial = json.dumps(rng.bit_generator.state)
    at, after = assert_release_stops_at_refusal(
        lambda session: dp_ucb(bandit, 10_000, rng, epsilon=1.0, session=session), rng
    )
    assert at == after == initial  # nothing drawn before the first block's charge
    session = PrivacySession("dp-ucb-count")
    result = dp_ucb(bandit, 10_000, np.random.default_rng(5), epsilon=1.0, runs=3, session=session)
    assert session.max_charges_per_user() == 1
    charged = sum(int(np.sum(np.asarray(stop) - np.asarray(start))) for start, stop in session.intervals)
    assert charged == int(result.users.sum()) == 3 * 10_000
    assert all(c.epsilon == pytest.approx(1.0, rel=1e-12) for c in session.certificates)


@pytest.mark.parametrize(
    ("keyword", "value", "name"),
    [
        ("epsilon", 0.0, "epsilon"),
        ("epsilon", math.inf, "epsilon"),
        ("horizon", 1, "horizon"),
        ("horizon", 2.5, "horizon"),
        ("width_scale", 0.0, "width_scale"),
        ("runs", 0, "runs"),
    ],
)
def test_bad_inputs_raise_invalid_parameter_naming_it(keyword, value, name):
    arguments = {"epsilon": 1.0, "horizon": 1000}
    arguments[keyword] = value
    horizon = arguments.pop("horizon")
    with pytest.raises(InvalidParameter) as raised:
        dp_ucb(MultiArmedBandit(np.array([0.9, 0.4])), horizon, np.random.default_rng(0), **arguments)
    assert raised.value.name == name
    with pytest.raises(InvalidParameter) as raised:
        dp_ucb(MultiArmedBandit(np.array([0.9, 0.4]), "gaussian"), 100, np.random.default_rng(0), epsilon=1.0)
    assert raised.value.name == "bandit"


def test_registered_and_runs_from_the_cli_with_a_ledger(tmp_path, capsys):
    spec = registry.algorithm("dp-ucb")
    assert spec.privacy_models == ("central",) and "Mishra & Thakurta 2015" in spec.description
    path = tmp_path / "ledger.db"
    code = main(
        ["bandit", "run", "dp-ucb", "--privacy", "central", "--epsilon", "0.5", "--horizon", "5000",
         "--option", "means=[0.9,0.5]", "--ledger", str(path), "--json"]
    )  # fmt: skip
    assert code == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["max_user_epsilon"] == pytest.approx(0.5, rel=1e-12) and shown["users"] == 5000
    assert main(["bandit", "run", "dp-ucb", "--privacy", "local", "--epsilon", "1", "--horizon", "100"]) == 2
    assert (
        main(["bandit", "run", "dp-ucb", "--privacy", "central", "--epsilon", "-1", "--horizon", "100"]) == 2
    )
