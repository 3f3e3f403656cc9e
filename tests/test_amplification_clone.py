"""Stronger clone bound, exact shuffled binary RR, and why the generic bound stays FMT20 Thm 3.2.

Independent references computed here:
* exact δ(ε) of n shuffled binary randomized-response reports, by summing binomial mixtures with
  scipy.stats (view = count of ones, worst case over how many other users hold 1), and for n <= 5 by
  enumerating every vector of reports;
* the stronger clone pair enumerated outcome by outcome (no threshold argument);
* exact δ(ε) of shuffled histograms for a given local randomizer and i.i.d. other users, by
  enumerating all histograms (multinomial laws), and Wang et al.'s variation-ratio pair enumerated.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from dpcert import Certificate, CertificateMismatch, InvalidParameter
from dpcert.mechanisms.shuffle.amplification import amplification_certificate
from dpcert.theory import amplification as amp


def hockey_stick(upper: np.ndarray, lower: np.ndarray, epsilon: float) -> float:
    return float(np.maximum(upper - math.exp(epsilon) * lower, 0.0).sum())


def binary_rr_by_mixtures(epsilon: float, epsilon0: float, users: int) -> float:
    """Exact δ(ε) of shuffled binary RR: Σ_i Bin(m, 1−f)(i)·Bin(n−1−m, f)(k−i), max over m, both ways."""
    flip = 1.0 / (1.0 + math.exp(epsilon0))
    counts = np.arange(users + 1)
    best = 0.0
    for ones in range(users):
        others = np.zeros(users + 1)
        for i in range(ones + 1):
            others[i:] += stats.binom.pmf(i, ones, 1.0 - flip) * stats.binom.pmf(
                counts[: users + 1 - i], users - 1 - ones, flip
            )
        holds_zero = (1.0 - flip) * others + flip * np.concatenate(([0.0], others[:-1]))
        holds_one = flip * others + (1.0 - flip) * np.concatenate(([0.0], others[:-1]))
        best = max(
            best, hockey_stick(holds_zero, holds_one, epsilon), hockey_stick(holds_one, holds_zero, epsilon)
        )
    return best


def binary_rr_by_enumeration(epsilon: float, epsilon0: float, users: int) -> float:
    """Exact δ(ε) for tiny n: every dataset of the others, every vector of reports."""
    keep = math.exp(epsilon0) / (1.0 + math.exp(epsilon0))
    best = 0.0
    for others in itertools.product((0, 1), repeat=users - 1):
        laws = []
        for victim in (0, 1):
            law = np.zeros(users + 1)
            data = (victim, *others)
            for reports in itertools.product((0, 1), repeat=users):
                weight = math.prod(keep if r == x else 1.0 - keep for r, x in zip(reports, data, strict=True))
                law[sum(reports)] += weight
            laws.append(law)
        best = max(best, hockey_stick(laws[0], laws[1], epsilon), hockey_stick(laws[1], laws[0], epsilon))
    return best


def clone_pair_by_enumeration(epsilon: float, epsilon0: float, users: int, clone: float) -> float:
    """Stronger clone pair P = (A + Δ, C − A + 1 − Δ) vs Q, outcome by outcome, both directions."""
    bias = math.exp(epsilon0) / (math.exp(epsilon0) + 1.0)
    p_law: dict[tuple[int, int], float] = {}
    q_law: dict[tuple[int, int], float] = {}
    for c in range(users):
        weight_c = stats.binom.pmf(c, users - 1, clone)
        for a in range(c + 1):
            weight = weight_c * stats.binom.pmf(a, c, 0.5)
            for shift, weight_shift in ((1, bias), (0, 1.0 - bias)):
                p_key, q_key = (a + shift, c - a + 1 - shift), (a + 1 - shift, c - a + shift)
                p_law[p_key] = p_law.get(p_key, 0.0) + weight * weight_shift
                q_law[q_key] = q_law.get(q_key, 0.0) + weight * weight_shift
    keys = sorted(set(p_law) | set(q_law))
    upper = np.array([p_law.get(k, 0.0) for k in keys])
    lower = np.array([q_law.get(k, 0.0) for k in keys])
    return max(hockey_stick(upper, lower, epsilon), hockey_stick(lower, upper, epsilon))


def histograms(total: int, bins: int) -> np.ndarray:
    rows = [h for h in itertools.product(range(total + 1), repeat=bins - 1) if sum(h) <= total]
    return np.array([(*h, total - sum(h)) for h in rows])


def shuffled_histogram_delta(epsilon: float, victim: tuple, others: np.ndarray, users: int) -> float:
    """Exact δ(ε) of the shuffled reports: victim row ``victim[0]`` vs ``victim[1]``, others i.i.d."""
    grid = histograms(users, len(others))
    log_others = np.log(np.asarray(others, dtype=float))

    def multinomial(counts: np.ndarray) -> np.ndarray:
        valid = (counts >= 0).all(axis=1)
        safe = np.maximum(counts, 0)
        log_pmf = gammaln(users) - gammaln(safe + 1).sum(axis=1) + (safe * log_others).sum(axis=1)
        return np.where(valid, np.exp(log_pmf), 0.0)

    laws = []
    for row in victim:
        law = np.zeros(len(grid))
        for y, probability in enumerate(row):
            law += probability * multinomial(grid - np.eye(len(others), dtype=int)[y])
        laws.append(law)
    return max(hockey_stick(laws[0], laws[1], epsilon), hockey_stick(laws[1], laws[0], epsilon))


def variation_ratio_pair_delta(
    epsilon: float, users: int, growth: float, alpha: float, gamma: float
) -> float:
    """Wang et al. 2024's pair (r = α): victim (pα, α, γ) or (α, pα, γ), others (α, α, 1 − 2α)."""
    return shuffled_histogram_delta(
        epsilon,
        ((growth * alpha, alpha, gamma), (alpha, growth * alpha, gamma)),
        np.array([alpha, alpha, 1.0 - 2.0 * alpha]),
        users,
    )


# --------------------------------------------------------------------------- never below the truth
@pytest.mark.parametrize("epsilon0", [0.25, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("users", [1, 2, 3, 5, 12, 30])
def test_bounds_never_below_exact_shuffled_binary_randomized_response(epsilon0: float, users: int) -> None:
    for epsilon in np.linspace(0.0, epsilon0, 7)[:-1]:
        exact = binary_rr_by_mixtures(epsilon, epsilon0, users)
        # the reference sums at most ~100 positive terms: rounding below 1e-15 relative
        floor = exact * (1.0 - 1e-12)
        assert amp.stronger_clone_delta(epsilon, epsilon0, users) >= floor
        assert amp.numeric_delta(epsilon, epsilon0, users) >= floor  # the generic bound (FMT20)
        assert amp.shuffled_delta(epsilon, epsilon0, users) >= floor
        certified = amp.shuffled_delta(epsilon, epsilon0, users, randomizer="binary-rr")
        assert floor <= certified <= exact + 1.01e-8  # exact, plus its allowance (1e-8 of a mass <= 1)


def test_one_user_is_plain_randomized_response() -> None:
    for epsilon0 in (0.5, 2.0):
        for epsilon in (0.0, 0.3):
            exact = (math.exp(epsilon0) - math.exp(epsilon)) / (math.exp(epsilon0) + 1.0)
            assert amp.stronger_clone_delta(epsilon, epsilon0, 1) == pytest.approx(exact, rel=1e-7)
            assert amp.binary_rr_delta(epsilon, epsilon0, 1) == pytest.approx(exact, rel=1e-7)
            assert amp.stronger_clone_delta(epsilon, epsilon0, 1) >= exact * (1 - 1e-15)


@pytest.mark.parametrize("users", [2, 3, 5])
def test_exact_binary_rr_matches_enumerated_reports(users: int) -> None:
    for epsilon0 in (0.7, 2.5):
        for epsilon in (0.0, 0.2, 0.6):
            reference = binary_rr_by_enumeration(epsilon, epsilon0, users)
            assert binary_rr_by_mixtures(epsilon, epsilon0, users) == pytest.approx(
                reference, rel=1e-12, abs=1e-16
            )
            value = amp.binary_rr_delta(epsilon, epsilon0, users)
            assert reference * (1 - 1e-12) <= value <= reference + 1.01e-8  # allowance: 1e-8 of a mass <= 1


@pytest.mark.parametrize("users, epsilon0", [(4, 1.0), (9, 2.0), (15, 0.5)])
def test_stronger_clone_delta_evaluates_the_pair_exactly(users: int, epsilon0: float) -> None:
    clone = 2.0 / (math.exp(epsilon0) + 1.0)
    for epsilon in np.linspace(0.0, epsilon0 * 0.95, 6):
        reference = clone_pair_by_enumeration(epsilon, epsilon0, users, clone)
        value = amp.stronger_clone_delta(epsilon, epsilon0, users)
        assert reference * (1 - 1e-12) <= value <= reference + 1e-7  # allowance: 1e-8 of the set's mass


def test_exact_binary_rr_is_tighter_than_the_clone_bounds_at_scale() -> None:
    # exact < stronger clone < FMT20 (each a valid bound for binary RR; the exact one is the truth)
    exact = amp.shuffled_epsilon(1e-6, 2.0, 100, randomizer="binary-rr")
    clone = amp.shuffled_epsilon(1e-6, 2.0, 100, randomizer="k-rr", categories=3)
    generic = amp.shuffled_epsilon(1e-6, 2.0, 100)
    assert exact < clone < generic
    assert binary_rr_by_mixtures(exact, 2.0, 100) <= 1e-6  # independently: the exact ε holds
    assert binary_rr_by_mixtures(exact * 0.99, 2.0, 100) > 1e-6  # and is the least one


# --------------------------------------------------------------------------- published anchor values
@pytest.mark.parametrize(
    "epsilon0, users, published",
    # Wang et al. 2024, github.com/wangsw/PrivacyAmplification amplificationUB with the general-
    # mechanism parameters, delta = 1e-6, T = 12 bisection steps on [0, eps0] (its default): the
    # upper end of the final bisection interval, so the exact pair lies within eps0/4096 below it.
    [(1.0, 10_000, 0.0432), (4.0, 1_000_000, 0.0352), (2.0, 100_000, 0.0332)],
)
def test_stronger_clone_reproduces_wang_et_al(epsilon0: float, users: int, published: float) -> None:
    epsilon = amp.shuffled_epsilon(1e-6, epsilon0, users, randomizer="k-rr", categories=3)
    assert published - epsilon0 / 4096 - 1e-4 <= epsilon <= 1.01 * published
    assert amp.stronger_clone_delta(epsilon, epsilon0, users) <= 1e-6


# --------------------------------------------------------------------------- the clone condition
def clone_condition_holds(matrix: np.ndarray, epsilon0: float) -> bool:
    """``R(x) >= (R(x1) + R(x1'))/(e^{ε0} + 1)`` for all rows x and distinct rows x1, x1'."""
    for first, second in itertools.permutations(range(len(matrix)), 2):
        floor = (matrix[first] + matrix[second]) / (math.exp(epsilon0) + 1.0)
        if np.any(matrix < floor * (1 - 1e-12)):
            return False
    return True


def test_randomized_response_meets_the_clone_condition() -> None:
    for k in (2, 3, 5):
        for epsilon0 in (0.5, 2.0):
            matrix = (np.full((k, k), 1.0) + (math.exp(epsilon0) - 1.0) * np.eye(k)) / (
                math.exp(epsilon0) + k - 1
            )
            assert clone_condition_holds(matrix, epsilon0)


def test_wang_pair_at_the_randomizers_own_parameters_is_not_an_upper_bound() -> None:
    # An eps0 = 1 LDP randomizer on 3 inputs, 4 outputs: x1, x1' differ only on outputs 0 and 1
    # (total variation s (e - 1)); the others' reports avoid the victim's common part.
    e, s, common = math.e, 0.05, 0.5
    rest = 1.0 - s * (e + 1.0) - common
    victim = ((s * e, s, common, rest), (s, s * e, common, rest))
    other_rest = min(e * rest, 1.0 - 2.0 * s - common / e)
    others = np.array([s, s, 1.0 - 2.0 * s - other_rest, other_rest])
    matrix = np.array([victim[0], victim[1], others])
    assert np.all(matrix[:, None, :] <= e * matrix[None, :, :] * (1 + 1e-12))  # eps0-LDP
    assert not clone_condition_holds(matrix, 1.0)
    users, epsilon = 10, 0.6
    exact = shuffled_histogram_delta(epsilon, victim, others, users)
    wang_own_beta = variation_ratio_pair_delta(epsilon, users, e, s, common + rest)
    assert exact > 5.0 * wang_own_beta  # the reduction at the randomizer's own beta fails (13x here)
    assert amp.shuffled_delta(epsilon, 1.0, users) >= exact  # the certified generic bound (FMT20) holds


def test_wang_k_ary_rr_pair_is_below_the_exact_shuffled_4_ary_rr() -> None:
    # Others all hold a third value; Wang et al.'s k-RR parameters beta = (e^eps0 - 1)/(e^eps0 + k - 1).
    epsilon0, users, epsilon, k = 1.0, 10, 0.6, 4
    z = math.exp(epsilon0) + k - 1
    victim = ((math.e, 1, 1, 1), (1, math.e, 1, 1))
    victim = tuple(tuple(v / z for v in row) for row in victim)
    others = np.array([1, 1, math.e, 1]) / z
    exact = shuffled_histogram_delta(epsilon, victim, others, users)
    wang = variation_ratio_pair_delta(epsilon, users, math.e, 1 / z, (k - 2) / z)
    assert exact > 1.05 * wang
    certified = amp.shuffled_delta(epsilon, epsilon0, users, randomizer="k-rr", categories=k)
    assert certified >= exact
    # with three values Wang et al.'s pair is exact for this dataset (the histogram is (n0, n1, rest))
    z3 = math.exp(epsilon0) + 2
    victim3 = ((math.e / z3, 1 / z3, 1 / z3), (1 / z3, math.e / z3, 1 / z3))
    exact3 = shuffled_histogram_delta(epsilon, victim3, np.array([1, 1, math.e]) / z3, users)
    assert exact3 == pytest.approx(
        variation_ratio_pair_delta(epsilon, users, math.e, 1 / z3, 1 / z3), rel=1e-9
    )
    assert amp.shuffled_delta(epsilon, epsilon0, users, randomizer="k-rr", categories=3) >= exact3


# --------------------------------------------------------------------------- inverse, certificates, CLI
@pytest.mark.parametrize(
    "options, users",
    [({}, 5000), ({"randomizer": "k-rr", "categories": 4}, 5000), ({"randomizer": "binary-rr"}, 300)],
)
def test_largest_local_epsilon_is_the_root_of_the_forward_bound(options: dict, users: int) -> None:
    epsilon, delta = 0.5, 1e-6
    epsilon0 = amp.largest_local_epsilon(epsilon, delta, users, **options)
    assert epsilon0 > epsilon
    assert amp.shuffled_delta(epsilon, epsilon0, users, **options) <= delta
    assert amp.shuffled_epsilon(delta, epsilon0, users, **options) <= epsilon
    assert amp.shuffled_delta(epsilon, epsilon0 * (1 + 1e-5), users, **options) > delta


def test_randomizer_certificates_round_trip_and_reject_tampering() -> None:
    certificate = amplification_certificate(2.0, 500, delta=1e-6, randomizer="k-rr", categories=5)
    assert certificate.parameters["randomizer"] == "k-rr" and certificate.parameters["categories"] == 5
    assert Certificate.from_json(certificate.to_json()) == certificate
    generic = amplification_certificate(2.0, 500, delta=1e-6)
    assert "randomizer" not in generic.parameters
    assert certificate.epsilon < generic.epsilon
    tampered = certificate.to_dict()
    tampered["parameters"]["users"] = 50  # fewer users: the claimed epsilon no longer holds
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(tampered)


def test_randomizer_inputs_are_validated() -> None:
    with pytest.raises(InvalidParameter, match="randomizer"):
        amp.shuffled_delta(0.1, 1.0, 100, randomizer="laplace")
    with pytest.raises(InvalidParameter, match="categories"):
        amp.shuffled_delta(0.1, 1.0, 100, randomizer="k-rr")
    with pytest.raises(InvalidParameter, match="method"):
        amp.shuffled_delta(0.1, 1.0, 100, method="closed-form", randomizer="binary-rr")
    with pytest.raises(InvalidParameter, match="delta0"):
        amp.shuffled_delta(0.1, 1.0, 100, delta0=1e-9, randomizer="binary-rr")
    with pytest.raises(InvalidParameter, match="users"):
        amp.binary_rr_delta(0.1, 1.0, amp.BINARY_RR_EXACT_MAX_USERS + 1)


def test_command_line_randomizer_flags(capsys) -> None:
    import json

    from dpcert.cli import main

    args = ["account", "shuffle", "--epsilon0", "2", "--users", "400", "--delta", "1e-6", "--json"]
    assert main(args + ["--randomizer", "binary-rr"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert exact["epsilon"] == pytest.approx(amp.shuffled_epsilon(1e-6, 2.0, 400, randomizer="binary-rr"))
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["epsilon"] > exact["epsilon"]
    assert main(args + ["--randomizer", "k-rr"]) == 2
    assert "categories" in capsys.readouterr().err
    assert (
        main(
            ["calibrate", "shuffle", "--epsilon", "0.5", "--delta", "1e-6", "--users", "400", "--json"]
            + ["--randomizer", "k-rr", "--categories", "3"]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert payload["certificate"]["parameters"]["randomizer"] == "k-rr"
    assert amp.shuffled_delta(0.5, payload["epsilon0"], 400, randomizer="k-rr", categories=3) <= 1e-6


def k_ary_rr_worst_delta(epsilon: float, epsilon0: float, users: int, k: int) -> float:
    """Exact δ(ε) of shuffled k-ary RR, worst case over every dataset of the others (enumerated)."""
    stay = math.exp(epsilon0) / (math.exp(epsilon0) + k - 1)
    move = 1.0 / (math.exp(epsilon0) + k - 1)
    rows = np.full((k, k), move) + (stay - move) * np.eye(k)
    best = 0.0
    for others in itertools.combinations_with_replacement(range(k), users - 1):
        laws = []
        for victim in (0, 1):
            law: dict[tuple, float] = {(0,) * k: 1.0}
            for value in (victim, *others):
                new: dict[tuple, float] = {}
                for counts, weight in law.items():
                    for y in range(k):
                        key = counts[:y] + (counts[y] + 1,) + counts[y + 1 :]
                        new[key] = new.get(key, 0.0) + weight * rows[value, y]
                law = new
            laws.append(law)
        keys = sorted(set(laws[0]) | set(laws[1]))
        first = np.array([laws[0].get(h, 0.0) for h in keys])
        second = np.array([laws[1].get(h, 0.0) for h in keys])
        best = max(best, hockey_stick(first, second, epsilon), hockey_stick(second, first, epsilon))
    return best


@pytest.mark.parametrize("k, users", [(3, 2), (3, 5), (4, 4), (6, 3)])
def test_k_ary_rr_bound_never_below_exact_over_all_datasets(k: int, users: int) -> None:
    for epsilon0 in (0.5, 2.0):
        for epsilon in np.linspace(0.0, epsilon0, 5)[:-1]:
            exact = k_ary_rr_worst_delta(epsilon, epsilon0, users, k)
            certified = amp.shuffled_delta(epsilon, epsilon0, users, randomizer="k-rr", categories=k)
            assert certified >= exact * (1 - 1e-12)  # reference: sums of a few hundred positive terms
