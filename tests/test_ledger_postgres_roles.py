"""One PostgreSQL ledger shared by several roles and machines: one named schema whatever a role's
search_path, reconnection across a server outage, and one-line errors for outages and privileges.

The tests start their own throw-away server (module scope, :class:`PostgresServer` of
``test_ledger_postgres``), create roles in it, and stop it (``pg_ctl stop -m immediate``, as a
crash) to make outages.  They are skipped only when the server binaries or psycopg are absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_ledger_postgres import PostgresServer

from dpcert import BudgetExceeded, Guarantee
from dpcert.errors import InvalidParameter, LedgerStorageError
from dpcert.ledger import postgres as ledger_postgres
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.laplace import laplace_certificate

WRITER_GRANTS = "GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA dpcert TO {role}"
ROWS_PER_RUN = "SELECT run_id, count(*) FROM dpcert.charges GROUP BY run_id ORDER BY run_id"


def _admin(server: PostgresServer, database: str) -> Any:
    import psycopg

    return psycopg.connect(server.url(database), autocommit=True)


def _create_role(admin: Any, role: str, *, own_schema: bool = False) -> None:
    admin.execute(f"CREATE ROLE {role} LOGIN")
    if own_schema:  # PostgreSQL's default search_path "$user", public then finds this schema first
        admin.execute(f"CREATE SCHEMA {role} AUTHORIZATION {role}")


def _rows(admin: Any, sql: str) -> list[tuple]:
    return admin.execute(sql).fetchall()


def _dpcert_command(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    environment = dict(os.environ)
    environment["PATH"] = str(Path(sys.executable).parent) + os.pathsep + environment.get("PATH", "")
    if shutil.which("dpcert", path=environment["PATH"]) is None:
        pytest.skip("the dpcert console script is not installed beside this interpreter")

    def dpcert(*args: str, wait: bool = True) -> Any:
        command = ["dpcert", *args]
        if not wait:
            return subprocess.Popen(
                command,
                cwd=tmp_path,
                env=environment,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        return subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True)

    return dpcert


def test_the_schema_parameter_is_read_by_dpcert_and_never_reaches_libpq():
    assert ledger_postgres.split_url("postgresql:///db?host=/s&schema=ledger_2&user=u") == (
        "postgresql:///db?host=/s&user=u",
        "ledger_2",
    )
    assert ledger_postgres.split_url("postgresql://u@h/db") == ("postgresql://u@h/db", "dpcert")
    for bad in ("1x", "pg_temp", "a-b", "x" * 64, "", "a&schema=b"):
        with pytest.raises(InvalidParameter, match="schema"):
            ledger_postgres.split_url(f"postgresql:///db?schema={bad}")
    redacted = ledger_postgres._redacted("postgresql://u:secret@h/db?password=secret&schema=s")
    assert "secret" not in redacted and redacted.endswith("schema=s")


def test_two_roles_one_with_a_schema_of_its_own_see_one_ledger_and_one_budget(server):
    database = server.new_database()
    with _admin(server, database) as admin:
        _create_role(admin, "alice", own_schema=True)
        _create_role(admin, "bob")
        admin.execute(f"GRANT CREATE ON DATABASE {database} TO bob")
        with _admin(server, database) as plain:  # alice's own schema is first on her default search path
            plain.execute("SET ROLE alice")
            assert plain.execute("SELECT current_schemas(false)").fetchone()[0] == ["alice", "public"]
        with Ledger(server.url(database, "bob")) as ledger:  # bob creates the ledger (schema dpcert)
            ledger.set_budget(None, Guarantee(1.0, 0.0))
        admin.execute("GRANT USAGE ON SCHEMA dpcert TO alice")
        admin.execute(WRITER_GRANTS.format(role="alice"))
        laplace = laplace_certificate(1.0)  # epsilon 1: a user's first charge fills the budget
        with Ledger(server.url(database, "alice")) as on_a, Ledger(server.url(database, "bob")) as on_b:
            on_a.charge([7], laplace, run_id="machine A")
            for ledger in (on_b, on_a):  # the second charge is refused on both machines
                with pytest.raises(BudgetExceeded, match="user 7"):
                    ledger.charge([7], laplace, run_id="again")
            on_b.charge([8], laplace, run_id="machine B")
            with pytest.raises(BudgetExceeded, match="user 8"):
                on_a.charge([8], laplace)
            assert on_a.users() == on_b.users() == [7, 8]
            assert on_a.chain_head() == on_b.chain_head() and on_a.verify().ok
        # read independently of dpcert: one ledger, in schema dpcert; nothing in alice's schema
        assert _rows(admin, "SELECT user_id, run_id FROM dpcert.charges ORDER BY id") == [
            (f"i{7 + 2**63:020d}", "machine A"),
            (f"i{8 + 2**63:020d}", "machine B"),
        ]
        assert _rows(admin, "SELECT count(*) FROM pg_tables WHERE schemaname IN ('alice', 'public')")[0] == (
            0,
        )


def test_a_ledger_elsewhere_on_the_search_path_is_named_never_doubled(server):
    database = server.new_database()
    with _admin(server, database) as admin:
        _create_role(admin, "carla", own_schema=True)
        admin.execute("GRANT USAGE, CREATE ON SCHEMA public TO carla")
        # a ledger where earlier versions put it: the role's current schema (here its own)
        with Ledger(server.url(database, "carla") + "&schema=carla") as old:
            old.charge([1], laplace_certificate(1.0))
        for readonly in (False, True):
            with pytest.raises(InvalidParameter, match="schema carla .* holds one; add schema=carla"):
                Ledger(server.url(database, "carla"), readonly=readonly)
        assert _rows(admin, "SELECT count(*) FROM pg_namespace WHERE nspname = 'dpcert'") == [(0,)]
        # carla's schema is not on the search path of role postgres: a new ledger may start there
        with Ledger(server.url(database) + "&schema=experiment_2") as other:
            assert other.users() == []
        # a ledger in public (earlier versions' usual place): the same refusal for any role
        with Ledger(server.url(database) + "&schema=public") as old:
            old.charge([2], laplace_certificate(1.0))
        with pytest.raises(InvalidParameter, match="schema public .* holds one; add schema=public"):
            Ledger(server.url(database))
        with Ledger(server.url(database) + "&schema=public", readonly=True) as honoured:
            assert honoured.users() == [2] and honoured.verify().ok
        with pytest.raises(InvalidParameter, match="schema public .* holds one"):
            Ledger(server.url(database) + "&schema=experiment_3")
    with pytest.raises(InvalidParameter, match="schema"):
        Ledger(server.url(database) + "&schema=pg_catalog")


def test_missing_privileges_are_one_line_naming_the_privilege_and_the_object(server, tmp_path):
    database = server.new_database()
    with _admin(server, database) as admin:
        with Ledger(server.url(database)) as ledger:
            ledger.set_budget(None, Guarantee(5.0, 0.0))
            ledger.charge([1], laplace_certificate(1.0))
        _create_role(admin, "dave")
        admin.execute("GRANT USAGE ON SCHEMA dpcert TO dave")
        admin.execute(WRITER_GRANTS.format(role="dave"))
        admin.execute("REVOKE INSERT ON dpcert.charges FROM dave")
        with Ledger(server.url(database, "dave")) as ledger:
            with pytest.raises(LedgerStorageError) as raised:
                ledger.charge([2], laplace_certificate(1.0))
            assert ledger.users() == [1]  # nothing was recorded; the ledger is still usable
        message = str(raised.value)
        assert "\n" not in message
        assert "role dave lacks INSERT on dpcert.charges" in message
        assert "GRANT INSERT ON dpcert.charges TO dave" in message
        assert _rows(admin, "SELECT count(*) FROM dpcert.charges") == [(1,)]

        _create_role(admin, "frank")  # may not create a schema for a new ledger of its own
        with pytest.raises(LedgerStorageError, match=f"role frank lacks CREATE on database {database}"):
            Ledger(server.url(database, "frank") + "&schema=frank_ledger")
        admin.execute("CREATE SCHEMA frank_ledger")  # the schema exists, but is not frank's to write in
        with pytest.raises(LedgerStorageError, match="role frank lacks USAGE, CREATE on schema frank_ledger"):
            Ledger(server.url(database, "frank") + "&schema=frank_ledger")

        _create_role(admin, "erin")  # no privilege at all: the schema's USAGE is named first
        with pytest.raises(LedgerStorageError, match="role erin lacks USAGE on schema dpcert"):
            Ledger(server.url(database, "erin"), readonly=True)
        shown = _dpcert_command(tmp_path)("ledger", "show", server.url(database, "erin"))
        assert shown.returncode == 3, shown.stderr
        assert shown.stderr.count("\n") == 1 and "lacks USAGE on schema dpcert" in shown.stderr


def _restart_after(server: PostgresServer, seconds: float) -> threading.Thread:
    def restart() -> None:
        time.sleep(seconds)
        server.start()

    thread = threading.Thread(target=restart)
    thread.start()
    return thread


def test_an_outage_between_charges_within_the_retry_window_loses_and_duplicates_nothing(server):
    database = server.new_database()
    laplace = laplace_certificate(8.0)
    with Ledger(server.url(database)) as writer, Ledger(server.url(database), readonly=True) as reader:
        writer.set_budget(None, Guarantee(1.0, 0.0))
        receipts = [writer.charge([i, 100 + i], laplace, run_id=f"c{i}") for i in range(4)]
        assert reader.users() == [0, 1, 2, 3, 100, 101, 102, 103]
        server.stop()  # a crash: both connections are cut
        restart = _restart_after(server, 1.0)  # back well within the 7.5 s of retries
        try:
            receipts += [writer.charge([i, 100 + i], laplace, run_id=f"c{i}") for i in range(4, 8)]
        finally:
            restart.join()
        assert reader.users() == [*range(8), *range(100, 108)]  # the reader reconnects too

        # a crash in the middle of a charge's transaction: rolled back by the server, so run again
        store = writer._db
        groups = store.charge_groups

        def crash_then_group(ids: Any) -> Any:
            if not restarts:  # the first run only
                server.stop()
                restarts.append(_restart_after(server, 1.0))
            return groups(ids)  # the first run fails here: its connection is gone

        restarts: list[threading.Thread] = []
        store.charge_groups = crash_then_group
        try:
            receipts.append(writer.charge([8, 108], laplace, run_id="c8"))
        finally:
            del store.charge_groups
            for restart in restarts:
                restart.join()
        assert len(restarts) == 1
        assert [r.run_id for r in receipts] == [f"c{i}" for i in range(9)]
        assert writer.verify().ok
    with _admin(server, database) as admin:  # counted independently of dpcert: each charge once, whole
        assert _rows(admin, ROWS_PER_RUN) == [(f"c{i}", 2) for i in range(9)]


class _CommitLost:
    """A connection whose ``COMMIT`` runs ``action`` (which ends with the connection lost)."""

    def __init__(self, connection: Any, action: Callable[[Any], Any]) -> None:
        self._connection = connection
        self._action = action

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        if query == "COMMIT":
            return self._action(self._connection)
        return self._connection.execute(query, *args, **kwargs)


def test_a_commit_whose_answer_is_lost_is_looked_up_on_the_server(server, monkeypatch):
    """The server crashes around a charge's COMMIT; the ledger reconnects and asks the server
    whether that transaction committed (pg_xact_status) instead of guessing, and says the outcome
    is unknown when it cannot reconnect."""
    database = server.new_database()

    def committed_then_crash(connection: Any) -> Any:
        connection.execute("COMMIT")
        server.stop()
        server.start()
        return connection.execute("SELECT 1")  # the answer never arrives: the connection is gone

    def crash_before_commit(connection: Any) -> Any:
        server.stop()
        server.start()
        return connection.execute("COMMIT")

    with Ledger(server.url(database)) as ledger:
        ledger.charge([1], laplace_certificate(4.0), run_id="before")
        store = ledger._db
        store.connection = _CommitLost(store.connection, committed_then_crash)
        receipt = ledger.charge([2, 3], laplace_certificate(4.0), run_id="lost answer")
        assert receipt.users == 2 and not isinstance(store.connection, _CommitLost)  # reconnected
        store.connection = _CommitLost(store.connection, crash_before_commit)
        receipt = ledger.charge([4], laplace_certificate(4.0), run_id="rolled back")  # so run again
        assert receipt.users == 1 and ledger.users() == [1, 2, 3, 4] and ledger.verify().ok

        def crash_for_good(connection: Any) -> Any:
            server.stop()
            return connection.execute("COMMIT")

        store.connection = _CommitLost(store.connection, crash_for_good)
        with monkeypatch.context() as patch:  # one reconnection attempt instead of 7.5 s of them
            patch.setattr(ledger_postgres, "RECONNECT_DELAYS", ())
            with pytest.raises(LedgerStorageError, match="whether this write was recorded is unknown"):
                ledger.charge([5], laplace_certificate(4.0), run_id="unknown")
        server.start()
        assert ledger.users() == [1, 2, 3, 4] and ledger.verify().ok
    with _admin(server, database) as admin:
        assert _rows(admin, ROWS_PER_RUN) == [("before", 1), ("lost answer", 2), ("rolled back", 1)]


def test_the_command_line_ends_with_exit_3_and_one_line_when_the_server_stays_down(server, tmp_path):
    """``dpcert bandit run ldp-linear --ledger URL`` charges user t at round t; the server is
    stopped for good mid-run.  After a restart the ledger holds exactly rounds 0..k-1, once each."""
    database = server.new_database()
    url = server.url(database)
    dpcert = _dpcert_command(tmp_path)
    run = dpcert(
        "bandit", "run", "ldp-linear", "--privacy", "local", "--epsilon", "1", "--delta", "1e-5",
        "--horizon", "20000", "--ledger", url, "--json", wait=False,
    )  # fmt: skip
    seen = 0
    try:
        with _admin(server, database) as admin:
            deadline = time.monotonic() + 120
            while seen < 10 and run.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
                if _rows(admin, "SELECT count(*) FROM pg_tables WHERE schemaname = 'dpcert'")[0][0]:
                    seen = _rows(admin, "SELECT count(*) FROM dpcert.charges")[0][0]
        assert seen >= 10, "the run charged fewer than 10 rounds"
        server.stop()
        stdout, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
        server.start()
    assert run.returncode == 3, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("dpcert: error: ledger ") and not stdout
    with Ledger(url, readonly=True) as ledger:
        assert ledger.verify().ok
        users = [row.split(",")[1] for row in ledger.export("csv").splitlines()[1:]]
    rounds = [int(user.rsplit("/", 1)[1]) for user in users]
    assert len(rounds) >= seen and rounds == list(range(len(rounds)))  # a prefix: nothing lost or doubled
    assert len(rounds) < 20_000
