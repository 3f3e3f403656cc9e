"""DP-SE (Sajed & Sheffet 2019): epoch sizes and widths, certificate, charges before draws, correctness."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from reward_recording import RewardRecordingBandit
from scipy.stats import binom

from dpcert.bandits import registry
from dpcert.bandits.algorithms.dp_se import DPSEParameters, batch_size, confidence_width, dp_se
from dpcert.bandits.environments.mab import MultiArmedBandit
from dpcert.cli import main
from dpcert.errors import BudgetExceeded, InvalidParameter
from dpcert.session import PrivacySession
from dpcert.testing import assert_release_stops_at_refusal

CASES = [(10, 1, 0.5, 0.1), (4, 2, 0.5, 0.1), (3, 3, 0.1, 0.1), (2, 5, 1.0, 0.05), (7, 4, 2.0, 0.3)]


def _size_and_width(s: int, e: int, epsilon: float, beta: float) -> tuple[int, float]:
    """R_e and w_e written out from the formulas of DP-SE (authors' constants), in plain math."""
    gap = 2.0**-e
    a = math.log(8 * s * e * e / beta)
    b = math.log(4 * s * e * e / beta)
    size = 1 + int(math.floor(max(32 * a / gap**2, 8 * b / (gap * epsilon))))
    return size, math.sqrt(a / (2 * size)) + b / (size * epsilon)


@pytest.mark.parametrize(("s", "e", "epsilon", "beta"), CASES)
def test_batch_sizes_and_widths_follow_the_formulas(s, e, epsilon, beta):
    size, width = _size_and_width(s, e, epsilon, beta)
    parameters = DPSEParameters(epsilon, beta)
    assert int(batch_size(s, e, parameters)) == size
    assert float(confidence_width(s, e, size, parameters)) == pytest.approx(width, rel=1e-12)
    scaled = DPSEParameters(epsilon, beta, width_scale=0.5)
    assert float(confidence_width(s, e, size, scaled)) == pytest.approx(width / 2, rel=1e-12)


def test_a_run_pulls_r_e_per_active_arm_and_uses_the_widths():
    bandit = MultiArmedBandit(np.array([0.9, 0.8, 0.8, 0.6, 0.3]))
    epsilon, beta = 0.5, 0.1
    result = dp_se(bandit, 200_000, np.random.default_rng(3), epsilon=epsilon, runs=4, record_epochs=True)
    pulled = np.zeros((4, 5), dtype=np.int64)
    for record in result.phase_records:
        active = record.viable_before.sum(axis=1)
        for run in range(4):
            if not record.released[run]:
                continue
            size, width = _size_and_width(int(active[run]), record.epoch, epsilon, beta)
            assert record.batch_size[run] == size
            assert record.width[run] == pytest.approx(width, rel=1e-12)
            estimates = record.estimates[run]
            assert np.all(np.isfinite(estimates) == record.viable_before[run])
            upper, lower = estimates + width, estimates - width
            kept = record.viable_before[run] & ~(upper < np.nanmax(lower))  # strict removal
            assert np.array_equal(record.viable_after[run], kept)
            pulled[run] += np.where(record.viable_before[run], size, 0)
    # released users are exactly R_e per active arm of every released epoch
    assert np.array_equal(result.users, pulled.sum(axis=1))
    assert np.array_equal(result.pulls.sum(axis=1), np.full(4, 200_000))


def test_certificate_is_the_laplace_mechanism_at_exactly_the_target():
    bandit = MultiArmedBandit(np.array([0.9, 0.4]))
    for epsilon in (0.1, 0.5, 1.0):
        certificate = dp_se(bandit, 5_000, np.random.default_rng(0), epsilon=epsilon).certificate
        assert certificate is not None
        assert certificate.mechanism == "laplace"
        assert certificate.parameters["scale"] == 1 / epsilon
        assert certificate.parameters["sensitivity"] == 1.0
        assert certificate.epsilon == epsilon and certificate.delta == 0.0
        # exact, not loose: pure ε-DP at ε, and not at any smaller ε (Laplace's profile δ(ε') > 0 below ε)
        assert certificate.delta_for(epsilon) == 0.0
        assert certificate.delta_for(epsilon * (1 - 1e-6)) > 0.0
        assert certificate.trust_model.value == "central"


class _RefuseAfter:
    """A ledger accepting the first ``allowed`` charges, then refusing; the generator's state at refusal."""

    def __init__(self, rng: np.random.Generator, allowed: int) -> None:
        self.rng, self.allowed, self.state, self.calls = rng, allowed, None, 0

    def charge(self, user_ids, certificate, run_id=None):
        if self.calls >= self.allowed:
            self.state = json.dumps(self.rng.bit_generator.state)
            raise BudgetExceeded("refused")
        self.calls += 1


def test_charges_precede_draws_and_a_refusal_draws_no_noise():
    bandit = RewardRecordingBandit(np.array([0.9, 0.8, 0.5]))
    rng = np.random.default_rng(5)
    at, after = assert_release_stops_at_refusal(
        lambda session: dp_se(bandit, 100_000, rng, epsilon=1.0, session=session), rng
    )
    assert at == after == bandit.states[0]  # charged after epoch 1's rewards, before any noise
    # a refusal at epoch 2's charge: the generator stops where epoch 1 left it
    rng = np.random.default_rng(5)
    ledger = _RefuseAfter(rng, allowed=1)
    session = PrivacySession("dp-se-test", ledger)
    with pytest.raises(BudgetExceeded):
        dp_se(bandit, 100_000, rng, epsilon=1.0, session=session)
    assert ledger.state == json.dumps(rng.bit_generator.state)
    # without refusal: every released user is charged exactly once, with the run's certificate
    session = PrivacySession("dp-se-count")
    result = dp_se(bandit, 100_000, np.random.default_rng(5), epsilon=1.0, runs=3, session=session)
    charged = sum(int(np.sum(np.asarray(stop) - np.asarray(start))) for start, stop in session.intervals)
    assert charged == int(result.users.sum())
    assert all(c.epsilon == 1.0 for c in session.certificates)


def test_best_arm_eliminated_no_more_often_than_the_failure_bound_allows():
    """Binomial test: under the good event (probability >= 1 − β·π²/12 by Hoeffding, the Laplace tail and
    a union bound over arms and epochs) the best arm is never eliminated, so its elimination count in
    N independent runs is stochastically below Bin(N, p0), p0 = β·π²/12.  The test rejects when the count
    exceeds the (1 − 1e-3) quantile of Bin(N, p0): false-positive rate <= 1e-3.  Power: a width scaled by
    0.02 on a close instance eliminates the best arm far more often and the same test rejects."""
    runs = 2000
    for beta in (0.1, 0.5):
        p0 = beta * math.pi**2 / 12
        critical = binom.isf(1e-3, runs, p0)  # P(Bin(N, p0) > critical) <= 1e-3
        bandit = MultiArmedBandit(np.array([0.75, 0.25]))  # gap 0.5
        result = dp_se(bandit, 20_000, np.random.default_rng(11), epsilon=0.5, beta=beta, runs=runs)
        assert result.best_arm_eliminated.sum() <= critical
    close = MultiArmedBandit(np.array([0.5, 0.48]))
    broken = dp_se(
        close, 20_000, np.random.default_rng(12), epsilon=0.5, beta=0.1, runs=runs, width_scale=0.02
    )
    assert broken.best_arm_eliminated.sum() > binom.isf(1e-3, runs, 0.1 * math.pi**2 / 12)


@pytest.mark.parametrize(
    ("keyword", "value", "name"),
    [
        ("epsilon", 0.0, "epsilon"),
        ("epsilon", -1.0, "epsilon"),
        ("epsilon", math.inf, "epsilon"),
        ("beta", 0.0, "beta"),
        ("beta", 1.0, "beta"),
        ("beta", 1.5, "beta"),
        ("horizon", 1, "horizon"),
        ("horizon", 0, "horizon"),
        ("horizon", 2.5, "horizon"),
        ("decay", 1.0, "decay"),
        ("width_scale", 0.0, "width_scale"),
        ("runs", 0, "runs"),
    ],
)
def test_bad_inputs_raise_invalid_parameter_naming_it(keyword, value, name):
    arguments = {"epsilon": 1.0, "horizon": 1000}
    arguments[keyword] = value
    horizon = arguments.pop("horizon")
    with pytest.raises(InvalidParameter) as raised:
        dp_se(MultiArmedBandit(np.array([0.9, 0.4])), horizon, np.random.default_rng(0), **arguments)
    assert raised.value.name == name


def test_gaussian_rewards_are_refused():
    with pytest.raises(InvalidParameter) as raised:
        dp_se(MultiArmedBandit(np.array([0.9, 0.4]), "gaussian"), 1000, np.random.default_rng(0), epsilon=1.0)
    assert raised.value.name == "bandit"


def test_registered_and_runs_from_the_cli_with_a_ledger(tmp_path, capsys):
    spec = registry.algorithm("dp-se")
    assert spec.privacy_models == ("central",) and "Sajed & Sheffet 2019" in spec.description
    path = tmp_path / "ledger.db"
    code = main(
        ["bandit", "run", "dp-se", "--privacy", "central", "--epsilon", "0.5", "--horizon", "20000",
         "--option", "means=[0.9,0.5]", "--ledger", str(path), "--json"]
    )  # fmt: skip
    assert code == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["max_user_epsilon"] == 0.5
    assert main(["bandit", "run", "dp-se", "--privacy", "central", "--epsilon", "0", "--horizon", "100"]) == 2
    assert main(["bandit", "run", "dp-se", "--privacy", "local", "--epsilon", "1", "--horizon", "100"]) == 2


def test_secure_noise_keeps_the_epsilon_and_states_its_release_time_delta():
    bandit = MultiArmedBandit(np.array([0.9, 0.4]))
    result = dp_se(bandit, 20_000, np.random.default_rng(2), epsilon=0.5, secure=True, runs=2)
    certificate = result.certificate
    assert certificate is not None and certificate.mechanism == "discrete-laplace"
    assert certificate.epsilon <= 0.5 and 0.0 < certificate.delta < 1e-20
    assert result.best_arm_eliminated.sum() == 0 and np.all(result.users > 0)
