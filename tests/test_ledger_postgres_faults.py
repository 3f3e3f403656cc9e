"""A PostgreSQL ledger whose server is stopped (``pg_ctl stop -m immediate``, as a crash) between
charges: the next charge fails with one line saying what was recorded, a command line run ends with
exit 3 and that line, and after a restart nothing is lost or duplicated: retried charges with their
idempotency keys replay instead of charging twice.

Counts are taken on the server with plain SQL, independently of dpcert.  The reconnection delays are
set to none (one immediate attempt), so an outage is reported at once instead of after 7.5 s of
retries; the retries themselves are tested in ``test_ledger_postgres_roles``.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
from test_ledger_postgres import PostgresServer

from dpcert import Guarantee
from dpcert.cli import main
from dpcert.errors import LedgerStorageError
from dpcert.ledger import postgres as ledger_postgres
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.laplace import laplace_certificate

ROWS_PER_RUN = (
    "SELECT run_id, count(*), count(DISTINCT user_id) FROM dpcert.charges GROUP BY run_id ORDER BY run_id"
)


@pytest.fixture
def no_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_postgres, "RECONNECT_DELAYS", ())


def _rows(server: PostgresServer, database: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(server.url(database), autocommit=True) as admin:
        return admin.execute(sql).fetchall()


def test_a_charge_after_the_server_stopped_fails_in_one_line_and_retried_keys_replay(
    server: PostgresServer, no_retries: None
) -> None:
    database = server.new_database()
    url = server.url(database)
    laplace = laplace_certificate(8.0)  # epsilon 0.125
    with Ledger(url) as ledger:
        ledger.set_budget(None, Guarantee(1.0, 0.0))
        for i in range(3):
            ledger.charge([i, 100 + i], laplace, run_id=f"c{i}", idempotency_key=f"k{i}")
        server.stop()
        try:
            with pytest.raises(LedgerStorageError) as failure:
                ledger.charge([3, 103], laplace, run_id="c3", idempotency_key="k3")
        finally:
            server.start()
    message = str(failure.value)
    assert "\n" not in message and "nothing was recorded" in message, message
    assert _rows(server, database, ROWS_PER_RUN) == [(f"c{i}", 2, 2) for i in range(3)]

    with Ledger(url) as ledger:  # the run again, from its first charge, with the same keys
        receipts = [
            ledger.charge([i, 100 + i], laplace, run_id=f"c{i}", idempotency_key=f"k{i}") for i in range(4)
        ]
        assert [r.replayed for r in receipts] == [True, True, True, False]
        again = ledger.charge([3, 103], laplace, run_id="c3", idempotency_key="k3")
        assert again.replayed
        assert ledger.remaining(3) == Guarantee(0.875, 0.0) and ledger.verify().ok
    assert _rows(server, database, ROWS_PER_RUN) == [(f"c{i}", 2, 2) for i in range(4)]


def test_a_command_line_run_cut_off_mid_run_exits_3_saying_what_stays_recorded(
    server: PostgresServer, no_retries: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """``dpcert bandit run ... --ledger URL``: the server stops after the run's fifth charge.  The run
    ends with exit 3 and one line naming the charges of the run that stay recorded; after a restart
    the ledger holds those five charges, once each, and its chain verifies."""
    database = server.new_database()
    url = server.url(database)
    charges = 0
    original = Ledger.charge

    def charge_then_crash(self: Ledger, *args: Any, **kwargs: Any) -> Any:
        nonlocal charges
        receipt = original(self, *args, **kwargs)
        charges += 1
        if charges == 5:
            server.stop()
        return receipt

    monkeypatch.setattr(Ledger, "charge", charge_then_crash)
    argv = ["bandit", "run", "ldp-linear", "--privacy", "local", "--epsilon", "1", "--delta", "1e-5"]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*argv, "--horizon", "200", "--ledger", url, "--json"])
    finally:
        server.start()
    monkeypatch.undo()
    stderr = err.getvalue()
    assert code == 3, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("dpcert: error: ledger ") and not out.getvalue()
    assert "nothing was recorded" in stderr and "the 5 earlier charge(s) of this session" in stderr, stderr
    rows = _rows(server, database, "SELECT user_id, count(*) FROM dpcert.charges GROUP BY user_id ORDER BY 1")
    assert len(rows) == 5 and all(count == 1 for _, count in rows), rows
    with Ledger(url, readonly=True) as ledger:
        assert ledger.verify().ok
