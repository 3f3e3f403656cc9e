"""The ledger's hash chain: every kind of tampering with the history is detected, an intact ledger
verifies (also after a SIGKILL mid-charge), and version-2 ledgers are chained by an explicit migration."""

from __future__ import annotations

import hashlib
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

from dpcert import Guarantee
from dpcert.cli import main
from dpcert.errors import InvalidParameter
from dpcert.ledger.api import Ledger
from dpcert.ledger.chain import GENESIS, chain_hashes, entry_digest
from dpcert.ledger.store import SCHEMA_VERSION
from dpcert.mechanisms.laplace import laplace_certificate

WORKER = Path(__file__).with_name("ledger_worker.py")


def make_ledger(path: Path) -> list[str]:
    """Four charge calls (18 rows); returns the chain head after each call."""
    heads = []
    with Ledger(path) as ledger:
        ledger.set_budget(None, Guarantee(5.0, 1e-6))
        ledger.charge(np.arange(6), laplace_certificate(4.0), run_id="r1")
        heads.append(ledger.chain_head())
        ledger.charge(["alice", "bob", 3], laplace_certificate(8.0), run_id="r2", idempotency_key="k2")
        heads.append(ledger.chain_head())
        ledger.charge(np.arange(2, 8), laplace_certificate(4.0), run_id="r3")
        heads.append(ledger.chain_head())
        ledger.charge([0, "alice", 9], laplace_certificate(2.0))
        heads.append(ledger.chain_head())
    return heads


def tamper(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    db.close()


def verify(path: Path, head: str | None = None):
    with Ledger(path, readonly=True) as ledger:
        return ledger.verify(head=head)


def test_an_intact_ledger_verifies_and_its_head_is_the_last_row_hash(tmp_path, capsys):
    path = tmp_path / "ledger.db"
    heads = make_ledger(path)
    report = verify(path)
    assert report.ok and report.charges == 18 and report.problem is None
    assert report.head == heads[-1]
    # the head, recomputed independently from the rows with the documented formula
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT c.user_id, s.sha256, c.run_id, c.idempotency_key, c.created FROM charges AS c "
            "JOIN certificates AS s ON s.id = c.certificate_id ORDER BY c.id"
        ).fetchall()
    db.close()
    previous = GENESIS
    for user, digest, run_id, key, created in rows:
        record = (
            (b"s" + user.encode()) if isinstance(user, str) else b"i" + user.to_bytes(8, "big", signed=True)
        )
        fields = json.dumps([digest, run_id, key, repr(created)])
        entry = hashlib.sha256(b"dpcert ledger charge v1\x00" + fields.encode()).digest()
        previous = hashlib.sha256(previous + entry + record).digest()
    assert previous.hex() == heads[-1]
    for head in heads:  # every earlier head is still in the chain
        assert verify(path, head).ok
    assert main(["ledger", "show", str(path)]) == 0
    assert f"chain head          {heads[-1]}" in capsys.readouterr().out
    assert main(["ledger", "verify", str(path), "--head", heads[1]]) == 0


@pytest.mark.parametrize(
    "statements, first_broken",
    [
        # a spent value: a charge row's certificate swapped for another
        (
            ["UPDATE charges SET certificate_id = (SELECT MAX(id) FROM certificates) WHERE id = 4"],
            "charge 4:",
        ),
        # a spent value: a user's stored state lowered (one charge forgotten)
        (["UPDATE users SET charges = charges - 1 WHERE user_id = 3"], "user 3:"),
        (["UPDATE users SET history_id = 0 WHERE user_id = 'alice'"], "user 'alice':"),
        # a row edited (another user, another run, another time)
        (["UPDATE charges SET user_id = 99 WHERE id = 8"], "charge 8:"),
        (["UPDATE charges SET user_id = 1.0 WHERE id = 2"], "charge 2: malformed"),  # same number, not an id
        (["UPDATE charges SET run_id = 'r0' WHERE id = 10"], "charge 10:"),
        (["UPDATE charges SET created = created - 1 WHERE id = 1"], "charge 1:"),
        # a middle row deleted (and the users' state made consistent with it)
        (
            [
                "DELETE FROM charges WHERE id = 9",
                "UPDATE users SET charges = charges - 1 WHERE user_id = (SELECT 3)",
            ],
            "charge 10:",
        ),
        # two rows re-ordered
        (
            [
                "UPDATE charges SET id = -5 WHERE id = 5",
                "UPDATE charges SET id = 5 WHERE id = 6",
                "UPDATE charges SET id = 6 WHERE id = -5",
            ],
            "charge 5:",
        ),
        # a row inserted in the middle, copying its neighbour's hashes
        (
            [
                "UPDATE charges SET id = id + 1000",
                "UPDATE charges SET id = (id - 1000) * 10",
                "INSERT INTO charges (id, user_id, certificate_id, run_id, created, prev_hash, hash) "
                "SELECT 75, 100, certificate_id, run_id, created, hash, hash FROM charges WHERE id = 70",
            ],
            "charge 75:",
        ),
    ],
)
def test_tampering_is_detected_and_the_first_broken_entry_named(tmp_path, capsys, statements, first_broken):
    path = tmp_path / "ledger.db"
    make_ledger(path)
    tamper(path, *statements)
    report = verify(path)
    assert not report.ok
    assert report.problem.startswith(first_broken), report.problem
    assert main(["ledger", "verify", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and first_broken in err[0]


def test_a_forged_but_consistent_certificate_is_detected(tmp_path):
    path = tmp_path / "ledger.db"
    make_ledger(path)
    forged = laplace_certificate(40.0).to_json()  # a valid certificate claiming much less loss
    digest = hashlib.sha256(forged.encode()).hexdigest()
    tamper(path, f"UPDATE certificates SET json = '{forged}', sha256 = '{digest}' WHERE id = 1")
    report = verify(path)
    assert not report.ok and report.problem.startswith("charge 1:")


def test_truncation_is_detected_with_a_known_head(tmp_path):
    path = tmp_path / "ledger.db"
    heads = make_ledger(path)
    truncated = tmp_path / "truncated.db"
    # a consistent truncation: the last call removed with the state it changed (an old copy of the file)
    source = sqlite3.connect(path)
    target = sqlite3.connect(truncated)
    source.backup(target)
    source.close()
    target.close()
    # the last call: its rows and its entry
    tamper(
        truncated,
        "DELETE FROM charges WHERE run_id IS NULL",
        "DELETE FROM entries WHERE id = (SELECT MAX(id) FROM entries)",
    )
    with Ledger(truncated) as ledger:  # rebuild the users' state so that only the head can tell
        ledger._db.execute("DELETE FROM users WHERE user_id IN (9)")
        rows = ledger._db.execute(
            "SELECT user_id, certificate_id, COUNT(*) FROM charges GROUP BY user_id, certificate_id"
        ).fetchall()
        state: dict = {}
        for user, cid, count in rows:
            state.setdefault(user, {})[cid] = count
        for user, counts in state.items():
            ledger._db.execute(
                "UPDATE users SET history_id = ?, charges = ? WHERE user_id = ?",
                (ledger._history_id(counts), sum(counts.values()), user),
            )
    assert verify(truncated).ok  # without a recorded head a consistent truncation cannot be seen
    assert verify(truncated, heads[2]).ok  # the head of call 3 is still there
    report = verify(truncated, heads[3])
    assert not report.ok and "truncated" in report.problem
    assert main(["ledger", "verify", str(truncated), "--head", heads[3]]) == 1
    assert main(["ledger", "verify", str(truncated), "--head", "xyz"]) == 2
    with pytest.raises(InvalidParameter, match="head"):
        verify(truncated, "0" * 63)


def test_hashes_cover_every_field_of_a_row():
    entry = entry_digest("a" * 64, "run", "key", 1.5)
    base = chain_hashes(GENESIS, entry, [7])[0]
    for other in (
        chain_hashes(GENESIS, entry_digest("b" * 64, "run", "key", 1.5), [7])[0],
        chain_hashes(GENESIS, entry_digest("a" * 64, "run2", "key", 1.5), [7])[0],
        chain_hashes(GENESIS, entry_digest("a" * 64, "run", None, 1.5), [7])[0],
        chain_hashes(GENESIS, entry_digest("a" * 64, "run", "key", 1.5000001), [7])[0],
        chain_hashes(GENESIS, entry, ["7"])[0],
        chain_hashes(GENESIS, entry, [8])[0],
        chain_hashes(b"\x01" * 32, entry, [7])[0],
    ):
        assert other != base
    # the integer fast path and the general path agree
    assert chain_hashes(GENESIS, entry, [1, 2, -3]) == chain_hashes(GENESIS, entry, [1, 2, -3, "x"])[:3]


@pytest.mark.slow
def test_an_intact_ledger_verifies_after_a_sigkill_mid_charge(tmp_path):
    path = tmp_path / "ledger.db"
    process = subprocess.Popen(
        [sys.executable, str(WORKER), "stream", str(path)], stdout=subprocess.PIPE, text=True
    )
    watchdog = threading.Timer(120.0, process.kill)
    watchdog.start()
    seen = -1
    try:
        for line in process.stdout:
            seen = int(line)
            if seen >= 6:
                break
    finally:
        watchdog.cancel()
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        process.stdout.close()
    assert seen >= 6
    report = verify(path)
    assert report.ok, report.problem
    assert report.charges >= 7 * 2000
    with Ledger(path) as ledger:  # charging continues the same chain
        ledger.charge([1], laplace_certificate(10.0), run_id="after")
        assert ledger.verify(head=report.head).ok


def test_a_version_2_ledger_is_chained_when_migrated_explicitly(tmp_path, capsys):
    path = tmp_path / "ledger.db"
    make_ledger(path)
    tamper(
        path,
        "DROP TABLE entries",
        "DROP TABLE signatures",
        "ALTER TABLE charges DROP COLUMN prev_hash",
        "ALTER TABLE charges DROP COLUMN hash",
        "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
    )
    with Ledger(path, readonly=True) as ledger:
        assert ledger.chain_head() is None
        assert not ledger.verify().ok
    assert main(["ledger", "verify", str(path)]) == 1
    assert "no hash chain" in capsys.readouterr().err
    with pytest.raises(InvalidParameter, match="not migrated implicitly"):
        Ledger(path)
    with Ledger(path, migrate=True) as ledger:
        assert ledger.schema_version == SCHEMA_VERSION == 4
        report = ledger.verify()
        assert report.ok and report.charges == 18
        ledger.charge([5], laplace_certificate(4.0))
        assert ledger.verify(head=report.head).ok


def test_extreme_and_unusual_user_ids_are_stored_exactly_and_chained(tmp_path):
    ids = [2**63 - 1, -(2**63), 0, 9007199254740993, "x", '😀é"\\', "7", ""]
    with Ledger(tmp_path / "ledger.db") as ledger:
        ledger.charge(ids, laplace_certificate(4.0), run_id="odd")
        ledger.charge(ids[::-1], laplace_certificate(4.0))
        assert sorted(map(repr, ledger.users())) == sorted(map(repr, ids))
        assert all(len(ledger.charges(u)) == 2 for u in ids)
        report = ledger.verify()
        assert report.ok and report.charges == 2 * len(ids)
        rows = [(c.user_id, c.run_id) for u in ids for c in ledger.charges(u)]
        assert rows == [(u, r) for u in ids for r in ("odd", None)]
