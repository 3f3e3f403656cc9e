"""LDP-UCB and LDP-SE (Ren, Zhou, Liu & Shroff 2020): reports, radii, certificates, charges, rules."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom

from dpcert.bandits import registry
from dpcert.bandits.algorithms.ldp_mab import BLOCK, LocalReports, ldp_se, ldp_ucb
from dpcert.bandits.environments.mab import MultiArmedBandit
from dpcert.cli import main
from dpcert.errors import InvalidParameter
from dpcert.session import PrivacySession
from dpcert.testing import assert_release_stops_at_refusal

MECHANISMS = ("bernoulli", "laplace")


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 3.0])
def test_radii_follow_hoeffding_and_the_laplace_tail(epsilon):
    range_ = (math.exp(epsilon) + 1) / (math.exp(epsilon) - 1)  # debiased report's range, coth(ε/2)
    b = 1 / epsilon
    for n, ell in ((1, 2.0), (10, 5.0), (1000, 9.0), (10**5, 30.0)):
        assert LocalReports("bernoulli", epsilon).radius(n, ell) == pytest.approx(
            range_ * math.sqrt(ell / (2 * n)), rel=1e-12
        )
        # Laplace sum at failure 2e^{-ℓ}: max(b·sqrt(32·n·ℓ/4), 8√2·b·ℓ/4)
        noise = max(b * math.sqrt(8 * n * ell), 2 * math.sqrt(2) * b * ell)
        assert LocalReports("laplace", epsilon).radius(n, ell) == pytest.approx(
            math.sqrt(ell / (2 * n)) + noise / n, rel=1e-12
        )


def test_certificates_are_the_local_mechanisms_at_epsilon():
    for epsilon in (0.2, 1.0):
        bernoulli = LocalReports("bernoulli", epsilon).certificate
        assert bernoulli.trust_model.value == "local"
        assert bernoulli.epsilon == epsilon and bernoulli.delta == 0.0
        assert bernoulli.delta_for(epsilon * (1 - 1e-6)) > 0.0  # exact: not private at any smaller ε
        laplace = LocalReports("laplace", epsilon).certificate
        assert laplace.mechanism == "laplace" and laplace.trust_model.value == "local"
        assert laplace.parameters["scale"] == 1 / epsilon and laplace.parameters["sensitivity"] == 1.0
        assert laplace.epsilon == epsilon and laplace.delta == 0.0


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("reward_model", ["bernoulli", "beta"])
def test_reports_are_unbiased_with_the_closed_form_variance(mechanism, reward_model):
    """Mean of N = 200 000 reports of an arm of mean μ = 0.3 within 5 standard errors of μ (CLT,
    false-positive rate ≈ 6e-7), with the variance written out: Bernoulli response, q = μ(1−p) + (1−μ)p,
    Var = q(1−q)/(1−2p)²; Laplace, Var = Var(r) + 2b² with Var(r) <= μ(1−μ).  Power: the undebiased
    reports (their mean q) are more than 5 standard errors away."""
    epsilon, mu, count = 1.0, 0.3, 200_000
    bandit = MultiArmedBandit(np.array([mu, 0.8]), reward_model)
    local = LocalReports(mechanism, epsilon)
    reports = local.reports(bandit, np.zeros(count, dtype=np.int64), np.random.default_rng(3))
    p = 1 / (1 + math.exp(epsilon))
    q = mu * (1 - p) + (1 - mu) * p
    variance = q * (1 - q) / (1 - 2 * p) ** 2 if mechanism == "bernoulli" else mu * (1 - mu) + 2 / epsilon**2
    error = math.sqrt(variance / count)
    assert abs(float(reports.mean()) - mu) < 5 * error
    assert abs(q - mu) > 5 * error


def _reference_ldp_se(means, horizon, epsilon, beta, mechanism, seed):
    """LDP-SE written out for one run of at most one block: every user's reports drawn for all arms
    (LocalReports.reports, the documented draw), rounds over the active arms in ascending order,
    removal of a ȳ_a + w_r < max(ȳ − w_r), w_r = radius(r, ln(4k r²/β))."""
    bandit = MultiArmedBandit(np.asarray(means))
    k = len(means)
    local = LocalReports(mechanism, epsilon)
    reports = local.reports(bandit, np.broadcast_to(np.arange(k), (horizon, k)), np.random.default_rng(seed))
    active, sums, t, r, pulls = list(range(k)), np.zeros(k), 0, 0, np.zeros(k, dtype=np.int64)
    while t < horizon and len(active) > 1:
        for a in active:
            if t == horizon:
                break
            sums[a] += reports[t, a]
            pulls[a] += 1
            t += 1
        else:
            r += 1
            w = local.radius(r, math.log(4 * k * r * r / beta))
            lower = max(sums[a] / r - w for a in active)
            active = [a for a in active if sums[a] / r + w >= lower]
    if len(active) == 1:
        pulls[active[0]] += horizon - t
    return pulls


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_ldp_se_matches_the_rule_written_out(mechanism):
    means = [0.9, 0.6, 0.5, 0.2]
    for seed in (1, 2):
        expected = _reference_ldp_se(means, 4000, 2.0, 0.1, mechanism, seed)
        result = ldp_se(
            MultiArmedBandit(np.array(means)),
            4000,
            np.random.default_rng(seed),
            epsilon=2.0,
            mechanism=mechanism,
        )
        assert np.array_equal(result.pulls[0], expected)
        gaps = 0.9 - np.array(means)
        assert result.final_regret[0] == pytest.approx(float(expected @ gaps), rel=1e-12)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_ldp_ucb_matches_the_index_written_out(mechanism):
    means = np.array([0.9, 0.6, 0.5, 0.2])
    horizon, epsilon, seed = 3000, 2.0, 4
    local = LocalReports(mechanism, epsilon)
    bandit = MultiArmedBandit(means)
    reports = local.reports(
        bandit, np.broadcast_to(np.arange(4), (1, horizon, 4)), np.random.default_rng(seed)
    )[0]
    sums, pulls = np.zeros(4), np.zeros(4, dtype=np.int64)
    for t in range(horizon):
        if t < 4:
            arm = t
        else:
            index = [sums[a] / pulls[a] + local.radius(int(pulls[a]), 4 * math.log(t)) for a in range(4)]
            arm = int(np.argmax(index))
        sums[arm] += reports[t, arm]
        pulls[arm] += 1
    result = ldp_ucb(bandit, horizon, np.random.default_rng(seed), epsilon=epsilon, mechanism=mechanism)
    assert np.array_equal(result.pulls[0], pulls)


def test_ldp_se_eliminates_the_best_arm_no_more_often_than_its_failure_bound():
    """Under the good event (every active arm's mean within w_r in every round: failure <= Σ_r Σ_a
    4β/(4k r²) = β·π²/6 for the Laplace radius, by the tails above and a union bound) the best arm is never
    removed, so its removal count in N runs is stochastically below Bin(N, β·π²/6).  Rejecting above the
    (1 − 1e-3) quantile has false-positive rate <= 1e-3.  Power: widths scaled by 0.02 on a close instance
    remove the best arm far more often, and the same test rejects."""
    runs, beta = 150, 0.05
    p0 = beta * math.pi**2 / 6
    critical = binom.isf(1e-3, runs, p0)
    result = ldp_se(
        MultiArmedBandit(np.array([0.8, 0.2])), 3000, np.random.default_rng(11), epsilon=2.0, beta=beta,
        mechanism="laplace", runs=runs,
    )  # fmt: skip
    assert result.best_arm_eliminated.sum() <= critical
    broken = ldp_se(
        MultiArmedBandit(np.array([0.5, 0.45])), 3000, np.random.default_rng(12), epsilon=2.0, beta=beta,
        mechanism="laplace", runs=runs, width_scale=0.02,
    )  # fmt: skip
    assert broken.best_arm_eliminated.sum() > critical


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_charges_precede_draws(mechanism):
    bandit = MultiArmedBandit(np.array([0.9, 0.7, 0.4]))
    for algorithm in (ldp_ucb, ldp_se):
        rng = np.random.default_rng(6)
        initial = json.dumps(rng.bit_generator.state)
        at, after = assert_release_stops_at_refusal(
            lambda session, f=algorithm, g=rng: f(
                bandit, 9000, g, epsilon=1.0, mechanism=mechanism, session=session
            ),
            rng,
        )
        assert at == after == initial
    session = PrivacySession("ldp-ucb-count")
    result = ldp_ucb(
        bandit, 9000, np.random.default_rng(6), epsilon=1.0, mechanism=mechanism, runs=2, session=session
    )
    charged = sum(int(np.sum(np.asarray(stop) - np.asarray(start))) for start, stop in session.intervals)
    assert charged == int(result.users.sum()) == 2 * 9000 and session.max_charges_per_user() == 1
    session = PrivacySession("ldp-se-count")
    result = ldp_se(
        bandit, 9000, np.random.default_rng(6), epsilon=1.0, mechanism=mechanism, runs=2, session=session
    )
    charged = sum(int(np.sum(np.asarray(stop) - np.asarray(start))) for start, stop in session.intervals)
    # every reporting user is charged; at most one charged block per run goes unused
    assert int(result.users.sum()) <= charged < int(result.users.sum()) + 2 * BLOCK
    assert session.max_charges_per_user() == 1
    assert all(c.epsilon == 1.0 for c in session.certificates)


@pytest.mark.parametrize(
    ("keyword", "value", "name"),
    [
        ("epsilon", 0.0, "epsilon"),
        ("mechanism", "gauss", "mechanism"),
        ("width_scale", -1.0, "width_scale"),
        ("runs", 0, "runs"),
        ("horizon", 1, "horizon"),
    ],
)
def test_bad_inputs_raise_invalid_parameter_naming_it(keyword, value, name):
    for algorithm in (ldp_ucb, ldp_se):
        arguments = {"epsilon": 1.0, "horizon": 1000}
        arguments[keyword] = value
        horizon = arguments.pop("horizon")
        with pytest.raises(InvalidParameter) as raised:
            algorithm(MultiArmedBandit(np.array([0.9, 0.4])), horizon, np.random.default_rng(0), **arguments)
        assert raised.value.name == name
    with pytest.raises(InvalidParameter) as raised:
        ldp_se(MultiArmedBandit(np.array([0.9, 0.4])), 100, np.random.default_rng(0), epsilon=1.0, beta=1.0)
    assert raised.value.name == "beta"


@pytest.mark.parametrize("name", ["ldp-ucb", "ldp-se"])
def test_registered_and_runs_from_the_cli_with_a_ledger(tmp_path, capsys, name):
    spec = registry.algorithm(name)
    assert spec.privacy_models == ("local",) and "Ren, Zhou, Liu & Shroff 2020" in spec.description
    path = tmp_path / "ledger.db"
    code = main(
        ["bandit", "run", name, "--privacy", "local", "--epsilon", "0.5", "--horizon", "3000",
         "--option", "means=[0.9,0.5]", "--option", "mechanism=laplace", "--ledger", str(path), "--json"]
    )  # fmt: skip
    assert code == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["max_user_epsilon"] == 0.5
    assert main(["bandit", "run", name, "--privacy", "central", "--epsilon", "1", "--horizon", "100"]) == 2
    assert main(["bandit", "run", name, "--privacy", "local", "--epsilon", "1", "--horizon", "100",
                 "--option", "decay=2"]) == 2  # fmt: skip
