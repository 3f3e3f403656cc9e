"""Amplification by shuffling for a randomizer stated by its matrix (dpcert.theory.randomizer_matrix).

Independent reference: the exact δ(ε) of the shuffled histogram, worst case over every dataset of the
other users and every pair of victim inputs, enumerated histogram by histogram (tiny n, k).
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from dpcert import Certificate, CertificateMismatch, InvalidParameter
from dpcert.errors import CertificateFormatError
from dpcert.mechanisms.shuffle.amplification import amplification_certificate
from dpcert.theory import amplification as amp
from dpcert.theory.randomizer_matrix import (
    randomized_response_matrix,
    randomizer_matrix,
    unary_encoding_matrix,
)


def hockey_stick(upper: np.ndarray, lower: np.ndarray, epsilon: float) -> float:
    return float(np.maximum(upper - math.exp(epsilon) * lower, 0.0).sum())


def histogram_law(inputs: tuple[int, ...], rows: np.ndarray) -> dict[tuple[int, ...], float]:
    """Law of the histogram of one report per input (the shuffler's view), by repeated convolution."""
    outputs = rows.shape[1]
    law: dict[tuple[int, ...], float] = {(0,) * outputs: 1.0}
    for value in inputs:
        new: dict[tuple[int, ...], float] = {}
        for counts, weight in law.items():
            for y in range(outputs):
                key = counts[:y] + (counts[y] + 1,) + counts[y + 1 :]
                new[key] = new.get(key, 0.0) + weight * rows[value, y]
        law = new
    return law


def worst_case_shuffled_delta(epsilon: float, rows: np.ndarray, users: int) -> float:
    """max over victim pairs and others' datasets of D_{e^ε} between the two histogram laws."""
    inputs = range(rows.shape[0])
    best = 0.0
    for others in itertools.combinations_with_replacement(inputs, users - 1):
        for first, second in itertools.permutations(inputs, 2):
            p = histogram_law((first, *others), rows)
            q = histogram_law((second, *others), rows)
            keys = sorted(set(p) | set(q))
            upper = np.array([p.get(h, 0.0) for h in keys])
            lower = np.array([q.get(h, 0.0) for h in keys])
            best = max(best, hockey_stick(upper, lower, epsilon))
    return best


def random_ldp_matrix(rng: np.random.Generator, inputs: int, outputs: int, spread: float) -> np.ndarray:
    weights = np.exp(rng.uniform(0.0, spread, size=(inputs, outputs)))
    return weights / weights.sum(axis=1, keepdims=True)


# a randomizer that breaks the clone condition: x1, x1' share a large common part that x3 lacks
# (the 3-input matrix of tests/test_amplification_clone.py, on which Wang et al.'s own-parameter pair fails)
_E, _S, _COMMON = math.e, 0.05, 0.5
_REST = 1.0 - _S * (_E + 1.0) - _COMMON
_OTHER_REST = min(_E * _REST, 1.0 - 2.0 * _S - _COMMON / _E)
CLONE_BREAKER = np.array(
    [
        [_S * _E, _S, _COMMON, _REST],
        [_S, _S * _E, _COMMON, _REST],
        [_S, _S, 1.0 - 2.0 * _S - _OTHER_REST, _OTHER_REST],
    ]
)
# the same victims with a third input holding half as much of the common part: c strictly in between
IN_BETWEEN = np.array([CLONE_BREAKER[0], CLONE_BREAKER[1], [_S, _S, _COMMON / 2, 1.0 - 2 * _S - _COMMON / 2]])


# --------------------------------------------------------------------------- the clone probability
@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("epsilon0", [0.3, 2.0, 5.0])
def test_randomized_response_gets_the_stronger_clone(k: int, epsilon0: float) -> None:
    stated = randomizer_matrix(randomized_response_matrix(epsilon0, k))
    assert stated.epsilon0 == pytest.approx(epsilon0, rel=1e-11) and stated.epsilon0 >= epsilon0
    assert stated.clone_probability == pytest.approx(2.0 / (math.exp(epsilon0) + 1.0), rel=1e-11)
    assert stated.clone_probability <= 2.0 / (math.exp(epsilon0) + 1.0)  # rounded down
    # and the bound is the stronger clone bound of the named randomizer (Wang et al. 2024's general row)
    matrix = randomized_response_matrix(epsilon0, k)
    named = amp.shuffled_epsilon(1e-6, epsilon0, 20_000, randomizer="k-rr", categories=max(k, 3))
    stated_epsilon = amp.shuffled_epsilon(1e-6, epsilon0, 20_000, randomizer="matrix", matrix=matrix)
    assert stated_epsilon == pytest.approx(named, rel=1e-6) and stated_epsilon >= named * (1 - 1e-9)


def test_clone_probability_closed_forms() -> None:
    # FMT 2020's generic value e^-eps0 is reached by optimized unary encoding (every column has an entry
    # e^-eps0 times the two largest), and the clone breaker sits strictly between the two ends
    for epsilon0 in (1.0, 3.0):
        oue = randomizer_matrix(unary_encoding_matrix(0.5, 1.0 / (math.exp(epsilon0) + 1.0), 4))
        assert oue.epsilon0 == pytest.approx(epsilon0, rel=1e-11)
        assert oue.clone_probability == pytest.approx(math.exp(-epsilon0), rel=1e-11)
    # the clone breaker's third input holds the shared part at e^-eps0 of the victims': the generic value
    breaker = randomizer_matrix(CLONE_BREAKER)
    assert breaker.clone_probability == pytest.approx(math.exp(-breaker.epsilon0), rel=1e-11)
    middle = randomizer_matrix(IN_BETWEEN)
    column = IN_BETWEEN[:, 2]  # the shared column: 2 min / (sum of the two largest) = 0.5
    assert middle.clone_probability == pytest.approx(2 * column.min() / (column[0] + column[1]), rel=1e-11)
    assert math.exp(-middle.epsilon0) < middle.clone_probability < 2.0 / (math.exp(middle.epsilon0) + 1.0)


def test_clone_probability_property_on_random_matrices() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        rows = random_ldp_matrix(rng, int(rng.integers(2, 6)), int(rng.integers(2, 7)), 2.0)
        stated = randomizer_matrix(rows)
        c = stated.clone_probability
        ratio = np.log(rows.max(axis=0) / rows.min(axis=0)).max()
        assert stated.epsilon0 >= ratio
        assert math.exp(-stated.epsilon0) * (1 - 1e-11) <= c <= 2.0 / (math.exp(ratio) + 1.0)
        # the decomposition it stands for: R(x) - (c/2)(R(x1) + R(x1')) >= 0 for all x and pairs
        for first, second in itertools.permutations(range(rows.shape[0]), 2):
            assert np.all(rows - 0.5 * c * (rows[first] + rows[second]) >= -1e-15)


# --------------------------------------------------------------------------- never below the truth
@pytest.mark.parametrize(
    "seed, inputs, outputs, users", [(1, 3, 3, 3), (2, 3, 4, 4), (3, 2, 3, 5), (4, 4, 3, 3)]
)
def test_bound_never_below_the_exact_worst_case(seed: int, inputs: int, outputs: int, users: int) -> None:
    rows = random_ldp_matrix(np.random.default_rng(seed), inputs, outputs, 1.5)
    stated = randomizer_matrix(rows)
    for epsilon in np.linspace(0.0, stated.epsilon0, 6)[:-1]:
        exact = worst_case_shuffled_delta(epsilon, rows, users)
        bound = amp.shuffled_delta(epsilon, stated.epsilon0, users, randomizer="matrix", matrix=rows)
        assert bound >= exact * (1.0 - 1e-12)
        assert bound <= amp.numeric_delta(epsilon, stated.epsilon0, users) * (1 + 1e-6) + 1e-12


@pytest.mark.parametrize("rows", [CLONE_BREAKER, IN_BETWEEN], ids=["clone-breaker", "in-between"])
def test_bounds_hold_where_the_stronger_clone_is_not_justified(rows: np.ndarray) -> None:
    stated = randomizer_matrix(rows)
    for users in (3, 5):
        for epsilon in (0.1, 0.3, 0.6):
            exact = worst_case_shuffled_delta(epsilon, rows, users)
            bound = amp.shuffled_delta(epsilon, stated.epsilon0, users, randomizer="matrix", matrix=rows)
            assert bound >= exact * (1.0 - 1e-12)
            generic = amp.numeric_delta(epsilon, stated.epsilon0, users)
            if rows is CLONE_BREAKER:  # the generic clone probability: FMT 2020's bound (other allowance)
                assert bound == pytest.approx(generic, rel=1e-7)
            else:  # tighter than FMT 2020, looser than randomized response's clone probability
                assert bound < generic
                assert bound > amp.stronger_clone_delta(epsilon, stated.epsilon0, users)


def test_k_ary_rr_matrix_never_below_exact() -> None:
    rows = np.array(randomized_response_matrix(1.0, 4))
    for epsilon in (0.0, 0.3, 0.7):
        exact = worst_case_shuffled_delta(epsilon, rows, 4)
        assert amp.shuffled_delta(epsilon, 1.0, 4, randomizer="matrix", matrix=rows) >= exact * (1 - 1e-12)


# --------------------------------------------------------------------------- validation and certificates
def test_matrix_inputs_are_validated() -> None:
    rr = randomized_response_matrix(1.0, 3)
    cases = [
        ([[1.0]], "shape"),
        ([0.5, 0.5], "shape"),
        ([[0.5, 0.5], [0.2, 0.7]], "sums"),
        ([[1.2, -0.2], [0.5, 0.5]], "probabilities"),
        ([[float("nan"), 1.0], [0.5, 0.5]], "probabilities"),
        ([[1.0, 0.0], [0.5, 0.5]], "positive probability"),
        ([["a", "b"], ["c", "d"]], "numeric"),
    ]
    for matrix, message in cases:
        with pytest.raises(InvalidParameter, match="matrix") as raised:
            amp.shuffled_delta(0.1, 5.0, 100, randomizer="matrix", matrix=matrix)
        assert message in str(raised.value)
    with pytest.raises(InvalidParameter, match="epsilon0"):  # RR at eps0 = 1 declared as 0.5-LDP
        amp.shuffled_delta(0.1, 0.5, 100, randomizer="matrix", matrix=rr)
    with pytest.raises(InvalidParameter, match="matrix"):
        amp.shuffled_delta(0.1, 1.0, 100, randomizer="matrix")
    with pytest.raises(InvalidParameter, match="matrix"):
        amp.shuffled_delta(0.1, 1.0, 100, matrix=rr)  # a matrix with the generic randomizer
    with pytest.raises(InvalidParameter, match="method"):
        amp.shuffled_delta(0.1, 1.0, 100, method="closed-form", randomizer="matrix", matrix=rr)
    with pytest.raises(InvalidParameter, match="randomizer"):
        amp.largest_local_epsilon(0.5, 1e-6, 1000, randomizer="matrix")


def test_declared_level_above_the_matrix_is_used_and_a_hair_below_is_rounded_up() -> None:
    rr = randomized_response_matrix(1.0, 3)
    loose = amp.shuffled_delta(0.2, 1.5, 500, randomizer="matrix", matrix=rr)
    own = amp.shuffled_delta(0.2, 1.0, 500, randomizer="matrix", matrix=rr)
    assert loose > own  # the declared eps0 = 1.5 enters the victim's bias
    # at eps = the declared eps0 a hair below the matrix's own, the matrix's level decides (delta > 0)
    assert amp.shuffled_delta(1.0 - 1e-12, 1.0 - 1e-12, 1, randomizer="matrix", matrix=rr) > 0.0


def test_matrix_certificates_recompute_the_clone_probability() -> None:
    certificate = amplification_certificate(
        randomizer_matrix(IN_BETWEEN).epsilon0, 2000, delta=1e-6, randomizer="matrix", matrix=IN_BETWEEN
    )
    assert certificate.parameters["randomizer"] == "matrix"
    assert np.allclose(certificate.parameters["matrix"], IN_BETWEEN)
    assert Certificate.from_json(certificate.to_json()) == certificate
    generic = amplification_certificate(certificate.parameters["epsilon0"], 2000, delta=1e-6)
    assert certificate.epsilon < generic.epsilon
    forged = certificate.to_dict()
    forged["guarantee"]["epsilon"] = certificate.epsilon * 0.9  # a claim below what the matrix supports
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(forged)
    swapped = certificate.to_dict()  # the rows of another randomizer with a weaker clone probability
    swapped["parameters"]["matrix"] = unary_encoding_matrix(0.5, 0.2, 3)
    with pytest.raises((CertificateMismatch, InvalidParameter)):
        Certificate.from_dict(swapped)
    relabelled = certificate.to_dict()
    relabelled["parameters"]["randomizer"] = "k-rr"
    with pytest.raises((CertificateMismatch, InvalidParameter)):
        Certificate.from_dict(relabelled)
    misspelt = certificate.to_dict()
    misspelt["parameters"]["matrx"] = misspelt["parameters"].pop("matrix")
    with pytest.raises(CertificateFormatError, match="matrx"):
        Certificate.from_dict(misspelt)


def test_command_line_matrix_flag(tmp_path, capsys) -> None:
    from dpcert.cli import main

    path = tmp_path / "randomizer.json"
    path.write_text(json.dumps(IN_BETWEEN.tolist()))
    epsilon0 = randomizer_matrix(IN_BETWEEN).epsilon0
    args = [
        "account",
        "shuffle",
        "--epsilon0",
        repr(epsilon0),
        "--users",
        "2000",
        "--delta",
        "1e-6",
        "--json",
    ]
    assert main(args + ["--randomizer", "matrix", "--matrix", str(path)]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected = amp.shuffled_epsilon(1e-6, epsilon0, 2000, randomizer="matrix", matrix=IN_BETWEEN)
    assert payload["epsilon"] == pytest.approx(expected, rel=1e-12)
    assert main(args + ["--randomizer", "matrix"]) == 2
    assert "matrix" in capsys.readouterr().err
    path.write_text("[[0.5, 0.5], [0.9, 0.9]]")
    assert main(args + ["--randomizer", "matrix", "--matrix", str(path)]) == 2
    assert "matrix" in capsys.readouterr().err
    assert main(args + ["--randomizer", "matrix", "--matrix", str(tmp_path / "missing.json")]) == 2
    assert "--matrix" in capsys.readouterr().err
