"""A ledger whose chain does not verify takes no new charge, and damaged files are verdicts, not crashes.

Tampered tables (an edited charge row, a deleted budget entry) and random byte damage of a ledger file
(seeded): ``verify`` either passes, reports the first broken entry, or refuses the file as not a
ledger, never an internal error; and whenever it does not pass, a new charge is refused with nothing
recorded.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import pytest

import dpcert
from dpcert import Ledger, PrivacySession
from dpcert.errors import DPCertError, InvalidParameter, LedgerIntegrityError, LedgerStorageError

CERTIFICATE = dpcert.calibrate_gaussian(0.1, 1e-7).certificate


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ledger") / "genuine.db"
    with Ledger(path) as ledger:
        ledger.set_budget(None, dpcert.Guarantee(5.0, 1e-5))
        for run in range(12):
            ledger.charge(range(8), CERTIFICATE, run_id=f"run-{run}")
    return path


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM charges").fetchone()[0])


def test_a_charge_on_an_edited_ledger_is_refused_and_records_nothing(genuine: Path, tmp_path: Path) -> None:
    path = tmp_path / "edited.db"
    shutil.copy(genuine, path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE charges SET run_id = 'forged' WHERE id = 5")
    before = _rows(path)
    with Ledger(path, readonly=True) as reader:
        report = reader.verify()
    assert not report.ok and "charge 5" in str(report.problem)
    with Ledger(path) as ledger, pytest.raises(LedgerIntegrityError, match="does not verify"):
        ledger.charge([100], CERTIFICATE, run_id="new")
    assert _rows(path) == before
    with Ledger(genuine) as ledger:  # the genuine ledger still takes charges
        ledger.charge([100], CERTIFICATE, run_id="still-fine")


def test_random_byte_damage_is_a_verdict_and_blocks_charges(genuine: Path, tmp_path: Path) -> None:
    size = genuine.stat().st_size
    rng = random.Random(20261128)
    outcomes = {"verified": 0, "broken": 0, "not a ledger": 0}
    for trial in range(30):
        path = tmp_path / f"damaged-{trial}.db"
        shutil.copy(genuine, path)
        with open(path, "r+b") as handle:
            for _ in range(rng.choice((1, 3, 10, 100))):
                handle.seek(rng.randrange(size))
                handle.write(bytes([rng.randrange(256)]))
        try:
            with Ledger(path, readonly=True) as reader:
                ok = reader.verify().ok
        except InvalidParameter:
            outcomes["not a ledger"] += 1
            continue
        outcomes["verified" if ok else "broken"] += 1
        if ok:
            continue
        before = _rows(path)
        with pytest.raises(DPCertError):
            with Ledger(path) as ledger:
                ledger.charge([100], CERTIFICATE, run_id="after-damage")
        assert _rows(path) == before
    # each kind of outcome occurs in the sample (power: the checks above ran on broken files)
    assert outcomes["broken"] >= 5 and outcomes["not a ledger"] >= 1, outcomes


def test_a_storage_failure_mid_run_says_what_the_session_had_recorded() -> None:
    """A full disk on the third charge: the error says the two earlier charges stay recorded (it used
    to say only that nothing was recorded, which is true of the failed charge alone)."""

    class FullAfterTwo:
        def __init__(self) -> None:
            self.recorded = 0

        def charge(self, user_ids, certificate, run_id=None):
            if self.recorded == 2:
                raise LedgerStorageError("ledger x: cannot write: the disk is full; nothing was recorded")
            self.recorded += 1

    sink = FullAfterTwo()
    session = PrivacySession("run", sink)
    session.charge([0, 1], CERTIFICATE)
    session.charge_range(2, 3, CERTIFICATE)
    with pytest.raises(LedgerStorageError, match=r"nothing was recorded; the 2 earlier charge\(s\)"):
        session.charge([9], CERTIFICATE)
    assert sink.recorded == 2 and len(session.certificates) == 2
