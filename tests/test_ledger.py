"""Ledger: accounting against direct composition, atomic refusals, SIGKILL safety, 4 concurrent writers."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from dpcert import BudgetExceeded, Guarantee
from dpcert.accounting.composition import compose, compose_counts
from dpcert.certificates import Certificate, approximate_dp_certificate
from dpcert.errors import CertificateFormatError, CertificateMismatch, InvalidParameter, UnknownUser
from dpcert.ledger.api import Ledger
from dpcert.ledger.store import SCHEMA_VERSION
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate

WORKER = Path(__file__).with_name("ledger_worker.py")
sys.path.insert(0, str(WORKER.parent))
import ledger_worker  # noqa: E402


@pytest.fixture
def ledger(tmp_path):
    with Ledger(tmp_path / "ledger.db") as opened:
        yield opened


def table_counts(path: Path) -> tuple[int, int, int]:
    with sqlite3.connect(path) as db:
        return tuple(
            db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("charges", "users", "certificates")
        )


# --------------------------------------------------------------------------- accounting
def test_spent_equals_direct_composition_of_the_users_charges(ledger):
    gaussian = gaussian_certificate(4.0, delta=1e-6)
    laplace = laplace_certificate(5.0)
    ledger.charge(np.arange(10), gaussian, run_id="a")
    ledger.charge([3, 4, 5], laplace, run_id="b")
    ledger.charge([4], gaussian, run_id="c")
    assert ledger.users() == list(range(10))
    assert [c.run_id for c in ledger.charges(4)] == ["a", "b", "c"]
    direct = compose([gaussian, laplace, gaussian], delta=1e-5)
    assert ledger.spent(4, delta=1e-5) == direct
    assert ledger.spent(0, delta=1e-5).epsilon == pytest.approx(gaussian_certificate(4.0, delta=1e-5).epsilon)
    # the worst user, by brute force over all users, is the one the summary reports
    worst = max(ledger.users(), key=lambda u: ledger.spent(u, delta=1e-5).epsilon)
    user, certificate = ledger.max_spent(delta=1e-5)
    assert user == worst == 4
    assert certificate.epsilon == direct.epsilon
    summary = ledger.spent_summary(delta=1e-5)
    assert (summary.users, summary.charges, summary.histories) == (10, 14, 3)


def test_string_ids_and_numpy_ids_are_kept_apart_from_each_other(ledger):
    certificate = laplace_certificate(1.0)
    ledger.charge(np.array([7, 8]), certificate)
    ledger.charge(["7", "alice"], certificate)
    assert ledger.users() == [7, 8, "7", "alice"]
    assert len(ledger.charges(7)) == 1 and len(ledger.charges("7")) == 1


def test_budget_refusal_is_atomic_and_per_user_budgets_override_the_default(ledger, tmp_path):
    certificate = laplace_certificate(4.0)  # epsilon 0.25
    ledger.set_budget(None, Guarantee(1.0, 0.0))
    ledger.set_budget(2, Guarantee(0.5, 0.0))
    ledger.charge(np.arange(100), certificate)
    ledger.charge(np.arange(100), certificate)  # user 2 is now exactly at 0.5
    assert ledger.remaining(2) == Guarantee(0.0, 0.0)
    assert ledger.remaining(3) == Guarantee(0.5, 0.0)
    before = ledger.export("json")
    counts = table_counts(tmp_path / "ledger.db")
    with pytest.raises(BudgetExceeded, match="1 of 100 users"):
        ledger.charge(np.arange(100), certificate)
    assert ledger.export("json") == before
    assert table_counts(tmp_path / "ledger.db") == counts
    ledger.charge([u for u in range(100) if u != 2], laplace_certificate(2.0))  # 0.5 more: at budget 1.0
    with pytest.raises(BudgetExceeded):
        ledger.charge([5, 200], certificate)
    ledger.charge([200], certificate)  # a new user starts from the default budget
    assert ledger.spent(5).epsilon == pytest.approx(1.0)
    assert all(ledger.spent(u).epsilon <= ledger.budget(u).epsilon for u in ledger.users())


def test_a_refused_charge_does_not_poison_later_accounting(ledger):
    ledger.set_budget(None, Guarantee(1.0, 1e-5))
    with pytest.raises(BudgetExceeded):
        ledger.charge([1, 2], laplace_certificate(0.5))  # epsilon 2: refused, its rows rolled back
    small = gaussian_certificate(20.0, delta=1e-7)
    ledger.charge([1], small)  # may reuse the row ids the refused charge had taken
    assert ledger.spent(1) == compose([small], delta=1e-5)
    assert [c.certificate for c in ledger.charges(1)] == [small]


def test_unknown_users_and_missing_budgets_give_clear_errors(ledger):
    ledger.charge([1], laplace_certificate(1.0))
    for query in (ledger.spent, ledger.charges, ledger.remaining):
        with pytest.raises(UnknownUser, match="unknown user 99"):
            query(99)
    with pytest.raises(InvalidParameter, match="budget"):
        ledger.remaining(1)


@pytest.mark.parametrize(
    "user_ids",
    [
        [],
        [1, 1],
        [1.5],
        [True],
        np.zeros((2, 2), dtype=int),
        np.array([0.5]),
        None,
        2**70,
        np.array([2**64 - 1]),
    ],
)
def test_bad_user_ids_are_refused(ledger, user_ids):
    with pytest.raises(InvalidParameter, match="user_ids"):
        ledger.charge(user_ids, laplace_certificate(1.0))


def test_bad_budgets_and_certificates_are_refused(ledger):
    with pytest.raises(InvalidParameter, match="epsilon"):
        ledger.set_budget(1, Guarantee(-1.0, 0.0))
    with pytest.raises(InvalidParameter, match="budget"):
        ledger.set_budget(1, (1.0, 0.0))
    with pytest.raises(InvalidParameter, match="delta"):
        ledger.set_budget(None, Guarantee(1.0, 1.5))
    with pytest.raises(InvalidParameter, match="certificate"):
        ledger.charge([1], {"epsilon": 1.0})
    with pytest.raises(InvalidParameter, match="method"):
        Ledger(ledger.path, method="magic")


# --------------------------------------------------------------------------- storage
def test_corrupted_certificate_json_is_detected_on_read(tmp_path):
    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.charge([1, 2], laplace_certificate(2.0))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE certificates SET json = substr(json, 2)")
    with Ledger(path) as ledger, pytest.raises(CertificateFormatError, match="corrupted"):
        ledger.spent(1)


def test_tampered_claim_with_a_matching_hash_fails_reverification(tmp_path):
    import hashlib

    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.charge([1], laplace_certificate(2.0))
    with sqlite3.connect(path) as db:
        text = db.execute("SELECT json FROM certificates").fetchone()[0]
        data = json.loads(text)
        data["guarantee"]["epsilon"] = 0.1  # the parameters give 0.5
        forged = json.dumps(data)
        db.execute(
            "UPDATE certificates SET json = ?, sha256 = ?",
            (forged, hashlib.sha256(forged.encode()).hexdigest()),
        )
    with Ledger(path) as ledger, pytest.raises(CertificateMismatch):
        ledger.charges(1)


def test_schema_version_and_foreign_files(tmp_path):
    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        assert ledger.schema_version == SCHEMA_VERSION
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(InvalidParameter, match="schema version"):
        Ledger(path)
    other = tmp_path / "not-a-ledger.db"
    other.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InvalidParameter, match="path"):
        Ledger(other)
    with pytest.raises(InvalidParameter, match="existing"):
        Ledger(tmp_path / "absent.db", create=False)


def test_readers_are_not_blocked_by_a_writer_holding_the_lock(tmp_path):
    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.charge([1], laplace_certificate(2.0))
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with Ledger(path, timeout=0.2) as reader:
            assert reader.spent(1).epsilon == 0.5
            assert reader.export("csv").count("\n") == 2
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_export_json_and_csv_round_trip(ledger):
    certificates = [laplace_certificate(2.0), approximate_dp_certificate(0.3, 1e-7)]
    ledger.set_budget(None, Guarantee(5.0, 1e-5))
    ledger.charge(["a", "b"], certificates[0], run_id="r1")
    ledger.charge(["b"], certificates[1], run_id="r2")
    data = json.loads(ledger.export("json"))
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["default_budget"] == {"epsilon": 5.0, "delta": 1e-5}
    read_back = {digest: Certificate.from_dict(d) for digest, d in data["certificates"].items()}
    assert sorted(read_back.values(), key=lambda c: c.epsilon) == sorted(
        certificates, key=lambda c: c.epsilon
    )
    assert [(c["user_id"], c["run_id"]) for c in data["charges"]] == [("a", "r1"), ("b", "r1"), ("b", "r2")]
    rows = list(csv.DictReader(io.StringIO(ledger.export("csv"))))
    assert [(r["user_id"], r["run_id"], r["mechanism"]) for r in rows] == [
        ("a", "r1", "laplace"),
        ("b", "r1", "laplace"),
        ("b", "r2", "approximate-dp"),
    ]
    assert float(rows[2]["epsilon"]) == 0.3
    with pytest.raises(InvalidParameter, match="format"):
        ledger.export("xml")


# --------------------------------------------------------------------------- crash safety
@pytest.mark.slow
def test_sigkill_mid_stream_leaves_only_whole_committed_charges(tmp_path):
    path = tmp_path / "ledger.db"
    process = subprocess.Popen(
        [sys.executable, str(WORKER), "stream", str(path)], stdout=subprocess.PIPE, text=True
    )
    watchdog = threading.Timer(120.0, process.kill)  # never hang the suite if the writer stalls
    watchdog.start()
    seen = -1
    try:
        for line in process.stdout:
            seen = int(line)
            if seen >= 12:
                break
    finally:
        watchdog.cancel()
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        process.stdout.close()
    assert seen >= 12, "the writer died before committing 13 charges"

    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        runs = dict(db.execute("SELECT run_id, COUNT(*) FROM charges GROUP BY run_id").fetchall())
        per_user_rows = dict(db.execute("SELECT user_id, COUNT(*) FROM charges GROUP BY user_id").fetchall())
        per_user_state = dict(db.execute("SELECT user_id, charges FROM users").fetchall())
    committed = sorted(int(r.split("-")[1]) for r in runs)
    # Every printed charge is there, the committed ones are a prefix, and each is whole.
    assert committed == list(range(len(committed)))
    assert len(committed) - 1 >= seen
    assert all(count == ledger_worker.STREAM_USERS for count in runs.values())
    # Every user's charge rows and per-user state agree with the committed runs, for all users.
    expected = np.zeros(ledger_worker.STREAM_POPULATION, dtype=int)
    for index in committed:
        expected[ledger_worker.stream_users(index)] += 1
    assert per_user_rows == {u: int(c) for u, c in enumerate(expected) if c}
    assert per_user_state == per_user_rows

    with Ledger(path) as ledger:
        for user in (0, 1234, 4999):
            assert len(ledger.charges(user)) == expected[user]
        summary = ledger.spent_summary(delta=0.0)
        assert summary.charges == expected.sum()
        assert summary.max_epsilon == pytest.approx(0.1 * expected.max(), rel=1e-12)
        ledger.charge([0], laplace_certificate(10.0), run_id="after")  # still writable
        assert len(ledger.charges(0)) == expected[0] + 1


# --------------------------------------------------------------------------- concurrency
@pytest.mark.slow
def test_four_concurrent_writers_never_exceed_a_budget(tmp_path):
    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.set_budget(None, Guarantee(2.5, 0.0))  # 20 charges of epsilon 0.125
    attempts = 10
    processes = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "contend", str(path), str(w), str(attempts)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    results = []
    for process in processes:
        out, _ = process.communicate(timeout=300)
        assert process.returncode == 0
        results.append(json.loads(out))
    assert all(r["ok"] + r["refused"] == attempts for r in results)
    # The shared users take exactly 20 charges in total: 40 attempts, refusals only at the budget.
    assert sum(r["ok"] for r in results) == 20
    with Ledger(path) as ledger:
        for user in range(ledger_worker.SHARED_USERS):
            assert len(ledger.charges(user)) == 20
        users = set(ledger.users())
        for r in results:
            own = int(ledger_worker.contend_users(r["worker"])[-1])
            assert (len(ledger.charges(own)) if own in users else 0) == r["ok"]
        summary = ledger.spent_summary(delta=0.0)
        assert summary.charges == 20 * ledger_worker.SHARED_USERS + 20 * ledger_worker.OWN_USERS
        assert summary.max_epsilon <= 2.5
        assert summary.max_epsilon == pytest.approx(2.5)
        assert compose_counts([(laplace_certificate(8.0), 20)], delta=0.0).epsilon == summary.max_epsilon


# --------------------------------------------------------------------------- command line
def test_cli_ledger_show_and_export(tmp_path, capsys):
    from dpcert.cli import main

    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.set_budget(None, Guarantee(1.0, 0.0))
        ledger.charge(np.arange(5), laplace_certificate(4.0), run_id="r")
        ledger.charge(["alice", 3], laplace_certificate(2.0), run_id="s")
    assert main(["ledger", "show", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["users"], summary["charges"], summary["max_user"]) == (6, 7, 3)
    assert summary["max_user_epsilon"] == pytest.approx(0.75)
    assert main(["ledger", "show", str(path), "--user", "alice", "--json"]) == 0
    alice = json.loads(capsys.readouterr().out)
    assert (alice["user"], alice["epsilon"], alice["remaining_epsilon"]) == ("alice", 0.5, 0.5)
    assert main(["ledger", "export", str(path), "--format", "csv"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 1 + 7
    assert main(["ledger", "export", str(path), "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["charges"]) == 7
    assert main(["ledger", "show", str(path), "--user", "bob"]) == 2
    assert "unknown user" in capsys.readouterr().err
    assert main(["ledger", "show", str(tmp_path / "absent.db")]) == 2
    assert not (tmp_path / "absent.db").exists()
