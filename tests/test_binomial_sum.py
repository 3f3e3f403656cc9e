"""Bit-sum shuffle protocol: exact accounting against brute force, unbiasedness, exact variance."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from scipy import stats
from statsmodels.stats.weightstats import ztest

from dpcert import Certificate, CertificateMismatch, DataOutOfBounds, InvalidParameter, PreconditionFailed
from dpcert.mechanisms.shuffle.binomial_sum import (
    BinomialSumMechanism,
    BitSumParameters,
    binomial_sum_certificate,
    calibrate_binomial_sum,
    paper_parameters,
    simulate_group_sums,
)
from dpcert.theory import binomial as exact

# Every statistical test below uses a seeded generator and a two-sided level of 1e-4 per
# assertion: with about 20 such assertions the suite's false-positive rate is below 0.2 %.
LEVEL = 1e-4
G = 2  # precision used by the brute-force enumerations


def hockey_stick(p: dict, q: dict, epsilon: float) -> float:
    """sup_A P(A) − e^ε Q(A) for two finite distributions given as dicts."""
    return sum(max(0.0, mass - math.exp(epsilon) * q.get(outcome, 0.0)) for outcome, mass in p.items())


def view_distribution(encodings: list[dict[int, float]], b: int, p: float) -> dict[tuple, float]:
    """Distribution of the sorted shuffled bit multiset by enumerating every user's randomness.

    ``encodings[i]`` is the law of user i's encoded value; each user sends its unary encoding
    (g bits) and b Bernoulli(p) noise bits.  The view is the multiset, i.e. the sorted bit tuple.
    """
    law: dict[tuple, float] = {}
    per_user = []
    for encoding in encodings:
        outcomes = []
        for value, weight in encoding.items():
            for noise in itertools.product((0, 1), repeat=b):
                weight_noise = weight * math.prod(p if bit else 1 - p for bit in noise)
                outcomes.append(((1,) * value + (0,) * (G - value) + noise, weight_noise))
        per_user.append(outcomes)
    for combination in itertools.product(*per_user):
        bits = tuple(sorted(bit for user_bits, _ in combination for bit in user_bits))
        law[bits] = law.get(bits, 0.0) + math.prod(weight for _, weight in combination)
    return law


def rounding_law(value: float, g: int, bound: float) -> dict[int, float]:
    scaled = (value + bound) * g / (2 * bound)
    low = math.floor(scaled)
    frac = scaled - low
    return {low: 1 - frac, low + 1: frac} if frac > 0 else {low: 1.0}


@pytest.mark.parametrize("p", [0.5, 0.3])
def test_exact_delta_equals_brute_force_worst_case_over_inputs(p):
    """Enumerate the shuffled view for n = 2 users, g = 2, b = 2 over a grid of inputs."""
    users, b, bound = 2, 2, 1.0
    grid = [-1.0, -0.3, 0.0, 0.55, 1.0]
    views = {}
    for others in grid:
        for target in grid:
            encodings = [rounding_law(others, G, bound), rounding_law(target, G, bound)]
            views[(others, target)] = view_distribution(encodings, b, p)
    for epsilon in (0.0, 0.3, 1.0):
        worst = max(
            hockey_stick(views[(o, t)], views[(o, t2)], epsilon) for o in grid for t in grid for t2 in grid
        )
        assert exact.shift_delta(epsilon, users * b, p, G) == pytest.approx(worst, rel=1e-9, abs=1e-15)
        assert exact.shift_delta(epsilon, users * b, p, G) >= worst


def test_count_is_sufficient_for_the_ordered_shuffled_sequence():
    """For n = 2, g = 1, b = 1 enumerate every permutation: the sequence-level δ equals the count's."""
    p, epsilon = 0.5, 0.4

    def sequence_law(values):
        law = Counter()
        for noise in itertools.product((0, 1), repeat=2):
            bits = [values[0], noise[0], values[1], noise[1]]
            weight = 0.25
            for order in itertools.permutations(range(4)):
                law[tuple(bits[i] for i in order)] += weight / 24
        return law

    worst = hockey_stick(sequence_law((0, 0)), sequence_law((0, 1)), epsilon)
    assert exact.shift_delta(epsilon, 2, p, 1) == pytest.approx(worst, rel=1e-9)


def test_single_coordinate_matches_dp_accounting_from_two_pmfs():
    from dp_accounting.pld import privacy_loss_distribution as pld

    trials, p, g = 300, 0.25, 3
    ks = np.arange(trials + g + 1)
    log_upper = stats.binom.logpmf(ks, trials, p)
    log_lower = stats.binom.logpmf(ks - g, trials, p)
    upper = {int(k): float(log_upper[k]) for k in ks if log_upper[k] > -np.inf}
    lower = {int(k): float(log_lower[k]) for k in ks if log_lower[k] > -np.inf}
    reference = pld.from_two_probability_mass_functions(lower, upper, symmetric=False)
    for epsilon in (0.1, 0.5, 1.5):
        ours = exact.shift_delta(epsilon, trials, p, g)
        theirs = float(reference.get_delta_for_epsilon(epsilon))
        assert ours <= theirs * (1 + 1e-6) + 1e-15  # theirs is pessimistic (rounded up)
        assert ours == pytest.approx(theirs, rel=2e-3)


@pytest.mark.parametrize("p", [0.5, 0.3])
def test_composition_of_two_coordinates_matches_exact_product(p):
    """δ of the 2-coordinate product by direct enumeration of the joint count grid."""
    trials, g = 40, 2
    ks = np.arange(trials + g + 1)
    base = stats.binom.pmf(ks, trials, p)
    shifted = stats.binom.pmf(ks - g, trials, p)
    pairs = {"up": (base, shifted), "down": (shifted, base)}
    for epsilon in (0.2, 0.8):
        worst = 0.0
        for first, second in itertools.product(pairs, repeat=2):
            upper = np.outer(pairs[first][0], pairs[second][0])
            lower = np.outer(pairs[first][1], pairs[second][1])
            worst = max(worst, float(np.clip(upper - math.exp(epsilon) * lower, 0, None).sum()))
        composed = exact.composed_delta(epsilon, trials, p, g, 2)
        assert composed >= worst
        assert composed == pytest.approx(worst, rel=5e-3)


def test_delta_is_non_increasing_in_noise_bits_and_epsilon():
    values = [exact.shift_delta(1.0, 100 * b, 0.5, 10) for b in range(1, 30)]
    assert np.all(np.diff(values) <= 0)
    curve = [exact.shift_delta(e, 2000, 0.5, 10) for e in np.linspace(0, 3, 31)]
    assert np.all(np.diff(curve) <= 0)


# --------------------------------------------------------------------------- calibration
def test_paper_parameters_reproduce_published_values():
    alg4, _ = paper_parameters(1.0, 0.1, 100, 1, 1.0)  # docs/PAPER_NOTES.md, PN-LZJ-4
    assert (alg4.g, alg4.b) == (10, 2157)
    assert alg4.p == pytest.approx(0.4999831, abs=1e-7)
    alg2, _ = paper_parameters(10.0, 0.25, 200, 5, 1.0)  # PN-LZJ-3
    assert (alg2.g, alg2.b) == (10, 2658)
    assert alg2.p == pytest.approx(0.49983, abs=1e-5)
    pvec, _ = paper_parameters(1.0, 0.1, 20, 5, 1.0, "vector+matrix")  # PN-CZ-3
    assert (pvec.g, pvec.b, pvec.p) == (9, 46_909_183, 0.25)


def test_exact_calibration_is_least_and_100x_below_lzj2022_alg4():
    result = calibrate_binomial_sum(1.0, 1e-5, users=1000, method="exact")
    paper = calibrate_binomial_sum(1.0, 1e-5, users=1000, method="paper")
    q = result.parameters
    assert exact.shift_delta(1.0, q.users * q.b, q.p, q.g) <= 1e-5
    assert exact.shift_delta(1.0, q.users * (q.b - 1), q.p, q.g) > 1e-5
    assert paper.b >= 100 * result.b
    assert result.certificate.verify().delta <= 1e-5


def test_exact_calibration_for_pvec_is_least():
    result = calibrate_binomial_sum(1.0, 0.1, users=20, dimension=5, shape="vector+matrix")
    q = result.parameters
    assert q.coordinates == 20
    assert exact.composed_delta(1.0, 20 * q.b, 0.5, q.g, 20) <= 0.1
    assert exact.composed_delta(1.0, 20 * (q.b - 1), 0.5, q.g, 20) > 0.1


def test_paper_preconditions_are_checked():
    with pytest.raises(PreconditionFailed):
        calibrate_binomial_sum(30.0, 1e-5, users=100, method="paper")
    with pytest.raises(PreconditionFailed):
        calibrate_binomial_sum(1.0, 0.6, users=100, method="paper")
    with pytest.raises(InvalidParameter, match="method"):
        calibrate_binomial_sum(1.0, 1e-5, users=100, method="loose")


def test_certificate_round_trip_and_tampering():
    certificate = calibrate_binomial_sum(0.5, 1e-6, users=50).certificate
    assert Certificate.from_json(certificate.to_json()) == certificate
    tampered = certificate.to_dict()
    tampered["parameters"]["b"] = max(1, tampered["parameters"]["b"] // 4)
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(tampered)


# --------------------------------------------------------------------------- the mechanism
def small_mechanism(users=6, dimension=1, shape="vector", g=4, b=3, p=0.3, bound=1.0):
    parameters = BitSumParameters(g, b, p, users, dimension, bound, shape)
    return BinomialSumMechanism(parameters, binomial_sum_certificate(parameters, epsilon=20.0))


@pytest.mark.parametrize(
    "shape, dimension, data_shape",
    [("vector", 1, (7,)), ("vector", 3, (7, 3)), ("symmetric-matrix", 3, None)],
)
def test_analyzer_unbiased_with_exact_variance(shape, dimension, data_shape):
    rng = np.random.default_rng(11)
    users, repetitions = 7, 40_000
    mechanism = small_mechanism(users, dimension, shape, g=5, b=4, p=0.3, bound=2.0)
    if data_shape is None:
        vectors = rng.uniform(-1, 1, size=(users, dimension))
        data = np.einsum("ni,nj->nij", vectors, vectors) / dimension
    else:
        data = rng.uniform(-2, 2, size=data_shape)
    truth = data.sum(axis=0)
    estimates = mechanism.simulate(np.broadcast_to(data, (repetitions,) + data.shape), rng)
    errors = (estimates - truth).reshape(repetitions, -1)
    variance = mechanism.variance(data)
    if shape == "symmetric-matrix":
        rows, cols = np.triu_indices(dimension)
        errors = (estimates - truth)[:, rows, cols]
    for column in range(errors.shape[1]):
        _, p_mean = ztest(errors[:, column], value=0.0)
        _, p_var = ztest(errors[:, column] ** 2, value=float(variance.ravel()[column]))
        assert p_mean > LEVEL and p_var > LEVEL


def test_recentring_subtracts_n_times_bound():
    """Regression: the analyzer subtracts n·B; subtracting B would be off by (n − 1)·B."""
    rng = np.random.default_rng(5)
    mechanism = small_mechanism(users=30, g=6, b=8, p=0.5, bound=1.0)
    data = np.ones((20_000, 30))
    estimates = mechanism.simulate(data, rng)
    _, p_value = ztest(estimates, value=30.0)
    assert p_value > LEVEL
    assert abs(estimates.mean() - 30.0) < 0.05 * 29  # far from the (n − 1)·B = 29 bias of the bug


def test_materialized_bits_agree_with_count_simulation():
    rng = np.random.default_rng(3)
    mechanism = small_mechanism(users=4, dimension=2, g=3, b=2, p=0.4)
    data = np.array([[0.2, -1.0], [1.0, 0.3], [-0.5, 0.5], [0.0, 1.0]])
    repetitions = 20_000
    bits = mechanism.materialize(np.broadcast_to(data, (repetitions,) + data.shape), rng)
    assert bits.shape == (repetitions, 2, 4 * (3 + 2))
    counts_bits = bits.sum(axis=-1)
    counts_sim = mechanism.simulate_counts(np.broadcast_to(data, (repetitions,) + data.shape), rng)
    np.testing.assert_allclose(mechanism.analyze_bits(bits), mechanism.analyze_counts(counts_bits))
    for coordinate in range(2):
        values = np.arange(4 * 5 + 1)
        table = np.array(
            [
                np.bincount(counts_bits[:, coordinate], minlength=values.size),
                np.bincount(counts_sim[:, coordinate], minlength=values.size),
            ]
        )
        table = table[:, table.sum(axis=0) > 0]
        _, p_value, _, _ = stats.chi2_contingency(table)
        assert p_value > LEVEL


def test_encoding_never_exceeds_g_and_is_unbiased_at_the_ends():
    rng = np.random.default_rng(0)
    mechanism = small_mechanism(users=3, g=4)
    encoded = mechanism.encode(np.array([[-1.0, 1.0, 0.125]] * 1000), rng)
    assert encoded.min() >= 0 and encoded.max() <= 4
    assert set(np.unique(encoded[:, 0])) == {0} and set(np.unique(encoded[:, 1])) == {4}
    assert set(np.unique(encoded[:, 2])) <= {2, 3}


def test_invalid_inputs_name_the_parameter():
    mechanism = small_mechanism(users=3)
    with pytest.raises(DataOutOfBounds, match="data"):
        mechanism.simulate(np.array([0.0, 1.5, 0.0]), np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="data"):
        mechanism.simulate(np.zeros(4), np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="rng"):
        mechanism.simulate(np.zeros(3), 0)
    with pytest.raises(InvalidParameter, match="p"):
        BitSumParameters(4, 3, 1.0, 3)
    with pytest.raises(InvalidParameter, match="users"):
        calibrate_binomial_sum(1.0, 1e-5, users=0)
    matrix = small_mechanism(users=2, dimension=2, shape="symmetric-matrix")
    with pytest.raises(InvalidParameter, match="symmetric"):
        matrix.simulate(np.array([[[0.0, 0.5], [0.1, 0.0]]] * 2), np.random.default_rng(0))


def test_command_line_contract(capsys):
    import json

    from dpcert.cli import main

    assert (
        main(["calibrate", "binomial-sum", "--epsilon", "1", "--delta", "1e-5", "--users", "1000", "--json"])
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert {"g", "b", "p", "epsilon", "delta", "noise_std", "certificate"} <= set(payload)
    Certificate.from_dict(payload["certificate"])  # re-verified
    arguments = ["--g", str(payload["g"]), "--b", str(payload["b"]), "--p", str(payload["p"])]
    assert main(["account", "binomial-sum", *arguments, "--users", "1000", "--delta", "1e-5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["epsilon"] <= 1.0
    assert main(["calibrate", "binomial-sum", "--epsilon", "0", "--delta", "1e-5", "--users", "10"]) == 2
    assert "epsilon" in capsys.readouterr().err


def _as_dp_accounting_pmf(pmf):
    from dp_accounting.pld import pld_pmf

    return pld_pmf.DensePLDPmf(pmf.discretization, pmf.lower, np.array(pmf.probs), pmf.infinity_mass, True)


@pytest.mark.parametrize("trials, g, coordinates", [(160, 5, 20), (2000, 4, 3)])
def test_composed_profile_matches_dp_accounting_on_the_same_pmf(trials, g, coordinates):
    interval = exact.loss_interval(trials, 0.5, g, coordinates)
    single = exact._loss_pmf(trials, 0.5, g, True, interval)
    reference = _as_dp_accounting_pmf(single).self_compose(coordinates)
    for delta in (0.1, 1e-3, 1e-7):
        ours = exact.composed_epsilon(delta, trials, 0.5, g, coordinates)
        assert exact.composed_delta(ours, trials, 0.5, g, coordinates) <= delta
        assert ours == pytest.approx(reference.get_epsilon_for_delta(delta), rel=1e-7, abs=1e-7)
    for epsilon in (0.0, 0.5, 1.0):  # deltas well above dp_accounting's FFT round-off (~1e-16)
        theirs = float(reference.get_delta_for_epsilon(epsilon))
        ours = exact.composed_delta(epsilon, trials, 0.5, g, coordinates)
        assert ours >= theirs - 2e-15  # theirs adds a 1e-15 truncation allowance to the infinite loss
        assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-14)


def direct_convolution_of(a: np.ndarray, b: np.ndarray, width: int = 256) -> np.ndarray:
    """``np.convolve(a, b)`` computed as sums of non-negative products through matrix products: ``a`` in
    blocks of ``width`` entries, every block multiplied by the Toeplitz matrix of ``b`` at once, the
    blocks' products added at their offsets.  For non-negative inputs every entry has a relative error
    of a few ulp times the number of its terms in any summation order (no cancellation), as
    ``np.convolve``'s own loop has, at matrix-product speed."""
    blocks = -(-a.size // width)
    columns = np.zeros(blocks * width)
    columns[: a.size] = a
    padded = np.concatenate([np.zeros(width - 1), b, np.zeros(width - 1)])
    toeplitz = np.ascontiguousarray(sliding_window_view(padded, width)[:, ::-1])  # [i, j] = b[i - j]
    products = toeplitz @ columns.reshape(blocks, width).T
    out = np.zeros(blocks * width + b.size - 1)
    for k in range(blocks):
        out[k * width : k * width + toeplitz.shape[0]] += products[:, k]
    return out[: a.size + b.size - 1]


def test_direct_convolution_is_numpys():
    rng = np.random.default_rng(8)
    for n, m in ((1, 1), (5, 3), (3, 5), (256, 256), (257, 1), (1000, 777)):
        a, b = rng.random(n), rng.random(m)
        assert direct_convolution_of(a, b) == pytest.approx(np.convolve(a, b), rel=1e-13, abs=0)
    tiny = np.array([1e-200, 0.0, 1.0])
    assert np.array_equal(direct_convolution_of(tiny, tiny) > 0, np.convolve(tiny, tiny) > 0)


@pytest.mark.parametrize("p", [0.5, 0.3])
def test_composed_profile_at_tiny_delta_matches_direct_convolution(p):
    """Down to δ ≈ 1e-25 the proven FFT bound stays above and within 5 % of a direct convolution
    (sums of non-negative products: relative error ~1e-13), where an untilted FFT has an absolute
    floor near 1e-16."""
    trials, g, coordinates = 400, 4, 3
    interval = exact.loss_interval(trials, p, g, coordinates)
    up = exact._loss_pmf(trials, p, g, True, interval)
    down = exact._loss_pmf(trials, p, g, False, interval)

    def direct_convolution(parts):
        probs, lower, survive = np.ones(1), 0, 1.0
        for pmf in parts:
            probs, lower = direct_convolution_of(probs, pmf.probs), lower + pmf.lower
            survive *= 1.0 - pmf.infinity_mass
        return probs, (lower + np.arange(probs.size)) * interval, survive

    def direct_delta(convolution, epsilon):
        probs, losses, survive = convolution
        above = losses > epsilon
        return (1.0 - survive) + float(np.sum(probs[above] * -np.expm1(epsilon - losses[above])))

    splits = [[up] * coordinates] if p == 0.5 else [[up] * k + [down] * (coordinates - k) for k in range(4)]
    convolutions = [direct_convolution(parts) for parts in splits]
    for epsilon in (1.0, 3.0, 6.0, 7.5):
        truth = max(direct_delta(convolution, epsilon) for convolution in convolutions)
        ours = exact.composed_delta(epsilon, trials, p, g, coordinates)
        assert truth * (1 - 1e-9) <= ours <= truth * 1.05 + 1e-300, (epsilon, truth, ours)
    assert exact.composed_delta(7.5, trials, p, g, coordinates) < 1e-17  # the regime being tested


def test_mechanism_call_forms():
    rng = np.random.default_rng(1)
    mechanism = small_mechanism(users=5, dimension=2)
    data = rng.uniform(-1, 1, size=(5, 2))
    assert mechanism(data, rng).shape == (2,)
    assert mechanism(data, rng, size=7).shape == (7, 2)
    scalar = small_mechanism(users=5)
    assert scalar(np.zeros(5), rng).shape == ()
    assert scalar(np.zeros((4, 5)), rng).shape == (4,)


# --------------------------------------------------------------------------- l2-bounded data
@pytest.mark.parametrize("coordinates, g", [(2, 3), (3, 4), (4, 2)])
def test_l2_shift_multisets_cover_every_feasible_shift(coordinates, g):
    maximal = exact.l2_shift_multisets(coordinates, g)
    for multiset in maximal:
        assert sum(max(a - 1, 0) ** 2 for a in multiset) <= g * g and max(multiset) <= g
    for shifts in itertools.product(range(g + 1), repeat=coordinates):
        if sum(max(a - 1, 0) ** 2 for a in shifts) > g * g:
            continue
        ordered = sorted(shifts, reverse=True)
        assert any(all(x <= y for x, y in zip(ordered, m, strict=True)) for m in maximal)


def test_l2_profile_bounds_the_enumerated_protocol_and_never_exceeds_entrywise():
    """One user, d = 2, g = 3, b = 4, p = 1/2: exact view law for inputs on the unit disk."""
    g, b, bound = 3, 4, 1.0
    angles = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    grid = [np.array([0.0, 0.0])] + [r * np.array([np.cos(a), np.sin(a)]) for r in (0.5, 1.0) for a in angles]
    noise = stats.binom.pmf(np.arange(b + 1), b, 0.5)

    def view(point):
        laws = []
        for value in point:
            encoding = rounding_law(float(value), g, bound)
            law = np.zeros(g + b + 1)
            for level, weight in encoding.items():
                law[level : level + b + 1] += weight * noise
            laws.append(law)
        return np.outer(laws[0], laws[1])

    views = [view(point) for point in grid]
    for epsilon in (0.0, 0.5, 1.5):
        worst = max(float(np.clip(p - math.exp(epsilon) * q, 0, None).sum()) for p in views for q in views)
        l2 = exact.l2_delta(epsilon, b, g, 2)
        assert worst <= l2
        assert l2 <= exact.composed_delta(epsilon, b, 0.5, g, 2) * (1 + 1e-9)


def test_l2_calibration_needs_fewer_bits_and_validates_norms():
    entry = calibrate_binomial_sum(1.0, 1e-5, users=20, dimension=5)
    l2 = calibrate_binomial_sum(1.0, 1e-5, users=20, dimension=5, norm="l2")
    assert l2.b < entry.b and l2.noise_std < entry.noise_std
    assert Certificate.from_json(l2.certificate.to_json()).parameters["norm"] == "l2"
    q = l2.parameters
    assert exact.l2_delta(1.0, 20 * q.b, q.g, 5) <= 1e-5 < exact.l2_delta(1.0, 20 * (q.b - 1), q.g, 5)
    too_long = np.full((20, 5), 0.9)  # entries within the bound, l2 norms above it
    with pytest.raises(DataOutOfBounds, match="norm"):
        l2.mechanism().simulate(too_long, np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="norm"):
        BitSumParameters(5, 10, 0.25, 20, 5, 1.0, "vector", "l2")


def test_l2_norm_check_is_per_user_for_scalars_and_matrices():
    rng = np.random.default_rng(2)
    scalar = BitSumParameters(4, 3, 0.5, 5, 1, 1.0, "vector", "l2")
    mechanism = BinomialSumMechanism(scalar, binomial_sum_certificate(scalar, epsilon=20.0))
    assert mechanism.simulate(np.full((3, 5), 0.9), rng).shape == (3,)  # |y| <= 1 each, sum over users > 1
    matrix = BitSumParameters(4, 3, 0.5, 5, 2, 1.0, "symmetric-matrix", "l2")
    mechanism = BinomialSumMechanism(matrix, binomial_sum_certificate(matrix, epsilon=20.0))
    with pytest.raises(DataOutOfBounds, match="Frobenius"):
        mechanism.simulate(np.full((5, 2, 2), 0.9), rng)  # Frobenius norm 1.8


def test_l2_groups_merge_every_combination_and_sit_below_entrywise():
    groups, g = (2, 3), 3
    patterns = set(exact.l2_shift_multisets(2, g))
    merged = exact.l2_patterns(groups, g)
    for first in patterns:
        for second in exact.l2_shift_multisets(3, g):
            assert tuple(sorted(first + second, reverse=True)) in merged
    assert all(len(pattern) == 5 for pattern in merged)
    for epsilon in (0.3, 1.0):
        grouped = exact.l2_delta(epsilon, 400, g, groups)
        assert grouped <= exact.composed_delta(epsilon, 400, 0.5, g, 5) * (1 + 1e-9)
        assert grouped >= exact.l2_delta(epsilon, 400, g, 2)  # more coordinates: never more private
    pvec = BitSumParameters(5, 31, 0.5, 20, 5, 1.0, "vector+matrix", "l2")
    assert pvec.l2_groups == (5, 15)
    assert binomial_sum_certificate(pvec, delta=0.1).epsilon <= 1.0


def test_group_sums_run_each_group_as_the_mechanism_draw_for_draw():
    """One group: the grouped entry point consumes the generator exactly as the mechanism does."""
    parameters = BitSumParameters(g=7, b=40, p=0.3, users=25, bound=2.0)
    mechanism = BinomialSumMechanism(parameters, binomial_sum_certificate(parameters, delta=1e-3))
    values = np.random.default_rng(5).uniform(-2.0, 2.0, size=25)
    for seed in range(5):
        expected = mechanism.simulate(values, np.random.default_rng(seed))
        grouped = simulate_group_sums(
            values,
            np.zeros(25, dtype=np.int64),
            np.array([7.0]),
            np.array([40]),
            np.array([0.3]),
            2.0,
            np.random.default_rng(seed),
        )
        assert grouped.shape == (1,) and grouped[0] == pytest.approx(float(expected), rel=1e-12, abs=1e-9)


def test_group_sums_are_unbiased_per_group_with_their_own_parameters():
    """Three groups with different (g, b, p) and one empty group: each estimate is unbiased."""
    rng = np.random.default_rng(11)
    values = rng.uniform(-1.0, 1.0, size=60)
    groups = np.repeat([0, 1, 3], [10, 20, 30])
    g, b, p = np.array([4.0, 6.0, 1.0, 9.0]), np.array([30, 10, 0, 50]), np.array([0.5, 0.25, 0.5, 0.4])
    draws = np.array([simulate_group_sums(values, groups, g, b, p, 1.0, rng) for _ in range(4000)])
    assert np.all(draws[:, 2] == 0.0)
    for k in (0, 1, 3):
        members = values[groups == k]
        bound = (2.0 / g[k]) * math.sqrt(members.size * (0.25 + b[k] * p[k] * (1 - p[k])))
        z = (draws[:, k].mean() - members.sum()) / (bound / math.sqrt(draws.shape[0]))
        # the standard deviation used is the worst case over inputs, so |z| is at most a standard normal's
        assert abs(z) < stats.norm.isf(LEVEL / 2)
