"""Float Laplace noise in the bandit engines meets its target ε exactly and is the least that does.

The scale b of a Laplace release of ℓ1 sensitivity Δ is the least float with Δ/b <= ε in exact
arithmetic, so the certificate's ε (Δ/b rounded up to a float) is at most the target, never one float
step above it, and the next smaller float scale would exceed the target.  Checked here with
``Fraction`` arithmetic, independently of the code's rounding helper.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpcert.bandits.algorithms.mab import CentralLaplaceSum
from dpcert.bandits.algorithms.robust_elimination import LaplaceClients
from dpcert.bandits.privatizers import Contributions

TARGETS = (0.7, 1.5, 3.0, 6.0, 0.1, 1 / 3, 2.2)


def _least(sensitivity: float, scale: float, epsilon: float) -> bool:
    """Δ/b <= ε exactly and Δ/b' > ε for the next smaller float b'."""
    smaller = math.nextafter(scale, 0.0)
    return (
        Fraction(sensitivity) / Fraction(scale)
        <= Fraction(epsilon)
        < Fraction(sensitivity) / Fraction(smaller)
    )


@pytest.mark.parametrize("epsilon", TARGETS)
def test_central_laplace_sum_certifies_its_target_exactly(epsilon: float) -> None:
    summation = CentralLaplaceSum(epsilon)
    assert summation.certificate.epsilon <= epsilon
    assert _least(1.0, summation.noise_scale, epsilon)
    released = summation.release(
        Contributions.of_sums(np.zeros(200_000), 1), np.random.default_rng(3)
    ).estimate
    # the draws use the certified scale: mean |noise| of Laplace(b) is b (200 000 draws: sd b/447)
    assert abs(np.mean(np.abs(released)) / summation.noise_scale - 1.0) < 6.0 / math.sqrt(200_000)


@pytest.mark.parametrize("epsilon", TARGETS)
def test_robust_clients_certify_their_target_exactly_for_every_report_size(epsilon: float) -> None:
    clients = LaplaceClients("M2", epsilon, 1.0)
    for count in (1, 2, 3, 7, 10, 333):
        certificate = clients.certificate(count)
        assert certificate is not None and certificate.epsilon <= epsilon
        assert _least(2.0 / count, clients.scale(count), epsilon)
    counts = np.array([1, 3, 3, 7, 1])
    rng = np.random.default_rng(5)
    reports = clients.report_means(np.zeros(int(counts.sum())), counts, rng)
    expected = np.random.default_rng(5).laplace(0.0, 1.0, size=counts.size) * np.array(
        [clients.scale(int(c)) for c in counts]
    )
    assert np.array_equal(reports, expected)  # each client's noise at its certified scale
