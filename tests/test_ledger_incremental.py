"""The ledger's incremental budget check against from-scratch composition of the stored charges.

The check remembers composed ε of ``base + m·c`` and probes ahead; these tests derive the expected
number of accepted charges independently (``compose_counts`` of the history, count by count) and
compare every user's stored state with a composition of the charge rows read back from the file.
"""

from __future__ import annotations

import threading

import pytest

from dpcert import BudgetExceeded, Guarantee
from dpcert.accounting.composition import compose, compose_counts
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate

DELTA = 1e-6
LAPLACE = laplace_certificate(4.0)  # epsilon 0.25
GAUSSIAN = gaussian_certificate(8.0, delta=1e-7)


def boundary(base: list, certificate, budget: float) -> int:
    """Largest t with compose(base + t × certificate) within ``budget``, by a linear scan."""
    t = 0
    while compose_counts(base + [(certificate, t + 1)], delta=DELTA).epsilon <= budget:
        t += 1
    return t


def charge_until_refused(ledger: Ledger, user, certificate, limit: int = 100) -> int:
    accepted = 0
    for _ in range(limit):
        try:
            ledger.charge([user], certificate)
        except BudgetExceeded:
            return accepted
        accepted += 1
    raise AssertionError("never refused")


def assert_state_matches_charges(ledger: Ledger) -> None:
    """Each user's composed state equals the composition of their stored charge rows."""
    for user in ledger.users():
        certificates = [charge.certificate for charge in ledger.charges(user)]
        assert ledger.spent(user, delta=DELTA) == compose(certificates, delta=DELTA)


def test_accepted_charges_stop_exactly_at_the_from_scratch_boundary(tmp_path):
    budget = 1.6
    expected_homogeneous = boundary([], LAPLACE, budget)
    expected_mixed = boundary([(GAUSSIAN, 1)], LAPLACE, budget)
    assert expected_homogeneous > expected_mixed >= 1
    with Ledger(tmp_path / "a.db") as ledger:
        ledger.set_budget(None, Guarantee(budget, DELTA))
        assert charge_until_refused(ledger, 1, LAPLACE) == expected_homogeneous
        ledger.charge([2], GAUSSIAN)
        assert charge_until_refused(ledger, 2, LAPLACE) == expected_mixed
        # refusals are repeatable and record nothing
        with pytest.raises(BudgetExceeded):
            ledger.charge([1], LAPLACE)
        assert len(ledger.charges(1)) == expected_homogeneous
        assert_state_matches_charges(ledger)
        for user in ledger.users():
            assert ledger.spent(user).epsilon <= budget


def test_a_reopened_ledger_continues_from_the_stored_state(tmp_path):
    budget = 1.6
    expected = boundary([], LAPLACE, budget)
    path = tmp_path / "a.db"
    with Ledger(path) as ledger:
        ledger.set_budget(None, Guarantee(budget, DELTA))
        for _ in range(expected - 2):
            ledger.charge([1, 2], LAPLACE)
    with Ledger(path) as reopened:  # nothing remembered in memory: only the file
        assert_state_matches_charges(reopened)
        assert charge_until_refused(reopened, 1, LAPLACE) == 2
        # a budget raised after probes were remembered is honoured at once
        reopened.set_budget(2, Guarantee(budget + 0.5, DELTA))
        assert charge_until_refused(reopened, 2, LAPLACE) == boundary([], LAPLACE, budget + 0.5) - (
            expected - 2
        )
        assert_state_matches_charges(reopened)


def test_alternating_certificates_never_exceed_the_budget(tmp_path):
    budget = 2.0
    with Ledger(tmp_path / "a.db") as ledger:
        ledger.set_budget(None, Guarantee(budget, DELTA))
        history = []
        for step in range(40):
            certificate = LAPLACE if step % 3 else GAUSSIAN
            try:
                ledger.charge([7], certificate)
                history.append(certificate)
            except BudgetExceeded:
                refused = history + [certificate]
                assert compose(refused, delta=DELTA).epsilon > budget  # refused only when it must be
                break
        else:
            raise AssertionError("never refused")
        assert compose(history, delta=DELTA).epsilon <= budget
        assert_state_matches_charges(ledger)


def test_concurrent_writers_share_the_budget_and_the_state(tmp_path):
    budget = 1.6
    expected = boundary([], LAPLACE, budget)
    path = tmp_path / "a.db"
    with Ledger(path) as ledger:
        ledger.set_budget(None, Guarantee(budget, DELTA))
    accepted = [0, 0, 0]
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        try:
            with Ledger(path) as own:  # each writer keeps its own remembered probes
                for _ in range(expected):
                    try:
                        own.charge([1, 2, 100 + index], LAPLACE, run_id=f"w{index}")
                        accepted[index] += 1
                    except BudgetExceeded:
                        pass
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert sum(accepted) == expected  # the shared users 1 and 2 reach exactly the boundary
    with Ledger(path) as ledger:
        assert len(ledger.charges(1)) == len(ledger.charges(2)) == expected
        users = set(ledger.users())
        assert [len(ledger.charges(100 + i)) if 100 + i in users else 0 for i in range(3)] == accepted
        assert_state_matches_charges(ledger)
