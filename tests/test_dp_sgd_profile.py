"""DP-SGD accounting: the Poisson-subsampled Gaussian profile is proven, monotone, tight and floor-free.

References used below:

* dp_accounting 0.6 (pessimistic connect-the-dots PLD at interval 1e-4, computed in the tests);
* prv_accountant 0.2.0 (Gopi, Lee & Wutschitz 2021): ``PRVAccountant(prvs=[PoissonSubsampledGaussian
  Mechanism(1e-3, 1.1)], eps_error=0.01, delta_error=1e-8, max_self_compositions=[1000])
  .compute_epsilon(1e-5, [1000])`` = (0.11235, 0.12236, 0.13238), quoted here;
* prv_accountant's published tests (github.com/microsoft/prv_accountant, tests/test_dpsgd.py
  ``test_inverse`` and tests/test_accountant.py ``test_analytic_solution``,
  ``test_analytic_solution_heterogeneous``);
* exact single-step profiles by mpmath at 40 digits (the loss is monotone in the output, so
  δ(ε) = P(L > ε) − e^ε Q(L > ε) at the crossing point).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy.special import ndtr

from dpcert import Certificate
from dpcert._numerics import UNIT_ROUNDOFF
from dpcert.errors import CertificateMismatch, InvalidParameter
from dpcert.mechanisms.subsampled_gaussian import (
    NDTR_ULPS,
    PoissonSampledGaussianProfile,
    poisson_gaussian_loss_pmfs,
    poisson_sampled_gaussian_certificate,
)
from dpcert.theory.gaussian import gaussian_delta

PRV_LOWER, PRV_UPPER = 0.11235, 0.13238  # (1e-3, 1.1, 1000 steps, δ = 1e-5), prv_accountant 0.2.0


def profile(sigma: float, q: float, steps: int) -> PoissonSampledGaussianProfile:
    return PoissonSampledGaussianProfile({"sigma": sigma, "sampling_probability": q, "steps": steps})


def pessimistic_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    single = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4)
    return float(single.self_compose(steps).get_epsilon_for_delta(delta))


def pmf_delta(pmf, epsilon: float) -> float:
    above = pmf.losses > epsilon
    return pmf.infinity_mass + float(np.sum(pmf.probs[above] * -np.expm1(epsilon - pmf.losses[above])))


def exact_single_step(sigma: float, q: float, epsilon: float) -> tuple[float, float]:
    """δ(ε) of one step in both directions, by mpmath (40 digits) at the loss's crossing point."""
    with mpmath.workdps(40):
        d = 1 / mpmath.mpf(sigma)
        q = mpmath.mpf(q)
        eps = mpmath.mpf(epsilon)
        phi_c = lambda x: mpmath.ncdf(-x)  # noqa: E731
        # remove: P = (1-q)N(0)+qN(d), Q = N(0); L > eps iff q e^{zd - d²/2} > e^eps - 1 + q
        c = mpmath.expm1(eps) + q
        if c <= 0:
            remove = 1 - mpmath.exp(eps)
        else:
            z = (mpmath.log(c / q) + d * d / 2) / d
            remove = (1 - q) * phi_c(z) + q * phi_c(z - d) - mpmath.exp(eps) * phi_c(z)
        # add: P = N(0), Q = (1-q)N(0)+qN(d); L > eps iff q e^{zd - d²/2} < e^{-eps} - 1 + q
        c = mpmath.expm1(-eps) + q
        if c <= 0:
            add = mpmath.mpf(0)
        else:
            z = (mpmath.log(c / q) + d * d / 2) / d
            cdf = mpmath.ncdf
            add = cdf(z) - mpmath.exp(eps) * ((1 - q) * cdf(z) + q * cdf(z - d))
        return float(remove), float(add)


def test_ndtr_is_as_accurate_as_the_masses_assume():
    """The single-step masses assume ndtr(x) within NDTR_ULPS (1 + x²) ulp; mpmath checks it."""
    rng = np.random.default_rng(20261128)
    points = np.concatenate([rng.uniform(-25.0, 8.0, 400), rng.normal(0.0, 1e-3, 50), [-24.9, -12.0, 0.0]])
    with mpmath.workdps(40):
        for x in points:
            exact = mpmath.ncdf(mpmath.mpf(float(x)))
            error = abs(mpmath.mpf(float(ndtr(x))) - exact) / exact
            assert error <= NDTR_ULPS * UNIT_ROUNDOFF * (1.0 + x * x)


@pytest.mark.parametrize(
    ("sigma", "q"), [(1.1, 1e-3), pytest.param(0.5, 0.1, marks=pytest.mark.slow), (2.0, 1.0)]
)
def test_single_step_bounds_the_exact_profile_and_matches_dp_accounting(sigma, q):
    pair = poisson_gaussian_loss_pmfs(1.0 / sigma, q, 1e-4)
    theirs = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4)
    for epsilon in (0.0, 0.05, 0.3, 1.0, 2.5):
        exact_remove, exact_add = exact_single_step(sigma, q, epsilon)
        ours_remove, ours_add = pmf_delta(pair.remove, epsilon), pmf_delta(pair.add, epsilon)
        assert ours_remove >= exact_remove
        assert ours_add >= exact_add
        # connect-the-dots at h = 1e-4 and the relative mass bounds cost little
        assert ours_remove <= exact_remove * (1 + 2e-3) + 1e-30
        assert ours_add <= exact_add * (1 + 2e-3) + 1e-30
        reference = float(theirs.get_delta_for_epsilon(epsilon))
        assert max(ours_remove, ours_add) == pytest.approx(reference, rel=2e-3, abs=1e-25)


def test_regression_point_is_monotone_tight_and_above_prv_lower_bound():
    """(q, σ, steps) = (1e-3, 1.1, 1000): δ(ε) used to jump from 9e-7 to 0.42 and back, and ε at
    δ = 1e-5 was 0.5295 from the RDP fallback where dp_accounting gives 0.1224."""
    p = profile(1.1, 1e-3, 1000)
    grid = np.arange(0.0, 1.0, 0.0025)
    values = np.array([p.delta_for(e) for e in grid])
    assert np.all(np.diff(values) <= 0.0)
    assert values[grid >= 0.3].max() < 1e-9  # no band of large values, no floor
    epsilon = p.epsilon_for(1e-5)
    reference = pessimistic_epsilon(1.1, 1e-3, 1000, 1e-5)
    assert abs(epsilon - reference) <= max(0.01 * reference, 0.005)
    assert PRV_LOWER <= epsilon <= PRV_UPPER
    assert p.delta_for(epsilon) <= 1e-5
    # at δ = 1e-8 the RDP conversion gave 0.990; the PLD bound itself now reaches it
    assert abs(p.epsilon_for(1e-8) - pessimistic_epsilon(1.1, 1e-3, 1000, 1e-8)) <= 0.005


def test_a_nearly_gaussian_composition_answers_from_one_wide_cell_and_stays_tight():
    """(0.01, 2, 10⁵): the composed loss is nearly Gaussian, so cell 0 reaches 8 σ₀ with one pass per
    direction; δ(ε) stays non-increasing across its edge and ε stays within 1 % of dp_accounting."""
    p = profile(2.0, 0.01, 100_000)
    curve = p.curve
    assert curve.wide_first_cell
    edge = curve.edges(0)[1]
    grid = np.linspace(0.5 * edge, 2.0 * edge, 61)
    values = np.array([p.delta_for(e) for e in grid])
    assert np.all(np.diff(values) <= 0.0)
    for delta in (1e-5, 1e-8):
        epsilon = p.epsilon_for(delta)
        assert p.delta_for(epsilon) <= delta
        reference = pessimistic_epsilon(2.0, 0.01, 100_000, delta)
        assert abs(epsilon - reference) <= max(0.01 * reference, 0.005)


def test_a_heavy_tailed_composition_keeps_the_narrow_first_cell():
    """(1e-3, 0.8, 100): one step in a thousand carries almost all the loss, so the loss tilted to
    a wide cell's edge spreads far more than untilted; a wide cell 0 would answer 0.154 at δ = 1e-5
    where dp_accounting's pessimistic PLD gives 0.141."""
    p = profile(0.8, 1e-3, 100)
    assert not p.curve.wide_first_cell
    reference = pessimistic_epsilon(0.8, 1e-3, 100, 1e-5)
    assert abs(p.epsilon_for(1e-5) - reference) <= max(0.01 * reference, 0.005)


@pytest.mark.slow
def test_a_direction_whose_losses_end_early_keeps_its_own_tilt():
    """(1e-3, 1.1, 10⁴) at δ = 1e-8: the add direction's losses end near 1, and tilting its pass to
    the centre of a cell reaching 4.8 overflowed it, leaving only its untilted pass: ε was 0.9055."""
    epsilon = profile(1.1, 1e-3, 10_000).epsilon_for(1e-8)
    reference = pessimistic_epsilon(1.1, 1e-3, 10_000, 1e-8)
    assert abs(epsilon - reference) <= max(0.01 * reference, 0.005)


@pytest.mark.slow
def test_epsilon_decreases_with_delta_and_is_checked():
    p = profile(0.8, 1e-3, 1000)
    deltas = [1e-4, 1e-5, 1e-6, 1e-8, 1e-10]
    epsilons = [p.epsilon_for(d) for d in deltas]
    assert epsilons == sorted(epsilons)
    for delta, epsilon in zip(deltas, epsilons, strict=True):
        assert p.delta_for(epsilon) <= delta
        assert p.delta_for(epsilon * (1 - 1e-6)) > delta  # the least such ε, to bisection precision
    assert abs(epsilons[1] - pessimistic_epsilon(0.8, 1e-3, 1000, 1e-5)) <= 0.005  # was 0.987


def test_delta_does_not_depend_on_what_was_asked_before():
    from dpcert.mechanisms import subsampled_gaussian as sampled_gaussian

    points = (0.05, 0.2, 0.6, 1.3)
    sampled_gaussian._composed_curve.cache_clear()
    direct = [profile(0.8, 1e-3, 1000).delta_for(e) for e in points]
    sampled_gaussian._composed_curve.cache_clear()
    warmed = profile(0.8, 1e-3, 1000)
    warmed.epsilon_for(1e-10)  # visits every cell up to a large ε first
    assert [warmed.delta_for(e) for e in reversed(points)][::-1] == direct


def test_never_below_dp_accountings_optimistic_estimate():
    p = profile(1.1, 0.01, 300)
    optimistic = pld.from_gaussian_mechanism(
        1.1,
        sampling_prob=0.01,
        pessimistic_estimate=False,
        value_discretization_interval=1e-4,
        use_connect_dots=False,
    ).self_compose(300)
    for epsilon in (0.25, 0.5, 1.0, 1.5, 2.0, 3.0):
        # the optimistic PLD is below the truth in exact arithmetic; its FFT round-off is ~1e-14
        assert p.delta_for(epsilon) >= float(optimistic.get_delta_for_epsilon(epsilon)) - 1e-13


@pytest.mark.parametrize(("sigma", "steps"), [(100.0, 10_000), (10.0, 100)])
def test_prv_accountant_analytic_solutions(sigma, steps):
    """prv_accountant tests/test_accountant.py: q = 1, σ√(1/steps) = 1, δ(4) of the Gaussian with
    μ = 1 (Dong, Roth & Su 2019), to rel 1e-3; here also never below it."""
    exact = gaussian_delta(4.0, math.sqrt(steps) / sigma)
    ours = profile(sigma, 1.0, steps).delta_for(4.0)
    assert exact <= ours <= exact * (1 + 1e-3)


def test_prv_accountant_inverse():
    """prv_accountant tests/test_dpsgd.py::test_inverse: σ = find_noise_multiplier(2e-3, 10 000, 4.0,
    1e-7) = 0.6764091553781707 (prv_accountant 0.2.0), asserted ε = 4 ± 0.5 at δ = 1e-7.  The former
    profile gave 4.657; dp_accounting's pessimistic PLD gives 3.9458, prv's estimate 3.9405."""
    epsilon = profile(0.6764091553781707, 2e-3, 10_000).epsilon_for(1e-7)
    assert epsilon == pytest.approx(4.0, abs=0.5)
    assert epsilon == pytest.approx(3.9458, abs=0.005)


def test_certificates_round_trip_and_former_claims_still_verify():
    certificate = poisson_sampled_gaussian_certificate(1.1, 1e-3, 1000, delta=1e-5)
    assert Certificate.from_json(certificate.to_json()) == certificate
    former = certificate.to_dict()
    former["guarantee"] = {**former["guarantee"], "epsilon": 0.5295}  # the former RDP answer
    restored = Certificate.from_dict(former)
    assert restored.epsilon == 0.5295 and restored.delta == 1e-5
    assert restored.delta_for(0.5295) <= 1e-5


@pytest.mark.parametrize(
    ("sigma", "q", "steps", "delta", "former_epsilon"),
    [  # ε the former profile (dp_accounting masses with absolute allowances, RDP fallback) certified
        (1.1, 0.01, 1000, 1e-5, 1.5162417611836734),
        (2.0, 0.05, 10, 1e-5, 0.3848209995186599),
        (0.8, 0.01, 300, 1e-6, 2.5525890810661043),
        (1.1, 0.01, 1000, 1e-8, 2.493121285248451),
    ],
)
def test_certificates_of_the_former_profile_still_verify(sigma, q, steps, delta, former_epsilon):
    p = profile(sigma, q, steps)
    assert p.delta_for(former_epsilon) <= delta
    assert p.epsilon_for(delta) <= former_epsilon


@pytest.mark.parametrize(
    ("sigma", "q", "steps", "delta", "former_epsilon"),
    [  # the least ε of the narrow-cell curve (one pass per cell of 6 σ₀), as earlier releases certified
        (5.0, 0.1, 100_000, 1e-5, 46.83811651625957),
        (1.1, 0.01, 100_000, 1e-8, 26.08932221426151),
    ],
)
def test_claims_at_the_narrow_cell_curves_least_epsilon_still_verify(sigma, q, steps, delta, former_epsilon):
    """The wide first cell is looser than the narrow cells by up to 2e-4 relative at these points; a
    certificate issued at the narrow curve's least ε still verifies through ``former_delta_for``, and
    a claim below what either bound supports is still refused."""
    p = profile(sigma, q, steps)
    assert p.delta_for(former_epsilon) > delta  # the current curve alone would refuse it
    assert p.former_delta_for(former_epsilon) <= delta
    certificate = poisson_sampled_gaussian_certificate(sigma, q, steps, delta=delta).to_dict()
    certificate["guarantee"] = {**certificate["guarantee"], "epsilon": former_epsilon}
    assert Certificate.from_dict(certificate).epsilon == former_epsilon
    certificate["guarantee"] = {**certificate["guarantee"], "epsilon": former_epsilon * (1.0 - 1e-4)}
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(certificate)


def test_inputs_are_checked_before_work():
    with pytest.raises(InvalidParameter, match="steps"):
        poisson_sampled_gaussian_certificate(1.0, 0.01, 10**7 + 1, delta=1e-5)
    with pytest.raises(InvalidParameter, match="steps"):
        profile(1.0, 0.01, 10**7 + 1)
    with pytest.raises(InvalidParameter, match="sigma"):
        profile(0.0, 0.01, 10)
    with pytest.raises(InvalidParameter, match="sampling_probability"):
        profile(1.0, 1.5, 10)
    with pytest.raises(InvalidParameter, match="value_discretization_interval"):
        poisson_sampled_gaussian_certificate(0.5, 0.1, 10, delta=1e-5, value_discretization_interval=1e-8)


@pytest.mark.slow
def test_a_run_whose_noise_and_rate_change_halfway_composes_through_the_pld_path():
    """500 steps at (q, σ) = (1e-3, 1.1) then 500 at (2e-3, 0.8): the certificates hand their
    single-step pairs to the composition (privacy_loss_parts), which matches dp_accounting's
    PLDAccountant on the same two phases and stays above its optimistic PLD."""
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.privacy_accountant import NeighboringRelation

    from dpcert.accounting.composition import compose

    phases = ((1e-3, 1.1), (2e-3, 0.8))
    first, second = (poisson_sampled_gaussian_certificate(s, q, 500, delta=1e-6) for q, s in phases)
    composed = compose([first, second], method="pld", delta=1e-5)
    accountant = pld_privacy_accountant.PLDAccountant(
        NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=1e-4
    )
    optimistic = None
    for q, sigma in phases:
        accountant.compose(
            dp_event.SelfComposedDpEvent(
                dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), 500
            )
        )
        part = pld.from_gaussian_mechanism(
            sigma,
            sampling_prob=q,
            pessimistic_estimate=False,
            use_connect_dots=False,
            value_discretization_interval=1e-3,
        ).self_compose(500)
        optimistic = part if optimistic is None else optimistic.compose(part)
    reference = accountant.get_epsilon(1e-5)
    assert abs(composed.epsilon - reference) <= max(0.01 * reference, 0.005)
    assert composed.epsilon >= optimistic.get_epsilon_for_delta(1e-5)
