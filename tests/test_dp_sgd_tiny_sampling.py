"""DP-SGD calibration where a record is rarely sampled: q just above δ / steps, z about 0.14 to 0.18.

There one step's PLD spans losses up to about d²/2 (d = 1/z), so the accounting runs on the coarser
pessimistic grid of :func:`~dpcert.accounting.dp_sgd.poisson_interval` and the search starts from
:func:`~dpcert.accounting.dp_sgd.rare_sampling_guess`.  Checked here: the certificate at the returned
z meets the target by dpcert's own proven accountant, a z smaller by the search tolerance does not,
and dp_accounting's PLD accountant (evaluated directly) puts its least z within 0.1 % below ours.
"""

from __future__ import annotations

import math

import pytest
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant

from dpcert import Certificate
from dpcert.accounting.dp_sgd import (
    COARSE_SPAN_POINTS,
    RELATIVE_TOLERANCE,
    SLOW_SPAN_POINTS,
    DPSGDCalibration,
    calibrate_dp_sgd,
    dp_sgd_certificate,
    poisson_interval,
    rare_sampling_guess,
)
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.subsampled_gaussian import (
    DEFAULT_INTERVAL,
    poisson_gaussian_loss_pmfs,
    poisson_sampled_gaussian_certificate,
)

EPSILON, DELTA = 8.0, 1e-5
CASES = [(2e-6, 10), (1.5e-6, 10), (5e-6, 10), (2e-7, 100)]  # (q, steps): steps x q = 1.5 to 5 delta


@pytest.fixture(scope="module", params=CASES, ids=[f"q={q:g}-steps={steps}" for q, steps in CASES])
def calibrated(request: pytest.FixtureRequest) -> DPSGDCalibration:
    q, steps = request.param
    return calibrate_dp_sgd(epsilon=EPSILON, delta=DELTA, sampling_probability=q, steps=steps)


def test_the_certificate_at_the_calibrated_noise_meets_the_target(calibrated: DPSGDCalibration) -> None:
    result = calibrated
    q, steps = result.sampling_probability, result.steps
    certificate = Certificate.from_json(result.certificate.to_json())  # re-derived from its parameters
    assert (certificate.epsilon, certificate.delta) == (EPSILON, DELTA)
    assert certificate.delta_for(EPSILON) <= DELTA
    interval = certificate.parameters["value_discretization_interval"]
    assert interval == poisson_interval(result.sigma, q, steps) > DEFAULT_INTERVAL
    # the same noise multiplier accounted afresh, giving ε: its least δ there is at most the target
    again = dp_sgd_certificate(result.noise_multiplier, epsilon=EPSILON, sampling_probability=q, steps=steps)
    assert again.delta <= DELTA
    assert result.search.evaluations <= 6  # the search starts within a few 1e-4 of the answer


def test_a_noise_multiplier_smaller_by_the_tolerance_misses_the_target(calibrated: DPSGDCalibration) -> None:
    result = calibrated
    q, steps = result.sampling_probability, result.steps
    smaller = result.noise_multiplier * (1.0 - RELATIVE_TOLERANCE)
    certificate = dp_sgd_certificate(smaller, epsilon=EPSILON, sampling_probability=q, steps=steps)
    assert certificate.delta > DELTA
    assert result.search.largest_failing is not None
    assert smaller <= result.search.largest_failing < result.noise_multiplier


def test_dp_accounting_least_noise_is_within_a_tenth_of_a_percent_below(calibrated: DPSGDCalibration) -> None:
    """dp_accounting's pessimistic PLD accountant (``PLDAccountant``, PoissonSampledDpEvent of a
    GaussianDpEvent composed ``steps`` times) at interval 1e-2; at these z its δ(8) is within 1e-7
    relative of its answer at 1e-4, which takes 15-30 s each.  Its δ at z is at most the target
    (allowing 1e-6 relative for its floating-point FFT, which carries no proven error bound) and above
    it at 0.999 z, so its least z lies in (0.999 z, z]; dpcert's δ(8) at z is within 0.1 % of its own."""

    def delta_of(z: float) -> float:
        accountant = PLDAccountant(value_discretization_interval=1e-2)
        step = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z))
        accountant.compose(dp_event.SelfComposedDpEvent(step, steps))
        return float(accountant.get_delta(EPSILON))

    result = calibrated
    q, steps = result.sampling_probability, result.steps
    z = result.noise_multiplier
    reference = delta_of(z)
    assert reference <= DELTA * (1.0 + 1e-6), reference
    assert delta_of(z * (1.0 - 1e-3)) > DELTA
    ours = result.certificate.delta_for(EPSILON)
    assert abs(ours / reference - 1.0) < 1e-3, (ours, reference)


def test_the_interval_is_the_default_unless_one_step_spans_too_many_points() -> None:
    """The span of one step's PLD (closed form in poisson_interval) checked against the pmf built by
    the mechanism: at z = 0.15, q = 2e-6 it holds more than SLOW_SPAN_POINTS points at 1e-4, and at
    most COARSE_SPAN_POINTS at the interval chosen, which is the least power-of-two multiple that does."""
    q, z = 2e-6, 0.15
    interval = poisson_interval(z, q, 10)
    assert interval == DEFAULT_INTERVAL * 16
    pmf = poisson_gaussian_loss_pmfs(1.0 / z, q, interval).remove
    finer = poisson_gaussian_loss_pmfs(1.0 / z, q, interval / 2).remove
    assert pmf.probs.size <= COARSE_SPAN_POINTS < finer.probs.size
    assert pmf.probs.size * 16 > SLOW_SPAN_POINTS
    # the usual DP-SGD regime keeps the default: z = 1 (span about 8) and z = 0.2 at q = 0.01, 100
    # steps, whose composed loss is wide enough for the profile's own coarser grid (4e-4)
    assert poisson_interval(1.0, 0.01, 1000) == DEFAULT_INTERVAL
    assert poisson_interval(0.2, 0.01, 100) == DEFAULT_INTERVAL
    assert poisson_interval(1.5, q, 10, sensitivity=10.0) == interval  # d = Δ/σ is what counts
    with pytest.raises(InvalidParameter, match="sigma"):
        poisson_interval(0.0, q, 10)


def test_the_rare_sampling_guess_is_the_exact_least_noise_of_one_step() -> None:
    """One step's remove direction is exactly q δ_G(ε') (Balle, Barthe & Gaboardi 2018), and its add
    direction loses less here: the least z of one step's profile is the guess up to the pessimism of
    the proven accountant: a certificate at (1 − 1e-4) g misses the target, one at (1 + 1e-4) g meets it."""
    q, epsilon, delta = 0.01, 0.5, 1e-6
    guess = rare_sampling_guess(epsilon, delta, q, 1)
    assert poisson_sampled_gaussian_certificate(guess * (1 - 1e-4), q, 1, epsilon=epsilon).delta > delta
    assert poisson_sampled_gaussian_certificate(guess * (1 + 1e-4), q, 1, epsilon=epsilon).delta <= delta
    with pytest.raises(InvalidParameter, match="sampling_probability"):
        rare_sampling_guess(epsilon, delta, 1e-7, 10)


def test_schedules_whose_example_is_sampled_with_probability_at_most_delta_are_refused() -> None:
    """q = 1.000001e-6 over 10 steps: steps x q exceeds δ = 1e-5, but 1 − (1 − q)^10 = 9.99996e-6 does
    not, so every run, even without noise, is (0, 1e-5)-DP and no noise multiplier is least."""
    q = 1.000001e-6
    assert 10 * q > DELTA and -math.expm1(10 * math.log1p(-q)) < DELTA
    with pytest.raises(InvalidParameter, match=r"sampling_probability.*1 - \(1 - q\)\^steps > delta"):
        calibrate_dp_sgd(epsilon=EPSILON, delta=DELTA, sampling_probability=q, steps=10)


def test_noise_too_small_for_the_float_range_is_refused_naming_the_noise_multiplier():
    # at z = 0.03 one step's loss reaches about 12/z + 1/(2 z^2) = 955 > 700: e^loss overflows
    with pytest.raises(InvalidParameter) as refused:
        dp_sgd_certificate(0.03, delta=1e-5, steps=10, sampling_probability=2e-6)
    assert refused.value.name == "noise_multiplier"


def test_a_huge_target_epsilon_is_bounded_where_a_pass_tilts_beyond_its_roundoff_bound():
    # z = 0.0581 at epsilon = 300 (q = 1e-3, 10 steps): the pass tilted towards epsilon = 300 has no
    # proven round-off bound (rho >= 1); it proves nothing, and the other passes bound delta.  The
    # value agrees with dp_accounting's PLD accountant (interval 1e-2) within 0.1 %.
    certificate = dp_sgd_certificate(0.0581, epsilon=300, sampling_probability=1e-3, steps=10)
    accountant = PLDAccountant(value_discretization_interval=1e-2)
    event = dp_event.PoissonSampledDpEvent(1e-3, dp_event.GaussianDpEvent(0.0581))
    accountant.compose(event, 10)
    reference = accountant.get_delta(300)
    assert math.isfinite(certificate.delta) and 0 < certificate.delta < 1
    assert certificate.delta == pytest.approx(reference, rel=1e-3)
