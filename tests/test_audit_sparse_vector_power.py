"""Cells of row summaries (atom counts and the largest released value) in the classifier search, on
sparse vectors that release noisy query values (Lyu, Su & Li 2017, Alg. 3; CheckDP's
BadGapSparseVector, Wang, Ding, Kifer & Zhang 2020).

Closed form used below: Alg. 3 with threshold T + Lap(r) and query noise Lap(s) on the inputs a = 1
(all ten answers) and b = 0 gives an output whose answered queries (⊥ or a released value x_i) number
m and whose released values are all at most 0 the likelihood ratio P_b / P_a = e^(m/s) exactly: the
released values cap the noisy threshold, ρ ≤ min x_i − T ≤ −T, so every ⊥ factor F_s(T + ρ − q) of the
Laplace CDF lies in its lower tail, where shifting q by 1 multiplies it by e^(1/s), and every released
density f_s(x_i − q) with x_i ≤ 0 ≤ q is multiplied by e^(1/s) too.  With s = 2 and m = 10 the
mechanism's ε on this pair is at least 5.
"""

from __future__ import annotations

import numpy as np

from dpcert.audits import CandidatePairs, ClassifierSearch, audit
from dpcert.audits.benchmark_mechanisms import SparseVector
from dpcert.audits.learned_event import CellTable, LearnedEvent, RowSummary, summary_cells

A = np.ones(10)
B = np.zeros(10)


def test_row_summary_counts_atoms_and_bins_the_largest_released_value():
    rng = np.random.default_rng(1)
    pooled = np.where(rng.random((400, 5)) < 0.6, -1000.0, rng.normal(size=(400, 5)))
    pooled[rng.random((400, 5)) < 0.2] = -2000.0
    pooled[:20] = -1000.0  # rows of atoms only
    summary = RowSummary.fit(pooled, 2)
    assert summary.atoms == (-2000.0, -1000.0)
    largest = [max((v for v in row if v not in (-1000.0, -2000.0)), default=None) for row in pooled]
    values = sorted(v for v in largest if v is not None)
    assert summary.edges == (values[len(values) // 2],)  # two equal-count bins: cut at the median
    rows = np.array(
        [
            [-1000.0, 3.5, -1000.0, -7.0, -2000.0],
            [-1000.0, -1000.0, -1000.0, -1000.0, -1000.0],
            [-12.0, -2000.0, -2000.0, -2000.0, -2000.0],
        ]
    )
    # per row: how many aborted, how many ⊥, and 0 (no value) or 1 + the bin of the largest value
    np.testing.assert_array_equal(summary.transform(rows), [[1, 2, 2], [0, 5, 0], [4, 0, 1]])
    assert RowSummary.from_dict(summary.to_dict()) == summary


def test_summary_cells_are_offered_only_for_several_coordinates_with_atoms():
    rng = np.random.default_rng(3)
    outputs = SparseVector(10, 1.0, 2.0, 4.0, 2, numeric=True)(A, rng, 4000)
    found = summary_cells(outputs[:1000], outputs)
    assert found, "a numeric sparse vector has atoms and released values"
    for summary, table in found:
        assert summary.atoms == (-2000.0, -1000.0)
        assert len(table.cells) <= 256
    assert summary_cells(outputs[:1000, :1], outputs[:, :1]) == []  # one coordinate
    assert summary_cells(rng.laplace(size=(1000, 3)), rng.laplace(size=(1000, 3))) == []  # no atoms


def test_summaries_share_the_parts_of_their_atoms_and_each_keeps_its_own_image():
    """The parts ``summary_cells`` hands back (atom counts and the largest other value, once per set
    of atoms) give each found summary the image a row-by-row reference computes: the count of each
    atom, then 0 for a row of atoms only, else 1 + the number of cut points at or below its largest
    released value; the cells' scores read off that image are the event's own scores."""
    rng = np.random.default_rng(6)
    outputs = SparseVector(10, 1.0, 2.0, 4.0, 2, numeric=True)(A, rng, 3000)
    parts: dict = {}
    found = summary_cells(outputs[:1000], outputs, parts)
    assert len(found) >= 2 and set(parts) == {summary.atoms for summary, _ in found}
    for summary, table in found:
        expected = []
        for row in outputs.tolist():
            others = [v for v in row if v not in summary.atoms]
            position = 0 if not others else 1 + sum(edge <= max(others) for edge in summary.edges)
            expected.append([*(row.count(atom) for atom in summary.atoms), position])
        image = summary.image(parts[summary.atoms])
        assert image.tolist() == expected
        weights = tuple(float(w) for w in rng.normal(size=len(table.cells)))
        event = LearnedEvent(None, weights, "b", 0.0, 0.0, table, -1.0, summary=summary)
        np.testing.assert_array_equal(event.cell_scores(image), event.scores(outputs))


def test_a_learned_event_on_summary_cells_round_trips_with_the_same_scores():
    rng = np.random.default_rng(5)
    outputs = SparseVector(10, 1.0, 2.0, 4.0, 2, numeric=True)(A, rng, 2000)
    summary, table = summary_cells(outputs, outputs)[0]
    weights = tuple(float(w) for w in rng.normal(size=len(table.cells)))
    event = LearnedEvent(None, weights, "b", 0.25, 0.5, table, -1.0, summary=summary)
    again = LearnedEvent.from_dict(event.to_dict())
    assert again == event
    np.testing.assert_array_equal(again.scores(outputs), event.scores(outputs))
    assert isinstance(again.cells, CellTable) and "row summaries" in again.describe()


def test_alg3_releasing_noisy_values_is_caught():
    # Alg. 3 at ε = 1 with c = 1 and T = 0: threshold noise Lap(2/ε) = Lap(2), query noise
    # Lap(c/(ε/2)) = Lap(2); the closed form of the module docstring gives ε ≥ 10/2 = 5 on (a, b), so
    # the claim of 1 is false
    mechanism = SparseVector(10, 0.0, 2.0, 2.0, 1, numeric=True)
    search = ClassifierSearch(CandidatePairs([(A, B)], relation="linf"), fit_draws=2000)
    report = audit(mechanism, epsilon=1.0, search=search, samples=60_000, seed=0)
    assert report.violated, report.epsilon_lower_bound
    assert report.rejection_set.event is not None and report.rejection_set.event.cells is not None


class _SparseVectorWithFreshReleases:
    """Lyu et al.'s Alg. 1 (ε1-DP: threshold Lap(2/ε1), query noise Lap(4c/ε1), at most c answers ⊤)
    followed by the release of every ⊤ query with fresh Lap(c/ε2) noise (at most c releases of
    sensitivity 1: ε2-DP); by sequential composition (ε1 + ε2)-DP."""

    def __init__(self, eps1: float, eps2: float, c: int) -> None:
        self.answers = SparseVector(10, 1.0, 2.0 / eps1, 4.0 * c / eps1, c)
        self.release_scale = c / eps2

    def __call__(self, value, rng, size=1):
        codes = self.answers(value, rng, size)
        released = np.asarray(value, float) + rng.laplace(scale=self.release_scale, size=codes.shape)
        out = np.where(codes == 1.0, released, -1000.0)
        return np.where(codes == -1.0, -2000.0, out)


def test_no_false_alarm_on_a_correct_sparse_vector_with_released_values():
    # a correct (1.0)-DP mechanism with the same kind of outputs; at confidence 0.95 the audit raises
    # a false alarm with probability at most 0.05
    mechanism = _SparseVectorWithFreshReleases(0.5, 0.5, 2)
    search = ClassifierSearch(CandidatePairs([(A, B)], relation="linf"), fit_draws=2000)
    report = audit(mechanism, epsilon=1.0, search=search, samples=60_000, seed=0)
    assert not report.violated, report.epsilon_lower_bound
