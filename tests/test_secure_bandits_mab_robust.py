"""Secure (integer-exact) noise in the central MAB elimination and the robust elimination clients."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from functools import partial

import numpy as np
import pytest
from reward_recording import RewardRecordingBandit
from scipy import stats

from dpcert.bandits.algorithms.mab import (
    BatchSchedule,
    CentralLaplaceSum,
    central_dp_se,
    laplace_sum_deviation,
    run_engine,
)
from dpcert.bandits.algorithms.robust_elimination import (
    LaplaceClients,
    LinearArms,
    _value_bound,
    robust_elimination,
    rounding_bias,
)
from dpcert.bandits.design import near_g_optimal_design
from dpcert.bandits.environments.mab import MultiArmedBandit
from dpcert.bandits.privatizers import Contributions
from dpcert.cli import main
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.laplace import laplace_certificate
from dpcert.mechanisms.secure.samplers import sample_discrete_laplace
from dpcert.session import PrivacySession
from dpcert.testing import assert_release_stops_at_refusal

EPSILON = 1.0
BERNOULLI = MultiArmedBandit(np.array([0.9, 0.6, 0.5]))
BETA = MultiArmedBandit(np.array([0.9, 0.6, 0.5]), "beta")


# ----------------------------------------------------------------------------- the deviation bound
def _mgf_by_summation(a: float, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E e^{λZ} for Z ~ DLap(a) (mass tanh(a/2) e^{-a|z|}) summed over |z| <= N, and the tail bound."""
    slack = a - np.max(np.abs(lam))
    n = math.ceil(40.0 / slack)
    z = np.arange(-n, n + 1, dtype=float)
    values = np.array([math.tanh(a / 2.0) * np.sum(np.exp(x * z - a * np.abs(z))) for x in lam])
    tail = 2.0 * math.tanh(a / 2.0) * math.exp(-slack * (n + 1)) / -math.expm1(-slack) * np.ones_like(lam)
    return values, tail


@pytest.mark.parametrize("a", [0.05, 0.3, 1.0, 3.0])
def test_discrete_laplace_mgf_is_at_most_the_laplace_mgf(a):
    lam = a * np.linspace(-0.95, 0.95, 39)
    summed, tail = _mgf_by_summation(a, lam)
    closed = 1.0 / (1.0 - np.sinh(lam / 2.0) ** 2 / math.sinh(a / 2.0) ** 2)
    # the closed form used in the proof, checked against the series (truncation bounded by `tail`)
    assert np.all(summed <= closed * (1 + 1e-12)) and np.all(closed <= summed + tail + 1e-12 * closed)
    laplace = 1.0 / (1.0 - (lam / a) ** 2)  # MGF of Laplace(1/a)
    assert np.all(closed <= laplace * (1 + 1e-12))
    assert np.all(closed[np.abs(lam) > 0] < laplace[np.abs(lam) > 0])  # strictly: sinh(x)/x increases
    inner = np.abs(lam) <= a / math.sqrt(2.0)  # the range the deviation's derivation uses
    assert np.all(closed[inner] <= np.exp(2.0 * (lam[inner] / a) ** 2) * (1 + 1e-12))


@pytest.mark.parametrize("a", [0.1, 1.0, 2.5])
def test_discrete_laplace_variance_and_tail_against_the_laplace_ones(a):
    z = np.arange(-math.ceil(60 / a), math.ceil(60 / a) + 1, dtype=float)
    mass = math.tanh(a / 2.0) * np.exp(-a * np.abs(z))
    variance = float(np.sum(mass * z**2))
    q = math.exp(-a)
    assert variance == pytest.approx(2.0 * q / (1.0 - q) ** 2, rel=1e-10)  # the stated variance
    assert variance <= 2.0 / a**2  # Laplace(1/a)'s
    # P(|Z| > y) = 2q^(⌊y⌋+1)/(1 + q) <= (2/(1 + q))·e^{-a y}: at most 2/(1 + q) times the Laplace
    # tail, so Ȳ's union bound fails w.p. <= δ/(1 + q) <= δ; the factor is attained as y → 1⁻
    for y in (0.0, 0.5, 0.999, 1.0, 2.7, 10.0):
        tail = float(np.sum(mass[np.abs(z) > y]))
        assert tail == pytest.approx(2 * q ** (math.floor(y) + 1) / (1 + q), rel=1e-9)
        assert tail <= 2.0 / (1.0 + q) * math.exp(-a * y) * (1 + 1e-12)
    assert float(np.sum(mass[np.abs(z) > 0.999])) > math.exp(-a * 0.999)  # heavier than Laplace there


def test_the_deviation_holds_exactly_for_one_discrete_laplace():
    # P(|Z| >= u) = 2 q^⌈u⌉ / (1 + q) for u > 0: compared with the bound 2 exp(-4 L) it promises
    for a in (0.2, 1.0, 4.0):
        q = math.exp(-a)
        for log_horizon in (0.05, 0.5, 1.0, 3.0, 10.0):
            u = laplace_sum_deviation(1.0 / a, 1, log_horizon)
            assert 2.0 * q ** math.ceil(u) / (1.0 + q) <= 2.0 * math.exp(-4.0 * log_horizon)


def test_the_deviation_holds_empirically_for_sums_and_would_catch_a_wrong_scale():
    # 20 000 sums of 16 DLap(a) draws (integer-exact sampler, seeded).  Under the bound each exceeds
    # u with probability p <= 2 exp(-4L) ≈ 0.0102; the count is tested against Binomial(n, p) at a
    # false-positive rate of 1e-9.  Power: noise 4x larger than stated exceeds u in about 25 % of sums.
    rng = np.random.default_rng(20)
    log_horizon, batches, sums = 1.32, 16, 20_000
    p = 2.0 * math.exp(-4.0 * log_horizon)
    limit = stats.binom.ppf(1 - 1e-9, sums, p)
    for a in (1.0, 0.25):
        draws = sample_discrete_laplace(1 / Fraction(a), batches * sums, rng).reshape(sums, batches)
        exceed = np.abs(draws.sum(axis=1)) >= laplace_sum_deviation(1.0 / a, batches, log_horizon)
        assert exceed.sum() <= limit
    wrong = sample_discrete_laplace(4, batches * sums, rng).reshape(sums, batches)  # DLap(1/4), claimed 1
    assert (np.abs(wrong.sum(axis=1)) >= laplace_sum_deviation(1.0, batches, log_horizon)).sum() > limit


# ----------------------------------------------------------------------------- MAB central summation
def test_secure_mab_releases_integers_and_the_discrete_laplace_certificate():
    summation = CentralLaplaceSum(EPSILON, secure=True)
    sums = np.arange(0.0, 4000.0).reshape(200, 20)
    released = summation.release(Contributions.of_sums(sums, 4000), np.random.default_rng(1)).estimate
    assert np.array_equal(released, np.round(released)) and np.any(released != sums)
    certificate = summation.certificate
    assert certificate.mechanism == "discrete-laplace"
    output = {"noise_parameter": 1.0, "sensitivity": 1, "sampler": "integer-exact"}
    assert {k: v for k, v in certificate.parameters.items() if k != "release_time_failure"} == output
    assert 0.0 < certificate.release_time_failure < 1e-25  # a batch release's release-time term
    # exact profile of DLap(1) against a shift of 1, summed here: δ(ε') = Σ_z max(0, p(z) − e^{ε'} p(z−1))
    z = np.arange(-80, 81, dtype=float)
    p, shifted = np.tanh(0.5) * np.exp(-np.abs(z)), np.tanh(0.5) * np.exp(-np.abs(z - 1))
    for eps in (0.0, 0.3, 0.9):
        expected = np.maximum(p - np.exp(eps) * shifted, 0).sum()
        assert certificate.output_profile.delta_for(eps) == pytest.approx(expected)
        assert certificate.delta_for(eps) >= certificate.output_profile.delta_for(eps)
    assert certificate.epsilon == EPSILON == laplace_certificate(1.0 / EPSILON).epsilon
    with pytest.raises(InvalidParameter, match="sums"):
        summation.release(Contributions.of_sums(np.array([0.5]), 1), np.random.default_rng(1))


def test_secure_mab_on_beta_rewards_rounds_to_a_grid_and_charges_the_rounding():
    summation = CentralLaplaceSum(EPSILON, secure=True, integer_sums=False)
    g = summation.grid.granularity
    assert g == 2.0**-20
    released = summation.release(
        Contributions.of_sums(np.random.default_rng(2).uniform(0, 50, 300), 50), np.random.default_rng(3)
    ).estimate
    units = released / g  # exact: division by a power of two
    assert np.array_equal(units, np.round(units))
    certificate = summation.certificate
    a = certificate.parameters["noise_parameter"]
    assert certificate.parameters["sensitivity"] == math.floor(1.0 / g) + 1
    assert certificate.parameters["sampler"] == "integer-exact"
    assert certificate.epsilon <= EPSILON
    # at the noise it really adds (scale g/a) a float Laplace would claim less: the rounding is charged
    assert certificate.epsilon >= laplace_certificate(summation.noise_scale).epsilon
    assert summation.noise_scale == g / a >= 1.0 / EPSILON
    # the radius: the Laplace deviation at the real scale plus g/2 per batch
    deviation = summation.noise_deviation(5, 100, 2.0)
    assert deviation == laplace_sum_deviation(g / a, 5, 2.0) + 5 * g / 2
    assert deviation >= CentralLaplaceSum(EPSILON).noise_deviation(5, 100, 2.0)
    with pytest.raises(InvalidParameter, match="Bernoulli"):  # integer mode on real sums is refused
        run_engine(
            BETA, 400, CentralLaplaceSum(EPSILON, secure=True), BatchSchedule("doubling"),
            np.random.default_rng(0), "known",
        )  # fmt: skip


def test_secure_mab_noise_fits_the_discrete_laplace():
    # chi-square goodness of fit of release − sum against DLap(1)'s exact PMF, cells -6..6 and two
    # tails (seeded; false-positive rate 1e-3)
    summation = CentralLaplaceSum(EPSILON, secure=True)
    sums = np.full(20_000, 7.0)
    noise = (
        summation.release(Contributions.of_sums(sums, 10), np.random.default_rng(4)).estimate - sums
    ).astype(np.int64)
    q = math.exp(-EPSILON)
    cells = np.arange(-6, 7)
    pmf = (1 - q) / (1 + q) * q ** np.abs(cells)
    tail = q**7 / (1 + q)  # P(Z >= 7) = P(Z <= -7)
    observed = [np.sum(noise <= -7)] + [np.sum(noise == c) for c in cells] + [np.sum(noise >= 7)]
    expected = noise.size * np.concatenate(([tail], pmf, [tail]))
    assert expected.sum() == pytest.approx(noise.size)
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_secure_mab_runs_charge_the_secure_certificate_and_find_the_best_arm():
    for bandit in (BERNOULLI, BETA):
        session = PrivacySession("secure-mab")
        result = central_dp_se(
            bandit, 20_000, np.random.default_rng(5), epsilon=EPSILON, secure=True, runs=4, session=session
        )
        assert {c.parameters["sampler"] for c in session.certificates} == {"integer-exact"}
        assert result.certificate.parameters["sampler"] == "integer-exact"
        assert not result.good_event_violated.any()
        assert np.all(np.argmax(result.pulls, axis=1) == bandit.best_arm)


# ----------------------------------------------------------------------------- refused charges
def _integer_exact(certificate) -> None:
    assert certificate.parameters["sampler"] == "integer-exact"  # the secure certificate is charged


def _refused(call, rng: np.random.Generator) -> tuple[str, str]:
    return assert_release_stops_at_refusal(lambda session: call(session=session), rng, inspect=_integer_exact)


def test_a_refused_charge_draws_nothing():
    for model in ("bernoulli", "beta"):
        rng = np.random.default_rng(6)
        bandit = RewardRecordingBandit(BERNOULLI.means, model)
        at, after = _refused(partial(central_dp_se, bandit, 400, rng, epsilon=EPSILON, secure=True), rng)
        assert at == after == bandit.states[0]  # charged after the first rewards, before any noise
    arms = LinearArms.random_sphere(6, 2, np.random.default_rng(7))
    for model in ("M1", "M2"):
        rng = np.random.default_rng(8)
        clients = LaplaceClients(model, epsilon=EPSILON, secure=True)
        at, after = _refused(partial(robust_elimination, arms, 400, rng, clients=clients), rng)
        assert at == after  # no report noise after the refusal


# ----------------------------------------------------------------------------- robust clients
@pytest.mark.parametrize("clip", [1.0, 0.3])
def test_robust_secure_reports_lie_on_the_grid_with_the_secure_certificate(clip):
    clients = LaplaceClients("M1", EPSILON, clip, secure=True)
    g = clients.mechanism.grid.granularity
    assert g == 2.0 ** (math.floor(math.log2(2 * clip)) - 20)
    rewards = np.random.default_rng(9).uniform(-2, 2, 500)
    reports = clients.report_rewards(rewards, np.random.default_rng(10))
    assert np.array_equal(reports / g, np.round(reports / g))
    counts = np.array([1, 3, 7, 2])
    means = clients.report_means(rewards[:13], counts, np.random.default_rng(11))
    sums = means * counts / g  # the released sums, up to the rounding of the division by the counts
    assert np.allclose(sums, np.round(sums), rtol=0.0, atol=1e-6)
    certificate = clients.certificate(1)
    assert certificate == clients.certificate(7)  # one certificate: the clipped sum's, sensitivity 2c
    assert certificate.trust_model.value == "local"
    assert certificate.parameters["sensitivity"] == math.floor(2 * clip / g) + 1
    assert certificate.parameters["sampler"] == "integer-exact"
    float_at_same_noise = laplace_certificate(clients.scale(1), sensitivity=2 * clip)
    assert float_at_same_noise.epsilon <= certificate.epsilon <= EPSILON
    # the widths use the real noise: scale >= the float one, so the width's epsilon is below ε
    assert clients.scale(1) >= LaplaceClients("M1", EPSILON, clip).scale(1)
    assert clients.noise_epsilon <= EPSILON
    assert clients.scale(5) == clients.scale(1) / 5


def test_robust_secure_noise_fits_the_laplace_of_its_scale():
    # the noise g·Z with Z ~ DLap(a), a ≈ 2^-20: KS against Laplace(g/a) (the discretisation, one part
    # in 10^6 of the scale, is far below the test's resolution); seeded, false-positive rate 1e-3.
    clients = LaplaceClients("M1", EPSILON, 1.0, secure=True)
    reports = clients.report_rewards(np.zeros(5000), np.random.default_rng(12))
    assert stats.kstest(reports, "laplace", args=(0.0, clients.scale(1))).pvalue > 1e-3


def test_robust_secure_value_bound_covers_rounding_and_noise():
    counts = np.array([3, 5, 0, 8])
    for model in ("M1", "M2"):
        secure = LaplaceClients(model, EPSILON, 0.3, secure=True)
        floating = LaplaceClients(model, EPSILON, 0.3)
        assert _value_bound(secure, counts, 1e-6) >= _value_bound(floating, counts, 1e-6)
    # the largest clean report before noise: g·round(n c/g)/n, checked by brute force on a fine grid
    clients = LaplaceClients("M2", EPSILON, 0.3, secure=True)
    g = clients.mechanism.grid.granularity
    for n in (1, 3, 7):
        sums = np.linspace(-n * 0.3, n * 0.3, 10_001)
        assert np.max(np.abs(np.round(sums / g) * g / n)) == clients.report_clip(n)


@pytest.mark.parametrize("model", ["M1", "M2"])
def test_rounding_bias_bounds_the_least_squares_shift(model):
    # the worst per-value shift |e_j| <= η (sign-aligned with each arm's influence) moves ⟨a, θ̂⟩ by
    # at most rounding_bias, for every active arm
    rng = np.random.default_rng(13)
    arms = LinearArms.random_sphere(30, 4, rng).arms
    design = near_g_optimal_design(arms)
    support, weights = design.support, design.weights[design.support]
    size = 37.0
    counts = np.ceil(size * (weights if model == "M1" else np.maximum(weights, 1 / support.size)))
    counts = counts.astype(np.int64)
    clients = LaplaceClients(model, EPSILON, 0.3, secure=True)
    rows = arms[np.repeat(support, counts)] if model == "M1" else arms[support]
    eta = clients.rounding_error(np.ones(rows.shape[0]) if model == "M1" else counts)
    influence = arms @ np.linalg.pinv(rows.T @ rows) @ rows.T  # (K, n): ⟨a, θ̂⟩ = influence @ y
    worst = np.abs(influence) @ eta
    bound = rounding_bias(clients, counts, design.rank, size)
    assert np.max(worst) <= bound
    assert np.max(worst) >= 0.1 * bound  # and it is not vacuous
    assert rounding_bias(LaplaceClients(model, EPSILON, 0.3), counts, design.rank, size) == 0.0


def test_robust_secure_runs_certify_and_keep_the_best_arm():
    instance = LinearArms.random_sphere(20, 3, np.random.default_rng(14))
    for model, epsilon in (("M1", 1.0), ("M2", 0.5)):
        session = PrivacySession("secure-robust")
        clients = LaplaceClients(model, epsilon, secure=True)
        result = robust_elimination(
            instance, 20_000, np.random.default_rng(15), clients=clients, width_scale=0.05, runs=2,
            session=session,
        )  # fmt: skip
        assert {c.parameters["sampler"] for c in session.certificates} == {"integer-exact"}
        assert result.certificate.parameters["sampler"] == "integer-exact"
        assert result.parameters["secure"] is True
        assert not result.best_arm_eliminated.any()
    with pytest.raises(InvalidParameter, match="secure"):
        LaplaceClients("M1", None, secure=True)


# ----------------------------------------------------------------------------- CLI
def _leaves(certificate: dict) -> list[dict]:
    if certificate["mechanism"] != "composition":
        return [certificate]
    return [leaf for c in certificate["parameters"]["components"] for leaf in _leaves(c["certificate"])]


@pytest.mark.parametrize(
    ("algorithm", "privacy", "options"),
    [
        ("mab-se", "central", []),
        ("mab-se", "central", ["--option", "reward_model=beta"]),
        ("robust-elimination", "local", []),
        ("robust-elimination", "local", ["--option", "model=M2"]),
    ],
)
def test_cli_secure_runs(capsys, algorithm, privacy, options):
    argv = ["bandit", "run", algorithm, "--privacy", privacy, "--epsilon", "1", "--delta", "1e-20",
            "--secure", "--horizon", "20000", "--json", *options]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["target_met"] is True
    assert data["secure"] is True
    leaves = _leaves(data["certificate"])
    assert {leaf["parameters"]["sampler"] for leaf in leaves} == {"integer-exact"}
    if "model=M2" not in options:  # one report per user: the run's certificate is the mechanism's
        assert data["certificate"]["parameters"]["sampler"] == "integer-exact"


@pytest.mark.parametrize(
    ("algorithm", "privacy", "why"),
    [
        ("mab-se", "shuffle", "already integer"),
        ("mab-se", "local", "randomized response"),
        ("mab-se", "none", "without privacy"),
        ("sdp-ae", "shuffle", "already integer"),
        ("robust-elimination", "none", "without privacy"),
    ],
)
def test_cli_refuses_secure_where_it_does_not_apply(capsys, algorithm, privacy, why):
    argv = ["bandit", "run", algorithm, "--privacy", privacy, "--epsilon", "1", "--delta", "1e-5",
            "--secure", "--horizon", "400"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "secure" in err and why in err


def test_in_range_adversary_shares_the_engines_secure_range():
    from dpcert.bandits.runner import _robust_adversary

    instance = LinearArms.random_sphere(8, 3, np.random.default_rng(16))
    clients = LaplaceClients("M1", EPSILON, 0.3, secure=True)
    options = {"strategy": "in-range-targeted", "alpha": 0.05}
    adversary = _robust_adversary(options, instance, clients, 1000, 0.05)
    counts = np.array([4, 9, 2])
    delta = 0.05 / (8 * 1000**2)
    assert adversary.range_bound(int(counts.sum())) == _value_bound(clients, counts, delta)
