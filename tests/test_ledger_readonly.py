"""Read-only readers of a SQLite ledger: a reader who cannot write the ledger's directory reads it, and a
viewer in a shared directory leaves no ``-wal``/``-shm`` file behind.

The reader without write access runs in a subprocess whose capabilities bound excludes
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (``setpriv``): as root, which the tests may run as, the
permission bits of a ``0555`` directory then apply as they do to any other user.  Without
``setpriv`` (or as a user who owns the directory, which the bits already bind) the directory's mode
alone does it.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dpcert import Guarantee
from dpcert.cli import main
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.laplace import laplace_certificate


def _without_override() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: root writes a 0555 directory anyway")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def _make(path: Path) -> None:
    with Ledger(path) as ledger:
        ledger.set_budget(None, Guarantee(1.0, 0.0))
        ledger.charge(["ann", 7], laplace_certificate(4.0), run_id="r1")  # epsilon 0.25 each
        ledger.charge([7], laplace_certificate(2.0), run_id="r2")  # and 0.5 more for 7


def _siblings(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    """A ledger in a directory of mode 0555 (its owner may not write it either)."""
    directory = tmp_path / "shared"
    directory.mkdir()
    path = directory / "ledger.db"
    _make(path)
    directory.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    try:
        yield path
    finally:
        directory.chmod(stat.S_IRWXU)


def _dpcert(prefix: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "dpcert", *args], capture_output=True, text=True, timeout=120
    )


def test_a_reader_who_cannot_write_the_directory_reads_verifies_and_exports(locked: Path) -> None:
    prefix = _without_override()
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", f"open({str(locked.parent / 'probe')!r}, 'w')"], capture_output=True
    )
    assert probe.returncode != 0, "the reader can write the directory: the test would prove nothing"
    before = _siblings(locked), locked.read_bytes()

    shown = _dpcert(prefix, "ledger", "show", str(locked), "--json")
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert (summary["users"], summary["charges"]) == (2, 3)  # rows: one per (charge, user)
    verified = _dpcert(prefix, "ledger", "verify", str(locked), "--json")
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"] is True, verified.stderr
    exported = _dpcert(prefix, "ledger", "export", str(locked), "--format", "csv")
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.strip().splitlines()) == 1 + 3  # a header, then one row per (charge, user)

    refused = _dpcert(prefix, "ledger", "budget", str(locked), "--epsilon", "2", "--delta", "0")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert (_siblings(locked), locked.read_bytes()) == before  # nothing written, nothing left behind


def test_a_viewer_in_a_shared_directory_leaves_no_journal_files_and_the_owner_writes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ledger.db"
    _make(path)
    assert _siblings(path) == {"ledger.db"}  # the owner's last close checkpointed its log away
    for argv in (["show", str(path)], ["verify", str(path)], ["export", str(path)]):
        assert main(["ledger", *argv, "--json"] if argv[0] != "export" else ["ledger", *argv]) == 0
        assert _siblings(path) == {"ledger.db"}, argv
    with Ledger(path, readonly=True) as viewer:
        assert viewer.remaining(7) == Guarantee(0.25, 0.0)
        assert _siblings(path) == {"ledger.db"}  # open, and still no -wal or -shm of the viewer's
        with Ledger(path) as owner:  # the owner writes while the viewer is open
            owner.charge(["ann"], laplace_certificate(4.0), run_id="r3")
        assert viewer.verify().ok
    capsys.readouterr()
    with Ledger(path) as owner:
        assert owner.remaining("ann") == Guarantee(0.5, 0.0) and owner.verify().ok


def test_a_reader_beside_a_live_writer_reads_through_its_log(tmp_path: Path) -> None:
    """While a writer holds the ledger open, its ``-wal`` file exists: a reader opens the file
    ``mode=ro`` (not immutable) and sees the writer's committed charges, also those still in the log."""
    path = tmp_path / "ledger.db"
    _make(path)
    with Ledger(path) as owner:
        owner.charge(["bob"], laplace_certificate(4.0), run_id="r3")
        assert (tmp_path / "ledger.db-wal").exists()
        with Ledger(path, readonly=True) as reader:
            assert "bob" in reader.users() and reader.verify().ok
        owner.charge(["bob"], laplace_certificate(4.0), run_id="r4")
    with sqlite3.connect(path) as db:  # counted by SQLite directly: each charge once
        assert db.execute("SELECT count(*) FROM charges").fetchone()[0] == 5  # one row per (charge, user)
