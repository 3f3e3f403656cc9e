"""Integer-exact samplers (CKS 2020, Algorithms 1-3) against their exact distributions.

Goodness-of-fit tests are seeded chi-square tests at α = 1e-3 each (the false-positive rate of a fresh
seed); their power is checked by the same test rejecting a slightly wrong distribution.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpcert.errors import InvalidParameter
from dpcert.mechanisms.secure import samplers as es

ALPHA = 1e-3


def gaussian_pmf(support: np.ndarray, sigma_squared: float) -> np.ndarray:
    """N_Z(0, σ²) on ``support`` normalised by a direct sum over ±60σ (independent of the sampler)."""
    reach = int(60 * math.sqrt(sigma_squared)) + 10
    everything = np.arange(-reach, reach + 1, dtype=float)
    normaliser = np.sum(np.exp(-(everything**2) / (2.0 * sigma_squared)))
    return np.exp(-(support.astype(float) ** 2) / (2.0 * sigma_squared)) / normaliser


def laplace_pmf(support: np.ndarray, scale: float) -> np.ndarray:
    """Lap_Z(scale): tanh(a/2) e^{-a|x|} with a = 1/scale (CKS 2020, Def. 3)."""
    a = 1.0 / scale
    return math.tanh(a / 2.0) * np.exp(-a * np.abs(support.astype(float)))


def chi_square_p(draws: np.ndarray, pmf) -> float:
    """p-value of the chi-square test of ``draws`` against ``pmf`` (tail cells merged to expected >= 5)."""
    draws = np.asarray(draws, dtype=np.int64)
    n = draws.size
    low, high = int(draws.min()) - 1, int(draws.max()) + 1
    support = np.arange(low, high + 1)
    expected = pmf(support) * n
    keep = expected >= 5
    inner = support[keep]
    observed = np.array([np.sum(draws == value) for value in inner], dtype=float)
    rest_observed = n - observed.sum()
    rest_expected = n - expected[keep].sum()
    observed = np.append(observed, rest_observed)
    expected_cells = np.append(expected[keep], rest_expected)
    return float(stats.chisquare(observed, expected_cells).pvalue)


@pytest.mark.parametrize(
    "sigma_squared, draws",
    [(100, 200_000), (Fraction(7, 3), 200_000), (0.25, 100_000), (2.7, 50_000)],
)
def test_discrete_gaussian_fits_its_pmf(sigma_squared, draws):
    # 2.7 as a float is a rational with a 2^51 denominator: acceptance exponents on Python integers.
    rng = np.random.default_rng(11)
    sample = es.sample_discrete_gaussian(sigma_squared, draws, rng)
    variance = float(Fraction(sigma_squared))
    assert chi_square_p(sample, lambda x: gaussian_pmf(x, variance)) > ALPHA


def test_scalar_reference_discrete_gaussian_fits_its_pmf():
    stream = es.WordStream(np.random.default_rng(12))
    sample = np.array([es.discrete_gaussian_int(stream, 7, 3) for _ in range(5_000)])
    assert chi_square_p(sample, lambda x: gaussian_pmf(x, 7 / 3)) > ALPHA


def test_goodness_of_fit_has_power_against_a_slightly_wrong_sigma():
    sample = es.sample_discrete_gaussian(100, 200_000, np.random.default_rng(11))
    assert chi_square_p(sample, lambda x: gaussian_pmf(x, 104.0)) < 1e-6


@pytest.mark.parametrize("scale", [3, Fraction(7, 3), 0.8, Fraction(1, 5)])
def test_discrete_laplace_fits_its_pmf(scale):
    rng = np.random.default_rng(5)
    sample = es.sample_discrete_laplace(scale, 200_000, rng)
    assert chi_square_p(sample, lambda x: laplace_pmf(x, float(Fraction(scale)))) > ALPHA


def test_discrete_laplace_goodness_of_fit_has_power():
    sample = es.sample_discrete_laplace(3, 200_000, np.random.default_rng(5))
    assert chi_square_p(sample, lambda x: laplace_pmf(x, 3.1)) < 1e-6


def test_large_rational_scale_takes_the_python_integer_path_and_fits():
    scale = Fraction(5, 1 << 70)  # the denominator does not fit in int64
    sample = es.sample_discrete_laplace(scale, 500, np.random.default_rng(2))
    assert np.all(sample == 0)  # a = 2^70/5: a non-zero draw has probability about 2 exp(-2^70/5)
    sample = es.sample_discrete_laplace(Fraction((1 << 70) + 1, 1 << 70), 2_000, np.random.default_rng(2))
    assert chi_square_p(sample.astype(np.int64), lambda x: laplace_pmf(x, 1.0 + 2.0**-70)) > ALPHA
    huge = es.sample_discrete_laplace(1 << 70, 200, np.random.default_rng(2))  # beyond int64: Python ints
    assert huge.dtype == object
    assert 2**67 < np.median(np.abs(huge)) < 2**71  # the median of |Lap(b)| is b ln 2


@pytest.mark.parametrize(
    "gamma", [Fraction(0), Fraction(3, 10), Fraction(1), Fraction(5, 2), Fraction(22, 3)]
)
def test_bernoulli_exp_neg_frequency(gamma):
    n = 400_000
    numerator = np.full(n, gamma.numerator, dtype=np.int64)
    denominator = np.full(n, gamma.denominator, dtype=np.int64)
    hits = int(np.sum(es.bernoulli_exp_neg(np.random.default_rng(3), numerator, denominator)))
    p_value = stats.binomtest(hits, n, math.exp(-float(gamma))).pvalue
    assert p_value > ALPHA


def test_bernoulli_exp_neg_with_a_denominator_near_int64_limit_finishes_exactly():
    # den·k leaves int64 from k = 2 on: those steps run on Python integers.
    den = (1 << 61) + 1
    n = 10_000
    numerator = np.full(n, den // 2, dtype=np.int64)
    hits = int(np.sum(es.bernoulli_exp_neg(np.random.default_rng(4), numerator, np.full(n, den))))
    assert stats.binomtest(hits, n, math.exp(-(den // 2) / den)).pvalue > ALPHA


def test_scalar_reference_bernoulli_matches_probability():
    rng = np.random.default_rng(8)
    n = 5_000
    hits = sum(es.bernoulli_exp_neg_int(rng, 7, 3) for _ in range(n))
    assert stats.binomtest(hits, n, math.exp(-7 / 3)).pvalue > ALPHA


@pytest.mark.parametrize("bound", [1, 7, 1000, (1 << 61) + 12345])
def test_uniform_below_is_uniform(bound):
    n = 100_000
    draws = es.uniform_below(np.random.default_rng(9), np.full(n, bound, dtype=np.int64))
    assert draws.min() >= 0 and draws.max() < bound
    cells = bound if bound <= 1000 else 16  # one cell per value, or 16 cells equal to within 2^-57
    edges = (draws.astype(object) * cells // bound).astype(np.int64)
    counts = np.bincount(edges, minlength=cells)
    if cells > 1:
        assert stats.chisquare(counts).pvalue > ALPHA


def test_seeded_draws_reproduce_and_secure_bits_are_words():
    first = es.sample_discrete_gaussian(100, 1000, np.random.default_rng(1))
    second = es.sample_discrete_gaussian(100, 1000, np.random.default_rng(1))
    assert np.array_equal(first, second)
    words = es.random_words(es.SecureRandom(), 4)
    assert words.dtype == np.uint64 and words.shape == (4,)
    secure = es.sample_discrete_gaussian(100, 1000, es.SecureRandom())
    assert secure.dtype == np.int64 and secure.shape == (1000,)


@pytest.mark.parametrize(
    "call",
    [
        lambda: es.sample_discrete_gaussian(0, 10, np.random.default_rng()),
        lambda: es.sample_discrete_gaussian(-1.0, 10, np.random.default_rng()),
        lambda: es.sample_discrete_gaussian(float("inf"), 10, np.random.default_rng()),
        lambda: es.sample_discrete_laplace("3", 10, np.random.default_rng()),
        lambda: es.sample_discrete_laplace(3, -1, np.random.default_rng()),
        lambda: es.sample_discrete_laplace(3, 10, "not a generator"),
    ],
)
def test_invalid_input_is_refused(call):
    with pytest.raises(InvalidParameter):
        call()
