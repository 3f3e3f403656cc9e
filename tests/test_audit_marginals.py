"""The classifier search's product-of-marginals score (naive Bayes on binned coordinates).

Independent references used below: the smoothed log ratio written out from its formula with Python
floats; SciPy's G-test (``chi2_contingency(lambda_="log-likelihood")``) for the p-values; the
Benjamini–Hochberg procedure from its definition; Python's own left-to-right float sum for the scores;
a binary search per value (``bisect``) for the codes; each binning's own codes for the codes read off
the finest through the code maps; counts by comprehension for the threshold rule's tail counts; the
log loss written out with ``math``; and, for power, the best event on the count of coordinates below
1/2 computed from the binomial distribution (closed form).
"""

from __future__ import annotations

import bisect
import json
import math
import platform
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_subprocess import NO_AVX512, environment, run_json
from scipy import stats

from dpcert.audits import CandidatePairs, ClassifierSearch, audit, learned_event
from dpcert.audits.classifier_search import (
    COMPARISON_CAUTION,
    choose_event,
    held_out_log_loss,
    learn_event,
    tail_counts,
)
from dpcert.audits.epsilon_lower_bound import EvaluationCounts, bound_from_counts
from dpcert.audits.learned_event import (
    BIN_COUNTS,
    Binning,
    LearnedEvent,
    coarse_counts,
    code_counts,
    fine_tables,
    g_test_p_value,
    marginal_binnings,
    marginal_log_ratios,
    marginal_log_ratios_of_counts,
    marginal_scores,
    marginal_sizes,
    shared_log_ratios,
    shared_log_ratios_of_counts,
)
from dpcert.audits.selection import projected_bound
from dpcert.errors import InvalidParameter


def _outputs(rng: np.random.Generator, rows: int, columns: int) -> np.ndarray:
    values = rng.laplace(0.0, 3.0, size=(rows, columns))
    values[rng.random(values.shape) < 0.2] = -1000.0  # an atom in every coordinate
    return values


def _smoothed(in_a: int, draws_a: int, in_b: int, draws_b: int, codes: int) -> float:
    """The smoothed log ratio written out: half a draw added to each of ``codes`` outcomes."""
    return math.log((in_a + 0.5) / (draws_a + 0.5 * codes)) - math.log((in_b + 0.5) / (draws_b + 0.5 * codes))


def test_marginal_tables_are_the_smoothed_log_ratios_of_each_coordinate():
    rng = np.random.default_rng(4)
    on_a, on_b = _outputs(rng, 3000, 3), _outputs(rng, 2500, 3) + 0.5
    binning = Binning.fit(np.concatenate([on_a, on_b]), 4)
    codes_a, codes_b = binning.codes(on_a), binning.codes(on_b)
    tables = marginal_log_ratios(binning, codes_a, codes_b)
    expected = []
    for index, size in enumerate(marginal_sizes(binning)):
        for code in range(size):
            in_a = sum(1 for v in codes_a[index] if v == code)
            in_b = sum(1 for v in codes_b[index] if v == code)
            expected.append(_smoothed(in_a, 3000, in_b, 2500, size))
    np.testing.assert_allclose(tables, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("block_rows", [64, learned_event.BLOCK_ROWS])
def test_marginal_scores_are_the_left_to_right_sum_of_the_coordinates_terms_to_the_bit(
    block_rows, monkeypatch
):
    monkeypatch.setattr(learned_event, "BLOCK_ROWS", block_rows)  # 64: seven blocks, the last partial
    rng = np.random.default_rng(5)
    outputs = _outputs(rng, 400, 6)
    binning = Binning.fit(outputs, 8)
    weights = rng.normal(size=sum(marginal_sizes(binning)))
    codes = binning.codes(outputs)
    offsets = np.concatenate([[0], np.cumsum(marginal_sizes(binning))[:-1]])
    expected = []
    for row in codes.T.tolist():
        total = 0.0
        for index, code in enumerate(row):
            total += float(weights[offsets[index] + code])
        expected.append(total)
    assert marginal_scores(binning, weights, codes).tolist() == expected


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), columns=st.integers(1, 4), bins=st.sampled_from(BIN_COUNTS))
def test_codes_are_the_atom_or_the_count_of_cut_points_at_or_below_the_value(seed, columns, bins):
    rng = np.random.default_rng(seed)
    outputs = np.round(rng.laplace(0.0, 3.0, size=(600, columns)) * 4.0) / 4.0  # atoms and ties with cuts
    binning = Binning.fit(outputs[:300], bins)
    with pytest.MonkeyPatch.context() as patch:  # blocks of 64 rows: ten blocks, the last partial
        patch.setattr(learned_event, "BLOCK_ROWS", 64)
        in_blocks = binning.codes(outputs)
    codes = binning.codes(outputs)
    np.testing.assert_array_equal(in_blocks, codes)
    assert codes.shape == (columns, 600)
    for index in range(columns):
        atoms, edges = binning.atoms[index], list(binning.edges[index])
        for value, code in zip(outputs[:, index].tolist(), codes[index].tolist(), strict=True):
            expected = (
                atoms.index(value) if value in atoms else len(atoms) + bisect.bisect_right(edges, value)
            )
            assert code == expected
    np.testing.assert_array_equal(binning.transform(outputs), codes.T.astype(float))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), columns=st.integers(2, 5), rounding=st.sampled_from([None, 1.0, 0.25]))
def test_coarser_codes_read_off_the_finest_equal_their_own_codes(seed, columns, rounding):
    rng = np.random.default_rng(seed)
    outputs = rng.laplace(0.0, 3.0, size=(2000, columns))
    if rounding is not None:  # repeated values: cut points that coincide
        outputs = np.round(outputs / rounding) * rounding
    binnings = [Binning.fit(outputs[:700], bins) for bins in BIN_COUNTS]  # rounding: atoms and values
    finest = binnings[0].codes(outputs)
    for binning in binnings:
        maps = binning.code_maps(binnings[0])
        assert maps is not None
        coarse = np.stack([lookup[codes] for lookup, codes in zip(maps, finest, strict=True)])
        np.testing.assert_array_equal(coarse, binning.codes(outputs))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), columns=st.integers(2, 5), rounding=st.sampled_from([None, 1.0, 0.25]))
def test_coarser_tables_and_scores_from_the_finest_codes_are_those_of_their_own_codes(
    seed, columns, rounding
):
    """Counts, tables (per coordinate with selection, and shared) and scores of every coarser binning,
    derived from the finest binning's codes and counts, equal those from its own codes to the bit."""
    rng = np.random.default_rng(seed)
    outputs = rng.laplace(0.0, 3.0, size=(3000, columns)) + np.repeat([[0.0], [0.7]], 1500, axis=0)
    if rounding is not None:
        outputs = np.round(outputs / rounding) * rounding
    on_a, on_b = outputs[:1500], outputs[1500:]
    for shared in (False, True):
        make = Binning.shared if shared else Binning.fit
        binnings = [make(outputs[::3], bins) for bins in BIN_COUNTS]
        fine_a, fine_b = binnings[0].codes(on_a), binnings[0].codes(on_b)
        for binning in binnings:
            maps = binning.code_maps(binnings[0])
            assert maps is not None
            own_a, own_b = binning.codes(on_a), binning.codes(on_b)
            counts_a = coarse_counts(maps, code_counts(binnings[0], fine_a), binning)
            counts_b = coarse_counts(maps, code_counts(binnings[0], fine_b), binning)
            for derived, own in zip(counts_a, code_counts(binning, own_a), strict=True):
                assert derived.tolist() == own.tolist()
            if shared:
                tables = shared_log_ratios_of_counts(binning, counts_a, counts_b, 1500, 1500)
                expected = shared_log_ratios(binning, own_a, own_b)
            else:
                tables = marginal_log_ratios_of_counts(
                    binning, counts_a, counts_b, 1500, 1500, false_discovery=0.05
                )
                expected = marginal_log_ratios(binning, own_a, own_b, false_discovery=0.05)
            assert tables.tolist() == expected.tolist()
            scores = marginal_scores(binnings[0], fine_tables(maps, tables, binning), fine_b)
            assert scores.tolist() == marginal_scores(binning, tables, own_b).tolist()


def test_g_test_p_values_match_scipys_likelihood_ratio_test():
    rng = np.random.default_rng(6)
    for _ in range(20):
        size = int(rng.integers(2, 9))
        count_a = rng.integers(0, 400, size)
        count_b = rng.integers(0, 400, size)
        count_a[0] += 1  # at least two codes occur
        count_b[1 % size] += 1
        used = (count_a + count_b) > 0
        _, p, _, _ = stats.chi2_contingency(
            np.stack([count_a[used], count_b[used]]), correction=False, lambda_="log-likelihood"
        )
        assert g_test_p_value(count_a, count_b) == pytest.approx(p, rel=1e-9, abs=1e-300)


def _benjamini_hochberg(p_values: list[float], rate: float) -> set[int]:
    m = len(p_values)
    largest = max((k for k in range(1, m + 1) if sorted(p_values)[k - 1] <= rate * k / m), default=0)
    cut = sorted(p_values)[largest - 1] if largest else -1.0
    return {i for i, p in enumerate(p_values) if p <= cut}


@pytest.mark.parametrize("informative", [1, 3, 12])
def test_only_coordinates_found_by_benjamini_hochberg_keep_their_tables(informative):
    rng = np.random.default_rng(informative)
    width = 16
    on_a = rng.laplace(0.0, 10.0, size=(40_000, width))
    on_b = rng.laplace(0.0, 10.0, size=(40_000, width))
    on_b[:, :informative] += 0.4  # weak shifts in the first coordinates, none in the others
    binning = Binning.fit(np.concatenate([on_a[:5000], on_b[:5000]]), 4)
    codes_a, codes_b = binning.codes(on_a), binning.codes(on_b)
    tables = marginal_log_ratios(binning, codes_a, codes_b, false_discovery=0.05).reshape(width, -1)
    sizes = marginal_sizes(binning)
    p_values = [
        g_test_p_value(
            np.bincount(codes_a[j], minlength=sizes[j]),
            np.bincount(codes_b[j], minlength=sizes[j]),
        )
        for j in range(width)
    ]
    kept = {j for j in range(width) if np.any(tables[j] != 0)}
    assert kept == _benjamini_hochberg(p_values, 0.05)
    assert set(range(informative)) <= kept  # the shifts are found ...
    assert len(kept - set(range(informative))) <= 1  # ... and at most one null coordinate with them
    every = marginal_log_ratios(binning, codes_a, codes_b).reshape(width, -1)
    np.testing.assert_array_equal(tables[sorted(kept)], every[sorted(kept)])


def test_no_coordinate_found_keeps_every_table():
    rng = np.random.default_rng(8)
    on_a, on_b = rng.laplace(size=(3000, 4)), rng.laplace(size=(3000, 4))
    binning = Binning.fit(np.concatenate([on_a, on_b]), 2)
    codes_a, codes_b = binning.codes(on_a), binning.codes(on_b)
    selected = marginal_log_ratios(binning, codes_a, codes_b, false_discovery=1e-12)
    np.testing.assert_array_equal(selected, marginal_log_ratios(binning, codes_a, codes_b))


def test_a_marginal_event_round_trips_with_the_same_scores():
    rng = np.random.default_rng(9)
    outputs = _outputs(rng, 1000, 3)
    binning = Binning.fit(outputs, 4)
    weights = tuple(float(w) for w in rng.normal(size=sum(marginal_sizes(binning))))
    event = LearnedEvent(None, weights, "b", 0.1, 0.25, marginals=binning)
    again = LearnedEvent.from_dict(event.to_dict())
    assert again == event
    np.testing.assert_array_equal(again.scores(outputs), event.scores(outputs))
    assert "marginal" in event.describe()


def test_a_noisy_histogram_keeps_its_one_informative_bin_and_rarely_another():
    """A noisy histogram (Laplace(10) per bin) on neighbours that differ in the last of five bins, in
    20 seeded runs: the last bin is kept every time, and a null bin rarely joins it.  With one p-value
    near 0, Benjamini–Hochberg at 0.05 admits a null bin when one of the four null p-values is at most
    2·0.05/5 (or two at most 3·0.05/5, ...): about 1 − 0.98⁴ ≈ 8 % of runs; at most 5 of 20 holds
    with probability 0.985 (binomial tail), the test's stated false-positive rate."""
    with_null = 0
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        on_a = rng.laplace(0.0, 10.0, size=(100_000, 5))
        on_b = rng.laplace(0.0, 10.0, size=(100_000, 5))
        on_b[:, 4] += 1.0
        binning = marginal_binnings(np.concatenate([on_a[:20_000], on_b[:20_000]]))[0]
        tables = marginal_log_ratios(binning, binning.codes(on_a), binning.codes(on_b), false_discovery=0.05)
        kept = [bool(np.any(t != 0)) for t in np.split(tables, np.cumsum(marginal_sizes(binning))[:-1])]
        assert kept[4]
        with_null += any(kept[:4])
    assert with_null <= 5
    assert stats.binom.sf(5, 20, 1 - 0.98**4) < 0.02  # the rate stated above


# ----------------------------------------------------------------------------- power, closed form
SCALE, WIDTH = 8.0, 8  # eight parallel Laplace(8) releases of a count: ε = 8 · 1/8 = 1 exactly


def _parallel_laplace(x, rng, size=None):
    return float(np.asarray(x).ravel()[0]) + rng.laplace(0.0, SCALE, size=(size, WIDTH))


def _best_sign_count_bound(draws: int, confidence: float, scale: float = SCALE, width: int = WIDTH) -> float:
    """The best bound from the counts (at their expectations) of an event {K ≥ k} or {K ≤ k}, K the
    number of ``width`` coordinates below 1/2: binomial with P[Lap(scale) < 1/2] on input 0,
    P[1 + Lap(scale) < 1/2] on input 1."""
    p0, p1 = stats.laplace.cdf(0.5, 0.0, scale), stats.laplace.cdf(0.5, 1.0, scale)
    best = 0.0
    for k in range(width + 1):
        for q0, q1 in (
            (stats.binom.sf(k - 1, width, p0), stats.binom.sf(k - 1, width, p1)),
            (stats.binom.cdf(k, width, p0), stats.binom.cdf(k, width, p1)),
        ):
            for num, den in ((q0, q1), (q1, q0)):
                counts = EvaluationCounts("a", round(draws * num), draws, round(draws * den), draws)
                best = max(best, bound_from_counts(counts, 0.0, confidence).epsilon_lower_bound)
    return best


def test_marginal_score_reaches_most_of_the_best_count_event_on_parallel_laplace_releases():
    """Power: 3/3 seeds reach 80 % of the closed-form best bound of the sign-count events (0.736 at
    these draws); the logistic regression alone (``binned=False``) reaches 0.40–0.49 on the same
    seeds, so the check can fail.  Validity: no bound above the true ε = 1."""
    pairs = CandidatePairs([(np.array([0.0]), np.array([1.0]))], relation="one-differ")
    for seed in range(3):
        report = audit(
            _parallel_laplace, epsilon=1.0, search=ClassifierSearch(pairs), samples=200_000, seed=seed
        )
        best = _best_sign_count_bound(report.counts.draws_numerator, 0.95)
        assert 0.8 * best <= report.epsilon_lower_bound <= 1.0
        assert report.to_dict()["rejection_set"]["event"]["marginals"] is not None
        alone = audit(
            _parallel_laplace,
            epsilon=1.0,
            search=ClassifierSearch(pairs, binned=False),
            samples=200_000,
            seed=seed,
        )
        assert alone.epsilon_lower_bound < 0.8 * best  # without the marginal score the check fails


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.tuples(st.integers(1, 60), st.integers(1, 60)))
def test_tail_counts_are_the_counts_above_and_at_every_value(seed, sizes):
    rng = np.random.default_rng(seed)
    num = np.round(rng.normal(size=sizes[0]) * 3.0) / 2.0  # repeated values within and across the two
    den = np.round(rng.normal(size=sizes[1]) * 3.0) / 2.0
    values, num_gt, num_eq, den_gt, den_eq = tail_counts(num, den)
    expected = sorted(set(num.tolist()) | set(den.tolist()))
    assert values.tolist() == expected
    assert num_gt.tolist() == [sum(1 for x in num.tolist() if x > v) for v in expected]
    assert num_eq.tolist() == [sum(1 for x in num.tolist() if x == v) for v in expected]
    assert den_gt.tolist() == [sum(1 for x in den.tolist() if x > v) for v in expected]
    assert den_eq.tolist() == [sum(1 for x in den.tolist() if x == v) for v in expected]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scorers_are_compared_by_the_chosen_events_forecast_at_four_deviations(seed):
    """``guarded`` is the projected bound of the chosen event's own held-out counts (counted here
    directly) at 4 standard deviations of caution, below the 2-deviation forecast that chose it."""
    rng = np.random.default_rng(seed)
    scores_a = np.round(rng.normal(0.1, 1.0, size=30_000), 2)  # atoms: ties at the threshold
    scores_b = np.round(rng.normal(0.0, 1.0, size=25_000), 2)
    choice = choose_event(scores_a, scores_b, 200_000, 0.0, 0.95)
    num, den = (scores_a, scores_b) if choice.numerator == "a" else (-scores_b, -scores_a)
    in_num = np.sum(num > choice.threshold) + choice.tie * np.sum(num == choice.threshold)
    in_den = np.sum(den > choice.threshold) + choice.tie * np.sum(den == choice.threshold)
    expected = projected_bound(
        np.array([in_num]), num.shape[0], np.array([in_den]), den.shape[0], 200_000, 200_000, 0.0, 0.05,
        caution=COMPARISON_CAUTION,
    )[0]  # fmt: skip
    assert COMPARISON_CAUTION == 4.0
    assert choice.guarded == pytest.approx(float(expected), rel=1e-12)
    assert choice.guarded < choice.forecast
    again = projected_bound(
        np.array([in_num]), num.shape[0], np.array([in_den]), den.shape[0], 200_000, 200_000, 0.0, 0.05
    )[0]
    assert choice.forecast == pytest.approx(float(again), rel=1e-12)  # the threshold rule's own caution


def test_held_out_log_loss_is_the_mean_log_loss_of_each_input_written_out():
    rng = np.random.default_rng(12)
    scores_a, scores_b = rng.normal(0.3, 2.0, size=500), rng.normal(-0.2, 2.0, size=700)
    scores_a[:3] = [40.0, -40.0, 0.0]  # far tails: ln(1 + e^40) = 40 + ln(1 + e^-40)

    def softplus(x: float) -> float:
        return max(x, 0.0) + math.log1p(math.exp(-abs(x)))

    expected = (
        sum(softplus(-v) for v in scores_a.tolist()) / 500 + sum(softplus(v) for v in scores_b.tolist()) / 700
    )
    assert held_out_log_loss(scores_a, scores_b) == pytest.approx(expected, rel=1e-13)


def test_a_shared_binning_is_the_binning_of_all_values_together_for_every_coordinate():
    rng = np.random.default_rng(13)
    outputs = _outputs(rng, 2000, 4)
    shared = Binning.shared(outputs, 8)
    alone = Binning.fit(outputs.reshape(-1, 1), 8)
    assert shared.atoms == alone.atoms * 4 and shared.edges == alone.edges * 4
    assert shared.atoms[0] == (-1000.0,)  # the atom of every coordinate, found among all values


def test_a_shared_table_is_the_smoothed_log_ratio_of_all_coordinates_codes_together():
    rng = np.random.default_rng(14)
    on_a, on_b = _outputs(rng, 3000, 3), _outputs(rng, 2500, 3) + 0.5
    binning = Binning.shared(np.concatenate([on_a, on_b]), 4)
    codes_a, codes_b = binning.codes(on_a), binning.codes(on_b)
    table = shared_log_ratios(binning, codes_a, codes_b)
    size = marginal_sizes(binning)[0]
    one = []
    for code in range(size):
        in_a = sum(1 for v in codes_a.ravel().tolist() if v == code)
        in_b = sum(1 for v in codes_b.ravel().tolist() if v == code)
        one.append(_smoothed(in_a, 9000, in_b, 7500, size))
    np.testing.assert_allclose(table, one * 3, rtol=1e-13, atol=1e-15)
    with pytest.raises(InvalidParameter, match="binning"):
        shared_log_ratios(Binning.fit(np.concatenate([on_a, on_b]), 4), codes_a, codes_b)


COPIES_SCALE, COPIES = 50.0, 40  # forty parallel Laplace(50) releases of a count: ε = 40/50 = 0.8


def _many_copies(x, rng, size=None):
    return float(np.asarray(x).ravel()[0]) + rng.laplace(0.0, COPIES_SCALE, size=(size, COPIES))


def test_a_shared_table_is_kept_for_copies_of_one_release_and_reaches_the_best_count_event():
    """Forty copies of one Laplace release, each coordinate's log ratio only ±1/50: the shared table
    (estimated from forty times as many values) has the least held-out log loss in 6/6 seeds, and its
    audits reach on average 85 % of the closed-form best sign-count bound (0.224 at these draws).

    The bound of one audit varies with its draws: over seeds 0-11 the ratio to the best was 0.78-1.06,
    mean 0.91, standard deviation 0.08, so the mean of six seeds falls below 0.85 with probability
    about 3 %.  One table per coordinate (the search before shared tables, commit 5d97ee8) gave 0.175,
    0.149, 0.202 and 0.208 on seeds 0-3 (mean ratio 0.82), so the check can fail.  Validity: no bound
    above ε = 0.8."""
    pairs = CandidatePairs([(np.array([0.0]), np.array([1.0]))], relation="one-differ")
    ratios = []
    for seed in range(6):
        report = audit(_many_copies, epsilon=0.8, search=ClassifierSearch(pairs), samples=300_000, seed=seed)
        event = report.to_dict()["rejection_set"]["event"]
        marginals = event["marginals"]
        assert marginals is not None
        assert "one table shared by all coordinates" in LearnedEvent.from_dict(event).describe()
        assert (
            len({(tuple(a), tuple(e)) for a, e in zip(marginals["atoms"], marginals["edges"], strict=True)})
            == 1
        )
        assert report.epsilon_lower_bound <= 0.8
        best = _best_sign_count_bound(report.counts.draws_numerator, 0.95, COPIES_SCALE, COPIES)
        ratios.append(report.epsilon_lower_bound / best)
    assert sum(ratios) / len(ratios) >= 0.85


def test_one_table_per_coordinate_is_kept_when_one_coordinate_differs():
    """A noisy histogram whose neighbours differ in one bin of five: the per-coordinate tables have
    the lesser held-out log loss (a shared table spreads the one bin's ratio over all five)."""
    rng = np.random.default_rng(15)
    on_a = rng.laplace(0.0, 2.0, size=(100_000, 5))
    on_b = rng.laplace(0.0, 2.0, size=(100_000, 5))
    on_b[:, 2] += 1.0
    event, _ = learn_event(on_a, on_b, 1_000_000, 0.0, 0.95)
    assert event.marginals is not None
    tables = np.split(np.asarray(event.weights), np.cumsum(marginal_sizes(event.marginals))[:-1])
    assert np.any(tables[2] != 0) and not np.any(tables[0] != 0)
    assert len(set(zip(event.marginals.atoms, event.marginals.edges, strict=True))) > 1  # not one binning
    assert "shared" not in event.describe()


_KERNEL_SCRIPT = """
import json
import numpy as np
from dpcert.audits import CandidatePairs, ClassifierSearch, audit
def copies(x, rng, size=None):
    return float(np.asarray(x).ravel()[0]) + rng.laplace(0.0, 50.0, size=(size, 40))
pairs = CandidatePairs([(np.array([0.0]), np.array([1.0]))], relation="one-differ")
report = audit(copies, epsilon=0.8, search=ClassifierSearch(pairs), samples=100_000, seed=3)
print(json.dumps({"set": report.rejection_set.to_dict(), "counts": report.counts.to_dict()}))
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS x86 kernels")
def test_the_marginal_path_gives_the_same_event_under_other_kernels_and_without_avx512():
    """The held-out log losses (``logaddexp``), shared tables and codes decide the event: the same
    report under two OpenBLAS kernels and with numpy's AVX-512 loops turned off."""
    settings_ = [environment("Sandybridge"), environment("Haswell"), environment(None, NO_AVX512)]
    outputs = run_json([([sys.executable, "-c", _KERNEL_SCRIPT], env) for env in settings_], 300)
    assert outputs[0]["set"]["event"]["marginals"] is not None
    assert all(json.dumps(o, sort_keys=True) == json.dumps(outputs[0], sort_keys=True) for o in outputs)


def test_no_marginal_score_for_outputs_whose_coordinates_mix_atoms_and_values():
    """Sparse-vector-shaped outputs (⊥ coded -1000.0, else a released value) get no marginal score;
    outputs of bits only, or of values only, do."""
    rng = np.random.default_rng(11)
    mixed = _outputs(rng, 4000, 4)  # every coordinate: the atom -1000.0 or a Laplace value
    assert marginal_binnings(mixed) == []
    bits = (rng.random((4000, 6)) < 0.3).astype(float)
    assert len(marginal_binnings(bits)) == 1  # atoms only: one binning (no cut points to vary)
    values = rng.laplace(size=(4000, 3))
    assert [len(b.edges[0]) for b in marginal_binnings(values)] == [15, 7, 3, 1]
