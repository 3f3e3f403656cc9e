"""The other mechanisms of DP-Sniper's default experiment (Bichsel, Steffen, Bogunovic & Vechev 2021,
exp_default.py): Laplace, truncated geometric, noisy histograms, report noisy max 1–4, RAPPOR and
one-time RAPPOR, LaplaceParallel, SVT34Parallel, PrefixSum and the numerical sparse vector.

Independent numbers used below:

* closed-form output distributions written out here from the papers' definitions (the Laplace CDF,
  the truncated geometric pmf P[z] ∝ α^|z−c| with the tails piled on 0 and n as Ghosh, Roughgarden &
  Sundararajan 2009 define it, RAPPOR's per-bit report probabilities q* and p* of Erlingsson, Pihur &
  Korolova 2014, the index and maximum of report noisy max by numerical integration of the noise
  densities) and compared with sampled outputs: every comparison is one Kolmogorov–Smirnov,
  chi-square or exact binomial test at level 10⁻³ (37 tests in all; were the samplers exact, a random
  seed would fail one with probability at most 3.7 %; the seeds are fixed, so the outcome is
  reproducible);
* MurmurHash3 test vectors (Appleby's x86 32-bit function: the empty string with seeds 0 and 1,
  "hello", "foo", the quick brown fox, "Hello, world!") and the Bloom filters of 0, 1, 2 and 3, 4 that
  DP-Sniper's mmh3 call gives (read from mmh3 5.3.1);
* DP-Sniper's published bounds (eval_sp2021/reference-results/dd_search_reg_data.log, eps_lcb:
  logistic regression, 2·10⁸ final draws per input, confidence 0.9) as literals, each checked to lie
  below the ε the sources state.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, chisquare, kstest

from dpcert.audits import CandidatePairs, ClassifierSearch, audit
from dpcert.audits.benchmark_mechanisms import (
    FALSE_VALUE,
    benchmark_mechanism,
    benchmark_mechanisms,
    bloom_bits,
    murmur3_32,
)
from dpcert.errors import InvalidParameter

LEVEL = 1e-3  # false-positive rate of each distribution test
PUBLISHED = {  # logistic regression eps_lcb of DP-Sniper's reference results
    "DPSniper-Laplace": 0.0968,
    "DPSniper-TruncatedGeometric": 0.1156,
    "DPSniper-NoisyHist1": 0.0978,
    "DPSniper-NoisyHist2": 4.6020,
    "DPSniper-ReportNoisyMax1": 0.0923,
    "DPSniper-ReportNoisyMax2": 0.0975,
    "DPSniper-ReportNoisyMax3": 0.2478,
    "DPSniper-ReportNoisyMax4": 0.3463,
    "DPSniper-Rappor": 0.2930,
    "DPSniper-OneTimeRappor": 0.5978,
    "DPSniper-LaplaceParallel": 0.0350,
    "DPSniper-SVT34Parallel": 0.2610,
    "DPSniper-PrefixSum": 0.5040,
    "DPSniper-NumericalSVT": 0.0343,
}
TRUE_EPSILON = {  # derived in the docstrings of the tests below
    "DPSniper-Laplace": 0.1,
    "DPSniper-TruncatedGeometric": math.log(9.0 / 8.0),
    "DPSniper-NoisyHist1": 0.1,
    "DPSniper-NoisyHist2": 10.0,
    "DPSniper-ReportNoisyMax1": 0.1,
    "DPSniper-ReportNoisyMax2": 0.1,
    "DPSniper-ReportNoisyMax3": 0.25,
    "DPSniper-ReportNoisyMax4": math.inf,
    "DPSniper-Rappor": 8 * math.log(0.5125 / 0.4875),
    "DPSniper-OneTimeRappor": 8 * math.log(0.525 / 0.475),
    "DPSniper-LaplaceParallel": 0.1,
    "DPSniper-SVT34Parallel": math.inf,
    "DPSniper-PrefixSum": 1.0,
    "DPSniper-NumericalSVT": 0.1,
}
CORRECT = {
    "DPSniper-Laplace",
    "DPSniper-TruncatedGeometric",
    "DPSniper-NoisyHist1",
    "DPSniper-ReportNoisyMax1",
    "DPSniper-ReportNoisyMax2",
    "DPSniper-Rappor",
    "DPSniper-OneTimeRappor",
    "DPSniper-LaplaceParallel",
    "DPSniper-NumericalSVT",
}
TWINS = {
    "DPSniper-NoisyHist1": "NoisyHist1",
    "DPSniper-NoisyHist2": "NoisyHist2",
    "DPSniper-ReportNoisyMax1": "NoisyMax-Laplace",
    "DPSniper-ReportNoisyMax2": "NoisyMax-Exponential",
    "DPSniper-ReportNoisyMax3": "NoisyMaxValue-Laplace",
    "DPSniper-ReportNoisyMax4": "NoisyMaxValue-Exponential",
}
BLOOM = {0: (0, 11, 18), 1: (3, 10, 13), 2: (7, 10, 11, 19), 3: (0, 3, 14, 19), 4: (7, 8, 9, 18)}


def _ks(samples: np.ndarray, cdf) -> None:
    assert kstest(samples, cdf).pvalue > LEVEL


def _laplace_cdf(x: np.ndarray, loc: float, scale: float) -> np.ndarray:
    z = (np.asarray(x, dtype=float) - loc) / scale
    return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1.0 - 0.5 * np.exp(-np.maximum(z, 0.0)))


def _chisquare(outputs: np.ndarray, pmf: np.ndarray) -> None:
    counts = np.bincount(outputs.astype(int), minlength=pmf.shape[0])
    assert counts.shape == pmf.shape
    assert chisquare(counts, pmf * outputs.shape[0]).pvalue > LEVEL


def test_the_set_holds_every_other_mechanism_of_dp_snipers_default_experiment():
    entries = {e.name: e for e in benchmark_mechanisms() if e.name in PUBLISHED}
    assert set(entries) == set(PUBLISHED)
    for name, entry in entries.items():
        assert entry.published_bound == PUBLISHED[name]
        assert entry.correct == (name in CORRECT)
        assert entry.true_epsilon == pytest.approx(TRUE_EPSILON[name])
        # a published lower bound stays below the true ε; correct entries claim their true ε
        assert entry.published_bound < entry.true_epsilon
        if entry.correct:
            assert entry.claimed_epsilon == pytest.approx(entry.true_epsilon)
        else:
            assert entry.claimed_epsilon == 0.1 < entry.true_epsilon
        assert entry.relation == ("linf" if entry.length > 1 and "NoisyHist" not in name else "one-differ")


@pytest.mark.parametrize(("name", "twin"), sorted(TWINS.items()))
def test_histograms_and_noisy_max_draw_what_their_statdp_twins_draw(name, twin):
    entry, other = benchmark_mechanism(name), benchmark_mechanism(twin)
    assert (entry.relation, entry.length) == (other.relation, other.length)
    for a, b in entry.pairs():
        for value in (a, b):
            ours = entry.mechanism(value, np.random.default_rng(2), 5_000)
            theirs = other.mechanism(value, np.random.default_rng(2), 5_000)
            np.testing.assert_array_equal(ours, theirs)


def test_laplace_outputs_follow_the_laplace_cdf():
    m = benchmark_mechanism("DPSniper-Laplace").mechanism
    rng = np.random.default_rng(21)
    for value in (0.0, 1.0, 2.0):
        _ks(m(np.array([value]), rng, 100_000), lambda x, v=value: _laplace_cdf(x, v, 10.0))
    with pytest.raises(InvalidParameter):
        m(np.array([1.0, 2.0]), rng, 10)


def test_the_histograms_add_laplace_noise_of_their_scale():
    rng = np.random.default_rng(22)
    for name, scale in (("DPSniper-NoisyHist1", 10.0), ("DPSniper-NoisyHist2", 0.1)):
        value = np.array([0.0, 1.0, 2.0, 1.0, 1.0])
        out = benchmark_mechanism(name).mechanism(value, rng, 50_000)
        _ks(out[:, 0], lambda x, s=scale: _laplace_cdf(x, 0.0, s))
        _ks(out[:, 2], lambda x, s=scale: _laplace_cdf(x, 2.0, s))


def _truncated_geometric_pmf(c: int, n: int, alpha: float) -> np.ndarray:
    """Ghosh, Roughgarden & Sundararajan 2009: α^|z−c| inside, α^c/(1−α) and α^(n−c)/(1−α) at the ends."""
    weights = np.array([alpha ** abs(z - c) for z in range(n + 1)])
    weights[0] = alpha**c / (1.0 - alpha)
    weights[n] = alpha ** (n - c) / (1.0 - alpha)
    return weights / weights.sum()


def test_truncated_geometric_matches_its_pmf_and_has_likelihood_ratio_nine_eighths():
    """With k = ⌈ln 20⌉ = 3, α = 2^k/(2^k + 1) = 8/9: on counts c and c + 1 every output has likelihood
    ratio 9/8 or 8/9 exactly, so the true ε is ln(9/8) on every pair of neighbouring counts."""
    entry = benchmark_mechanism("DPSniper-TruncatedGeometric")
    assert math.ceil(math.log(2.0 / 0.1)) == 3
    rng = np.random.default_rng(23)
    pmfs = [_truncated_geometric_pmf(c, 5, 8.0 / 9.0) for c in range(6)]
    for c in (0, 1, 2, 5):
        out = entry.mechanism(np.array([float(c)]), rng, 200_000)
        _chisquare(out, pmfs[c])
    ratios = np.abs(np.log(np.array(pmfs[:-1]) / np.array(pmfs[1:])))
    np.testing.assert_allclose(ratios, math.log(9.0 / 8.0), rtol=1e-12)
    assert entry.true_epsilon == pytest.approx(math.log(9.0 / 8.0), rel=1e-12)
    for bad in (-1.0, 6.0, 1.5):
        with pytest.raises(InvalidParameter):
            entry.mechanism(np.array([bad]), rng, 10)


def _noisy_max_densities(q: np.ndarray, noise: str, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Noise densities f_j and CDFs F_j of q_j + noise on ``grid`` (Laplace or exponential, scale 20)."""
    z = grid[:, None] - q[None, :]
    if noise == "laplace":
        return np.exp(-np.abs(z) / 20.0) / 40.0, _laplace_cdf(z, 0.0, 20.0)
    inside = z >= 0
    return np.where(inside, np.exp(-np.maximum(z, 0.0) / 20.0) / 20.0, 0.0), np.where(
        inside, 1.0 - np.exp(-np.maximum(z, 0.0) / 20.0), 0.0
    )


def _index_pmf(q: np.ndarray, noise: str) -> np.ndarray:
    """P[argmax = i] = ∫ f_i(x) Π_{j≠i} F_j(x) dx by the trapezoid rule on a fine grid."""
    grid = np.linspace(q.min() - 800.0, q.max() + 800.0, 400_001)
    density, cdf = _noisy_max_densities(q, noise, grid)
    pmf = np.array(
        [
            np.trapezoid(density[:, i] * np.prod(np.delete(cdf, i, axis=1), axis=1), grid)
            for i in range(q.shape[0])
        ]
    )
    return pmf / pmf.sum()


@pytest.mark.parametrize(
    ("name", "noise"), [("DPSniper-ReportNoisyMax1", "laplace"), ("DPSniper-ReportNoisyMax2", "exp")]
)
def test_report_noisy_max_index_matches_the_integrated_pmf(name, noise):
    m = benchmark_mechanism(name).mechanism
    rng = np.random.default_rng(24)
    for q in (np.array([1.0, 1.0, 1.0, 1.0, 1.0]), np.array([0.0, 2.0, 2.0, 2.0, 2.0])):
        pmf = _index_pmf(q, noise)
        _chisquare(m(q, rng, 200_000), pmf)
    # the index is ε-DP: on DP-Sniper's best pair the largest log ratio stays below 0.1
    p, r = _index_pmf(np.ones(5), noise), _index_pmf(np.array([0.0, 2.0, 2.0, 2.0, 2.0]), noise)
    assert 0.05 < np.max(np.abs(np.log(p / r))) <= 0.1


@pytest.mark.parametrize(
    ("name", "noise"), [("DPSniper-ReportNoisyMax3", "laplace"), ("DPSniper-ReportNoisyMax4", "exp")]
)
def test_noisy_max_value_follows_the_product_of_cdfs(name, noise):
    """P[max ≤ x] = Π F_j(x).  On the all-above pair (1 against 2) the Laplace version's event
    {max < 1} has ratio (e^(1/20))^5 = e^0.25 exactly; the exponential version's outputs in [1, 2) are
    impossible on 2."""
    m = benchmark_mechanism(name).mechanism
    rng = np.random.default_rng(25)
    q = np.array([0.0, 2.0, 2.0, 1.0, 2.0])

    def cdf(x: np.ndarray) -> np.ndarray:
        return np.prod(_noisy_max_densities(q, noise, np.atleast_1d(x))[1], axis=1)

    _ks(m(q, rng, 100_000), cdf)

    def below(value: float, x: float) -> float:
        return float(np.prod(_noisy_max_densities(np.full(5, value), noise, np.array([x]))[1]))

    if noise == "laplace":
        assert math.log(below(1.0, 0.999) / below(2.0, 0.999)) == pytest.approx(0.25, rel=1e-9)
    else:
        assert below(1.0, 1.5) > 0.0 == below(2.0, 1.5)


def test_murmur3_matches_its_test_vectors_and_dp_snipers_bloom_filters():
    vectors = {
        (b"", 0): 0x00000000,
        (b"", 1): 0x514E28B7,
        (b"hello", 0): 0x248BFA47,
        (b"foo", 0): 0xF6A5C420,
        (b"foo", 42): 0xB12F489E,
        (b"The quick brown fox jumps over the lazy dog", 0): 0x2E4FF723,
        (b"Hello, world!", 1234): 0xFAF6CDB3,
    }
    for (data, seed), expected in vectors.items():
        assert murmur3_32(data, seed) == expected
    for value, bits in BLOOM.items():
        assert bloom_bits(value, 4, 20) == bits


@pytest.mark.parametrize("name", ["DPSniper-Rappor", "DPSniper-OneTimeRappor"])
def test_rappor_reports_each_bit_with_the_papers_probabilities(name):
    """q* = P[report 1 | Bloom bit 1], p* = P[report 1 | bit 0]: one-time (f = 0.95) 0.525 and 0.475;
    with the instantaneous response (f = 0.75, p = 0.45, q = 0.55) 0.5125 and 0.4875.  Bits are
    independent, so a Bloom-bit difference costs ln(q*/p*) either way; eight bits differ on [3], [4]."""
    entry = benchmark_mechanism(name)
    q_star, p_star = (0.525, 0.475) if "OneTime" in name else (0.5125, 0.4875)
    draws = 100_000
    out = entry.mechanism(np.array([1.0]), np.random.default_rng(26), draws)
    assert out.shape == (draws, 20) and set(np.unique(out)) <= {0.0, 1.0}
    for bit in (0, 3, 7, 10, 13):  # Bloom bits of 1: 3, 10, 13
        prob = q_star if bit in BLOOM[1] else p_star
        assert binomtest(int(out[:, bit].sum()), draws, prob).pvalue > LEVEL
    # independence: the number of ones among the three Bloom bits is binomial
    ones = out[:, list(BLOOM[1])].sum(axis=1).astype(int)
    _chisquare(ones, np.array([math.comb(3, k) * q_star**k * (1 - q_star) ** (3 - k) for k in range(4)]))
    per_bit = math.log(q_star / p_star)
    differ = len(set(BLOOM[3]) ^ set(BLOOM[4]))
    assert differ == 8 and entry.true_epsilon == pytest.approx(differ * per_bit, rel=1e-12)
    on_pairs = max(len(set(BLOOM[1]) ^ set(BLOOM[v])) for v in (0, 2)) * per_bit
    assert on_pairs == pytest.approx(6 * per_bit) and entry.published_bound < on_pairs
    with pytest.raises(InvalidParameter):
        entry.mechanism(np.array([0.5]), np.random.default_rng(0), 10)


def test_laplace_parallel_releases_twenty_independent_laplace_copies():
    """Each copy Lap(200): 20·0.005 = 0.1, reached when every copy lies below both inputs."""
    out = benchmark_mechanism("DPSniper-LaplaceParallel").mechanism(
        np.array([1.0]), np.random.default_rng(27), 20_000
    )
    assert out.shape == (20_000, 20)
    _ks(out[:, 0], lambda x: _laplace_cdf(x, 1.0, 200.0))
    _ks(out[:, 19], lambda x: _laplace_cdf(x, 1.0, 200.0))
    below = (out < 1.0).sum(axis=1)  # independent halves: Binomial(20, 1/2)
    _chisquare(below, np.array([math.comb(20, k) / 2**20 for k in range(21)]))


def test_prefix_sums_are_running_sums_of_laplace_answers_and_have_epsilon_one_on_linf():
    """The differences recover the noisy answers; on the all-above pair the event "every noisy answer
    below the lower input" has probability 2⁻¹⁰ on the lower input and 2⁻¹⁰·e^(−10·0.1) on the
    upper one: ratio e^1, the true ε under linf."""
    entry = benchmark_mechanism("DPSniper-PrefixSum")
    q = np.arange(10.0)
    out = entry.mechanism(q, np.random.default_rng(28), 100_000)
    noisy = np.diff(np.hstack([np.zeros((out.shape[0], 1)), out]), axis=1)
    _ks(noisy[:, 0], lambda x: _laplace_cdf(x, 0.0, 10.0))
    _ks(noisy[:, 9], lambda x: _laplace_cdf(x, 9.0, 10.0))
    lower = np.prod(_laplace_cdf(np.zeros(10), 0.0, 10.0))
    upper = np.prod(_laplace_cdf(np.zeros(10), 1.0, 10.0))
    assert lower == pytest.approx(2.0**-10) and math.log(lower / upper) == pytest.approx(1.0)


def _first_answer_above(q0: float, threshold: float, rho_scale: float, nu_scale: float) -> float:
    """P[q0 + ν ≥ T + ρ] by quadrature over ρ ~ Lap(rho_scale)."""
    rho = np.linspace(-60 * rho_scale, 60 * rho_scale, 200_001)
    weight = np.exp(-np.abs(rho) / rho_scale)
    return float(np.sum(weight * (1.0 - _laplace_cdf(threshold + rho - q0, 0.0, nu_scale))) / weight.sum())


def test_numerical_sparse_vector_compares_with_one_noise_and_releases_with_another():
    """Threshold Lap(30), comparison Lap(120), release Lap(60) (c = 2): the first answer is ⊤ with the
    quadrature probability, its released value is q + Lap(60) independently of the comparison, and at
    most two answers are ⊤ (the rest aborted after the second)."""
    m = benchmark_mechanism("DPSniper-NumericalSVT").mechanism
    q = np.ones(10)
    draws = 200_000
    out = m(q, np.random.default_rng(29), draws)
    top = (out != FALSE_VALUE) & (out != -2000.0)
    assert top.sum(axis=1).max() <= 2
    after_second = np.cumsum(top, axis=1) - top >= 2
    assert np.all(out[after_second] == -2000.0) and not np.any(out[~after_second] == -2000.0)
    assert binomtest(int(top[:, 0].sum()), draws, _first_answer_above(1.0, 1.0, 30.0, 120.0)).pvalue > LEVEL
    _ks(out[top[:, 0], 0], lambda x: _laplace_cdf(x, 1.0, 60.0))


def test_svt34_parallel_is_lyus_algs_3_and_4_side_by_side():
    """Columns 0–9 are LyuSVT3's draws and 10–19 LyuSVT4's from the continuing generator; the first
    Alg. 4 answer is ⊤ with the quadrature probability (threshold Lap(40), query noise Lap(40/3))."""
    entry = benchmark_mechanism("DPSniper-SVT34Parallel")
    value = np.array([2.0] * 5 + [0.0] * 5)
    out = entry.mechanism(value, np.random.default_rng(30), 100_000)
    rng = np.random.default_rng(30)
    alg3 = benchmark_mechanism("LyuSVT3").mechanism(value, rng, 100_000)
    alg4 = benchmark_mechanism("LyuSVT4").mechanism(value, rng, 100_000)
    np.testing.assert_array_equal(out, np.hstack([alg3, alg4]))
    prob = _first_answer_above(2.0, 1.0, 40.0, 40.0 / 3.0)
    assert binomtest(int((out[:, 10] == 1.0).sum()), 100_000, prob).pvalue > LEVEL


def _audit(name: str, samples: int, seed: int):
    entry = benchmark_mechanism(name)
    search = ClassifierSearch(CandidatePairs(entry.pairs(), relation=entry.relation))
    return audit(entry.mechanism, epsilon=entry.claimed_epsilon, search=search, samples=samples, seed=seed)


@pytest.mark.parametrize(
    ("name", "samples"),
    [
        ("DPSniper-Laplace", 200_000),
        ("DPSniper-TruncatedGeometric", 200_000),
        ("DPSniper-OneTimeRappor", 100_000),
        ("DPSniper-LaplaceParallel", 50_000),
        ("DPSniper-NumericalSVT", 50_000),
    ],
)
def test_small_audits_of_correct_entries_are_consistent(name, samples):
    report = _audit(name, samples, seed=1)
    assert report.verdict == "consistent"
    assert report.epsilon_lower_bound <= benchmark_mechanism(name).true_epsilon


@pytest.mark.parametrize(
    ("name", "samples", "least"),
    [
        ("DPSniper-NoisyHist2", 50_000, 5.0),
        ("DPSniper-PrefixSum", 100_000, 0.2),
        ("DPSniper-ReportNoisyMax3", 1_000_000, 0.15),
    ],
)
def test_small_audits_catch_the_grossly_buggy_entries(name, samples, least):
    report = _audit(name, samples, seed=1)
    assert report.violated
    assert least < report.epsilon_lower_bound <= benchmark_mechanism(name).true_epsilon
