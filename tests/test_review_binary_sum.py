"""Independent checks of the binary summation δ_N(ε) (Tenenbaum et al. 2021; PAPER_NOTES PN-TKMS-2, -3).

The reference is the hockey-stick divergence of ``Bin(N, 1/2)`` and ``Bin(N, 1/2) + 1`` computed
in exact integer arithmetic (binomial coefficients) and 60-digit ``mpmath`` for ``e^ε``.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpcert.errors import DPCertError
from dpcert.mechanisms.shuffle.binary_sum import (
    binary_sum_certificate,
    binary_sum_delta,
    binary_sum_epsilon,
    hoeffding_noise_bits,
    least_noise_bits,
)


def exact_delta(epsilon: float, noise_bits: int) -> mpmath.mpf:
    """Σ_k (C(N, k) − e^ε C(N, k − 1))_+ / 2^N with integer binomials (both directions are equal)."""
    with mpmath.workdps(60):
        growth = mpmath.exp(mpmath.mpf(epsilon))
        total = mpmath.mpf(0)
        previous = 0  # C(N, -1)
        current = 1  # C(N, 0)
        for k in range(noise_bits + 2):
            term = current - growth * previous
            if term <= 0:
                break
            total += term
            previous, current = current, current * (noise_bits - k) // (k + 1)
        return total / mpmath.mpf(2) ** noise_bits


def brute_force_delta(epsilon: float, noise_bits: int) -> float:
    """Hockey-stick divergence of the two count laws by enumeration of all counts (small N)."""
    counts = np.arange(noise_bits + 2)
    pmf = np.array([math.comb(noise_bits, int(k)) for k in counts], dtype=float) / 2.0**noise_bits
    shifted = np.concatenate([[0.0], pmf[:-1]])
    return float(np.maximum(pmf - math.exp(epsilon) * shifted, 0.0).sum())


@pytest.mark.parametrize("noise_bits", [1, 2, 5, 17, 40])
def test_delta_matches_enumeration_for_small_n(noise_bits: int) -> None:
    for epsilon in np.linspace(0.0, 4.0, 17):
        reference = brute_force_delta(float(epsilon), noise_bits)
        value = binary_sum_delta(float(epsilon), noise_bits)
        assert reference <= value <= reference * (1 + 1e-9) + 1e-300


@pytest.mark.parametrize("noise_bits", [1_000, 20_000, 100_000])
@pytest.mark.parametrize("epsilon", [0.05, 0.1])
def test_delta_is_never_below_the_exact_value(noise_bits: int, epsilon: float) -> None:
    # Regression: log-binomials from differences of gammaln(N + 1) lost ~1e-10 relative accuracy at
    # N = 1e5, below the 1e-12 allowance, so δ_N(ε) came out under the exact value.
    exact = exact_delta(epsilon, noise_bits)
    value = binary_sum_delta(epsilon, noise_bits)
    assert mpmath.mpf(value) >= exact
    assert mpmath.mpf(value) <= exact * (1 + 1e-8)


def test_delta_is_never_zero() -> None:
    # δ_N(ε) >= 2^-N > 0 at every ε (the count 0 is impossible on the shifted side), even where
    # 2^-N underflows: a profile value of 0 would be a false claim of pure DP.
    for noise_bits in (1_000, 2_000, 5_000):
        assert binary_sum_delta(50.0, noise_bits) > 0.0
        assert binary_sum_epsilon(0.0, noise_bits) == math.inf
        with pytest.raises(DPCertError):
            binary_sum_certificate(noise_bits, delta=0.0)
        assert binary_sum_certificate(noise_bits, epsilon=50.0).delta > 0.0


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.3, 1e-4), (2.0, 1e-9)])
def test_least_noise_bits_is_least(epsilon: float, delta: float) -> None:
    noise_bits = least_noise_bits(epsilon, delta)
    assert exact_delta(epsilon, noise_bits) <= delta
    assert exact_delta(epsilon, noise_bits - 1) > delta


@pytest.mark.parametrize(
    ("epsilon", "delta", "published"),
    [(0.1, 1e-3, 1213), (0.5, 1e-6, 268), (1.0, 1e-9, 136), (2.0, 1e-6, 31)],
)
def test_least_noise_bits_matches_the_spec_table(epsilon: float, delta: float, published: int) -> None:
    # Published: docs/PAPER_NOTES.md, PN-TKMS-3, calibration table ("N exact").
    assert least_noise_bits(epsilon, delta) == published


@pytest.mark.parametrize(("epsilon", "delta"), [(0.1, 1e-6), (0.5, 1e-9), (1.0, 1e-5), (3.0, 1e-12)])
def test_hoeffding_closed_form_is_valid_and_not_below_the_least_n(epsilon: float, delta: float) -> None:
    n_hoeffding = hoeffding_noise_bits(epsilon, delta)
    assert exact_delta(epsilon, n_hoeffding) <= delta
    assert n_hoeffding >= least_noise_bits(epsilon, delta)


def test_materialized_messages_follow_the_accounted_law() -> None:
    # The exact δ_N assumes the view is the count Σx + Bin(N, 1/2).  Seeded chi-square test of the
    # shuffled messages' count (level 1e-3 = false-positive rate of an unseeded run).
    from scipy.stats import binom, chisquare

    from dpcert.mechanisms.shuffle.binary_sum import BinarySum

    noise_bits, bits, draws = 12, np.array([1, 0, 1, 1, 0]), 20_000
    mechanism = BinarySum(noise_bits, binary_sum_certificate(noise_bits, delta=0.4))
    rng = np.random.default_rng(7)
    counts = mechanism.materialize(np.broadcast_to(bits, (draws, bits.size)), rng).sum(axis=-1)
    support = np.arange(bits.sum(), bits.sum() + noise_bits + 1)
    expected = binom.pmf(support - bits.sum(), noise_bits, 0.5) * draws
    observed = np.array([(counts == s).sum() for s in support])
    keep = expected >= 5
    f_obs = np.append(observed[keep], observed[~keep].sum())
    f_exp = np.append(expected[keep], expected[~keep].sum())
    assert observed.sum() == draws  # no count outside the support
    assert chisquare(f_obs, f_exp).pvalue > 1e-3
