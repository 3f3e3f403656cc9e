"""Soundness of composition: no method may certify an ε whose true δ exceeds the claim.

Every reference here is written independently of dpcert: the exact KOV sum in mpmath (Kairouz, Oh &
Viswanath 2015, Thm 3.3), brute-force products of canonical pairs, the Gaussian closed form in
mpmath (Balle & Wang 2018, Thm 8), and a lower bound on the k-fold Laplace δ(ε) from privacy losses
rounded *down* to a grid and composed by exponentially tilted FFT (the rounding makes it at most the
true δ; its own FFT round-off is relative ~1e-10 at the tilt point, far below the tolerances used).
Property tests are derandomized (tests/conftest.py); each checks "reference δ at the certified ε is
at most the claimed δ".
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from dpcert.accounting.composition import compose, compose_counts
from dpcert.certificates import approximate_dp_certificate
from dpcert.errors import DPCertError
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate

RELATIVE = 1e-9  # reference round-off allowance (the references are accurate to ~1e-12 or better)


# --------------------------------------------------------------------------- references
def kov_exact_delta(epsilon: float, epsilon0: float, delta0: float, k: int) -> float:
    """KOV 2015, Thm 3.3 in mpmath (50 digits): 1 − (1 − δ0)^k (1 − H), summing the terms of H from
    the largest loss downward until they are negligible (the terms fall off geometrically)."""
    mpmath.mp.dps = 50
    e0, eps = mpmath.mpf(epsilon0), mpmath.mpf(epsilon)
    log_norm = k * mpmath.log(1 + mpmath.exp(e0))
    total = mpmath.mpf(0)
    top = math.floor((k - epsilon / epsilon0) / 2.0) if epsilon0 > 0 else -1
    top = min(top, k)
    while top >= 0 and (k - 2 * top) * epsilon0 <= epsilon:
        top -= 1
    biggest = mpmath.mpf(0)
    for ell in range(top, -1, -1):
        log_binom = mpmath.loggamma(k + 1) - mpmath.loggamma(ell + 1) - mpmath.loggamma(k - ell + 1)
        term = mpmath.exp(log_binom + (k - ell) * e0 - log_norm) * (1 - mpmath.exp(eps - (k - 2 * ell) * e0))
        total += term
        biggest = max(biggest, term)
        if term < biggest * mpmath.mpf(10) ** -30:
            break
    outside = 1 - (1 - mpmath.mpf(delta0)) ** k
    return float(outside + (1 - outside) * total)


def canonical_pair(epsilon: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """KOV 2015, Thm 2.1: the canonical (ε, δ) pair on four outcomes."""
    middle = (1 - delta) / (1 + math.exp(epsilon))
    return (
        np.array([delta, middle * math.exp(epsilon), middle, 0.0]),
        np.array([0.0, middle, middle * math.exp(epsilon), delta]),
    )


def brute_force_delta(epsilon: float, pairs: list[tuple[float, float]]) -> float:
    """Hockey-stick divergence of the product of canonical pairs, by enumerating all 4^k outcomes."""
    p, q = np.array([1.0]), np.array([1.0])
    for e0, d0 in pairs:
        pi, qi = canonical_pair(e0, d0)
        p, q = np.outer(p, pi).ravel(), np.outer(q, qi).ravel()
    return float(np.maximum(p - math.exp(epsilon) * q, 0.0).sum())


def gaussian_exact_delta(epsilon: float, mu: float) -> float:
    """Balle & Wang 2018, Thm 8 in mpmath: Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)."""
    mpmath.mp.dps = 60
    mu_, eps = mpmath.mpf(mu), mpmath.mpf(epsilon)
    return float(mpmath.ncdf(mu_ / 2 - eps / mu_) - mpmath.exp(eps) * mpmath.ncdf(-mu_ / 2 - eps / mu_))


def laplace_loss_pmf_rounded_down(epsilon0: float, steps: int) -> np.ndarray:
    """Privacy loss of Lap(0, 1/ε0) against Lap(1, 1/ε0) under the first on the grid h = ε0/steps,
    every loss rounded *down*: atoms ±ε0 (x <= 0: +ε0 w.p. 1/2; x >= 1: −ε0 w.p. e^{−ε0}/2) and the
    continuous part ε0(1 − 2x), 0 < x < 1, with CDF (1 − e^{−ε0 x})/2.  Index j <-> loss (j − steps) h."""
    h = epsilon0 / steps
    probs = np.zeros(2 * steps + 1)
    probs[-1] = 0.5
    probs[0] = 0.5 * math.exp(-epsilon0)
    j = np.arange(-steps, steps)  # losses in [j h, (j + 1) h) go to j h
    x_high = (epsilon0 - j * h) / (2 * epsilon0)
    x_low = (epsilon0 - (j + 1) * h) / (2 * epsilon0)
    probs[:-1] += 0.5 * (np.exp(-epsilon0 * x_low) - np.exp(-epsilon0 * x_high))
    return probs


def laplace_delta_lower_bound(epsilon0: float, k: int, epsilon: float, steps: int = 300) -> float:
    """Lower bound on δ(ε) of k Laplace mechanisms (sensitivity 1, scale 1/ε0), by tilted FFT."""
    h = epsilon0 / steps
    probs = laplace_loss_pmf_rounded_down(epsilon0, steps)
    losses = (np.arange(probs.size) - steps) * h

    def tilted_mean(lam: float) -> float:
        w = probs * np.exp(lam * losses - lam * epsilon0)
        return float(np.dot(w, losses) / w.sum())

    lam = 0.0
    if k * tilted_mean(0.0) < epsilon < k * epsilon0:
        lam = brentq(lambda t: k * tilted_mean(t) - epsilon, 0.0, 1e4 / epsilon0)
    weights = probs * np.exp(lam * (losses - epsilon0))
    norm = weights.sum()
    weights /= norm
    mean = k * float(np.dot(weights, losses))
    sd = math.sqrt(k * float(np.dot(weights, (losses - mean / k) ** 2)))
    half = int(12 * sd / h) + 4 * steps
    size = 1 << (2 * half).bit_length()
    if size >= k * 2 * steps + 1:
        size = 1 << (k * 2 * steps).bit_length()
    spectrum = np.fft.rfft(weights, size) ** k
    composed = np.clip(np.fft.irfft(spectrum, size), 0.0, None)
    lowest = -k * steps  # index of the composed array's residue 0
    centre = int(round(mean / h))
    indices = np.arange(centre - half, centre + half + 1)
    indices = indices[(indices >= lowest) & (indices <= k * steps)]
    loss = indices * h
    above = loss > epsilon
    loss, mass = loss[above], composed[(indices[above] - lowest) % size]
    log_scale = k * (math.log(norm) + lam * epsilon0)
    return float(np.sum(mass * np.exp(log_scale - lam * loss) * -np.expm1(epsilon - loss)))


# --------------------------------------------------------------------------- regressions
def test_30000_pure_compositions_at_delta_1e_12_are_not_below_kov() -> None:
    k, epsilon0, delta = 30_000, 0.003, 1e-12
    exact_epsilon = brentq(lambda e: kov_exact_delta(e, epsilon0, 0.0, k) - delta, 3.5, 3.7, xtol=1e-9)
    assert exact_epsilon == pytest.approx(3.59167, abs=1e-5)  # KOV 2015, Thm 3.3 (issue value)
    assert kov_exact_delta(3.58351, epsilon0, 0.0, k) > delta  # the former answer was optimistic
    certificates = [approximate_dp_certificate(epsilon0)] * k
    for method in ("pld", "best", "optimal"):
        certificate = compose(certificates, method=method, delta=delta)
        assert kov_exact_delta(certificate.epsilon, epsilon0, 0.0, k) <= delta * (1 + RELATIVE)
        assert certificate.epsilon >= exact_epsilon - 1e-8
    assert compose(certificates, method="pld", delta=delta).epsilon <= exact_epsilon + 1e-3


def test_10000_laplace_compositions_at_delta_1e_13_are_not_optimistic() -> None:
    k, epsilon0, delta = 10_000, 0.03, 1e-13
    assert laplace_delta_lower_bound(epsilon0, k, 24.79) > 10 * delta  # the former answer
    certificate = compose([laplace_certificate(1 / epsilon0)] * k, method="best", delta=delta)
    assert laplace_delta_lower_bound(epsilon0, k, certificate.epsilon) <= delta * (1 + 1e-6)
    # The bound is also tight: the reference needs nearly the same ε.
    assert laplace_delta_lower_bound(epsilon0, k, certificate.epsilon - 0.02) > delta
    for method in ("pld", "rdp", "optimal"):
        other = compose([laplace_certificate(1 / epsilon0)] * k, method=method, delta=delta)
        assert laplace_delta_lower_bound(epsilon0, k, other.epsilon) <= delta * (1 + 1e-6)


def test_best_uses_kov_alone_for_identical_claimed_guarantees() -> None:
    certificates = [approximate_dp_certificate(1.0)] * 1000
    best = compose(certificates, delta=1e-5)
    assert best.parameters["method"] == "optimal"
    assert best.epsilon == compose(certificates, method="optimal", delta=1e-5).epsilon
    assert kov_exact_delta(best.epsilon, 1.0, 0.0, 1000) <= 1e-5 * (1 + RELATIVE)


def test_basic_composition_above_the_exponent_range_answers() -> None:
    # Σ ε = 1000 > 709 (where e^ε overflows a double): basic composition is the canonical pair.
    certificate = compose([approximate_dp_certificate(1.0)] * 1000, method="basic", delta=1e-5)
    assert 999.0 < certificate.epsilon <= 1000.0
    # delta(e) = (1 - e^{e - 1000}) / (1 + e^{-1000}) at delta' = 1e-5: e = 1000 + ln(1 - 1e-5).
    assert certificate.epsilon == pytest.approx(1000 + math.log1p(-1e-5), abs=1e-9)
    assert compose([approximate_dp_certificate(1.0)] * 1000, method="basic", delta=0.0).epsilon == 1000.0


def test_advanced_composition_beyond_the_exponent_range_refuses() -> None:
    with pytest.raises(DPCertError, match="delta"):
        compose([approximate_dp_certificate(800.0)] * 2, method="advanced", delta=1e-5)


def test_nested_compositions_are_flattened_for_pld() -> None:
    inner = compose([laplace_certificate(10.0)] * 5, method="pld", delta=1e-6)
    outer = compose([inner, laplace_certificate(10.0)], method="pld", delta=1e-6)
    flat = compose([laplace_certificate(10.0)] * 6, method="pld", delta=1e-6)
    assert outer.epsilon == flat.epsilon
    assert laplace_delta_lower_bound(0.1, 6, outer.epsilon) <= 1e-6 * (1 + 1e-6)


# --------------------------------------------------------------------------- property tests
deltas = st.sampled_from([1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.1, 0.5, 0.9, 1 - 1e-9])
methods = st.sampled_from(["basic", "advanced", "optimal", "pld", "best"])


@settings(max_examples=25)
@given(
    epsilon0=st.sampled_from([0.001, 0.01, 0.1, 0.5, 1.0]),
    k=st.sampled_from([1, 2, 7, 100, 1000, 10_000, 100_000]),
    delta=deltas,
    method=methods,
)
def test_homogeneous_pure_dp_never_below_kov(epsilon0: float, k: int, delta: float, method: str) -> None:
    if method == "pld" and k * epsilon0 > 200:
        method = "best"  # the PLD window would exceed its size limit; best uses KOV here
    try:
        certificate = compose_counts([(approximate_dp_certificate(epsilon0), k)], method=method, delta=delta)
    except DPCertError:
        return  # refusing is allowed; a certificate below the truth is not
    assert kov_exact_delta(certificate.epsilon, epsilon0, 0.0, k) <= delta * (1 + RELATIVE)


@settings(max_examples=20)
@given(
    pairs=st.lists(
        st.tuples(st.sampled_from([0.05, 0.3, 1.0, 2.0]), st.sampled_from([0.0, 1e-9, 1e-4, 0.01])),
        min_size=1,
        max_size=5,
    ),
    target=st.sampled_from([1e-12, 1e-6, 0.02, 0.3, 0.9]),
    method=methods,
)
def test_heterogeneous_claimed_guarantees_never_below_brute_force(pairs, target, method) -> None:
    certificates = [approximate_dp_certificate(e, d) for e, d in pairs]
    try:
        certificate = compose(certificates, method=method, delta=target)
    except DPCertError:
        return
    assert brute_force_delta(certificate.epsilon, pairs) <= target * (1 + RELATIVE) + 1e-15


@settings(max_examples=12)
@given(
    sigmas=st.lists(st.sampled_from([0.5, 1.0, 3.0, 10.0, 40.0]), min_size=1, max_size=4),
    repeat=st.sampled_from([1, 10, 1000]),
    delta=deltas,
    method=st.sampled_from(["pld", "rdp", "best"]),
)
def test_gaussian_compositions_never_below_the_closed_form(sigmas, repeat, delta, method) -> None:
    certificates = [gaussian_certificate(s, delta=0.5) for s in sigmas] * repeat
    mu = math.sqrt(repeat * sum(1 / s**2 for s in sigmas))
    try:
        certificate = compose(certificates, method=method, delta=delta)
    except DPCertError:
        return
    assert gaussian_exact_delta(certificate.epsilon, mu) <= delta * (1 + RELATIVE)


@settings(max_examples=15)
@given(
    epsilon0=st.sampled_from([0.05, 0.3, 1.0]),
    k=st.sampled_from([1, 2, 5, 30]),
    delta=st.sampled_from([1e-15, 1e-10, 1e-5, 0.01, 0.3]),
    method=methods | st.just("rdp"),
)
def test_laplace_compositions_never_below_the_rounded_down_reference(epsilon0, k, delta, method) -> None:
    try:
        certificate = compose_counts([(laplace_certificate(1 / epsilon0), k)], method=method, delta=delta)
    except DPCertError:
        return
    assert laplace_delta_lower_bound(epsilon0, k, certificate.epsilon, steps=200) <= delta * (1 + 1e-6)


def test_the_laplace_reference_matches_the_brute_force_for_one_mechanism() -> None:
    # One Laplace mechanism: δ(ε) = 1 − e^{(ε − ε0)/2} exactly (KOV-style two-sided bound for Laplace,
    # e.g. Balle & Wang 2018, Sec. 5 on the Laplace privacy profile).
    epsilon0 = 0.5
    for epsilon in (0.0, 0.1, 0.3, 0.49):
        exact = -math.expm1((epsilon - epsilon0) / 2)
        reference = laplace_delta_lower_bound(epsilon0, 1, epsilon, steps=2000)
        assert exact * (1 - 2e-3) <= reference <= exact * (1 + 1e-9)


def test_kov_reference_matches_brute_force() -> None:
    for epsilon0, delta0, k in itertools.product((0.3, 1.0), (0.0, 0.01), (1, 3, 5)):
        for epsilon in (0.0, 0.2, 0.9):
            brute = brute_force_delta(epsilon, [(epsilon0, delta0)] * k)
            assert kov_exact_delta(epsilon, epsilon0, delta0, k) == pytest.approx(brute, rel=1e-9, abs=1e-15)


def test_the_tilted_fft_bound_against_exact_convolution_down_to_tiny_deltas() -> None:
    # A three-point loss pmf (losses −h, 0, h) composed 40 times, against the same convolution in
    # 40-digit mpmath: the bound is never below it and tight to 1e-6 relative, down to δ ≈ 1e-50.
    from dpcert.theory.pld import ComposedLossBound, LossPmf

    mpmath.mp.dps = 40
    h, probs, k = 0.01, [0.6, 0.39, 0.01], 40
    bound = ComposedLossBound([(LossPmf(h, -1, np.array(probs), 0.0), k)])
    exact = [mpmath.mpf(1)]
    for _ in range(k):
        step = [mpmath.mpf(0)] * (len(exact) + 2)
        for i, a in enumerate(exact):
            for j, b in enumerate(probs):
                step[i + j] += a * mpmath.mpf(b)
        exact = step
    losses = [(i - k) * h for i in range(len(exact))]  # entry i <-> loss index i − k
    smallest = 1.0
    for epsilon in (-0.1, 0.0, 0.05, 0.15, 0.25, 0.31):
        eps = mpmath.mpf(epsilon)
        reference = float(
            sum(
                (
                    m * (1 - mpmath.exp(eps - mpmath.mpf(x)))
                    for m, x in zip(exact, losses, strict=True)
                    if x > epsilon
                ),
                0,
            )
        )
        value = bound.delta_for(epsilon)
        assert reference <= value <= reference * (1 + 1e-6)
        smallest = min(smallest, reference)
    assert smallest < 1e-45
