"""Neighbour relations of audits: membership, the pairs each search builds, refusals, honest reports.

The statistical claims (a correct histogram and partial sum are consistent under one-differ, the
same mechanisms violate a linf claim, a buggy histogram is caught) are in
test_audit_relation_histogram.py and test_audit_relation_power.py.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from dpcert.audits import AuditReport, CandidatePairs, ScalarSearch, VectorSearch, audit, audit_delta
from dpcert.audits.epsilon_lower_bound import FewDrawsWarning, draws_to_exceed
from dpcert.audits.neighbours import RELATIONS, Relation
from dpcert.audits.reference_mechanisms import gaussian_noise, laplace_noise
from dpcert.cli import main
from dpcert.errors import InvalidParameter


def histogram(scale: float):
    """Laplace(scale) noise on every bin of a histogram (1/scale-DP when one bin changes by one)."""

    def mechanism(counts, rng, size):
        counts = np.asarray(counts, dtype=float)
        return counts + rng.laplace(0.0, scale, (size,) + counts.shape)

    return mechanism


def ignores_its_input(value, rng, size):
    """Output independent of the input: no event is more likely on one input than on the other."""
    return rng.laplace(0.0, 1.0, size)


# --------------------------------------------------------------------------- membership
@pytest.mark.parametrize(
    ("relation", "a", "b", "neighbours"),
    [
        (Relation("linf", 1.0), [0, 0, 0], [1, -1, 1], True),
        (Relation("linf", 1.0), [0, 0, 0], [2, 0, 0], False),
        (Relation("one-differ", 1.0), [3, 3, 3], [3, 4, 3], True),
        (Relation("one-differ", 1.0), [3, 3, 3], [4, 4, 3], False),  # two entries move
        (Relation("one-differ", 1.0), [3, 3, 3], [3, 5, 3], False),  # one entry moves too far
        (Relation("l1", 2.0), [0, 0, 0], [1, -1, 0], True),  # a histogram with one record replaced
        (Relation("l1", 1.0), [0, 0, 0], [1, -1, 0], False),
        (Relation("add-remove", 1.0), [0.5, 1, 0], [1, 0], True),  # the record 0.5 removed
        (Relation("add-remove", 1.0), [1, 0], [0, -1, 1], True),  # the record -1 added (order free)
        (Relation("add-remove", 1.0), [1, 0], [1, 0, 2], False),  # a record beyond the bound 1
        (Relation("add-remove", 1.0), [1, 0], [1, 0.5, 0.5], False),  # two records more
        (Relation("add-remove", 1.0), [1, 0], [1, 0.5], False),  # a record changed, none added
        (Relation("linf", 1.0), [0, 0], [0, 0, 0], False),  # shapes differ
    ],
)
def test_membership_of_hand_checked_pairs(relation, a, b, neighbours):
    assert (relation.violation(a, b) is None) == neighbours
    assert (relation.violation(b, a) is None) == neighbours  # the relations are symmetric


def test_statdp_one_differ_patterns_move_one_entry_by_the_sensitivity():
    """StatDP's ONE_DIFFER pairs (Ding et al. 2018) and DP-Sniper's single-entry ones (Bichsel et al.
    2021): the first entry one above and one below; here also the last entry."""
    search = VectorSearch(4, 2.0, relation="one-differ", start=[1, 1, 1, 1])
    pairs = {c.pattern: np.asarray(c.b) for c in search.patterns()}
    assert set(pairs) == {"one above", "one below", "last above", "last below"}
    np.testing.assert_array_equal(pairs["one above"], [3, 1, 1, 1])
    np.testing.assert_array_equal(pairs["one below"], [-1, 1, 1, 1])
    np.testing.assert_array_equal(pairs["last below"], [1, 1, 1, -1])


@pytest.mark.parametrize("relation", RELATIONS)
def test_every_pair_a_search_screens_is_a_pair_of_neighbours(relation):
    if relation == "add-remove":  # datasets of records in [-1.5, 1.5]
        search = VectorSearch(6, 1.5, relation=relation, start=[0, 1, -1, 0.5, 1.5, -1.5], starts=(1.0,))
        with pytest.raises(InvalidParameter, match="start"):
            VectorSearch(6, 1.5, relation=relation, starts=(2.0,))
    else:
        search = VectorSearch(6, 1.5, relation=relation, start=[0, 1, 2, 3, 4, 5], starts=(7.0,))
    rng = np.random.default_rng(3)
    candidates = search.candidates(rng)
    for candidate in list(candidates):
        candidates += search.moves(candidate, rng)
    assert len(candidates) > 10
    for candidate in candidates:
        assert search.neighbours.violation(candidate.a, candidate.b) is None, candidate
        assert np.shape(candidate.a) != np.shape(candidate.b) or np.any(
            np.asarray(candidate.a) != np.asarray(candidate.b)
        )


def test_linf_search_keeps_its_patterns_and_one_differ_builds_fewer():
    linf = VectorSearch(5, 1.0)
    one = VectorSearch(5, 1.0, relation="one-differ")
    assert len(linf.patterns()) == 9  # StatDP's ALL_DIFFER patterns plus alternating signs
    assert len(one.patterns()) == 4
    assert all(np.count_nonzero(np.asarray(c.a) != np.asarray(c.b)) == 1 for c in one.patterns())


def test_starts_around_the_threshold_a_mechanism_exposes():
    def sparse_vector(answers, rng, size):
        return np.asarray(answers, float) + rng.laplace(0.0, 1.0, (size, len(answers))) > 4.0

    sparse_vector.threshold = 4.0  # type: ignore[attr-defined]
    search = VectorSearch(3, 1.0, relation="one-differ", around_threshold=True)
    with pytest.raises(InvalidParameter, match="around_threshold"):
        audit(ignores_its_input, epsilon=1.0, samples=20_000, seed=1, search=search)
    starts = {c.pattern for c in search.around(sparse_vector.threshold).patterns()}
    assert {"one above from all 3", "one above from all 4", "one above from all 5"} <= starts
    report = audit(sparse_vector, epsilon=1.0, samples=40_000, seed=1, search=search)
    assert "from all" in report.search["pair"]["pattern"]  # the pair found starts near the threshold


# --------------------------------------------------------------------------- refusals
def test_a_pair_outside_the_stated_relation_is_refused_naming_it():
    with pytest.raises(InvalidParameter) as info:
        CandidatePairs((([0, 0], [1, 0]), ([0, 0], [1, 1])), relation="one-differ")
    assert info.value.name == "pairs[1]"
    with pytest.raises(InvalidParameter) as info:
        audit(histogram(10.0), [0, 0], [1, 1], epsilon=0.1, relation="one-differ", samples=100, seed=1)
    assert info.value.name == "a, b" and "one-differ" in info.value.allowed
    with pytest.raises(InvalidParameter, match="relation"):
        audit(histogram(10.0), epsilon=0.1, relation="l1", search=VectorSearch(3, relation="linf"))
    with pytest.raises(InvalidParameter, match="relation"):
        ScalarSearch(relation="add-remove")
    with pytest.raises(InvalidParameter, match="relation"):
        VectorSearch(3, relation="hamming")


@pytest.mark.parametrize(
    ("words", "flag"),
    [
        ("--input [0,0] --neighbour [1,1] --relation one-differ", "--neighbour"),
        ("--search pairs --pairs [[[0,0],[1,0]],[[0,0],[0,3]]] --relation one-differ", "--pairs"),
        ("--search scalar --relation add-remove", "--relation"),
        ("--search vector --length 2 --start [[0,0,0]]", "--start"),
        ("--input [0,0] --neighbour [1,0] --max-cells 0", "--max-cells"),
    ],
)
def test_cli_refuses_in_one_line_naming_the_flag(capsys, tmp_path, words, flag):
    target = tmp_path / "histogram.py"
    target.write_text(
        "import numpy as np\n"
        "def release(x, rng, size):\n"
        "    x = np.asarray(x, float)\n"
        "    return x + rng.laplace(0.0, 10.0, (size,) + x.shape)\n"
    )
    code = main(["audit", f"{target}:release", "--epsilon", "0.1", "--samples", "2000", *words.split()])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and flag in err


# --------------------------------------------------------------------------- honest reports
def test_no_informative_event_is_reported_as_such_with_the_best_events_counts():
    report = audit(ignores_its_input, 0, 1, epsilon=1.0, samples=20_000, seed=4)
    assert report.epsilon_lower_bound == 0.0 and not report.informative
    counts = report.counts
    summary = report.summary()
    assert summary.startswith("consistent: no informative event found")
    assert f"{counts.in_set_numerator}/{counts.draws_numerator}" in summary
    assert "epsilon >= 0.0000" not in summary
    assert "largest bound these draws could show" in summary
    data = json.loads(report.to_json())
    assert data["informative"] is False and data["relation"] is None
    positive = audit(laplace_noise(1.0), 0, 1, epsilon=1.0, samples=20_000, seed=4)
    assert positive.informative and positive.summary().startswith("consistent: epsilon >= 0.9")


def test_cli_table_says_no_informative_event_and_names_the_relation(capsys, tmp_path):
    target = tmp_path / "flat.py"
    target.write_text("def release(x, rng, size):\n    return rng.laplace(0.0, 1.0, size)\n")
    code = main(
        ["audit", f"{target}:release", "--input", "0", "--neighbour", "1", "--relation", "l1"]
        + ["--epsilon", "1", "--samples", "20000", "--seed", "2"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "no informative event found" in out
    assert not any(line.startswith("epsilon lower bound") for line in out.splitlines())
    assert "l1: the answers move by at most 1" in out


def test_draws_needed_to_reach_a_claim_match_the_closed_form_ceiling():
    """With n evaluation draws the largest bound is ln(((α/2)^(1/n) − δ)/(1 − (α/2)^(1/n))) (all n
    draws of one input in S, none of the other), less the reported margin of 1e-9 relative."""

    def ceiling(n: int, delta: float) -> float:
        q = 0.025 ** (1.0 / n)
        value = math.log((q - delta) / (1.0 - q))
        return value - 1e-9 * abs(value) - 1e-12

    for epsilon, delta in ((2.0, 0.0), (12.0, 0.0), (3.0, 1e-3)):
        needed = draws_to_exceed(epsilon, delta, 0.95)
        assert ceiling(needed, delta) > epsilon >= ceiling(needed - 1, delta)
    report = audit(laplace_noise(0.05), 0, 1, epsilon=20.0, samples=2_000, seed=1)
    assert report.ceiling_binds
    assert report.evaluation_draws_needed() == draws_to_exceed(20.0, 0.0, 0.95)
    assert f"{report.evaluation_draws_needed()} evaluation draws per input are needed" in report.summary()


def test_report_names_the_relation_and_round_trips(tmp_path):
    report = audit(
        histogram(10.0), epsilon=0.1, samples=20_000, seed=5, search=VectorSearch(3, relation="one-differ")
    )
    assert report.relation == Relation("one-differ", 1.0)
    assert "one-differ: one answer moves by at most 1" in report.summary()
    data = json.loads(report.to_json())
    assert data["relation"] == {"name": "one-differ", "sensitivity": 1.0}
    assert data["search"]["relation"] == data["relation"]
    assert AuditReport.from_json(report.to_json()).relation == report.relation


def test_a_linf_violation_of_a_histogram_says_which_relation_it_is_about():
    report = audit(histogram(10.0), epsilon=0.1, samples=20_000, seed=1, search=VectorSearch(5))
    assert report.violated and report.relation == Relation("linf", 1.0)
    assert any("audit with relation one-differ" in note for note in report.notes)


# --------------------------------------------------------------------------- smaller items
def test_a_noiseless_coordinate_gives_no_numpy_warning_and_a_plain_threshold():
    def release(x, rng, size):
        x = np.asarray(x, float)
        return np.column_stack([x[0] + rng.laplace(0.0, 1.0, size), np.full(size, x[1])])

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (overflow, 0·inf) fails the test
        leak = audit(release, [0, 5], [0, 6], epsilon=1.0, samples=20_000, seed=1)
        same = audit(release, [0, 5], [1, 5], epsilon=1.0, samples=20_000, seed=1)
    # the second coordinate is the input itself: every draw on one input in S, none on the other
    counts = leak.counts
    assert (counts.in_set_numerator, counts.in_set_denominator) == (counts.draws_numerator, 0)
    assert leak.epsilon_lower_bound == pytest.approx(leak.epsilon_ceiling)
    assert abs(leak.rejection_set.threshold) < 10.0
    assert same.verdict == "consistent" and abs(same.rejection_set.threshold) < 10.0


def test_audit_delta_warns_about_too_few_draws_like_audit():
    with pytest.warns(FewDrawsWarning, match="10/delta"):
        report = audit_delta(gaussian_noise(1.0), 0.0, 1.0, 1.0, 1e-4, samples=4_000, seed=1)
    assert any("10/delta" in note for note in report.notes)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewDrawsWarning)
        audit_delta(gaussian_noise(1.0), 0.0, 1.0, 1.0, 1e-2, samples=4_000, seed=1)  # 2 000 >= 10/δ


def test_cli_max_cells_decides_between_cells_and_thresholds(capsys):
    words = "audit builtin:randomized-response --input 0 --neighbour 1 --epsilon 1 --samples 4000 --seed 1"
    main([*words.split(), "--json"])
    cells = json.loads(capsys.readouterr().out)
    main([*words.split(), "--max-cells", "1", "--json"])
    threshold = json.loads(capsys.readouterr().out)
    assert cells["method"].endswith("/cells") and threshold["method"].endswith("/threshold")
    assert threshold["run"]["options"]["max_cells"] == 1


def test_the_json_schema_lists_the_relations_the_code_knows():
    schema = json.loads(Path(__file__).parent.parent.joinpath("docs/schemas/audit.schema.json").read_text())
    named = schema["properties"]["relation"]["oneOf"][1]["properties"]["name"]["enum"]
    assert named == list(RELATIONS)
    options = schema["properties"]["run"]["properties"]["options"]["properties"]["relation"]["enum"]
    assert options == [*RELATIONS, None]
