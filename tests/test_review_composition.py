"""Cross-checks of composition: KOV against the enumerated product of canonical pairs, advanced
composition against KOV, and every method for k Laplace mechanisms against an independent
privacy-loss convolution written here (losses rounded *down*, so it bounds the true δ from below)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.signal import fftconvolve

from dpcert.accounting.composition import AdvancedCompositionProfile, compose, kov_delta
from dpcert.mechanisms.laplace import laplace_certificate


def canonical_pair(epsilon: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Kairouz, Oh & Viswanath 2015, Thm 2.1: the (ε, δ) pair on four outcomes."""
    big = (1 - delta) * math.exp(epsilon) / (1 + math.exp(epsilon))
    small = (1 - delta) / (1 + math.exp(epsilon))
    return np.array([delta, big, small, 0.0]), np.array([0.0, small, big, delta])


@pytest.mark.parametrize(("epsilon0", "delta0"), [(0.3, 0.0), (0.5, 1e-3), (1.0, 0.01), (0.1, 0.0)])
@pytest.mark.parametrize("k", [1, 2, 4, 6])
def test_kov_equals_the_product_of_canonical_pairs(epsilon0: float, delta0: float, k: int) -> None:
    single_p, single_q = canonical_pair(epsilon0, delta0)
    upper, lower = np.array([1.0]), np.array([1.0])
    for _ in range(k):
        upper, lower = np.outer(upper, single_p).ravel(), np.outer(lower, single_q).ravel()
    for epsilon in np.linspace(0.0, k * epsilon0 + 0.1, 15):
        brute = float(np.maximum(upper - math.exp(epsilon) * lower, 0.0).sum())
        value = kov_delta(epsilon, epsilon0, delta0, k)
        assert brute - 1e-15 <= value <= brute * (1 + 1e-8) + 1e-15
        assert AdvancedCompositionProfile(epsilon0, delta0, k).delta_for(epsilon) >= brute - 1e-15


def laplace_loss_pmf(scale: float, interval: float) -> tuple[int, np.ndarray]:
    """Privacy loss of Lap(0, b) against Lap(1, b) under the first, each loss rounded *down* to the
    grid: atoms ±1/b (x <= 0 and x >= 1) and the continuous part ``(1 − 2x)/b`` on ``0 < x < 1``."""
    steps = round(1.0 / scale / interval)
    grid = np.arange(-steps, steps + 1) * interval
    probs = np.zeros(grid.size)
    probs[-1] += 0.5
    probs[0] += 0.5 * math.exp(-1.0 / scale)
    positions = (1.0 - grid * scale) / 2.0  # loss in (grid[j], grid[j+1]] <=> x in [pos[j+1], pos[j])
    cdf = 0.5 * (1.0 - np.exp(-np.clip(positions, 0.0, None) / scale))
    probs[:-1] += cdf[:-1] - cdf[1:]
    return -steps, probs


def lower_bound_delta(scale: float, k: int, epsilon: float, interval: float = 1e-5) -> float:
    lowest, single = laplace_loss_pmf(scale, interval)
    composed = single
    for _ in range(k - 1):
        composed = fftconvolve(composed, single)
    composed = np.clip(composed, 0.0, None)
    losses = (np.arange(composed.size) + k * lowest) * interval
    above = losses > epsilon
    return float(np.sum(composed[above] * -np.expm1(epsilon - losses[above])))


@pytest.mark.parametrize("method", ["best", "basic", "advanced", "optimal", "pld", "rdp"])
@pytest.mark.parametrize("delta", [1e-3, 1e-6])
def test_laplace_compositions_are_never_optimistic(method: str, delta: float) -> None:
    scale, k = 2.0, 8
    certificate = compose([laplace_certificate(scale)] * k, method=method, delta=delta)
    # The reference rounds losses down (and its FFT error is far below these δ): it is at most the
    # true δ, so a certified ε with reference δ above the claim would be optimistic.
    assert lower_bound_delta(scale, k, certificate.epsilon) <= delta
    if method == "best":
        assert certificate.epsilon <= k / scale  # never worse than basic composition of pure ε


def test_best_composition_of_gaussians_equals_the_exact_gaussian() -> None:
    # Gaussians with mu_i = Delta_i / sigma_i compose to one Gaussian with mu = sqrt(sum mu_i^2)
    # (Dong, Roth & Su 2019, Cor. 3.3); its delta(epsilon) is Balle & Wang's closed form, here in mpmath.
    import mpmath

    from dpcert.mechanisms.gaussian import gaussian_certificate

    sigmas = (2.0, 3.0, 5.0)
    delta = 1e-6
    certificate = compose([gaussian_certificate(s, delta=1e-7) for s in sigmas], delta=delta)
    with mpmath.workdps(40):
        mu = mpmath.sqrt(sum(1 / mpmath.mpf(s) ** 2 for s in sigmas))
        e = mpmath.mpf(certificate.epsilon)
        exact = mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)
        slightly_less = certificate.epsilon * (1 - 1e-9)
        e2 = mpmath.mpf(slightly_less)
        exact_below = mpmath.ncdf(mu / 2 - e2 / mu) - mpmath.exp(e2) * mpmath.ncdf(-mu / 2 - e2 / mu)
    assert exact <= delta  # valid
    assert exact_below > delta * (1 - 1e-6)  # and tight: the least epsilon up to rounding


@pytest.mark.parametrize(("epsilon0", "delta0", "k"), [(0.1, 0.0, 1000), (0.05, 1e-8, 400), (0.5, 0.0, 50)])
def test_pld_path_is_not_below_kov_for_many_canonical_pairs(epsilon0: float, delta0: float, k: int) -> None:
    # Black-box (ε0, δ0) components: KOV Thm 3.3 is the exact δ of their k-fold composition, so the
    # PLD certificate (dp_accounting FFTs plus the round-off allowance) must claim at least that δ.
    from dpcert.certificates import approximate_dp_certificate

    component = approximate_dp_certificate(epsilon0, delta0)
    for delta in (1e-4, 1e-7 + k * delta0):  # above the components' total δ
        certificate = compose([component] * k, method="pld", delta=delta)
        assert kov_delta(certificate.epsilon, epsilon0, delta0, k) <= delta
