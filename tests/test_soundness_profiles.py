"""Every single-mechanism privacy profile against an independent 40-digit reference, at the edges.

For each profile, hypothesis (derandomized, see conftest.py) draws parameters and a target ε or δ
across the edge regimes — δ from 1e-15 to 1 − 1e-9, up to 1e5 Gaussian compositions, bit sums over
n = 1–3 users with p ≠ 1/2 — and checks that dpcert never claims less privacy loss than the
reference (δ(ε) never below the true δ, ε(δ) never below the true ε) and, for the exact profiles,
that it is not needlessly loose.  The references are written from the definitions of the hockey-stick
divergence with mpmath, independently of the code under test:

* Gaussian: Balle & Wang 2018, Thm 8, δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), μ = Δ√k/σ.
* Laplace: δ(ε) = 1 − e^{(ε − Δ/b)/2} for ε < Δ/b (the mass where the loss exceeds ε).
* Discrete Laplace: the divergence summed over the integers, tails as geometric series.
* Binary sum (Cheu et al. 2019): the divergence of Bin(N, 1/2) and Bin(N, 1/2) + 1 from binomials.
* Bit sum, one coordinate: the worst shifted pair Bin(nb, p) + s vs Bin(nb, p) + s + g, both directions.
* Declared (ε, δ): the canonical pair of Kairouz, Oh & Viswanath 2015, Thm 2.1.
"""

from __future__ import annotations

import math

import mpmath
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcert.certificates import ApproximateDPProfile
from dpcert.mechanisms.discrete_laplace import DiscreteLaplaceProfile
from dpcert.mechanisms.gaussian import GaussianProfile
from dpcert.mechanisms.laplace import LaplaceProfile
from dpcert.mechanisms.shuffle.binary_sum import BinarySumProfile
from dpcert.mechanisms.shuffle.binomial_sum import BinomialSumProfile

DIGITS = 40
# Relative looseness allowed of an exact profile (its documented safe-side allowances are far smaller).
LOOSENESS = 1e-6

log_delta = st.floats(math.log(1e-15), math.log(1 - 1e-9))
deltas = log_delta.map(math.exp).filter(lambda d: 0.0 < d < 1.0)


def _gaussian_reference(epsilon: float, mu: float) -> mpmath.mpf:
    with mpmath.workdps(DIGITS):
        mu, eps = mpmath.mpf(mu), mpmath.mpf(epsilon)
        return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


def _check_profile_against(profile, reference, epsilon: float, delta: float, exact: bool) -> None:
    """δ(ε) >= reference δ(ε); ε(δ) is valid for the reference; exact profiles are also tight."""
    claimed = profile.delta_for(epsilon)
    true = reference(epsilon)
    assert claimed >= true, (epsilon, claimed, float(true))
    if exact:
        assert claimed <= true * (1 + LOOSENESS) + 1e-300
    inverse = profile.epsilon_for(delta)
    if math.isfinite(inverse):
        assert reference(inverse) <= delta, (delta, inverse, float(reference(inverse)))


@given(
    sigma=st.floats(0.05, 200.0),
    sensitivity=st.floats(0.01, 10.0),
    compositions=st.one_of(st.integers(1, 100), st.integers(1, 100_000)),
    epsilon=st.floats(0.0, 60.0),
    delta=deltas,
)
@settings(max_examples=150)
def test_gaussian_profile_never_below_the_closed_form(sigma, sensitivity, compositions, epsilon, delta):
    profile = GaussianProfile({"sigma": sigma, "sensitivity": sensitivity, "compositions": compositions})
    mu = sensitivity * math.sqrt(compositions) / sigma
    reference = lambda e: _gaussian_reference(e, mu)  # noqa: E731
    if reference(epsilon) < 1e-300:  # below double range: only require a valid (tiny) answer
        assert profile.delta_for(epsilon) >= 0.0
        epsilon = 0.0
    _check_profile_against(profile, reference, epsilon, delta, exact=False)
    # tight where the value is representable: within the documented allowance of the closed form
    claimed, true = profile.delta_for(epsilon), reference(epsilon)
    if true > 1e-290:
        assert claimed <= true * (1 + 1e-6) + 1e-300


def _laplace_reference(pure_epsilon: float):
    def reference(epsilon: float) -> mpmath.mpf:
        with mpmath.workdps(DIGITS):
            if epsilon >= pure_epsilon:
                return mpmath.mpf(0)
            return -mpmath.expm1((mpmath.mpf(epsilon) - mpmath.mpf(pure_epsilon)) / 2)

    return reference


@given(
    scale=st.floats(0.001, 1000.0),
    sensitivity=st.floats(0.01, 100.0),
    fraction=st.floats(0, 1.2),
    delta=deltas,
)
@settings(max_examples=150)
def test_laplace_profile_never_below_the_closed_form(scale, sensitivity, fraction, delta):
    profile = LaplaceProfile({"scale": scale, "sensitivity": sensitivity})
    true_pure = mpmath.mpf(sensitivity) / mpmath.mpf(scale)  # exact quotient of the two floats, 40 digits
    reference = _laplace_reference(true_pure)
    _check_profile_against(profile, reference, fraction * profile.pure_epsilon, delta, exact=True)


def _discrete_laplace_reference(a: float, shift: int):
    def reference(epsilon: float) -> mpmath.mpf:
        with mpmath.workdps(DIGITS):
            a_, e = mpmath.mpf(a), mpmath.mpf(epsilon)
            norm = (1 - mpmath.exp(-a_)) / (1 + mpmath.exp(-a_))
            growth = mpmath.exp(e)
            # x <= 0: P = norm e^{a x}, Q = norm e^{a (x - shift)}; the geometric sum of the positive parts
            total = max(mpmath.mpf(0), norm * (1 - growth * mpmath.exp(-a_ * shift)) / (1 - mpmath.exp(-a_)))
            for x in range(1, shift):  # 0 < x < shift
                p, q = norm * mpmath.exp(-a_ * x), norm * mpmath.exp(-a_ * (shift - x))
                total += max(mpmath.mpf(0), p - growth * q)
            return total  # x >= shift: P/Q = e^{-a shift} < e^eps contributes nothing

    return reference


@given(a=st.floats(0.01, 5.0), shift=st.integers(1, 30), fraction=st.floats(0, 1.2), delta=deltas)
@settings(max_examples=100)
def test_discrete_laplace_profile_never_below_the_summed_divergence(a, shift, fraction, delta):
    profile = DiscreteLaplaceProfile({"noise_parameter": a, "sensitivity": shift})
    _check_profile_against(
        profile, _discrete_laplace_reference(a, shift), fraction * profile.pure_epsilon, delta, exact=True
    )


def _shifted_binomial_reference(trials: int, p: float, shift: int):
    """max over directions of Σ_k (P(k) − e^ε P(k − shift))_+ for the count law P = Bin(trials, p)."""
    with mpmath.workdps(DIGITS):
        pmf = [
            mpmath.binomial(trials, k) * mpmath.mpf(p) ** k * (1 - mpmath.mpf(p)) ** (trials - k)
            for k in range(trials + 1)
        ]

    def at(k: int) -> mpmath.mpf:
        return pmf[k] if 0 <= k <= trials else mpmath.mpf(0)

    def reference(epsilon: float) -> mpmath.mpf:
        with mpmath.workdps(DIGITS):
            growth = mpmath.exp(mpmath.mpf(epsilon))
            support = range(-shift, trials + shift + 1)
            up = sum(max(mpmath.mpf(0), at(k) - growth * at(k - shift)) for k in support)
            down = sum(max(mpmath.mpf(0), at(k - shift) - growth * at(k)) for k in support)
            return max(up, down)

    return reference


@given(noise_bits=st.integers(1, 300), epsilon=st.floats(0.0, 8.0), delta=deltas)
@settings(max_examples=60)
def test_binary_sum_profile_never_below_the_binomial_divergence(noise_bits, epsilon, delta):
    profile = BinarySumProfile({"noise_bits": noise_bits})
    reference = _shifted_binomial_reference(noise_bits, 0.5, 1)
    _check_profile_against(profile, reference, epsilon, delta, exact=False)


@given(
    users=st.integers(1, 3),
    g=st.integers(1, 4),
    b=st.integers(1, 12),
    p=st.sampled_from([0.5, 0.3, 0.7, 0.1, 0.93]),
    epsilon=st.floats(0.0, 6.0),
    delta=deltas,
)
@settings(max_examples=60)
def test_bit_sum_one_coordinate_never_below_the_worst_shifted_pair(users, g, b, p, epsilon, delta):
    # One coordinate, replace-one: the encoded values of the changed user move the count by at most g,
    # and the worst case over inputs is the shift by g of Bin(n b, p) (review tests check the attainment).
    profile = BinomialSumProfile({"g": g, "b": b, "p": p, "users": users})
    reference = _shifted_binomial_reference(users * b, p, g)
    _check_profile_against(profile, reference, epsilon, delta, exact=False)


@given(
    epsilon0=st.floats(0.0, 20.0),
    delta0=st.one_of(st.just(0.0), deltas),
    epsilon=st.floats(0.0, 25.0),
    delta=deltas,
)
@settings(max_examples=150)
def test_declared_profile_never_below_the_canonical_pair(epsilon0, delta0, epsilon, delta):
    if epsilon0 == 0.0 and delta0 == 0.0:
        epsilon0 = 1e-3
    profile = ApproximateDPProfile({"epsilon": epsilon0, "delta": delta0})

    def reference(e: float) -> mpmath.mpf:
        with mpmath.workdps(DIGITS):
            if e >= epsilon0:
                return mpmath.mpf(delta0)
            big = mpmath.exp(mpmath.mpf(epsilon0))
            e = mpmath.mpf(e)
            return delta0 + (1 - mpmath.mpf(delta0)) * mpmath.exp(e) * mpmath.expm1(epsilon0 - e) / (1 + big)

    _check_profile_against(profile, reference, epsilon, delta, exact=True)
