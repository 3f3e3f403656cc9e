"""Tenenbaum et al. 2021's binary summation: exact δ_N(ε) against enumeration, calibration, unbiasedness."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.weightstats import ztest

from dpcert import Certificate, CertificateMismatch, InvalidParameter
from dpcert.mechanisms.shuffle.binary_sum import (
    BinarySum,
    binary_sum_certificate,
    binary_sum_delta,
    binary_sum_epsilon,
    calibrate_binary_sum,
    hoeffding_noise_bits,
    least_noise_bits,
)
from dpcert.theory.binomial import shift_delta

# Statistical assertions: seeded, two-sided level 1e-4 each (suite false-positive rate < 0.1 %).
LEVEL = 1e-4


def shuffled_view(rewards: tuple[int, ...], allocation: list[int]) -> Counter:
    """Law of the sorted shuffled messages, enumerating every user's coin bits."""
    law: Counter = Counter()
    total = sum(allocation)
    for coins in itertools.product((0, 1), repeat=total):
        messages = list(rewards) + list(coins)
        law[tuple(sorted(messages))] += 0.5**total
    return law


@pytest.mark.parametrize("allocation", [[1, 1], [2, 1], [1, 1, 1], [3, 2, 2], [5], [2, 2, 1, 1]])
def test_exact_delta_equals_enumerated_view_for_every_neighbour_pair(allocation):
    users = len(allocation)
    noise = sum(allocation)
    for epsilon in (0.0, 0.3, 1.0):
        worst = 0.0
        for rewards in itertools.product((0, 1), repeat=users):
            for index in range(users):
                neighbour = list(rewards)
                neighbour[index] = 1 - neighbour[index]
                p, q = shuffled_view(rewards, allocation), shuffled_view(tuple(neighbour), allocation)
                value = sum(max(0.0, mass - math.exp(epsilon) * q.get(key, 0.0)) for key, mass in p.items())
                worst = max(worst, value)
        assert binary_sum_delta(epsilon, noise) == pytest.approx(worst, rel=1e-9, abs=1e-15)
        assert binary_sum_delta(epsilon, noise) >= worst


@pytest.mark.parametrize(
    "noise, epsilon, expected",
    [
        (2, 0.5, 0.33782),
        (3, 1.0, 0.160215),
        (10, 1.0, 0.0254872),
        (30, 2.0, 1.00834e-6),
        (80, 1.0, 9.83361e-7),
    ],
)
def test_reference_values(noise, epsilon, expected):
    # reference table of docs/PAPER_NOTES.md, PN-TKMS-2 (computed independently of this code).
    assert binary_sum_delta(epsilon, noise) == pytest.approx(expected, rel=1e-5)


def test_closed_forms_and_agreement_with_the_binomial_pmf_route():
    for noise in (1, 2, 4, 10, 100):
        assert binary_sum_delta(0.0, noise) == pytest.approx(
            math.comb(noise, noise // 2) / 2**noise, rel=1e-12
        )
        assert binary_sum_delta(math.log(noise) + 0.01, noise) == pytest.approx(2.0**-noise, rel=1e-12)
    for noise in (7, 80, 1001):
        for epsilon in (0.1, 0.7, 2.0):
            # two independent computations: closed-form sum vs hockey-stick of the binomial PMFs
            assert binary_sum_delta(epsilon, noise) == pytest.approx(
                shift_delta(epsilon, noise, 0.5, 1), rel=1e-8
            )


def test_monotone_in_noise_and_epsilon():
    deltas = [binary_sum_delta(0.5, n) for n in range(1, 400)]
    assert np.all(np.diff(deltas) <= 1e-15)
    curve = [binary_sum_delta(e, 200) for e in np.linspace(0, 6, 61)]
    assert np.all(np.diff(curve) <= 1e-15)


@pytest.mark.parametrize(
    "epsilon, delta, expected",
    [
        (1.0, 1e-6, 80),
        (0.5, 1e-6, 268),
        (0.1, 1e-6, 5279),
        (1.0, 1e-5, 62),
        (0.1, 1e-5, 3787),
        (0.5, 1e-3, 88),
    ],
)
def test_least_noise_bits(epsilon, delta, expected):
    noise = least_noise_bits(epsilon, delta)
    assert noise == expected  # table of docs/PAPER_NOTES.md, PN-TKMS-3
    assert binary_sum_delta(epsilon, noise) <= delta < binary_sum_delta(epsilon, noise - 1)
    hoeffding = hoeffding_noise_bits(epsilon, delta)
    assert hoeffding >= noise and binary_sum_delta(epsilon, hoeffding) <= delta


def test_epsilon_inverse_and_floor():
    assert binary_sum_epsilon(1e-6, 80) == pytest.approx(0.99857, abs=1e-5)  # PN-TKMS-3
    assert binary_sum_delta(binary_sum_epsilon(1e-6, 268), 268) <= 1e-6
    assert binary_sum_epsilon(2.0**-20, 10) == math.inf


def test_simulation_unbiased_variance_and_input_independent_error():
    rng = np.random.default_rng(4)
    calibration = calibrate_binary_sum(1.0, 1e-6)
    mechanism = calibration.mechanism()
    assert calibration.sigma == pytest.approx(math.sqrt(80) / 2)
    repetitions = 20_000
    ones = np.ones((repetitions, 7))
    zeros = np.zeros((repetitions, 7))
    error_ones = mechanism.simulate(ones, rng) - 7
    error_zeros = mechanism.simulate(zeros, rng)
    for errors in (error_ones, error_zeros):
        _, p_mean = ztest(errors, value=0.0)
        _, p_var = ztest(errors**2, value=80 / 4)
        assert p_mean > LEVEL and p_var > LEVEL
    assert stats.ks_2samp(error_ones, error_zeros).pvalue > LEVEL


def test_materialized_messages_have_the_protocol_format_and_law():
    rng = np.random.default_rng(6)
    mechanism = BinarySum(12, binary_sum_certificate(12, delta=0.2))
    assert list(mechanism.allocation(5)) == [3, 3, 2, 2, 2]
    assert mechanism.allocation(20).sum() == 12
    rewards = np.array([1, 0, 1, 1, 0])
    messages = mechanism.materialize(np.broadcast_to(rewards, (20_000, 5)), rng)
    assert messages.shape == (20_000, 5 + 12)
    from_messages = mechanism.analyze(messages)
    simulated = mechanism.simulate(np.broadcast_to(rewards, (20_000, 5)), rng)
    support = np.arange(-6, 12)
    table = np.array([[np.sum(from_messages == v), np.sum(simulated == v)] for v in support]).T
    table = table[:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table)[1] > LEVEL


def test_certificates_and_validation():
    certificate = calibrate_binary_sum(0.5, 1e-6).certificate
    assert Certificate.from_json(certificate.to_json()) == certificate
    tampered = certificate.to_dict()
    tampered["parameters"]["noise_bits"] = 200
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(tampered)
    mechanism = BinarySum(10, binary_sum_certificate(10, epsilon=1.0))
    with pytest.raises(InvalidParameter, match="bits"):
        mechanism.simulate(np.array([0, 2, 1]), np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="noise_bits"):
        binary_sum_delta(1.0, 0)
    with pytest.raises(InvalidParameter, match="epsilon"):
        calibrate_binary_sum(-1.0, 1e-6)


def test_release_of_sums_is_the_simulation_of_the_bits_draw_for_draw():
    mechanism = calibrate_binary_sum(1.0, 1e-6).mechanism()
    bits = np.random.default_rng(3).integers(0, 2, size=(6, 40))
    simulated = mechanism.simulate(bits, np.random.default_rng(9))
    released = mechanism.release_sums(bits.sum(axis=-1), np.random.default_rng(9))
    np.testing.assert_array_equal(simulated, released)
