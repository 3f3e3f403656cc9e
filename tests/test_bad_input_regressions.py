"""Bad input found by generated command lines and API calls: one line naming the right parameter.

Each case was a traceback, an exit 3 ("internal error"), an error naming the wrong parameter, a read
without end, or a silent empty run.  CLI cases run in-process through ``dpcert.cli.main``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq

import dpcert
from dpcert._numerics import brent_root
from dpcert.accounting.composition import MAX_OPTIMAL_COUNT, compose_counts
from dpcert.accounting.returning_users import split_budget
from dpcert.audits.unbiased import check_variance
from dpcert.cli import main
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.discrete_gaussian import DiscreteGaussianProfile, discrete_gaussian_delta
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.theory.gaussian import gaussian_delta


def _fails_naming(capsys: pytest.CaptureFixture[str], argv: list[str], parameter: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith("dpcert: error:") and parameter in err, err
    return err


@pytest.fixture
def certificate_file(tmp_path: Path) -> Path:
    path = tmp_path / "certificate.json"
    path.write_text(dpcert.calibrate_gaussian(1.0, 1e-5).certificate.to_json(), encoding="utf-8")
    return path


def test_sign_and_verify_name_an_unreadable_key(capsys, tmp_path: Path, certificate_file: Path) -> None:
    for key in (tmp_path / "missing.pem", tmp_path):
        argv = ["sign", str(certificate_file), "--key", str(key), "--out", str(tmp_path / "s.json")]
        _fails_naming(capsys, argv, "--key")
    _fails_naming(capsys, ["verify", str(certificate_file), "--public-key", str(tmp_path)], "--public-key")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_input_file_is_refused_after_its_size_limit(capsys, tmp_path: Path) -> None:
    err = _fails_naming(capsys, ["sign", "/dev/zero", "--key", "k.pem", "--out", str(tmp_path / "o")], "path")
    assert "at most" in err


def test_a_directory_given_as_a_certificate_file_says_so(capsys, tmp_path: Path) -> None:
    err = _fails_naming(capsys, ["account", "compose", "--certificate", str(tmp_path), "--delta", "1e-5"], "")
    assert "a directory" in err


def test_secure_gaussian_names_epsilon_when_the_noise_is_too_small_for_its_grid(capsys) -> None:
    _fails_naming(
        capsys, ["calibrate", "gaussian", "--secure", "--epsilon", "1e12", "--delta", "1e-5"], "epsilon"
    )
    # at epsilon = 1000 the release-time term (1 + e^epsilon) p exceeds every delta: epsilon is named
    _fails_naming(
        capsys, ["calibrate", "gaussian", "--secure", "--epsilon", "1e3", "--delta", "1e-5"], "epsilon"
    )


def test_sdp_ae_refuses_a_horizon_shorter_than_one_batch(capsys) -> None:
    argv = ["bandit", "run", "sdp-ae", "--privacy", "shuffle", "--epsilon", "0.1", "--delta", "1e-6"]
    _fails_naming(capsys, [*argv, "--horizon", "300"], "horizon")


def test_discrete_gaussian_delta_validates_its_inputs() -> None:
    with pytest.raises(InvalidParameter, match="sensitivity"):
        discrete_gaussian_delta(1.0, 4.0, sensitivity=0)
    with pytest.raises(InvalidParameter, match="sigma"):
        discrete_gaussian_delta(1.0, float("nan"))
    # a numpy float is a real number like any other: the same value as the Python float
    assert discrete_gaussian_delta(1.0, np.float32(4.0)) == discrete_gaussian_delta(1.0, 4.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: dpcert.calibrate_gaussian(1.0, 1e-310),
        lambda: dpcert.calibrate_discrete_gaussian(1.0, 1e-310),
        lambda: dpcert.secure_gaussian(1.0, 1e-310),
        lambda: dpcert.calibrate_binomial_sum(1.0, 1e-310, users=100),
    ],
)
def test_deltas_below_1e_300_are_refused_naming_delta(call) -> None:
    with pytest.raises(InvalidParameter, match="delta"):
        call()


def test_an_integer_beyond_the_largest_float_is_refused_in_one_short_line() -> None:
    with pytest.raises(InvalidParameter, match="epsilon") as error:
        dpcert.calibrate_gaussian(10**400, 1e-5)
    assert len(str(error.value)) < 300


def test_the_gaussian_profile_of_huge_noise_is_tiny_not_one() -> None:
    """σ = 1e308 (μ = 1e-308): δ(ε) <= Φ(μ/2 − ε/μ), which is 0 in floating point for ε > 0; at ε = 0
    δ = 2Φ(μ/2) − 1 ≈ 0.4 μ.  The bound must be at most 1e-14 everywhere and non-increasing."""
    certificate = gaussian_certificate(1e308, delta=1e-5)
    values = [certificate.delta_for(e) for e in (0.0, 1e-300, 1e-10, 0.5, 3.0)]
    assert all(v <= 1e-14 for v in values)
    assert values == sorted(values, reverse=True)
    assert gaussian_delta(0.5, 0.0) == math.ulp(0.0)  # identical distributions: never 0, never 1


# ----------------------------------------------------------------------------- sizes refused up front
def test_the_generic_budget_split_refuses_a_billion_participations_before_any_work() -> None:
    with pytest.raises(InvalidParameter, match="participations"):
        split_budget(dpcert.Guarantee(1.0, 1e-5), participations=10**9)
    gaussian = split_budget(dpcert.Guarantee(1.0, 1e-5), participations=10**9, mechanism="gaussian")
    assert 0.0 < gaussian.tight.epsilon < 1.0


def test_optimal_composition_of_too_many_mechanisms_is_refused_and_best_uses_another_method() -> None:
    component = dpcert.approximate_dp_certificate(1e-4, 1e-14)
    with pytest.raises(InvalidParameter, match="optimal"):
        compose_counts([(component, MAX_OPTIMAL_COUNT + 1)], method="optimal", delta=1e-3)
    best = compose_counts([(component, 10**8)], delta=1e-3)
    # advanced composition (Dwork & Roth 2014, Thm 3.20) at δ' = 1e-3 − k δ0 bounds what best may claim
    k, e0 = 10**8, 1e-4
    advanced = math.sqrt(2 * k * math.log(1 / (1e-3 - k * 1e-14))) * e0 + k * e0 * math.expm1(e0)
    assert 0.0 < best.epsilon <= advanced


def test_binomial_sum_calibration_beyond_its_noise_budget_is_refused_naming_epsilon() -> None:
    with pytest.raises(InvalidParameter, match="epsilon"):
        dpcert.calibrate_binomial_sum(1e-5, 1e-5, users=1000, dimension=3)


def test_composed_discrete_gaussian_of_tiny_sigma_is_bounded_without_a_huge_grid() -> None:
    """σ = 0.3: the PLD grid would exceed its size; the bound is then basic composition of the exact
    single-release profile, which can only exceed one release's δ at the same ε."""
    profile = DiscreteGaussianProfile({"sigma": 0.3, "compositions": 3})
    for epsilon in (0.5, 1.0, 3.0):
        expected = 3 * discrete_gaussian_delta(epsilon / 3, 0.3)
        assert profile.delta_for(epsilon) >= discrete_gaussian_delta(epsilon, 0.3)
        assert profile.delta_for(epsilon) == pytest.approx(min(1.0, expected), rel=1e-11)
    with pytest.raises(InvalidParameter, match="sigma"):
        profile.single_release_loss_pmf(1e-4)


def test_the_root_finder_keeps_the_sign_of_values_whose_product_underflows() -> None:
    """Brent's method compares signs by sign bit (a product of 2.5e-89 and -1e-300 underflows to -0)
    and treats a division by zero as IEEE 754 does; the roots are SciPy's brentq's for the same
    arguments, on the calibration that needed both (ε = 1e-50, δ = 1e-300)."""

    def excess(sigma: float) -> float:
        return gaussian_delta(1e-50, 1.0 / sigma) - 1e-300

    low, high = 1.858761242668794e51, 3.717522485337588e51
    options = {"xtol": 1e-12 * high, "rtol": 8.9e-16, "maxiter": 500}
    assert brent_root(excess, low, high, **options) == brentq(excess, low, high, **options)
    for offset in (0.5, 2.0, 7.0):

        def tiny(x: float, c: float = offset) -> float:
            return 0.0 if x == c else math.copysign(5e-324, c - x)

        assert brent_root(tiny, 0.0, 10.0, **{**options, "xtol": 1e-12}) == brentq(
            tiny, 0.0, 10.0, xtol=1e-12, rtol=8.9e-16, maxiter=500
        )
    assert math.isfinite(dpcert.calibrate_gaussian(1e-50, 1e-300).sigma)


@pytest.mark.parametrize("name", ["out.txt", "a" * 300 + ".png", "/proc/dpcert-no-such/x.png"])
def test_a_figure_path_that_cannot_be_written_is_refused_before_the_work(
    capsys, tmp_path: Path, name: str
) -> None:
    target = name if name.startswith("/") else str(tmp_path / name)
    if name.startswith("/proc") and not os.path.isdir("/proc"):
        pytest.skip("needs /proc")
    argv = ["account", "gaussian", "--sigma", "3", "--delta", "1e-5", "--plot", target]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--plot" in err, err
    if len(name) < 255 and not name.startswith("/"):
        assert not Path(target).exists()  # nothing left behind


def test_unbiasedness_of_draws_whose_variance_overflows_is_refused_not_nan() -> None:
    with pytest.raises(InvalidParameter, match="samples"):
        dpcert.check_unbiased(np.array([1e308, -1e308] * 500), 0.0)
    report = dpcert.check_unbiased(np.array([1e140, -1e140] * 500), 0.0)  # large but representable
    assert np.all(np.isfinite(report.mean)) and not report.biased


# ----------------------------------------------------------------------------- found by the fuzz tests
@pytest.mark.parametrize(
    ("argv", "parameter"),
    [
        (["calibrate", "discrete-gaussian", "--epsilon", "1", "--delta", "1e-5", "--compositions", "19635"],
         "compositions"),
        (["calibrate", "discrete-gaussian", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "5.86e16"],
         "sensitivity"),
        (["calibrate", "laplace", "--secure", "--epsilon", "1404", "--granularity", "0.25"], "epsilon"),
        (["calibrate", "gaussian", "--secure", "--epsilon", "3.9e22", "--delta", "1e-5"], "epsilon"),
        (["calibrate", "binomial-sum", "--epsilon", "1", "--delta", "1e-5", "--users", "100", "--bound",
          "1318024", "--method", "paper"], "bound"),
        (["calibrate", "binomial-sum", "--epsilon", "1", "--delta", "1e-5", "--users", "1e308", "--method",
          "paper"], "users"),
        (["account", "binomial-sum", "--g", "10", "--b", "100", "--p", "0.5", "--users", "100", "--delta",
          "1e-5", "--dimension", "1e12"], "dimension"),
    ],
)  # fmt: skip
def test_sizes_beyond_the_numerics_name_the_parameter_given(capsys, argv: list[str], parameter: str) -> None:
    _fails_naming(capsys, argv, parameter)


def test_output_paths_are_checked_before_the_work(capsys, tmp_path: Path, certificate_file: Path) -> None:
    long_name = str(tmp_path / ("n" * 300 + ".json"))
    argv = ["sign", str(certificate_file), "--key", "k.pem", "--out", long_name]
    _fails_naming(capsys, argv, "--out")
    _fails_naming(capsys, ["keygen", "--out", ""], "--out")
    if os.path.isdir("/proc"):  # writable by permissions for root, yet no directory can be made there
        argv = ["bandit", "run", "mab-se", "--privacy", "local", "--epsilon", "1", "--horizon", "100"]
        _fails_naming(capsys, [*argv, "--out", "/proc/dpcert-no-such-directory/x"], "--out")
    target = tmp_path / "new" / "deeper"
    argv = ["bandit", "run", "mab-se", "--privacy", "local", "--epsilon", "1", "--horizon", "100", "--json"]
    assert main([*argv, "--out", str(target)]) == 0
    assert target.is_dir()


def test_a_document_that_is_not_json_is_named_as_the_path(capsys, tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("", encoding="utf-8")
    _fails_naming(capsys, ["verify", str(empty), "--public-key", str(tmp_path / "k.pub.pem")], "path")


def test_api_calls_found_by_the_fuzz_test_raise_dpcert_errors_naming_the_parameter() -> None:
    cases = [
        (lambda: dpcert.calibrate_gaussian(1e-310, 1e-5), "epsilon"),
        (lambda: dpcert.secure_gaussian(1e-310, 1e-5), "epsilon"),
        (lambda: dpcert.calibrate_discrete_gaussian(1.0, 1e-5, sensitivity=1e308), "sensitivity"),
        (lambda: dpcert.calibrate_binomial_sum(1.0, 1e-5, users=1e308, method="paper"), "users"),
        (lambda: dpcert.calibrate_pamp(1.0, 1e-5, users=1e308, dimension=2), "users"),
        (lambda: dpcert.compose(0, delta=1e-5), "certificates"),
        (lambda: discrete_gaussian_delta(5.5e16, 4.0), None),
        (lambda: discrete_gaussian_delta(1.0, 1e308), "sigma"),
        (lambda: gaussian_certificate(4.0, delta=1e-5, compositions=10**200), "compositions"),
        (lambda: dpcert.secure_laplace(1.0, dimension=2**40), "dimension"),
        (lambda: dpcert.secure_laplace(1.0, sensitivity=1e308, granularity=2**-10), "sensitivity"),
        (lambda: split_budget(dpcert.Guarantee(1.0, 1e-5), 10, mechanism=np.array([1.0])), "mechanism"),
        (lambda: dpcert.Ledger(0), "path"),
    ]
    for call, parameter in cases:
        if parameter is None:  # a huge epsilon: a valid call whose delta is the least positive float
            assert call() == math.ulp(0.0)
            continue
        with pytest.raises(InvalidParameter) as error:
            call()
        assert parameter in error.value.name.split("/"), (parameter, str(error.value))


# ----------------------------------------------------------------------------- subnormals and float limits
def test_a_gaussian_of_the_least_noise_allowed_states_a_finite_epsilon_above_its_closed_form_bound() -> None:
    """σ = 1e-150 (μ = 1e150, the largest allowed): δ(μ²/2) = 1/2 − e^{μ²/2} Φ(−μ) >= 1/2 − 1/(μ√(2π)) (Mills'
    ratio, Φ(−μ) <= φ(μ)/μ) > 1e-5, so the least ε at δ = 1e-5 exceeds μ²/2 = 5e299; the next smaller σ is
    refused naming sigma, and so is a subnormal one."""
    certificate = gaussian_certificate(1e-150, delta=1e-5)
    assert 5e299 < certificate.epsilon < math.inf
    for sigma in (math.nextafter(1e-150, 0.0), 1e-300, 5e-324):
        with pytest.raises(InvalidParameter) as error:
            gaussian_certificate(sigma, delta=1e-5)
        assert error.value.name == "sigma"


def test_the_discrete_gaussian_of_the_least_sigma_allowed_is_no_privacy_and_a_subnormal_is_refused() -> None:
    """σ = 1e-140: P(Y = 0) >= 1 − 2 e^{−1/(2σ²)} / (1 − e^{−1/σ²}) (the tail bound of the module), and the
    term of y = 0 is P(0) (1 − e^{ε − 1/(2σ²)}): both round to 1, so δ(1) = 1 exactly."""
    assert discrete_gaussian_delta(1.0, 1e-140) == 1.0
    for sigma in (1e-141, 1e-310, 5e-324):
        with pytest.raises(InvalidParameter, match="sigma"):
            discrete_gaussian_delta(1.0, sigma)
    # ε near the largest float: c = 1/2 − σ²ε = −1.6e309 leaves no integer with mass (δ <= P(Y <= c))
    assert discrete_gaussian_delta(1e308, 4.0) == math.ulp(0.0)


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"epsilon": 1e-310}, "epsilon"),
        ({"epsilon": 1e-160}, "epsilon"),
        ({"epsilon": 5e-324, "dimension": 3}, "epsilon"),
        ({"bound": 1e308}, "bound"),
        ({"bound": 1.7976931348623157e308}, "bound"),
    ],
)
def test_bit_sum_theorem_parameters_beyond_every_float_are_refused_naming_the_parameter(
    arguments: dict, parameter: str
) -> None:
    call = {"epsilon": 1.0, "delta": 1e-5, "users": 100, "method": "paper", **arguments}
    with pytest.raises(InvalidParameter) as error:
        dpcert.calibrate_binomial_sum(call.pop("epsilon"), call.pop("delta"), **call)
    assert parameter in error.value.name.split("/"), str(error.value)


def test_pamp_calibration_refuses_an_epsilon_whose_exponential_overflows() -> None:
    with pytest.raises(InvalidParameter, match="epsilon"):
        dpcert.calibrate_pamp(999_999_999_999, 1e-5, users=1000, dimension=2)
    calibration = dpcert.calibrate_pamp(600.0, 1e-5, users=1000, dimension=2)  # the largest allowed
    assert calibration.certificate.epsilon <= 600.0 and 0.0 < calibration.sigma < math.inf


def test_variance_of_draws_whose_squares_overflow_is_refused_and_a_wide_spread_is_scale_free() -> None:
    """±1e308 draws: their squares overflow, refused naming samples.  Draws x·2^400 (spread ~1e120, within
    range, but fourth powers beyond every float) are tested like x against a claim 2^800 times larger:
    both tests are scale-free, so the p-values must be the same numbers (the guard's were NaN)."""
    with pytest.raises(InvalidParameter, match="samples"):
        check_variance(np.array([1e308, -1e308] * 500), 1.0)
    draws = np.random.default_rng(1).normal(0.0, 1.0, 1000)
    plain = check_variance(draws, 1.0)
    wide = check_variance(draws * 2.0**400, 2.0**800)
    assert plain.guard_pvalues is not None and wide.guard_pvalues is not None
    assert np.all(np.isfinite(wide.guard_pvalues)) and np.all(np.isfinite(wide.pvalues))
    assert np.array_equal(wide.pvalues, plain.pvalues)  # the chi-square statistic: exactly the same
    # the log-variance guard takes log(2^800 v) − log(2^800 c): the same up to rounding of the logarithms
    np.testing.assert_allclose(wide.guard_pvalues, plain.guard_pvalues, rtol=1e-10)
    assert wide.rejected == plain.rejected is False  # N(0, 1) draws against their true variance
    assert check_variance(draws * 2.0**400, 4 * 2.0**800).rejected  # a claim 4x too large, rejected


# ----------------------------------------------------------------------------- tight Laplace at the budget
@pytest.mark.parametrize("epsilon", ["0.7", "1.5", "3", "6"])
@pytest.mark.parametrize(
    "run",
    [
        ["mab-se", "--privacy", "central", "--horizon", "600"],
        ["robust-elimination", "--privacy", "local", "--horizon", "400", "--option", "arms=6",
         "--option", "dimension=2"],
    ],
    ids=["mab-se-central", "robust-elimination-local"],
)  # fmt: skip
def test_tight_laplace_runs_fit_a_ledger_budget_of_exactly_their_target(
    capsys, tmp_path: Path, epsilon: str, run: list[str]
) -> None:
    """The least float scale b with Δ/b <= ε certifies at most ε (never one float step above), so a ledger
    whose budget is exactly ε accepts every charge: no "ε > ε" refusal, and each user's spent ε is <= ε."""
    ledger = tmp_path / "ledger.db"
    assert main(["ledger", "budget", str(ledger), "--epsilon", epsilon, "--delta", "0"]) == 0
    capsys.readouterr()
    code = main(["bandit", "run", *run, "--epsilon", epsilon, "--ledger", str(ledger), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data = json.loads(captured.out)
    assert data["target_met"] is True and data["max_user_epsilon"] <= float(epsilon), data["max_user_epsilon"]
    assert data["certificate"] is not None and "does not meet" not in captured.err
    with dpcert.Ledger(ledger, readonly=True) as opened:
        users = opened.users()
        assert users
        for user in users[:: max(1, len(users) // 10)]:
            assert opened.spent(user, delta=0.0).epsilon <= float(epsilon)
