"""Secure Laplace and Gaussian on a grid: rounding charged, outputs exact, audits pass where float fails.

Statistical tests are seeded; chi-square tests use α = 1e-3 and audits their 95 % confidence.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpcert import Certificate
from dpcert.audits import audit
from dpcert.cli import main
from dpcert.errors import DataOutOfBounds, InvalidParameter
from dpcert.mechanisms.discrete_gaussian import DiscreteGaussianProfile, discrete_gaussian_delta
from dpcert.mechanisms.secure.noise import Grid, secure_gaussian, secure_laplace
from dpcert.theory.gaussian import analytic_gaussian_sigma

ALPHA = 1e-3


def run_cli(capsys, *argv: str) -> tuple[int, dict, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, json.loads(captured.out) if "--json" in argv else {}, captured.err


@pytest.mark.parametrize("target, delta", [("builtin:laplace", "0"), ("builtin:gaussian", "1e-5")])
def test_floating_point_audit_flags_float_noise_but_not_the_secure_sampler(capsys, target, delta):
    common = [target, "--input", "0", "--neighbour", "1", "--epsilon", "1", "--delta", delta]
    common += ["--floating-point", "--json", "--seed", "5"]
    status, payload, _ = run_cli(capsys, "audit", *common, "--secure")
    assert status == 0 and payload["verdict"] == "consistent"
    assert payload["parameters"]["sampler"] == "integer-exact"
    status, payload, _ = run_cli(capsys, "audit", *common)
    assert status == 1 and payload["verdict"] == "violated"


def test_secure_laplace_passes_the_ordinary_audit_at_a_coarse_grid():
    # grid 1/4 with Δ = 1: integer sensitivity 5, so the discrete noise must be calibrated for 5 steps
    mechanism = secure_laplace(1.0, granularity=0.25, bits="rng")
    assert mechanism.certificate.parameters["sensitivity"] == 5
    report = audit(mechanism, 0.0, 1.0, epsilon=1.0, samples=200_000, seed=3)
    assert report.verdict == "consistent"


def test_grid_rounding_and_integer_sensitivity_are_exact():
    grid = Grid.of(2.0**-3)
    assert grid.granularity == 0.125
    assert grid.integer_sensitivity(1.0) == 9  # ⌊1/0.125⌋ + 1
    assert grid.integer_sensitivity(1.0, coordinates=3) == 11
    assert grid.integer_sensitivity(0.3) == 3  # ⌊2.4⌋ + 1
    values = np.array([0.0625, 0.1875, -0.0625, 1.3, 1e9])
    assert list(grid.to_units(values)) == [0, 2, 0, 10, 8_000_000_000]  # half to even, exact
    # every pair within Δ = 0.3 moves by at most the integer sensitivity after rounding
    rng = np.random.default_rng(0)
    a = rng.uniform(-5, 5, 100_000)
    b = a + rng.uniform(-0.3, 0.3, a.size)
    assert np.max(np.abs(grid.to_units(a) - grid.to_units(b))) <= grid.integer_sensitivity(0.3)
    with pytest.raises(InvalidParameter):
        Grid.of(0.3)
    with pytest.raises(DataOutOfBounds):
        grid.to_units(2.0**60)
    with pytest.raises(DataOutOfBounds):  # 2^60 + 1 would be rounded by the float conversion
        Grid.of(2.0**10).to_units(2**60 + 1)
    assert Grid.of(2.0**10).to_units(np.array([2**53, -(2**52)]))[0] == 2**43


def test_secure_laplace_noise_fits_the_discrete_laplace_pmf():
    mechanism = secure_laplace(scale=2.0, granularity=0.5, bits="rng")  # a = g/b = 1/4 exactly
    assert mechanism.noise_parameter == 0.25
    releases = mechanism(3.0, np.random.default_rng(21), size=100_000)
    units = releases / 0.5 - 6.0
    assert np.array_equal(units, np.round(units))
    support = np.arange(-60, 61)
    expected = math.tanh(0.125) * np.exp(-0.25 * np.abs(support)) * units.size
    observed = np.array([np.sum(units == x) for x in support])
    observed = np.append(observed, units.size - observed.sum())
    expected = np.append(expected, units.size - expected.sum())
    assert stats.chisquare(observed, expected).pvalue > ALPHA
    # the certificate charges the rounding: ε = a (⌊1/0.5⌋ + 1) = 0.75, not Δ/b = 0.5
    assert mechanism.certificate.epsilon == 0.75


def test_secure_laplace_calibration_meets_epsilon_with_little_extra_noise():
    for epsilon in (0.1, 1.0, 3.0):
        mechanism = secure_laplace(epsilon, sensitivity=2.0)
        assert mechanism.certificate.epsilon <= epsilon
        assert mechanism.certificate.epsilon >= epsilon * (1 - 2.0**-18)
        assert mechanism.scale == pytest.approx(2.0 / epsilon, rel=1e-5)
        release = mechanism(np.array([1.0]), None)  # operating-system bits
        assert release.shape == (1,)
        assert float(release[0] / mechanism.grid.granularity).is_integer()


def test_secure_gaussian_meets_the_claim_after_rounding():
    for epsilon, delta in ((1.0, 1e-5), (0.5, 1e-8), (2.0, 1e-3)):
        mechanism = secure_gaussian(epsilon, delta, bits="rng")
        certificate = mechanism.certificate
        assert certificate.mechanism == "discrete-gaussian" and certificate.parameters["granularity"] > 0
        assert mechanism.sigma == math.floor(mechanism.sigma)  # whole grid steps: small sampler integers
        shift = certificate.parameters["sensitivity"]
        assert shift == math.floor(1.0 / mechanism.grid.granularity) + 1
        assert discrete_gaussian_delta(epsilon, mechanism.sigma, shift) <= delta
        # a fine grid costs little: within 0.5 % of the continuous analytic sigma
        assert mechanism.real_sigma == pytest.approx(analytic_gaussian_sigma(epsilon, delta), rel=5e-3)


def test_secure_gaussian_vector_composes_every_coordinate_and_is_least():
    """Entry-wise sensitivity 1 over 4 coordinates: the certificate is the 4-fold composition at the
    rounded shift; the continuous analytic Gaussian for 4 compositions is a close lower reference."""
    epsilon, delta, dimension = 1.0, 1e-5, 4
    mechanism = secure_gaussian(epsilon, delta, dimension=dimension, bits="rng")
    certificate = mechanism.certificate
    assert certificate.parameters["compositions"] == dimension
    shift = certificate.parameters["sensitivity"]
    assert shift == math.floor(1.0 / mechanism.grid.granularity) + 1
    profile = DiscreteGaussianProfile(
        {"sigma": mechanism.sigma, "sensitivity": shift, "compositions": dimension}
    )
    assert profile.delta_for(epsilon) <= delta
    fewer = DiscreteGaussianProfile(
        {"sigma": mechanism.sigma - 1, "sensitivity": shift, "compositions": dimension}
    )
    assert fewer.delta_for(epsilon) > delta  # whole grid steps, and the least of them
    continuous = analytic_gaussian_sigma(epsilon, delta, compositions=dimension)
    assert continuous <= mechanism.real_sigma <= continuous * 1.005
    released = mechanism(np.array([0.25, -1.0, 3.0, 0.5]), np.random.default_rng(2))
    assert released.shape == (dimension,)
    assert np.all(released / mechanism.grid.granularity == np.round(released / mechanism.grid.granularity))
    with pytest.raises(InvalidParameter, match="value"):
        mechanism(np.zeros(3), np.random.default_rng(2))
    Certificate.from_json(certificate.to_json())


def test_secure_gaussian_noise_has_the_discrete_gaussian_law():
    mechanism = secure_gaussian(sigma=3.0, delta=1e-3, granularity=1.0, bits="rng")
    assert mechanism.sigma == 3.0
    draws = mechanism(0.0, np.random.default_rng(4), size=100_000)
    support = np.arange(-40, 41)
    pmf = np.exp(-(support**2) / 18.0)
    expected = pmf / pmf.sum() * draws.size
    observed = np.array([np.sum(draws == x) for x in support])
    keep = expected >= 5
    assert (
        stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue
        > ALPHA
    )
    assert np.isclose(Fraction(mechanism.sigma) ** 2, 9)


def test_cli_secure_calibration_and_float_warning(capsys):
    status, payload, err = run_cli(capsys, "calibrate", "laplace", "--epsilon", "1", "--secure", "--json")
    assert status == 0 and payload["sampler"] == "integer-exact" and err == ""
    certificate = Certificate.from_dict(payload["certificate"])
    assert certificate.epsilon <= 1.0 and certificate.parameters["granularity"] == payload["granularity"]
    status, payload, err = run_cli(
        capsys, "calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--secure", "--json"
    )
    assert status == 0 and err == "" and Certificate.from_dict(payload["certificate"]).delta == 1e-5
    status, _, err = run_cli(capsys, "calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--json")
    assert status == 0 and err.count("\n") == 1 and "floating-point" in err
    status, _, err = run_cli(capsys, "calibrate", "laplace", "--epsilon", "1", "--research", "--json")
    assert status == 0 and err == ""


def test_cli_calibrates_the_discrete_gaussian(capsys):
    status, payload, _ = run_cli(
        capsys, "calibrate", "discrete-gaussian", "--epsilon", "1", "--delta", "1e-5", "--json"
    )
    assert status == 0
    certificate = Certificate.from_dict(payload["certificate"])
    assert (
        certificate.mechanism == "discrete-gaussian" and certificate.parameters["sigma"] == payload["sigma"]
    )
    assert (
        discrete_gaussian_delta(1.0, payload["sigma"])
        <= 1e-5
        < discrete_gaussian_delta(1.0, payload["sigma"] * (1 - 1e-9))
    )
    status, _, err = run_cli(capsys, "calibrate", "discrete-gaussian", "--epsilon", "1", "--delta", "0")
    assert status == 2 and "delta" in err
    status, _, err = run_cli(
        capsys, "calibrate", "laplace", "--epsilon", "1", "--secure", "--granularity", "0.3"
    )
    assert status == 2 and "granularity" in err


def test_rounding_charge_is_needed_and_sufficient():
    # Δ = 0.75 on the grid 1/4: 0.125 and 0.875 round (half to even) to 0 and 4 steps, one more than Δ/g.
    from dpcert.mechanisms.secure.samplers import sample_discrete_laplace

    grid = Grid.of(0.25)
    uncharged_parameter = Fraction(1, 3)  # ε = 1 only for a shift of 3 steps

    def uncharged(value, rng, size):
        noise = sample_discrete_laplace(1 / uncharged_parameter, size, rng)
        return grid.from_units(grid.to_units(value) + noise)

    flagged = audit(uncharged, 0.125, 0.875, epsilon=1.0, samples=100_000, seed=9)
    assert flagged.verdict == "violated"  # true ε = 4/3 (power: seeds 9-11 all flag it, bounds 1.27-1.32)
    charged = secure_laplace(1.0, sensitivity=0.75, granularity=0.25, bits="rng")
    assert charged.certificate.parameters["sensitivity"] == 4
    assert audit(charged, 0.125, 0.875, epsilon=1.0, samples=100_000, seed=9).verdict == "consistent"


def test_secure_options_on_the_float_mechanisms_and_sampler_records():
    from dpcert.mechanisms.discrete_laplace import DiscreteLaplaceMechanism
    from dpcert.mechanisms.gaussian import calibrate_gaussian
    from dpcert.mechanisms.laplace import calibrate_laplace

    laplace = calibrate_laplace(1.0, sensitivity=2.0)
    assert laplace.certificate.parameters["sampler"] == "float"
    secure = laplace.mechanism().secure(granularity=2.0**-8, bits="rng")
    assert secure.certificate.parameters["sampler"] == "integer-exact"
    # same real scale 2 on the grid 2^-8: a = 2^-9 and Δ_g = 513 steps, so ε = 513/512 (rounding charged)
    assert secure.noise_parameter == 2.0**-9 and secure.certificate.epsilon == 513 / 512
    gaussian = calibrate_gaussian(1.0, 1e-5)
    assert gaussian.certificate.parameters["sampler"] == "float"
    secure_g = gaussian.mechanism().secure(bits="rng")
    assert secure_g.certificate.delta == 1e-5 and secure_g.real_sigma >= gaussian.sigma
    assert 1.0 < secure_g.certificate.epsilon < 1.002  # the grid's price at the same sigma and delta
    discrete = DiscreteLaplaceMechanism.for_epsilon(1.0)
    exact = DiscreteLaplaceMechanism(discrete.noise_parameter, discrete.certificate, secure=True)
    draws = exact(0, None, size=50_000)  # 50 000 releases of one coordinate
    assert draws.dtype == np.int64 and draws.shape == (50_000,)
    # variance of DLap(1) is 2e^-1/(1-e^-1)^2 = 1.8407; 50 000 draws (unseeded OS bits) give a standard
    # error of about 0.02, so the band of 0.15 (8 standard errors) fails with probability below 1e-9
    assert abs(np.var(draws) - 2 * math.exp(-1) / (1 - math.exp(-1)) ** 2) < 0.15


def test_secure_laplace_audit_on_vectors_charges_each_coordinate(capsys):
    argv = ["audit", "builtin:laplace", "--secure", "--input", "[0, 0]", "--neighbour", "[1, 0]"]
    status, payload, _ = run_cli(capsys, *argv, "--epsilon", "1", "--floating-point", "--json", "--seed", "4")
    assert status == 0 and payload["verdict"] == "consistent"
    certificate = payload["parameters"]["certificate"]
    steps = 1 / payload["parameters"]["granularity"]
    assert certificate["parameters"]["sensitivity"] == steps + 2  # ⌊Δ/g⌋ + d with d = 2 coordinates


def test_release_each_is_one_scalar_release_per_entry():
    mechanism = secure_laplace(1.0, sensitivity=2.0, bits="rng")
    values = np.linspace(-1.0, 1.0, 4001)
    released = mechanism.release_each(values, np.random.default_rng(3))
    g = mechanism.grid.granularity
    assert released.shape == values.shape
    assert np.array_equal(released / g, np.round(released / g))  # exact grid multiples
    noise = (released - mechanism.grid.from_units(mechanism.grid.to_units(values))) / g
    # DLap(a) in grid units: variance 2q/(1-q)^2 with q = e^-a.  The sample variance of 4001 draws has
    # s.e. about var sqrt(5/n) (fourth moment 6 var^2, as for the Laplace); 10 s.e.: false-positive rate
    # below 1e-8 under the normal approximation (Chebyshev alone: 1 %)
    q = math.exp(-mechanism.noise_parameter)
    variance = 2 * q / (1 - q) ** 2
    assert abs(noise.var() - variance) <= 10 * variance * math.sqrt(5 / values.size)
    with pytest.raises(InvalidParameter, match="dimension"):
        secure_laplace(1.0, sensitivity=2.0, dimension=3, bits="rng").release_each(
            values, np.random.default_rng(3)
        )
