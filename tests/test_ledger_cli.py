"""The ledger from the command line and its storage edge cases: read-only readers that refuse foreign
files, budgets, per-user totals, streamed export, a full disk, idempotent retries, schema migration."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sqlite3
import stat
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from dpcert import BudgetExceeded, Guarantee
from dpcert.accounting.composition import compose
from dpcert.cli import main
from dpcert.errors import InvalidParameter, LedgerStorageError
from dpcert.ledger.api import Ledger
from dpcert.ledger.store import SCHEMA_VERSION
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_ledger(path: Path) -> None:
    with Ledger(path) as ledger:
        ledger.set_budget(None, Guarantee(1.0, 1e-6))
        ledger.set_budget("carol", Guarantee(0.5, 0.0))
        ledger.charge(np.arange(4), laplace_certificate(4.0), run_id="r1")
        ledger.charge([1, "carol"], laplace_certificate(8.0), run_id="r2")


# --------------------------------------------------------------------------- readers
@pytest.mark.parametrize("command", [["show"], ["export"], ["export", "--format", "csv"]])
def test_readers_refuse_another_applications_database_and_leave_it_unchanged(tmp_path, capsys, command):
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("INSERT INTO accounts (name) VALUES ('x')")
    db.close()
    empty = tmp_path / "empty.db"
    empty.touch()
    for path in (other, empty):
        before = digest(path)
        assert main(["ledger", *command[:1], str(path), *command[1:]]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "path" in err[0] and "dpcert ledger" in err[0]
        assert digest(path) == before
    with sqlite3.connect(other) as db:  # still one table, still a rollback-journal database
        assert db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == [("accounts",)]
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert empty.stat().st_size == 0


def test_writers_refuse_another_applications_database_too(tmp_path, capsys):
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY)")
    before = digest(other)
    with pytest.raises(InvalidParameter, match="no dpcert schema version"):
        Ledger(other)
    assert main(["ledger", "budget", str(other), "--epsilon", "1", "--delta", "0"]) == 2
    assert "path" in capsys.readouterr().err
    assert digest(other) == before


def test_a_read_only_ledger_file_can_be_read_and_is_not_modified(tmp_path, capsys):
    path = tmp_path / "ledger.db"
    make_ledger(path)
    before = digest(path)
    path.chmod(stat.S_IRUSR | stat.S_IRGRP)
    try:
        assert main(["ledger", "show", str(path), "--json"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert (summary["users"], summary["charges"]) == (5, 6)
        assert main(["ledger", "show", str(path), "--user", "carol", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["epsilon"] == 0.125
        assert main(["ledger", "export", str(path)]) == 0
        assert len(json.loads(capsys.readouterr().out)["charges"]) == 6
        with Ledger(path, readonly=True) as ledger, pytest.raises(InvalidParameter, match="readonly"):
            ledger.charge([1], laplace_certificate(4.0))
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert digest(path) == before


# --------------------------------------------------------------------------- budget
def test_budget_command_sets_budgets_that_charges_then_respect(tmp_path, capsys):
    path = tmp_path / "new.db"
    assert main(["ledger", "budget", str(path), "--epsilon", "0.5", "--delta", "0"]) == 0
    assert "every user" in capsys.readouterr().out
    assert (
        main(["ledger", "budget", str(path), "--epsilon", "1", "--delta", "0", "--user", "7", "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out) == {"path": str(path), "user": 7, "epsilon": 1.0, "delta": 0.0}
    certificate = laplace_certificate(4.0)  # epsilon 0.25
    with Ledger(path) as ledger:
        assert ledger.budget(7) == Guarantee(1.0, 0.0) and ledger.budget(8) == Guarantee(0.5, 0.0)
        for _ in range(2):
            ledger.charge([7, 8], certificate)
        with pytest.raises(BudgetExceeded):
            ledger.charge([7, 8], certificate)
        ledger.charge([7], certificate)
    for bad, name in (
        (["--epsilon", "-1", "--delta", "0"], "epsilon"),
        (["--epsilon", "1", "--delta", "1"], "delta"),
    ):
        before = digest(path)
        assert main(["ledger", "budget", str(path), *bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"invalid {name}" in err[0]
        assert digest(path) == before


def test_console_script_exit_codes(tmp_path):
    path = tmp_path / "ledger.db"
    make_ledger(path)
    script = [sys.executable, "-m", "dpcert.cli"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*script, *args], capture_output=True, text=True, timeout=120)

    result = run("ledger", "budget", str(path), "--epsilon", "nan", "--delta", "0")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert run("ledger", "show", str(tmp_path / "absent.db")).returncode == 2
    assert not (tmp_path / "absent.db").exists()


# --------------------------------------------------------------------------- export
def test_per_user_totals_equal_the_composition_of_each_users_charges(tmp_path, capsys):
    path = tmp_path / "ledger.db"
    make_ledger(path)
    assert main(["ledger", "export", str(path), "--format", "csv", "--per-user"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert main(["ledger", "export", str(path)]) == 0
    users = json.loads(capsys.readouterr().out)["users"]
    assert [r["user_id"] for r in rows] == ["0", "1", "2", "3", "carol"]
    with Ledger(path, readonly=True) as ledger:
        for row, entry in zip(rows, users, strict=True):
            user = entry["user_id"]
            budget = ledger.budget(user)
            direct = compose([c.certificate for c in ledger.charges(user)], delta=budget.delta)
            assert float(row["epsilon"]) == entry["epsilon"] == direct.epsilon
            assert int(row["charges"]) == entry["charges"] == len(ledger.charges(user))
            assert row["within_budget"] == ("true" if direct.epsilon <= budget.epsilon else "false")
            assert entry["budget"] == budget.to_dict()
    assert main(["ledger", "export", str(path), "--per-user"]) == 2  # JSON always has the totals


def test_export_streams_in_bounded_memory(tmp_path):
    path = tmp_path / "ledger.db"
    users = 10_000
    with Ledger(path, durable=False) as ledger:
        ledger.charge(np.arange(users), gaussian_certificate(20.0, delta=1e-7), run_id="big")

    class Counter(io.TextIOBase):
        characters = 0

        def write(self, text: str) -> int:
            self.characters += len(text)
            return len(text)

    with Ledger(path, readonly=True) as ledger:
        for format in ("json", "csv"):
            sink = Counter()
            tracemalloc.start()
            ledger.write_export(sink, format)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            # the whole text is > 1 MB; streaming keeps the peak at a small fraction of it
            assert sink.characters > 100 * users
            assert peak < sink.characters / 8, (format, peak, sink.characters)
        assert ledger.export("csv").count("\n") == users + 1


# --------------------------------------------------------------------------- storage errors
def test_a_full_disk_reports_the_real_cause_and_records_nothing(tmp_path):
    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.charge([0], laplace_certificate(4.0))
        pages = ledger._db.execute("PRAGMA page_count").fetchone()[0]
        ledger._db.execute(f"PRAGMA max_page_count = {pages + 2}")  # a disk with two pages left
        with pytest.raises(LedgerStorageError, match="full") as raised:
            ledger.charge(np.arange(1, 20_000), laplace_certificate(4.0))
        assert "cannot rollback" not in str(raised.value)
        assert "nothing was recorded" in str(raised.value)
        ledger._db.execute("PRAGMA max_page_count = 1073741823")
        assert ledger.users() == [0] and len(ledger.charges(0)) == 1
        ledger.charge([0, 1], laplace_certificate(4.0))  # usable again once there is space
        assert len(ledger.charges(0)) == 2


def test_cli_maps_a_failed_write_to_exit_3(tmp_path, capsys, monkeypatch):
    def full(*args, **kwargs):
        raise LedgerStorageError("ledger x: cannot write: the disk is full; nothing was recorded")

    monkeypatch.setattr(Ledger, "set_budget", full)
    assert main(["ledger", "budget", str(tmp_path / "l.db"), "--epsilon", "1", "--delta", "0"]) == 3
    assert capsys.readouterr().err.strip().count("\n") == 0


# --------------------------------------------------------------------------- idempotency
def test_retrying_a_committed_charge_with_its_key_records_it_once(tmp_path):
    path = tmp_path / "ledger.db"
    certificate = laplace_certificate(2.0)  # epsilon 0.5
    with Ledger(path) as ledger:
        ledger.set_budget(None, Guarantee(0.5, 0.0))
        first = ledger.charge([1, "a"], certificate, run_id="r", idempotency_key="k-1")
        assert not first.replayed
    with Ledger(path) as ledger:  # a retry from another process, after the budget is used up
        again = ledger.charge(["a", 1], certificate, run_id="r", idempotency_key="k-1")
        assert again.replayed and (again.users, again.certificate_sha256) == (2, first.certificate_sha256)
        assert len(ledger.charges(1)) == len(ledger.charges("a")) == 1
        with pytest.raises(BudgetExceeded):  # without the key it is a new charge
            ledger.charge([1], certificate, run_id="r")
        with pytest.raises(InvalidParameter, match="idempotency_key"):  # same key, other request
            ledger.charge([1, "a", 2], certificate, run_id="r", idempotency_key="k-1")
        with pytest.raises(InvalidParameter, match="idempotency_key"):
            ledger.charge([3], certificate, idempotency_key="")
        assert [c.run_id for c in ledger.charges(1)] == ["r"]
        assert json.loads(ledger.export())["charges"][0]["idempotency_key"] == "k-1"


# --------------------------------------------------------------------------- schema versions
def downgrade_to_version_1(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE idempotency")
        db.execute("DROP TABLE entries")
        db.execute("DROP TABLE signatures")
        for column in ("idempotency_key", "prev_hash", "hash"):
            db.execute(f"ALTER TABLE charges DROP COLUMN {column}")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.close()


def test_a_version_1_ledger_is_read_unchanged_refused_for_writing_and_migrated_explicitly(tmp_path, capsys):
    path = tmp_path / "old.db"
    make_ledger(path)
    downgrade_to_version_1(path)
    before = digest(path)
    assert main(["ledger", "export", str(path), "--format", "csv"]) == 0
    assert capsys.readouterr().out.count("\n") == 7
    assert main(["ledger", "show", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["schema_version"] == 1
    assert digest(path) == before
    with pytest.raises(InvalidParameter, match="ledger migrate"):
        Ledger(path)
    assert digest(path) == before
    with Ledger(path, migrate=True) as ledger:
        assert ledger.schema_version == SCHEMA_VERSION
        assert ledger.spent("carol").epsilon == 0.125
        ledger.charge([1], laplace_certificate(8.0), idempotency_key="after-migration")
        assert len(ledger.charges(1)) == 3
        report = ledger.verify()  # migrated through every version, then chained
        assert report.ok and report.charges == 7
    assert os.path.getsize(path) > 0
