"""A ``bandit run --ledger`` cut off mid-run and run again charges each release once.

Every charge of a run with a ledger carries an idempotency key made of the run's identity (dpcert's
version, algorithm, privacy model, target, horizon, runs, seed, calibration, options) and the index of
the release; the same command with the same seed makes the same releases, so the ledger replays the
charges committed before the interruption instead of recording them again.  The interruption is a
failure injected right after the k-th charge committed (a ``BaseException``, as a kill would leave the
ledger: committed charges stay, nothing of the run's later releases exists).  The ledger's totals after
the interrupted run and its rerun are compared with those of one uninterrupted run on a fresh ledger:
the same users, each with the same charges (run id and certificate), in the same number.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dpcert.cli import main
from dpcert.ledger.api import Ledger

CASES = {
    # batched central Laplace sums: one charge per batch, users of two repetitions
    "mab-se": ["mab-se", "--privacy", "central", "--epsilon", "1", "--horizon", "600", "--runs", "2"],
    # one local report per round: 60 charges of one user each
    "ldp-linear": ["ldp-linear", "--privacy", "local", "--epsilon", "1", "--delta", "1e-5", "--horizon", "60",
                   "--option", "dimension=2", "--option", "arms=5"],
}  # fmt: skip


class Killed(BaseException):
    """Stands for the process being killed: not an ``Exception``, so no handler of the CLI catches it."""


def bandit_run(arguments: list[str], ledger: Path, seed: int = 3) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["bandit", "run", *arguments, "--seed", str(seed), "--ledger", str(ledger), "--json"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, (json.loads(out.getvalue()) if code == 0 else {"stderr": err.getvalue()})


def totals(path: Path) -> tuple[int, Counter[tuple[str, str | None, str]]]:
    """(charge rows, every (user, run id, certificate) with how often it was charged)."""
    found: Counter[tuple[str, str | None, str]] = Counter()
    with Ledger(path, readonly=True) as ledger:
        for user in ledger.users():
            for charge in ledger.charges(user):
                found[(str(user), charge.run_id, charge.certificate.to_json())] += 1
        assert ledger.verify().ok
    return sum(found.values()), found


def interrupt_after(monkeypatch: pytest.MonkeyPatch, commits: int) -> dict[str, int]:
    """Make :meth:`Ledger.charge` raise :class:`Killed` right after its ``commits``-th commit."""
    seen = {"charges": 0, "replayed": 0}
    original = Ledger.charge

    def charge(self: Ledger, *args: Any, **kwargs: Any) -> Any:
        receipt = original(self, *args, **kwargs)
        seen["charges"] += 1
        seen["replayed"] += int(receipt.replayed)
        if seen["charges"] == commits:
            raise Killed
        return receipt

    monkeypatch.setattr(Ledger, "charge", charge)
    return seen


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_rerun_after_an_interruption_charges_like_one_run(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arguments = CASES[name]
    seen = interrupt_after(monkeypatch, -1)  # counts the charges, interrupts nothing
    code, clean = bandit_run(arguments, tmp_path / "clean.db")
    monkeypatch.undo()
    assert code == 0, clean
    rows, expected = totals(tmp_path / "clean.db")
    assert rows >= 4 and all(n == 1 for n in expected.values())  # each user charged once per release
    assert seen["charges"] >= 4 and seen["replayed"] == 0

    cut = seen["charges"] // 2
    interrupt_after(monkeypatch, cut)
    with pytest.raises(Killed):
        bandit_run(arguments, tmp_path / "cut.db")
    monkeypatch.undo()
    partial_rows = totals(tmp_path / "cut.db")[0]
    assert 0 < partial_rows < rows  # the run was cut off mid-way, its first charges committed

    seen = interrupt_after(monkeypatch, -1)  # count replays, interrupt nothing
    code, rerun = bandit_run(arguments, tmp_path / "cut.db")
    assert code == 0, rerun
    assert seen["replayed"] == cut  # the committed charges were replayed, not recorded again
    assert totals(tmp_path / "cut.db") == (rows, expected)
    assert rerun["max_user_epsilon"] == clean["max_user_epsilon"] and rerun["users"] == clean["users"]
    assert rerun["regret"] == clean["regret"]  # the same releases


def test_the_same_command_twice_charges_once_and_another_seed_charges_anew(tmp_path: Path) -> None:
    arguments = CASES["mab-se"]
    path = tmp_path / "ledger.db"
    assert bandit_run(arguments, path)[0] == 0
    once = totals(path)
    assert bandit_run(arguments, path)[0] == 0
    assert totals(path) == once
    assert bandit_run(arguments, path, seed=4)[0] == 0  # other releases: other users, charged anew
    rows, found = totals(path)
    assert rows > once[0] and set(once[1]) < set(found)
    assert all(n == 1 for n in found.values())
