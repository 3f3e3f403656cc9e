"""Bit-sum runs across coordinates: dpcert's proven-round-off composition against a direct convolution.

For the worst-case coordinate pair ``(Bin(M, 1/2), Bin(M, 1/2) + g)`` composed over ``d`` coordinates,
the reference is the direct convolution of the same pessimistic loss PMF (``numpy.convolve``: sums of
non-negative products, relative error about 1e-13), read at several ε down to δ ≈ 1e-18.  dp_accounting's
own FFT composition of the same PMF (``self_compose``) is shown beside it: its absolute round-off
(about 1e-16 per grid point) is what the proven bound removes.

Run: ``python benchmarks/bit_sum_composition.py``
"""

from __future__ import annotations

import time

import numpy as np
from dp_accounting.pld import pld_pmf

from dpcert.theory import binomial as exact


def direct_delta(pmf, coordinates: int, epsilon: float) -> float:
    probs, lower, survive = np.ones(1), 0, 1.0
    for _ in range(coordinates):
        probs, lower = np.convolve(probs, pmf.probs), lower + pmf.lower
        survive *= 1.0 - pmf.infinity_mass
    losses = (lower + np.arange(probs.size)) * pmf.discretization
    above = losses > epsilon
    return (1.0 - survive) + float(np.sum(probs[above] * -np.expm1(epsilon - losses[above])))


def main() -> None:
    print(
        "| noise bits M | g | coordinates | ε | direct convolution δ | dpcert (proven) δ | ratio "
        "| dp_accounting FFT δ | dpcert s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for trials, g, coordinates in ((400, 4, 3), (2000, 4, 5), (20_000, 8, 5)):
        interval = exact.loss_interval(trials, 0.5, g, coordinates)
        pmf = exact._loss_pmf(trials, 0.5, g, True, interval)
        theirs = pld_pmf.DensePLDPmf(interval, pmf.lower, np.array(pmf.probs), pmf.infinity_mass, True)
        theirs = theirs.self_compose(coordinates)
        scale = exact.composed_epsilon(1e-5, trials, 0.5, g, coordinates)
        for factor in (1.0, 1.5, 2.0, 2.5):
            epsilon = round(scale * factor, 3)
            truth = direct_delta(pmf, coordinates, epsilon)
            exact._composed_bounds.cache_clear()
            start = time.perf_counter()
            ours = exact.composed_delta(epsilon, trials, 0.5, g, coordinates)
            seconds = time.perf_counter() - start
            fft = float(theirs.get_delta_for_epsilon(epsilon))
            print(
                f"| {trials} | {g} | {coordinates} | {epsilon} | {truth:.4e} | {ours:.4e} | "
                f"{ours / truth:.4f} | {fft:.4e} | {seconds:.3f} |"
            )


if __name__ == "__main__":
    main()
