"""One privatizer protocol for the bandits: contributions in, a charged and certified release out.

Every privatizer of the row family (Li, Zhou & Ji 2022) and of the batch summations (Tenenbaum et al.
2021 and the MAB baselines) is called the same way, charges exactly the users of the release with the
certificate it returns, and draws nothing once a charge is refused.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpcert.bandits.algorithms.mab import (
    CentralLaplaceSum,
    ExactSum,
    LocalRandomizedResponse,
    ShuffleBinarySum,
    central_dp_se,
    shuffle_binary_sum,
)
from dpcert.bandits.algorithms.robust_elimination import LaplaceClients
from dpcert.bandits.environments.mab import MultiArmedBandit
from dpcert.bandits.privatizers import Contributions, Privatizer, UserRanges, make_privatizer
from dpcert.errors import InvalidParameter
from dpcert.session import PrivacySession
from dpcert.testing import assert_release_stops_at_refusal

EPSILON, DELTA = 1.0, 1e-5


def _row_privatizers() -> list[Privatizer]:
    return [
        make_privatizer(m, reward_bound=1.0, epsilon=EPSILON, delta=DELTA)
        for m in ("central", "local", "shuffle")
    ]


def _summations() -> list[Privatizer]:
    return [
        shuffle_binary_sum(EPSILON, DELTA),
        CentralLaplaceSum(EPSILON),
        CentralLaplaceSum(EPSILON, secure=True),
        CentralLaplaceSum(EPSILON, secure=True, integer_sums=False),
        LocalRandomizedResponse(EPSILON),
    ]


def _row_contributions() -> list[Contributions]:
    rng = np.random.default_rng(0)
    ids = np.arange(100, 160)
    groups = np.arange(60) % 4
    return [
        Contributions.mean_of_rows(rng.uniform(-1, 1, (60, 3)), ids),
        Contributions.of_rows(rng.uniform(-1, 1, 60), groups, 4, ids),
    ]


def _batch_contributions() -> Contributions:
    # three batches of 20 consecutive users (ids 40..59, 80..99, 120..139), 7, 0 and 20 ones
    return Contributions.of_sums(np.array([7.0, 0.0, 20.0]), 20, UserRanges(np.array([40, 80, 120]), 20))


def _charged(session: PrivacySession) -> np.ndarray:
    users, counts = session.charges_per_user()
    return np.repeat(users, counts)


@pytest.mark.parametrize("index", range(3))
def test_row_privatizers_charge_exactly_the_contributing_users(index):
    for contributions in _row_contributions():
        privatizer = _row_privatizers()[index]
        session = PrivacySession("rows")
        release = privatizer.release(contributions, np.random.default_rng(1), session=session)
        assert _charged(session).tolist() == list(range(100, 160))  # each user once
        assert release.certificate in session.certificates
        assert release.estimate.shape == contributions.sums.shape == release.noise_variance.shape


@pytest.mark.parametrize("index", range(5))
def test_batch_summations_charge_exactly_the_batches_users(index):
    summation = _summations()[index]
    session = PrivacySession("batches")
    release = summation.release(_batch_contributions(), np.random.default_rng(2), session=session)
    expected = [*range(40, 60), *range(80, 100), *range(120, 140)]
    assert _charged(session).tolist() == expected
    assert session.certificates == [summation.certificate] == [release.certificate]
    assert release.estimate.shape == (3,) and np.all(release.noise_variance > 0)


@pytest.mark.parametrize("family", ["rows", "batches"])
def test_a_refused_charge_draws_no_noise(family):
    cases = (
        [(p, c) for p in _row_privatizers() for c in _row_contributions()]
        if family == "rows"
        else [(s, _batch_contributions()) for s in _summations()]
    )
    for privatizer, contributions in cases:
        rng = np.random.default_rng(3)
        initial = json.dumps(rng.bit_generator.state)

        def call(session, p=privatizer, c=contributions, r=rng):
            return p.release(c, r, session=session)

        assert assert_release_stops_at_refusal(call, rng) == (initial, initial)


def test_ranges_and_ids_charge_the_same_users():
    by_ranges, by_ids = PrivacySession("a"), PrivacySession("b")
    users = UserRanges(np.array([0, 10, 30]), np.array([5, 5, 2]))
    certificate = CentralLaplaceSum(EPSILON).certificate
    Contributions.of_sums(np.zeros(3), users.lengths, users).charge(by_ranges, certificate)
    Contributions.of_sums(np.zeros(3), users.lengths, users.ids()).charge(by_ids, certificate)
    assert (
        _charged(by_ranges).tolist() == _charged(by_ids).tolist() == [0, 1, 2, 3, 4, *range(10, 15), 30, 31]
    )
    assert users.count == 12


def test_without_a_session_or_certificate_nothing_is_charged_and_no_users_are_needed():
    release = ExactSum().release(Contributions.of_sums([3.0, 4.0], 5), np.random.default_rng(0))
    assert release.estimate.tolist() == [3.0, 4.0] and release.certificate is None
    session = PrivacySession("none")
    ExactSum().release(Contributions.of_sums([3.0], 5), np.random.default_rng(0), session=session)
    assert not session.certificates


def test_bit_summations_need_rows_only_where_users_randomize_their_own_values():
    sums_only = Contributions.of_sums(np.array([3.0, 1.0]), 4)
    shuffle_rows = make_privatizer("shuffle", reward_bound=1.0, epsilon=EPSILON, delta=DELTA)
    with pytest.raises(InvalidParameter) as refused:
        shuffle_rows.release(sums_only, np.random.default_rng(0))
    assert refused.value.name == "contributions"
    # the binary summation needs only the count of ones: its output depends on nothing else
    ShuffleBinarySum(8).release(sums_only, np.random.default_rng(0))


def test_charging_a_session_needs_the_users():
    summation = CentralLaplaceSum(EPSILON)
    with pytest.raises(InvalidParameter) as missing:
        summation.release(
            Contributions.of_sums([1.0], 3), np.random.default_rng(0), session=PrivacySession("x")
        )
    assert missing.value.name == "users"
    rows = Contributions.of_rows(np.zeros(4), np.zeros(4, dtype=int), 1, np.arange(3))
    privatizer = make_privatizer("central", reward_bound=1.0, epsilon=EPSILON, delta=DELTA)
    with pytest.raises(InvalidParameter) as wrong:
        privatizer.release(rows, np.random.default_rng(0), session=PrivacySession("y"))
    assert wrong.value.name == "users"


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: Contributions.of_rows(np.zeros(3), np.array([0, 1, 2]), 2), "groups"),
        (lambda: Contributions.of_rows(np.zeros(3), np.array([0.0, 1.0, 1.0]), 2), "groups"),
        (lambda: Contributions.of_rows(np.zeros((3, 2)), np.zeros(3, dtype=int), 2), "values"),
        (lambda: Contributions.mean_of_rows(np.zeros(3)), "values"),
        (lambda: Contributions.of_sums(np.zeros(2), -1), "counts"),
        (lambda: UserRanges(np.array([-1]), 3), "users"),
        (lambda: UserRanges(np.array([0]), 0), "users"),
    ],
)
def test_malformed_contributions_are_refused_naming_the_parameter(call, name):
    with pytest.raises(InvalidParameter) as refused:
        call()
    assert refused.value.name == name


def test_an_engine_phase_without_a_complete_batch_charges_nobody():
    # horizon 5, two arms, doubling batches: phase 1's batches (users 0-1, 2-3) complete; phase 2's first
    # batch would end at user 8 > 5, so nothing more is released and nobody more is charged
    bandit = MultiArmedBandit(np.array([0.6, 0.5]))
    session = PrivacySession("short")
    result = central_dp_se(bandit, 5, np.random.default_rng(0), epsilon=EPSILON, session=session)
    assert _charged(session).tolist() == [0, 1, 2, 3] == list(range(int(result.users.sum())))


@pytest.mark.parametrize("secure", [False, True])
def test_robust_clients_report_through_the_protocol(secure):
    rewards = np.random.default_rng(4).uniform(-2, 2, 12)
    # M1: one report per reward, users 500..511
    m1 = LaplaceClients("M1", epsilon=EPSILON, secure=secure)
    session = PrivacySession("m1")
    per_reward = Contributions.of_rows(
        rewards, np.arange(12), 12, UserRanges(np.array([500]), np.asarray(12))
    )
    release = m1.release(per_reward, np.random.default_rng(5), session=session)
    assert _charged(session).tolist() == list(range(500, 512))
    assert release.estimate.shape == (12,) and release.certificate == m1.certificate(1)
    # M2: clients 7, 9, 11 holding 3, 4 and 5 of the rewards report one mean each
    m2 = LaplaceClients("M2", epsilon=EPSILON, secure=secure)
    owners = np.repeat(np.arange(3), [3, 4, 5])
    per_client = Contributions.of_user_rows(rewards, owners, 3, np.array([7, 9, 11]))
    session = PrivacySession("m2")
    release = m2.release(per_client, np.random.default_rng(6), session=session)
    assert _charged(session).tolist() == [7, 9, 11] and release.estimate.shape == (3,)
    # the reports are the clipped means plus noise of the stated variance's scale (a loose sanity range)
    means = np.bincount(owners, weights=np.clip(rewards, -1, 1)) / [3, 4, 5]
    assert np.all(np.abs(release.estimate - means) < 40 * np.sqrt(release.noise_variance))
    for clients, contributions in ((m1, per_reward), (m2, per_client)):
        rng = np.random.default_rng(7)
        initial = json.dumps(rng.bit_generator.state)

        def call(s, c=clients, k=contributions, r=rng):
            return c.release(k, r, session=s)

        assert assert_release_stops_at_refusal(call, rng) == (initial, initial)
    with pytest.raises(InvalidParameter) as wrong:  # an M2 client's reports need its rows grouped
        m2.release(per_reward, np.random.default_rng(0))
    assert wrong.value.name == "contributions"


def test_a_users_rows_must_be_contiguous():
    with pytest.raises(InvalidParameter) as refused:
        Contributions.of_user_rows(np.zeros(3), np.array([0, 1, 0]), 2)
    assert refused.value.name == "owners"
    with pytest.raises(InvalidParameter):
        Contributions.of_user_rows(np.zeros(3), np.array([0, 0, 2]), 3)  # user 1 has no row
