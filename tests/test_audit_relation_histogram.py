"""A correct noisy histogram audited under the relation it is private for, and under linf.

The histogram adds Laplace noise of scale 10 to each of L = 5 bins.  When neighbouring histograms
differ in one bin by one (one-differ, sensitivity 1) it is exactly 0.1-DP: the privacy loss is
|x − y|/10 <= 0.1 in the one bin that moves.  When every bin may move by one (linf) the pair "all
above" moves five bins and the true ε is 5 · 0.1 = 0.5, so a claim of 0.1 under linf is false.

False-positive rate: each audit is run at confidence 0.99; its bound comes from fresh draws on the pair
the search chose, so it exceeds that pair's ε (<= 0.1 under one-differ) with probability at most 1 %.
Twenty seeded audits then report two or more violations with probability at most
1 − 0.99^20 − 20 · 0.01 · 0.99^19 = 1.7 %.  (Measured at these seeds: 20/20 consistent, bounds 0–0.073.)
Power: under linf, audits at the same draw count gave bounds 0.14–0.23 > 0.1 (5/5 seeds violated).
"""

from __future__ import annotations

import numpy as np

from dpcert.audits import VectorSearch, audit
from dpcert.audits.neighbours import Relation

BINS = 5
SAMPLES = 20_000
CONFIDENCE = 0.99


def histogram(scale: float):
    def mechanism(counts, rng, size):
        counts = np.asarray(counts, dtype=float)
        return counts + rng.laplace(0.0, scale, (size,) + counts.shape)

    return mechanism


def run(relation: str, seed: int):
    search = VectorSearch(BINS, 1.0, relation=relation)
    return audit(
        histogram(10.0), epsilon=0.1, samples=SAMPLES, seed=seed, confidence=CONFIDENCE, search=search
    )


def test_a_correct_histogram_is_consistent_under_one_differ():
    reports = [run("one-differ", seed) for seed in range(20)]
    assert sum(r.verdict == "consistent" for r in reports) >= 19
    for report in reports:
        assert report.relation == Relation("one-differ", 1.0)
        a, b = (np.asarray(v) for v in report.inputs)
        assert np.count_nonzero(a != b) == 1  # the pair audited moves one bin


def test_the_same_histogram_violates_a_linf_claim():
    reports = [run("linf", seed) for seed in range(3)]
    assert all(r.violated for r in reports)
    for report in reports:
        assert report.epsilon_lower_bound <= 0.5  # a valid bound: below the true linf ε of 0.5
        assert report.relation == Relation("linf", 1.0)
