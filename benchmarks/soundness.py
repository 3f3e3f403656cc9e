"""Soundness sweep: every single-mechanism profile against its 40-digit reference on an edge grid.

For each area the sweep evaluates dpcert's δ(ε) at a grid of parameters and ε (chosen so that the true
δ spans 1e-15 … 1 − 1e-9, Gaussian compositions up to 1e5, bit sums over 1–3 users with p ≠ 1/2) and
reports the number of points, how many fell below the reference (must be 0), and the largest relative
excess (dpcert − exact)/exact, i.e. how much looser than the truth the certificate is at worst.

The references are those of ``tests/test_soundness_profiles.py`` (closed forms and sums evaluated with
mpmath from the definitions, independent of dpcert's code).

Run: ``python benchmarks/soundness.py`` (about a minute).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_soundness_profiles import (  # noqa: E402
    _discrete_laplace_reference,
    _gaussian_reference,
    _laplace_reference,
    _shifted_binomial_reference,
)

from dpcert.certificates import ApproximateDPProfile  # noqa: E402
from dpcert.mechanisms.discrete_laplace import DiscreteLaplaceProfile  # noqa: E402
from dpcert.mechanisms.gaussian import GaussianProfile  # noqa: E402
from dpcert.mechanisms.laplace import LaplaceProfile  # noqa: E402
from dpcert.mechanisms.shuffle.binary_sum import BinarySumProfile  # noqa: E402
from dpcert.mechanisms.shuffle.binomial_sum import BinomialSumProfile  # noqa: E402


def _sweep(cases):
    """``cases``: (profile, reference, epsilons) triples -> (points, below, worst excess, smallest δ)."""
    points = below = 0
    worst = 0.0
    smallest = 1.0
    for profile, reference, epsilons in cases:
        for epsilon in epsilons:
            true = float(reference(float(epsilon)))
            claimed = profile.delta_for(float(epsilon))
            points += 1
            if claimed < true:
                below += 1
            if true > 1e-300:
                worst = max(worst, (claimed - true) / true)
                smallest = min(smallest, true)
    return points, below, worst, smallest


def gaussian_cases():
    for sigma in (0.5, 2.0, 10.0, 50.0):
        for k in (1, 100, 10_000, 100_000):
            mu = math.sqrt(k) / sigma
            profile = GaussianProfile({"sigma": sigma, "compositions": k})
            top = max(1.0, mu * mu / 2 + 8 * mu)
            yield profile, (lambda e, mu=mu: _gaussian_reference(e, mu)), np.linspace(0.0, top, 25)


def laplace_cases():
    for scale in (0.01, 0.3, 1.0, 30.0):
        profile = LaplaceProfile({"scale": scale})
        reference = _laplace_reference(profile.pure_epsilon)
        # the ε at which the true δ is 1e-15 … 1 − 1e-9 (δ = 1 − e^{(ε − ε0)/2})
        deltas = np.concatenate([np.logspace(-15, -1, 15), 1 - np.logspace(-1, -9, 5)])
        yield profile, reference, np.clip(profile.pure_epsilon + 2 * np.log1p(-deltas), 0, None)


def discrete_laplace_cases():
    for a, shift in ((0.05, 1), (0.5, 3), (2.0, 10), (0.01, 30)):
        profile = DiscreteLaplaceProfile({"noise_parameter": a, "sensitivity": shift})
        yield profile, _discrete_laplace_reference(a, shift), np.linspace(0.0, 1.1 * profile.pure_epsilon, 20)


def binary_sum_cases():
    for bits in (1, 7, 80, 300):
        yield (
            BinarySumProfile({"noise_bits": bits}),
            _shifted_binomial_reference(bits, 0.5, 1),
            np.linspace(0, 6, 20),
        )


def bit_sum_cases():
    for users in (1, 2, 3):
        for p in (0.5, 0.3, 0.9):
            for g, b in ((1, 4), (3, 10)):
                profile = BinomialSumProfile({"g": g, "b": b, "p": p, "users": users})
                yield profile, _shifted_binomial_reference(users * b, p, g), np.linspace(0, 6, 15)


def declared_cases():
    import mpmath

    for epsilon0, delta0 in ((0.01, 0.0), (1.0, 1e-15), (5.0, 1e-6), (30.0, 0.0)):
        profile = ApproximateDPProfile({"epsilon": epsilon0, "delta": delta0})

        def reference(e, epsilon0=epsilon0, delta0=delta0):
            with mpmath.workdps(40):
                if e >= epsilon0:
                    return mpmath.mpf(delta0)
                big = mpmath.exp(mpmath.mpf(epsilon0))
                e = mpmath.mpf(e)
                return delta0 + (1 - mpmath.mpf(delta0)) * mpmath.exp(e) * mpmath.expm1(epsilon0 - e) / (
                    1 + big
                )

        yield profile, reference, np.linspace(0, epsilon0 * 1.1, 20)


AREAS = {
    "Gaussian (k up to 1e5)": gaussian_cases,
    "Laplace": laplace_cases,
    "discrete Laplace": discrete_laplace_cases,
    "binary sum": binary_sum_cases,
    "bit sum, 1-3 users, p in {0.5, 0.3, 0.9}": bit_sum_cases,
    "declared (epsilon, delta)": declared_cases,
}


def main() -> None:
    print(
        "| area | points | below the truth | worst (dpcert - exact)/exact | smallest exact delta | seconds |"
    )
    print("|---|---|---|---|---|---|")
    for name, cases in AREAS.items():
        start = time.perf_counter()
        points, below, worst, smallest = _sweep(cases())
        seconds = time.perf_counter() - start
        print(f"| {name} | {points} | {below} | {worst:.2e} | {smallest:.1e} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
