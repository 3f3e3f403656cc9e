"""A buggy histogram is caught under the relation it claims privacy for.

The histogram adds Laplace noise of scale 5 to each of 5 bins while 0.1-DP is claimed (a 0.1-DP
histogram needs scale 10): when one bin moves by one (one-differ) its true ε is 1/5 = 0.2.  Each audit
runs at confidence 0.99; a bound is above the true 0.2 with probability at most 1 %.  Measured at
these seeds and 30 000 draws per input: 10/10 violated, bounds 0.12–0.19.
"""

from __future__ import annotations

import numpy as np

from dpcert.audits import VectorSearch, audit


def histogram(scale: float):
    def mechanism(counts, rng, size):
        counts = np.asarray(counts, dtype=float)
        return counts + rng.laplace(0.0, scale, (size,) + counts.shape)

    return mechanism


def test_a_histogram_with_half_the_noise_is_caught_under_one_differ():
    search = VectorSearch(5, 1.0, relation="one-differ")
    reports = [
        audit(histogram(5.0), epsilon=0.1, samples=30_000, seed=seed, confidence=0.99, search=search)
        for seed in range(10)
    ]
    assert sum(r.violated for r in reports) >= 9
    assert sum(r.epsilon_lower_bound > 0.2 for r in reports) <= 1  # above the true ε: at most 1 % each
    for report in reports:
        a, b = (np.asarray(v) for v in report.inputs)
        assert np.count_nonzero(a != b) == 1  # a one-differ pair
