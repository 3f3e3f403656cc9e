"""The threshold rule on cross-fitted folds: the target share of the denominator chosen on every
held-out fold's counts added up, the threshold and tie read off the first fold.

Independent references: the folds' counts by comprehension in Python floats at every target (the
event's definition), the projected bound of those added counts; for power, the true probabilities of
the chosen event computed from the binomial distribution (closed form) of a sign-count score.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpcert.audits.classifier_search import _TARGETS, choose_event
from dpcert.audits.epsilon_lower_bound import EvaluationCounts, bound_from_counts
from dpcert.audits.selection import projected_bound


def _event_counts(num: list[float], den: list[float], target: float) -> tuple[float, float, float, float]:
    """The least value t (of the scores) with at most ``target`` denominator scores above it, the tie q
    that brings the denominator count to ``target``, and the event's two counts, by comprehension."""
    values = sorted(set(num) | set(den))
    for t in values:
        above = sum(1 for x in den if x > t)
        if above <= target:
            break
    at = sum(1 for x in den if x == t)
    tie = min(max((target - above) / at, 0.0), 1.0) if at > 0 else 1.0
    in_num = sum(1 for x in num if x > t) + tie * sum(1 for x in num if x == t)
    return t, tie, in_num, above + tie * at


def _reference(folds, evaluation, alpha):
    """Best (forecast, threshold, tie) of one orientation, every target's counts added over the folds."""
    n_den = len(folds[0][1])
    targets = np.unique(
        np.concatenate([np.geomspace(0.5, float(n_den), _TARGETS), np.linspace(0.0, n_den, _TARGETS // 3)])
    )
    rows = []
    for target in targets.tolist():
        first = _event_counts(folds[0][0], folds[0][1], target)
        in_num, in_den = first[2], first[3]
        for num, den in folds[1:]:
            _, _, more_num, more_den = _event_counts(num, den, target * len(den) / n_den)
            in_num, in_den = in_num + more_num, in_den + more_den
        rows.append((first[0], first[1], in_num, in_den))
    n_num_all = sum(len(f[0]) for f in folds)
    n_den_all = sum(len(f[1]) for f in folds)
    projected = projected_bound(
        np.array([r[2] for r in rows]), n_num_all, np.array([r[3] for r in rows]), n_den_all,
        evaluation, evaluation, 0.0, alpha,
    )  # fmt: skip
    best = int(np.argmax(projected))
    return float(projected[best]), rows[best][0], rows[best][1]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    sizes=st.tuples(st.integers(1, 40), st.integers(1, 40), st.integers(1, 40), st.integers(1, 40)),
)
def test_two_folds_choose_the_target_of_the_largest_forecast_of_their_added_counts(seed, sizes):
    rng = np.random.default_rng(seed)
    a0, b0, a1, b1 = (
        np.round(rng.normal(shift, 1.0, size), 1) for shift, size in zip((0.5, 0, 0.5, 0), sizes, strict=True)
    )
    choice = choose_event(a0, b0, 5_000, 0.0, 0.95, other_folds=((a1, b1),))
    forward = _reference([(a0.tolist(), b0.tolist()), (a1.tolist(), b1.tolist())], 5_000, 0.05)
    backward = _reference([((-b0).tolist(), (-a0).tolist()), ((-b1).tolist(), (-a1).tolist())], 5_000, 0.05)
    expected = forward if forward[0] >= backward[0] else backward
    if expected[0] == -math.inf:  # no event forecasts anything: the empty event, as on one fold
        assert (choice.forecast, choice.threshold) == (-math.inf, math.inf)
        return
    assert choice.numerator == ("a" if forward[0] >= backward[0] else "b")
    assert choice.forecast == pytest.approx(expected[0], rel=1e-9, abs=1e-12)
    assert (choice.threshold, choice.tie) == pytest.approx(expected[1:], rel=1e-12, abs=1e-12)


def test_three_folds_take_each_target_as_the_same_share_of_every_fold():
    rng = np.random.default_rng(7)
    sizes = ((300, 200), (150, 250), (90, 60))
    folds = [
        (np.round(rng.normal(0.4, 1.0, n_a), 1), np.round(rng.normal(0.0, 1.0, n_b), 1)) for n_a, n_b in sizes
    ]
    choice = choose_event(*folds[0], 8_000, 0.0, 0.95, other_folds=tuple(folds[1:]))
    forward = _reference([(a.tolist(), b.tolist()) for a, b in folds], 8_000, 0.05)
    backward = _reference([((-b).tolist(), (-a).tolist()) for a, b in folds], 8_000, 0.05)
    expected = forward if forward[0] >= backward[0] else backward
    assert choice.numerator == ("a" if forward[0] >= backward[0] else "b")
    assert choice.forecast == pytest.approx(expected[0], rel=1e-9)
    assert (choice.threshold, choice.tie) == pytest.approx(expected[1:], rel=1e-12, abs=1e-12)


def test_one_fold_is_the_threshold_rule_on_that_fold():
    rng = np.random.default_rng(3)
    a, b = np.round(rng.normal(0.3, 1.0, 500), 1), np.round(rng.normal(0.0, 1.0, 400), 1)
    choice = choose_event(a, b, 10_000, 0.0, 0.95)
    forward = _reference([(a.tolist(), b.tolist())], 10_000, 0.05)
    backward = _reference([((-b).tolist(), (-a).tolist())], 10_000, 0.05)
    expected = max(forward, backward, key=lambda r: r[0])
    assert choice.forecast == pytest.approx(expected[0], rel=1e-9)
    assert (choice.threshold, choice.tie) == pytest.approx(expected[1:], rel=1e-12)


COPIES, SHIFT = 20, 0.02  # twenty copies of a release whose per-copy sign has log ratio 0.04


def _true_bound(choice, p_a: float, p_b: float, draws: int) -> float:
    """The bound of ``choice`` at the expected counts of ``draws`` evaluation draws per input, from the
    binomial distribution of the sign count k (scores k on a, numerator a; −k for numerator b)."""
    k = np.arange(COPIES + 1)
    on_a, on_b = stats.binom.pmf(k, COPIES, p_a), stats.binom.pmf(k, COPIES, p_b)
    u = k if choice.numerator == "a" else -k
    inside = (u > choice.threshold) + choice.tie * (u == choice.threshold)
    num, den = (on_a, on_b) if choice.numerator == "a" else (on_b, on_a)
    counts = EvaluationCounts(
        "a", round(draws * float(inside @ num)), draws, round(draws * float(inside @ den)), draws
    )
    return bound_from_counts(counts, 0.0, 0.95).epsilon_lower_bound


def test_a_second_fold_chooses_better_events_of_a_sign_count_score():
    """Power: the sign count of twenty copies (a discrete score with ties), 30 seeded repetitions. The
    events chosen on two folds of 20,000 held-out draws each evaluate (closed form, 200,000 draws) to a
    larger mean bound than those chosen on the first fold alone, by at least half the gain of choosing
    on the two folds' draws as one fold of 40,000 (measured: 0.8048, 0.8166 and 0.8209).
    The measured means are in the assertion messages."""
    p_a, p_b = 0.5 + SHIFT, 0.5 - SHIFT
    rng = np.random.default_rng(20261129)
    one, two, joined = [], [], []
    for _ in range(30):
        k = [rng.binomial(COPIES, p, 20_000).astype(float) for p in (p_a, p_b, p_a, p_b)]
        one.append(_true_bound(choose_event(k[0], k[1], 200_000, 0.0, 0.95), p_a, p_b, 200_000))
        two.append(
            _true_bound(
                choose_event(k[0], k[1], 200_000, 0.0, 0.95, other_folds=((k[2], k[3]),)), p_a, p_b, 200_000
            )
        )
        both = choose_event(np.concatenate(k[0::2]), np.concatenate(k[1::2]), 200_000, 0.0, 0.95)
        joined.append(_true_bound(both, p_a, p_b, 200_000))
    means = (float(np.mean(one)), float(np.mean(two)), float(np.mean(joined)))
    assert means[1] > means[0], means
    assert means[1] - means[0] >= 0.5 * (means[2] - means[0]), means
    assert max(two) <= COPIES * math.log(p_a / p_b)  # no event beyond the pair's true ε
