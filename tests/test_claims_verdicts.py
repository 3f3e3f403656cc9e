"""Comparative claims are decided by a paired test on the measured runs (``paired_verdict``), and claims
tables stay valid Markdown whatever their cells contain."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

from dpcert.errors import InvalidParameter
from dpcert.reproductions.claims import (
    MIN_RUNS,
    Claim,
    all_hold,
    claims_table,
    markdown_cell,
    paired_verdict,
)

# Fixed small arrays: seven paired runs whose differences are known by hand.
FIRST = np.array([10.0, 12.0, 9.0, 11.0, 13.0, 10.0, 12.0])
SECOND = np.array([12.0, 15.0, 10.0, 14.0, 15.0, 13.0, 13.0])
# d = first - second = (-2, -3, -1, -3, -2, -3, -1): mean -15/7,
# sum of squares about the mean 37 - 225/7 = 34/7


def _t_by_hand(d: np.ndarray, shift: float = 0.0) -> tuple[float, float]:
    n = d.size
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    return (mean - shift) / (sd / math.sqrt(n)), sd / math.sqrt(n)


def test_mean_difference_standard_error_and_p_values_are_those_of_the_paired_t_test():
    d = FIRST - SECOND
    t_value, stderr = _t_by_hand(d)
    # by hand: mean -15/7, variance (34/7)/6 = 17/21, s.e. sqrt(17/147)
    assert stderr == pytest.approx(math.sqrt(17 / 147))
    assert t_value == pytest.approx((-15 / 7) / math.sqrt(17 / 147))
    reference = stats.ttest_rel(FIRST, SECOND, alternative="less")
    assert reference.statistic == pytest.approx(t_value)
    result = paired_verdict(FIRST, SECOND, "first < second", labels=("A", "B"))
    assert result.difference == pytest.approx(-15 / 7) and result.stderr == pytest.approx(stderr)
    assert result.runs == 7 and result.holds == "holds"
    assert f"paired t-test p = {reference.pvalue:.3g} (one-sided for the claim)" in result.numbers
    against = stats.ttest_rel(FIRST, SECOND, alternative="greater").pvalue
    assert f"{against:.3g} (against)" in result.numbers
    assert result.p_value == pytest.approx(reference.pvalue) and "α = 0.05" in result.numbers
    assert "A − B = -2.14 ± 0.34 (s.e.)" in result.numbers and "7 paired runs" in result.numbers
    # the claim the other way round does not hold; "first > second" with the arms swapped holds
    assert paired_verdict(FIRST, SECOND, "first > second").holds == "does not hold"
    assert paired_verdict(SECOND, FIRST, "first > second").holds == "holds"


def test_equivalence_is_two_one_sided_tests_with_the_margin_stated():
    d = FIRST - SECOND
    bound = 0.3 * SECOND.mean()  # 30 % of 92/7: b = 3.94
    t_low, _ = _t_by_hand(d, -bound)
    t_high, _ = _t_by_hand(d, bound)
    p_tost = max(stats.t.sf(t_low, 6), stats.t.cdf(t_high, 6))  # t-distribution with n - 1 = 6 df
    result = paired_verdict(FIRST, SECOND, "first ≈ second", margin=0.3)
    assert p_tost < 0.05 and result.holds == "holds"
    assert f"TOST t-test p = {p_tost:.3g}" in result.numbers
    assert f"margin ± {bound:.3g} (30% of second's mean)" in result.numbers
    # a 5 % margin (b = 0.66) lies well inside the measured difference -2.14 ± 0.34: outside is shown
    tight = paired_verdict(FIRST, SECOND, "first ≈ second", margin=0.05)
    t_below, _ = _t_by_hand(d, -0.05 * SECOND.mean())
    assert stats.t.cdf(t_below, 6) < 0.025 and tight.holds == "does not hold"
    # a 15 % margin (b = 1.97) is neither shown nor excluded by seven runs
    assert paired_verdict(FIRST, SECOND, "first ≈ second", margin=0.15).holds.startswith("not resolved")


def test_fewer_than_the_minimum_runs_give_no_verdict():
    assert MIN_RUNS == 5
    result = paired_verdict(FIRST[:4], SECOND[:4], "first < second")
    assert result.holds == "not resolved (n = 4 < 5 runs)" and "4 paired runs" in result.numbers
    assert result.p_value is None and "no test below 5 runs" in result.numbers
    assert paired_verdict(FIRST[:5], SECOND[:5], "first < second").holds == "holds"
    short = paired_verdict(FIRST[:2], SECOND[:2], "first ≈ second", margin=0.1)
    assert short.holds == "not resolved (n = 2 < 5 runs)"


def test_differences_that_do_not_vary_are_decided_by_their_sign():
    same = np.full(6, 5.0)
    assert paired_verdict(same + 1, same, "first > second").holds == "holds"
    assert paired_verdict(same, same, "first > second").holds == "does not hold"
    assert paired_verdict(same, same, "first ≈ second", margin=0.1).holds == "holds"
    assert "every run gives the same difference" in paired_verdict(same, same, "first < second").numbers


def test_identical_distributions_are_not_resolved_at_the_stated_error_rate():
    """Both arms drawn from one distribution: each wrong verdict has probability at most α = 0.05 per
    seed.  Over 200 seeds the count of "holds" (and of "does not hold") is Binomial(200, p <= 0.05):
    P(count > 20) < 0.002 each, so this seeded check fails for a correct test with probability < 0.4 %."""
    for runs in (8, 30):
        verdicts = []
        for seed in range(200):
            draws = np.random.default_rng([29, runs, seed]).normal(100.0, 10.0, size=(2, runs))
            verdicts.append(paired_verdict(draws[0], draws[1], "first < second").holds)
        assert sum(v == "holds" for v in verdicts) <= 20, runs
        assert sum(v == "does not hold" for v in verdicts) <= 20, runs
        assert sum(v.startswith("not resolved") for v in verdicts) >= 160, runs


def test_a_shift_of_three_standard_errors_is_detected():
    """Power: a true mean difference of 3 standard errors (σ/√n, n = 30) is detected by the one-sided
    t-test at α = 0.05 with probability 0.900 (non-central t, computed below).  Over 200 seeds the
    detections are Binomial(200, 0.90): at least 170 (85 %) with probability > 0.99."""
    runs = 30
    power = stats.nct.sf(stats.t.ppf(0.95, runs - 1), runs - 1, 3.0)
    assert power == pytest.approx(0.900, abs=0.002)
    detected = 0
    for seed in range(200):
        rng = np.random.default_rng([31, seed])
        second = rng.normal(50.0, 4.0, runs)
        first = second + rng.normal(-3.0 * 2.0 / math.sqrt(runs), 2.0, runs)
        detected += paired_verdict(first, second, "first < second").holds == "holds"
    assert detected >= 170


def test_a_clear_equivalence_and_a_clear_difference_in_seeded_runs():
    rng = np.random.default_rng(7)
    base = rng.normal(1000.0, 100.0, 20)
    close = base + rng.normal(0.0, 10.0, 20)
    assert paired_verdict(close, base, "first ≈ second", margin=0.1).holds == "holds"
    assert paired_verdict(close * 0.78, base, "first ≈ second", margin=0.1).holds == "does not hold"


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"claim": "first <= second"}, "claim"),
        ({"claim": "first ≈ second"}, "margin"),
        ({"claim": "first < second", "margin": 0.1}, "margin"),
        ({"claim": "first ≈ second", "margin": -0.1}, "margin"),
        ({"claim": "first < second", "alpha": 1.0}, "alpha"),
        ({"claim": "first < second", "min_runs": 1}, "min_runs"),
        ({"claim": "first < second", "second": SECOND[:6]}, "second"),
        ({"claim": "first < second", "first": np.array([1.0, math.nan, 1, 1, 1, 1, 1])}, "first"),
    ],
)
def test_bad_input_is_refused_naming_the_parameter(kwargs, name):
    arguments = {"first": FIRST, "second": SECOND, **kwargs}
    with pytest.raises(InvalidParameter) as raised:
        paired_verdict(arguments.pop("first"), arguments.pop("second"), **arguments)
    assert raised.value.name == name


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", line))


def test_pipes_and_newlines_in_cells_never_break_the_table():
    rows = [
        Claim("Good event: |μ̂ − μ| <= I", "holds", "a | b", "dpcert reproduce x"),
        Claim(r"already escaped \|μ̂ − μ\| stays one cell", "holds", "ends with a backslash \\", "c"),
        Claim("two\nlines", "not resolved (n = 2 < 5 runs)", r"a \\| b", "`quoted` | command"),
    ]
    table = claims_table(rows)
    lines = table.splitlines()
    assert len(lines) == 2 + len(rows)
    assert {_unescaped_pipes(line) for line in lines} == {5}  # four cells: five separators per row
    assert markdown_cell(r"\|x\|") == r"\|x\|" and markdown_cell("|x|") == r"\|x\|"


def test_a_claim_needing_several_verdicts_holds_only_if_all_hold():
    assert all_hold(["holds", "holds"]) == "holds"
    assert all_hold(["holds", "not resolved (x)", "does not hold"]) == "does not hold"
    assert all_hold(["holds", "not resolved (x)"]) == "not resolved"
    assert all_hold(["holds", "not resolved (n = 2 < 5 runs)"]) == "not resolved (n = 2 < 5 runs)"
    with pytest.raises(InvalidParameter):
        all_hold([])
