"""Tenenbaum et al. 2021: SDP-AE / VB-SDP-AE and the MAB baselines (docs/PAPER_NOTES.md, PN-TKMS-7).

Statistical tests are seeded and state their false-positive rate.  Regret bounds are the explicit
constants derived in PN-TKMS-6, computed here from the formulas, not from the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from dpcert.bandits.algorithms.mab import (
    BatchSchedule,
    CentralLaplaceSum,
    ExactSum,
    LocalRandomizedResponse,
    ShuffleBinarySum,
    batched_arm_elimination,
    central_dp_se,
    confidence_radius,
    local_dp_se,
    sdp_ae,
    successive_elimination,
    vb_sdp_ae,
)
from dpcert.bandits.environments.mab import SPEC_001_MEANS, MultiArmedBandit
from dpcert.bandits.privatizers import Contributions
from dpcert.errors import DataOutOfBounds, InvalidParameter
from dpcert.session import PrivacySession

SPEC_BANDIT = MultiArmedBandit(np.array(SPEC_001_MEANS))


class RecordingLedger:
    def __init__(self) -> None:
        self.charges: list[tuple[list[str], object]] = []

    def charge(self, user_ids, certificate, run_id=None):
        self.charges.append((list(user_ids), certificate))


# --------------------------------------------------------------------------- radius (PN-TKMS-7)
def test_radius_golden_values_from_spec():
    """PN-TKMS-7: SDP-AE t=3, m=20, σ=√20, T=1e6 → 2.03584; VB t=3 (N_a=14), σ=√80/2 → 7.22156."""
    shuffle = ShuffleBinarySum(80)
    assert shuffle.sigma == pytest.approx(math.sqrt(20.0))
    assert confidence_radius(shuffle, 3, 60, 10**6) == pytest.approx(2.03584, abs=5e-6)
    assert confidence_radius(shuffle, 3, BatchSchedule("doubling").users_after(3), 10**6) == pytest.approx(
        7.22156, abs=5e-6
    )


def test_non_private_radius_is_hoeffding():
    for users in (1, 7, 1000):
        expected = math.sqrt(2.0 * math.log(5000) / users)
        assert confidence_radius(ExactSum(), 4, users, 5000) == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------- schedule and bookkeeping
@pytest.mark.parametrize("doubling", [False, True])
def test_schedule_bookkeeping_and_partial_batch(doubling):
    """PN-TKMS-7 items 12–13: batch sizes m or 2^t in ascending arm order, N_a = m·t or 2^{t+1} − 2 with t
    summation calls, total pulls = T, the batch in progress at T is never aggregated."""
    horizon = 4321
    if doubling:
        result = vb_sdp_ae(
            SPEC_BANDIT, horizon, np.random.default_rng(1), noise_bits=80, runs=3, record_phases=True
        )
    else:
        result = sdp_ae(
            SPEC_BANDIT, horizon, np.random.default_rng(1), noise_bits=80, runs=3, record_phases=True
        )
    m = 20
    assert result.pulls.sum(axis=1).tolist() == [horizon] * 3
    aggregated = np.zeros_like(result.pulls)
    for record in result.phase_records:
        expected_size = 2**record.phase if doubling else m
        assert record.batch_size == expected_size
        assert np.all(record.aggregated[~record.viable_before] == 0)
        assert set(np.unique(record.aggregated)) <= {0, expected_size}
        aggregated += record.aggregated
        if not np.isnan(record.radius):
            users = 2 ** (record.phase + 1) - 2 if doubling else m * record.phase
            still = record.viable_before & ~np.isnan(record.estimates)
            assert np.all(aggregated[still] == users)
            assert np.all(result.summation_calls[record.viable_after] >= record.phase)
    # every run ends inside a batch or exactly at a batch end: fewer users aggregated than pulled
    assert np.all(result.users < horizon)
    assert np.all(result.users == aggregated.sum(axis=1))
    last = result.phase_records[-1]
    # in the last phase, the pulls of the arm whose batch contains user T exceed what was aggregated
    assert np.all((last.pulls - last.aggregated).sum(axis=1) >= 1)


def test_elimination_rule_matches_recomputation():
    """PN-TKMS-7: arm removed iff UCB < max LCB over V (strict, simultaneous); V never empty; the
    argmax of the estimates always survives."""
    result = sdp_ae(SPEC_BANDIT, 60_000, np.random.default_rng(4), noise_bits=30, runs=4, record_phases=True)
    checked = 0
    for record in result.phase_records:
        if np.isnan(record.radius):
            continue
        for run in range(4):
            before = record.viable_before[run]
            if not np.all(np.isfinite(record.estimates[run][before])) or before.sum() < 2:
                continue
            mu = record.estimates[run]
            best_lower = np.max(mu[before] - record.radius)
            expected = before & (mu + record.radius >= best_lower)
            np.testing.assert_array_equal(record.viable_after[run], expected)
            assert record.viable_after[run].any()
            assert record.viable_after[run][np.nanargmax(np.where(before, mu, np.nan))]
            checked += 1
    assert checked > 10


def test_estimates_are_not_clipped():
    """PN-TKMS-7: μ̂ = Ŝ/N_a may leave [0, 1] with a large N and a small batch."""
    result = sdp_ae(
        SPEC_BANDIT, 2000, np.random.default_rng(0), noise_bits=5000, batch_size=2, record_phases=True
    )
    estimates = np.concatenate([r.estimates[np.isfinite(r.estimates)] for r in result.phase_records])
    assert estimates.min() < 0.0 or estimates.max() > 1.0


# --------------------------------------------------------------------------- good event, regret
def test_good_event_and_best_arm_survive():
    """PN-TKMS-7: P(G^c) <= 4k/T³ = 4e-11 per run here, so over 200 runs any violation has
    probability <= 1e-8 (the false-positive rate of asserting zero)."""
    bandit = MultiArmedBandit(np.array([0.7, 0.5, 0.45, 0.2, 0.6]))
    for algorithm in (sdp_ae, vb_sdp_ae):
        result = algorithm(bandit, 10_000, np.random.default_rng(9), noise_bits=80, runs=200)
        assert not result.good_event_violated.any()
        assert not result.best_arm_eliminated.any()


def test_regret_below_explicit_bounds():
    """PN-TKMS-6 constants on the PN-TKMS-7 instance (T = 1e5, N = 80 so σ² = 20, m = 20):
    SDP-AE R <= Σ_a (128 lnT/Δ + 512σ² lnT/(mΔ) + mΔ) + 4k/T²; VB R <= Σ_a (256 lnT/Δ + 54.4 σ lnT + 2Δ)."""
    horizon, sigma2, m = 100_000, 20.0, 20
    log_t = math.log(horizon)
    gaps = SPEC_BANDIT.gaps[SPEC_BANDIT.gaps > 0]
    sdp_bound = np.sum(128 * log_t / gaps + 512 * sigma2 * log_t / (m * gaps) + m * gaps) + 40 / horizon**2
    vb_bound = np.sum(256 * log_t / gaps + 54.4 * math.sqrt(sigma2) * log_t + 2 * gaps)
    sdp = sdp_ae(SPEC_BANDIT, horizon, np.random.default_rng(2), noise_bits=80, runs=10)
    vb = vb_sdp_ae(SPEC_BANDIT, horizon, np.random.default_rng(2), noise_bits=80, runs=10)
    assert sdp.final_regret.max() <= sdp_bound
    assert vb.final_regret.max() <= vb_bound


@pytest.mark.parametrize("algorithm", ["sdp", "vb", "central", "local"])
def test_regret_is_sublinear(algorithm):
    """On a 5-arm instance with gaps >= 0.2, the regret accrued over the second half of T = 2e5 rounds is
    under 30% of that of the first half (linear regret would give 100%).  Seeded; 10 runs."""
    bandit = MultiArmedBandit(np.array([0.9, 0.7, 0.6, 0.6, 0.3]))
    run = {
        "sdp": lambda rng: sdp_ae(bandit, 200_000, rng, noise_bits=80, runs=10),
        "vb": lambda rng: vb_sdp_ae(bandit, 200_000, rng, noise_bits=80, runs=10),
        "central": lambda rng: central_dp_se(bandit, 200_000, rng, epsilon=1.0, runs=10),
        "local": lambda rng: local_dp_se(bandit, 200_000, rng, epsilon=1.0, runs=10),
    }[algorithm]
    half, full = run(np.random.default_rng(3)).cumulative_regret(np.array([100_000, 200_000])).mean(axis=0)
    assert full - half < 0.3 * half


def test_vb_regret_non_increasing_in_epsilon_via_noise():
    """PN-TKMS-7: more noise bits (smaller ε) never helps VB-SDP-AE (modulo noise: 20 runs, common
    seeds, N = 31 vs 958, the PN-TKMS-7 values for ε = 2 and 0.25)."""
    low = vb_sdp_ae(SPEC_BANDIT, 200_000, np.random.default_rng(5), noise_bits=31, runs=20).final_regret
    high = vb_sdp_ae(SPEC_BANDIT, 200_000, np.random.default_rng(5), noise_bits=958, runs=20).final_regret
    assert stats.mannwhitneyu(high, low, alternative="greater").pvalue < 0.01


def test_private_shortcut_matches_plain_elimination_without_noise():
    """PN-TKMS-7: with N = 0 and m = 1, SDP-AE is successive elimination (same trajectory)."""
    a = sdp_ae(SPEC_BANDIT, 20_000, np.random.default_rng(6), noise_bits=0, batch_size=1, runs=3)
    b = successive_elimination(SPEC_BANDIT, 20_000, np.random.default_rng(6), runs=3)
    np.testing.assert_array_equal(a.pulls, b.pulls)


def test_same_seed_same_trajectory():
    a = vb_sdp_ae(SPEC_BANDIT, 30_000, np.random.default_rng(8), noise_bits=80, runs=2)
    b = vb_sdp_ae(SPEC_BANDIT, 30_000, np.random.default_rng(8), noise_bits=80, runs=2)
    np.testing.assert_array_equal(a.pulls, b.pulls)
    np.testing.assert_array_equal(a.regret_curve, b.regret_curve)


def test_regret_curve_endpoints_are_exact():
    result = vb_sdp_ae(SPEC_BANDIT, 30_000, np.random.default_rng(8), noise_bits=80, runs=3)
    np.testing.assert_allclose(result.regret_curve[:, -1], result.pulls @ SPEC_BANDIT.gaps)
    np.testing.assert_allclose(result.final_regret, result.pulls @ SPEC_BANDIT.gaps)
    assert result.cumulative_regret().shape == (3, 30_000)
    assert np.all(np.diff(result.regret_curve, axis=1) >= -1e-9)


# --------------------------------------------------------------------------- summations
@pytest.mark.parametrize(
    "summation",
    [ShuffleBinarySum(80), CentralLaplaceSum(0.5), LocalRandomizedResponse(1.0)],
    ids=["shuffle", "laplace", "randomized-response"],
)
def test_summations_are_unbiased(summation):
    """E[release] = true sum for all-zeros, all-ones and mixed batches of 30 bits: a z-test on 40,000
    seeded releases each, |z| < 5 (false-positive rate 6e-7 per case).  The variance the release
    reports is the noise's: the sample variance is within 8 % of it (the sample variance's relative
    standard deviation is at most sqrt(8/n) = 1.4 % for these laws, whose excess kurtosis is <= 6)."""
    rng = np.random.default_rng(12)
    for ones in (0, 13, 30):
        sums = np.full(40_000, ones)
        release = summation.release(Contributions.of_sums(sums, 30), rng)
        released = release.estimate
        z = (released.mean() - ones) / (released.std(ddof=1) / math.sqrt(sums.size))
        assert abs(z) < 5.0
        assert release.noise_variance.shape == sums.shape
        assert abs(released.var(ddof=1) / release.noise_variance[0] - 1.0) < 0.08


def test_shuffle_error_is_binomial_and_input_independent():
    """PN-TKMS-7 items 4–5: the error s + B − N/2 − s has the centred Binomial(N, 1/2) law whatever the
    input: exact chi-square goodness of fit for s = 0 and s = m (false-positive rate 0.1% each)."""
    summation = ShuffleBinarySum(12)
    rng = np.random.default_rng(13)
    for ones, size in ((0, 5), (5, 5), (3, 1000)):
        errors = (
            summation.release(Contributions.of_sums(np.full(20_000, ones), size), rng).estimate - ones + 6
        )
        counts = np.bincount(errors.astype(int), minlength=13)
        expected = stats.binom.pmf(np.arange(13), 12, 0.5) * errors.size
        assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_randomized_response_flip_probability_is_exactly_epsilon_dp():
    """Randomized response's likelihood ratio is (1 − p)/p = e^ε exactly; the certificate claims ε."""
    rr = LocalRandomizedResponse(0.7)
    p = rr.flip_probability
    assert (1 - p) / p == pytest.approx(math.exp(0.7), rel=1e-12)
    assert rr.certificate.epsilon == 0.7 and rr.certificate.delta == 0.0
    assert rr.certificate.trust_model.value == "local"


def test_laplace_deviation_bound_holds():
    """The sub-exponential radius u_t of t Laplace(1/ε) errors has P(|Σ| >= u_t) <= 2·exp(−4 log T).
    t = 1: against the exact tail exp(−u ε).  t = 16: a one-sided binomial test of the Monte Carlo
    exceedance frequency against the bound (200,000 seeded draws, false-positive rate 0.1%)."""
    summation = CentralLaplaceSum(1.0)
    for horizon in (5, 20, 10**6):
        u = summation.noise_deviation(1, 1, math.log(horizon))
        assert math.exp(-u) <= 2.0 * horizon**-4.0
    u16 = summation.noise_deviation(16, 16, math.log(5))
    draws = np.random.default_rng(14).laplace(0.0, 1.0, size=(200_000, 16)).sum(axis=1)
    exceed = int(np.sum(np.abs(draws) >= u16))
    assert stats.binomtest(exceed, draws.size, 2.0 * 5.0**-4, alternative="greater").pvalue > 1e-3


# --------------------------------------------------------------------------- privacy accounting
def test_run_certificate_is_the_summations_and_each_user_charged_once():
    """PN-TKMS-7 and §8.2 end-to-end: the run reports exactly the per-batch (ε, δ) (no composition
    over phases or arms) and every aggregated user is charged exactly once."""
    ledger = RecordingLedger()
    session = PrivacySession("mab", ledger)
    result = central_dp_se(SPEC_BANDIT, 5000, np.random.default_rng(0), epsilon=0.8, runs=2, session=session)
    assert result.certificate.epsilon == 0.8 and result.certificate.delta == 0.0
    users = [user for ids, _ in ledger.charges for user in ids]
    assert len(users) == len(set(users)) == int(result.users.sum())
    assert all(certificate.guarantee == result.certificate.guarantee for _, certificate in ledger.charges)
    assert any("exactly one batch" in note for note in result.certificate.notes)
    assert session.worst_user_certificate(1e-9).epsilon_for(1e-9) == pytest.approx(0.8)


def test_local_baseline_certificate_and_regret_ordering():
    """Local-model elimination pays a multiplicative (1/ε²)-type price: at ε = 1 its regret exceeds the
    central baseline's on the spec instance (20 runs, one-sided Mann–Whitney, false-positive rate 1%)."""
    local = local_dp_se(SPEC_BANDIT, 200_000, np.random.default_rng(1), epsilon=1.0, runs=20)
    central = central_dp_se(SPEC_BANDIT, 200_000, np.random.default_rng(1), epsilon=1.0, runs=20)
    assert local.certificate.trust_model.value == "local"
    assert central.certificate.trust_model.value == "central"
    assert stats.mannwhitneyu(local.final_regret, central.final_regret, alternative="greater").pvalue < 0.01


# --------------------------------------------------------------------------- validation
def test_input_validation():
    gaussian = MultiArmedBandit(np.array([0.5, 1.5]), reward_model="gaussian")
    with pytest.raises(InvalidParameter, match="bandit"):
        local_dp_se(gaussian, 100, np.random.default_rng(0), epsilon=1.0)
    with pytest.raises(DataOutOfBounds, match="means"):
        MultiArmedBandit(np.array([0.5, 1.5]))
    with pytest.raises(InvalidParameter, match="noise_bits"):
        sdp_ae(SPEC_BANDIT, 100, np.random.default_rng(0), epsilon=1.0, delta=1e-6, noise_bits=10)
    with pytest.raises(InvalidParameter, match="epsilon"):
        central_dp_se(SPEC_BANDIT, 100, np.random.default_rng(0), epsilon=0.0)
    with pytest.raises(InvalidParameter, match="horizon"):
        successive_elimination(SPEC_BANDIT, 1, np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="schedule"):
        batched_arm_elimination(
            SPEC_BANDIT, 100, ExactSum(), BatchSchedule("halving"), np.random.default_rng(0)
        )


def test_environment_sums_match_bernoulli_means():
    """reward_sums draws Binomial counts: the mean of 20,000 sums of 50 pulls is within 5 s.e. of 50μ
    (false-positive rate 6e-7 per arm)."""
    rng = np.random.default_rng(15)
    arms = np.repeat(np.arange(SPEC_BANDIT.arms)[None, :], 20_000, axis=0)
    sums = SPEC_BANDIT.reward_sums(arms, np.full(arms.shape, 50), rng)
    mu = np.asarray(SPEC_001_MEANS)
    stderr = np.sqrt(50 * mu * (1 - mu) / 20_000)
    assert np.all(np.abs(sums.mean(axis=0) - 50 * mu) < 5 * stderr + 1e-12)


# --------------------------------------------------------------------------- registry and reproduction
def test_registry_runs_return_the_common_shape(tmp_path):
    from dpcert.bandits import registry

    assert {"sdp-ae", "vb-sdp-ae", "mab-se", "robust-elimination"} <= set(registry.algorithms())
    config = registry.RunConfig("mab-se", "central", 0.5, None, horizon=3000, runs=2, seed=4)
    run = registry.algorithm("mab-se").run(config)
    assert run.cumulative_regret.shape == (2, 3000)
    assert run.certificate.epsilon == 0.5 and run.max_user_epsilon == 0.5
    assert 0 < run.users < 3000
    with pytest.raises(InvalidParameter, match="privacy"):
        registry.algorithm("sdp-ae").run(registry.RunConfig("sdp-ae", "central", 1.0, 1e-6, horizon=100))
    with pytest.raises(InvalidParameter, match="epsilon"):
        registry.algorithm("mab-se").run(registry.RunConfig("mab-se", "local", None, None, horizon=100))


def test_tenenbaum_2021_reproduction_writes_its_table(tmp_path):
    from dpcert.reproductions.tenenbaum_2021 import reproduce_mab

    summary = reproduce_mab(2, tmp_path, 0, horizon=4000, epsilons=(1.0,))
    assert (tmp_path / "tenenbaum_2021_mab.json").exists() and (
        tmp_path / "tenenbaum_2021_mab_curves.npz"
    ).exists()
    assert summary["rows"]["SDP-AE eps=1.0"]["noise_bits"] == 80
    assert set(summary["rows"]) >= {
        "non-private SE (m=1)",
        "VB-SDP-AE eps=1.0",
        "dpcert local elimination (RR) eps=1.0",
    }


def test_certified_shuffle_runs_with_binary_sum():
    """With dpcert.mechanisms.shuffle.binary_sum installed: the least N matches PN-TKMS-7 reference values
    and an SDP-AE / VB-SDP-AE run's certificate is exactly the summation's (ε, δ) (PN-TKMS-7)."""
    pytest.importorskip("dpcert.mechanisms.shuffle.binary_sum")
    from dpcert.bandits.algorithms.mab import shuffle_binary_sum
    from dpcert.certificates import Certificate

    for epsilon, delta, expected in ((1.0, 1e-6, 80), (0.5, 1e-6, 268), (1.0, 1e-5, 62), (0.5, 1e-3, 88)):
        assert shuffle_binary_sum(epsilon, delta).noise_bits == expected
    for algorithm in (sdp_ae, vb_sdp_ae):
        result = algorithm(SPEC_BANDIT, 20_000, np.random.default_rng(0), epsilon=1.0, delta=1e-6, runs=2)
        assert result.certificate.epsilon == 1.0 and result.certificate.delta == 1e-6
        assert result.certificate.trust_model.value == "shuffle"
        assert Certificate.from_json(result.certificate.to_json()) == result.certificate
    assert (
        sdp_ae(SPEC_BANDIT, 20_000, np.random.default_rng(0), epsilon=1.0, delta=1e-6).parameters[
            "batch_size"
        ]
        == 20
    )


@settings(max_examples=25, deadline=None)
@given(
    means=arrays(np.float64, st.integers(2, 6), elements=st.floats(0.0, 1.0)),
    horizon=st.integers(2, 3000),
    noise_bits=st.integers(0, 200),
    doubling=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_engine_invariants_on_random_instances(means, horizon, noise_bits, doubling, seed):
    """Any instance: exactly T pulls per run, fewer users aggregated than pulled, at least one viable arm,
    regret = Σ pulls·gap with 0 <= regret <= T·max gap."""
    bandit = MultiArmedBandit(means)
    algorithm = vb_sdp_ae if doubling else sdp_ae
    result = algorithm(
        bandit, horizon, np.random.default_rng(seed), noise_bits=noise_bits, runs=2, record_phases=True
    )
    assert np.all(result.pulls.sum(axis=1) == horizon)
    assert np.all(result.users < horizon)
    assert all(record.viable_after.any(axis=1).all() for record in result.phase_records)
    np.testing.assert_allclose(result.final_regret, result.pulls @ bandit.gaps)
    assert np.all(result.final_regret <= horizon * bandit.gaps.max() + 1e-9)


def test_registry_run_charges_a_real_ledger(tmp_path):
    """``--ledger``: every aggregated user of every run is charged once, and each user's spent guarantee is
    the batch summation's ε (one participation, nothing composed)."""
    from dpcert.bandits import registry
    from dpcert.ledger.api import Ledger

    path = tmp_path / "mab.db"
    config = registry.RunConfig("mab-se", "central", 0.8, None, horizon=600, runs=2, seed=1, ledger_path=path)
    run = registry.algorithm("mab-se").run(config)
    ledger = Ledger(path)
    users = list(ledger.users())
    assert len(users) == len(set(users)) and len(users) >= run.users
    assert ledger.spent(users[0]).epsilon == pytest.approx(0.8)
    assert len(ledger.charges(users[-1])) == 1


def test_baseline_summations_pass_privacy_audits():
    """dpcert.audits (confidence 0.999: false 'violated' rate <= 0.1%): randomized response on one bit and the
    central Laplace batch sum are consistent with their ε and tight (lower bound >= 0.8ε)."""
    from dpcert.audits import audit

    rr = LocalRandomizedResponse(1.0)
    central = CentralLaplaceSum(1.0)
    reports = [
        audit(
            lambda v, rng, size: rr.release(Contributions.of_sums(np.full(size, int(v)), 1), rng).estimate,
            1,
            0,
            1.0,
            samples=200_000,
            seed=2,
            confidence=0.999,
        ),
        audit(
            lambda v, rng, size: (
                central.release(Contributions.of_sums(np.full(size, float(v)), 5), rng).estimate
            ),
            3,
            4,
            1.0,
            samples=200_000,
            seed=3,
            confidence=0.999,
        ),
    ]
    for report in reports:
        assert report.verdict == "consistent" and report.epsilon_lower_bound >= 0.8
