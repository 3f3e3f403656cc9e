"""The classifier search's scorer for sparse-vector-shaped outputs: the estimated log likelihood ratio of
the output's atom pattern plus each coordinate's table of its released values' bins.

Independent references used below: the atom index or value code written out per entry with Python
loops; the smoothed log ratio written out from its formula with Python floats; Python's own
left-to-right float sum for the scores; and, for the estimates, the closed-form probabilities of a
mechanism whose coordinates are independent (each ⊥ with a known probability, else a Laplace value):
the pattern's probability is a product of known probabilities, a value's bin probability a difference
of Laplace CDFs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from dpcert.audits.benchmark_mechanisms import benchmark_mechanism
from dpcert.audits.classifier_search import _Draws, _pattern_scorers
from dpcert.audits.learned_event import (
    PATTERN_BIN_COUNTS,
    Binning,
    CellTable,
    LearnedEvent,
    cell_log_ratios,
    code_counts,
    independence_p_value,
    pattern_cells,
    pattern_index,
    pattern_value_scores,
    value_log_ratios_of_counts,
    values_independent_of_patterns,
)

BOTTOM = -1000.0


def _binning() -> Binning:
    return Binning(((BOTTOM,), (BOTTOM, -2000.0), (BOTTOM,)), ((0.0,), (0.0, 5.0), (0.0,)))


def _rows(rng: np.random.Generator, count: int) -> np.ndarray:
    rows = rng.laplace(1.0, 4.0, size=(count, 3))
    rows[rng.random(rows.shape) < 0.3] = BOTTOM
    rows[:, 1][rng.random(count) < 0.2] = -2000.0
    return rows


def test_pattern_rows_keep_each_atom_and_collapse_every_value_to_one_code():
    binning = _binning()
    rows = _rows(np.random.default_rng(1), 500)
    got = binning.pattern_rows(binning.codes(rows))
    expected = [
        [
            float(atoms.index(v)) if v in atoms else float(len(atoms))
            for v, atoms in zip(row, binning.atoms, strict=True)
        ]
        for row in rows.tolist()
    ]
    assert got.tolist() == expected


def test_value_tables_are_the_smoothed_log_ratios_of_the_released_values_bins_and_zero_at_atoms():
    binning = _binning()
    counts_a = [np.array([30, 50, 20]), np.array([10, 5, 40, 30, 15]), np.array([7, 0, 9])]
    counts_b = [np.array([60, 10, 30]), np.array([12, 9, 20, 20, 39]), np.array([1, 4, 4])]
    got = value_log_ratios_of_counts(binning, counts_a, counts_b)
    expected: list[float] = []
    for atoms, ca, cb in zip(binning.atoms, counts_a, counts_b, strict=True):
        values_a, values_b = ca.tolist()[len(atoms) :], cb.tolist()[len(atoms) :]
        size = len(values_a)
        total_a, total_b = sum(values_a) + 0.5 * size, sum(values_b) + 0.5 * size
        expected += [0.0] * len(atoms)
        expected += [
            math.log((x + 0.5) / total_a) - math.log((y + 0.5) / total_b)
            for x, y in zip(values_a, values_b, strict=True)
        ]
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-15)


def test_value_tables_of_coordinates_whose_values_do_not_differ_are_dropped_at_the_false_discovery_rate():
    binning = _binning()
    counts_a = [np.array([5, 900, 100]), np.array([1, 1, 300, 300, 300]), np.array([2, 500, 500])]
    counts_b = [np.array([5, 100, 900]), np.array([1, 1, 300, 300, 300]), np.array([2, 500, 500])]
    kept = value_log_ratios_of_counts(binning, counts_a, counts_b, false_discovery=0.05)
    every = value_log_ratios_of_counts(binning, counts_a, counts_b)
    assert np.array_equal(kept[:3], every[:3]) and np.abs(kept[:3]).max() > 2.0  # the differing one
    assert not kept[3:].any()  # the two coordinates with identical values: no table


def test_a_pattern_score_is_its_cells_score_plus_the_left_to_right_sum_of_the_value_tables_to_the_bit():
    binning = _binning()
    rng = np.random.default_rng(2)
    rows = _rows(rng, 2000)
    codes = binning.codes(rows)
    patterns = binning.pattern_rows(codes)
    cells = CellTable.of(patterns[patterns[:, 0] == 0.0])  # patterns with a value first: unseen
    assert cells is not None
    size = len(cells.cells)
    weights = rng.standard_normal(size + 3 + 5 + 3)
    got = pattern_value_scores(binning, cells, weights, -7.5, codes)
    score_of = {tuple(c): float(weights[k]) for k, c in enumerate(cells.cells)}
    offsets = [size, size + 3, size + 8]
    unseen = 0
    for i, (pattern, code) in enumerate(zip(patterns.tolist(), codes.T.tolist(), strict=True)):
        total = 0.0
        for j, c in enumerate(code):
            total = total + float(weights[offsets[j] + c])
        unseen += tuple(pattern) not in score_of
        assert got[i] == score_of.get(tuple(pattern), -7.5) + total
    assert 0 < unseen < len(rows)


def test_a_pattern_event_round_trips_with_the_same_scores():
    binning = _binning()
    rows = _rows(np.random.default_rng(3), 1000)
    cells = CellTable.of(binning.pattern_rows(binning.codes(rows)))
    assert cells is not None
    weights = tuple(float(w) for w in np.random.default_rng(4).standard_normal(len(cells.cells) + 11))
    event = LearnedEvent(None, weights, "b", 0.25, 0.5, cells, -3.0, patterns=binning)
    again = LearnedEvent.from_dict(json.loads(json.dumps(event.to_dict())))
    assert again == event
    assert np.array_equal(again.scores(rows), event.scores(rows))
    assert np.array_equal(
        event.scores(rows),
        -pattern_value_scores(binning, cells, np.array(weights), -3.0, binning.codes(rows)),
    )
    assert "atom patterns" in event.describe()


def test_pattern_cells_are_offered_only_for_several_coordinates_mixing_atoms_and_values():
    rng = np.random.default_rng(5)
    mixed = _rows(rng, 4000)
    found = pattern_cells(mixed, mixed)
    assert found is not None
    table, binnings, codes = found
    assert [len(b.edges[0]) + 1 for b in binnings] == list(PATTERN_BIN_COUNTS)
    assert np.array_equal(codes, binnings[0].codes(mixed))
    assert len(table.cells) == 2 * 3 * 2  # ⊥ or a value; ⊥, aborted or a value; ⊥ or a value
    values_only = rng.laplace(size=(4000, 3))
    atoms_only = rng.integers(0, 2, size=(4000, 3)).astype(float)
    assert pattern_cells(values_only, values_only) is None
    assert pattern_cells(atoms_only, atoms_only) is None
    assert pattern_cells(mixed[:, :1], mixed[:, :1]) is None


def _independent(p_bottom: tuple[float, ...], centres: tuple[float, ...], count: int, rng) -> np.ndarray:
    rows = centres + rng.laplace(0.0, 1.0, size=(count, len(centres)))
    rows[rng.random(rows.shape) < np.asarray(p_bottom)] = BOTTOM
    return rows


def test_estimated_patterns_and_value_tables_approach_their_closed_form():
    """Seeded; each comparison allows 4.5 standard errors (two-sided, ~7·10⁻⁶ per entry, ~10⁻⁴ for the
    14 entries compared).  Power: against the swapped inputs' values every informative entry is far
    outside that band."""
    p_a, p_b = (0.2, 0.5, 0.7), (0.4, 0.5, 0.3)
    centre_a, centre_b = (0.0, 0.5, -0.5), (1.0, 0.5, 0.5)
    count = 200_000
    rng = np.random.default_rng(6)
    on_a, on_b = _independent(p_a, centre_a, count, rng), _independent(p_b, centre_b, count, rng)
    binning = Binning(((BOTTOM,),) * 3, ((0.0,),) * 3)  # two value bins per coordinate, cut at 0
    codes_a, codes_b = binning.codes(on_a), binning.codes(on_b)
    rows_a, rows_b = binning.pattern_rows(codes_a), binning.pattern_rows(codes_b)
    cells = CellTable.of(np.concatenate([rows_a, rows_b]))
    assert cells is not None and len(cells.cells) == 8
    scores, _ = cell_log_ratios(cells, rows_a, rows_b)
    checked = swapped_far = 0
    for cell, estimate in zip(cells.cells, scores, strict=True):
        bottoms = [c == 0.0 for c in cell]
        prob_a = math.prod(p if b else 1 - p for p, b in zip(p_a, bottoms, strict=True))
        prob_b = math.prod(p if b else 1 - p for p, b in zip(p_b, bottoms, strict=True))
        truth = math.log(prob_a / prob_b)
        error = math.sqrt((1 - prob_a) / (count * prob_a) + (1 - prob_b) / (count * prob_b))
        assert abs(estimate - truth) <= 4.5 * error
        checked += 1
        if abs(truth) > 0.2:
            swapped_far += abs(estimate + truth) > 10 * error
    tables = value_log_ratios_of_counts(binning, code_counts(binning, codes_a), code_counts(binning, codes_b))
    for j in range(3):
        released_a, released_b = count * (1 - p_a[j]), count * (1 - p_b[j])
        below_a, below_b = stats.laplace.cdf(0.0, centre_a[j]), stats.laplace.cdf(0.0, centre_b[j])
        for k, (q_a, q_b) in enumerate(((below_a, below_b), (1 - below_a, 1 - below_b))):
            truth = math.log(q_a / q_b)
            error = math.sqrt((1 - q_a) / (released_a * q_a) + (1 - q_b) / (released_b * q_b))
            assert abs(tables[3 * j + 1 + k] - truth) <= 4.5 * error
            checked += 1
            if abs(truth) > 0.2:
                swapped_far += abs(tables[3 * j + 1 + k] + truth) > 10 * error
        assert tables[3 * j] == 0.0  # the atom's entry
    assert checked == 14 and swapped_far >= 6


@pytest.mark.parametrize("name", ["DPSniper-NumericalSVT", "iSVT4"])
def test_the_held_out_scores_a_pattern_scorer_is_judged_on_are_its_events_scores(name):
    entry = benchmark_mechanism(name)
    a, b = entry.pairs()[4]
    rng = np.random.default_rng(7)
    rows_a = np.asarray(entry.mechanism(a, rng, size=30_000))
    rows_b = np.asarray(entry.mechanism(b, rng, size=30_000))
    half = 15_000
    first = np.concatenate([rows_a[:half], rows_b[:half]])
    scorers = _pattern_scorers(_Draws(rows_a, rows_b, half, half, first, first))
    assert len(scorers) == len(PATTERN_BIN_COUNTS)
    for scorer in scorers:
        assert scorer.held is not None and scorer.event.patterns is not None
        assert np.array_equal(scorer.held[0], scorer.event.scores(rows_a[half:]))
        assert np.array_equal(scorer.held[1], scorer.event.scores(rows_b[half:]))


def test_the_independence_p_value_is_scipys_g_test_over_the_non_empty_rows_and_columns():
    rng = np.random.default_rng(8)
    for _ in range(20):
        joint = rng.integers(0, 40, size=(int(rng.integers(2, 7)), int(rng.integers(2, 5))))
        joint[0] = 0  # an empty row is left out, as by scipy on the table without it
        kept = joint[joint.sum(axis=1) > 0][:, joint.sum(axis=0) > 0]
        if min(kept.shape) < 2:
            continue
        _, expected, _, _ = stats.chi2_contingency(kept, correction=False, lambda_="log-likelihood")
        assert independence_p_value(joint) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    assert independence_p_value(np.array([[3, 4, 5]])) == 1.0


@pytest.mark.parametrize(("name", "independent"), [("DPSniper-NumericalSVT", True), ("LyuSVT3", False)])
def test_released_values_are_found_to_depend_on_the_pattern_only_where_they_do(name, independent):
    """Seeded.  NumericalSVT releases fresh noise (independent of the pattern): the test is at level
    1 % in all, so it rejects at most 1 % of the time.  Lyu et al.'s Algorithm 3 with c = 2 releases the
    compared noisy queries, which depend on the threshold noise: found at 5·10⁴ draws per input."""
    entry = benchmark_mechanism(name)
    a, b = entry.pairs()[4]
    rng = np.random.default_rng(9)
    on_a = np.asarray(entry.mechanism(a, rng, size=50_000))
    on_b = np.asarray(entry.mechanism(b, rng, size=50_000))
    pooled = np.concatenate([on_a, on_b])
    found = pattern_cells(pooled, pooled)
    assert found is not None
    cells, binnings, _ = found
    for binning in binnings:
        codes = (binning.codes(on_a), binning.codes(on_b))
        indices = tuple(pattern_index(binning, cells, c) for c in codes)
        assert values_independent_of_patterns(binning, cells, codes, indices) is independent
