"""Ledger on PostgreSQL: the same API, accounting, chain and export as on SQLite, and the shared
concurrency/SIGKILL test run on both backends.

A PostgreSQL server is started once per test session in a temporary directory (``initdb`` +
``pg_ctl``, listening on a Unix socket only) when its binaries are installed; the PostgreSQL tests
are skipped with the reason otherwise.
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import pwd
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from dpcert import BudgetExceeded, Guarantee
from dpcert.accounting.composition import compose
from dpcert.errors import InvalidParameter
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate

WORKER = Path(__file__).with_name("ledger_worker.py")
sys.path.insert(0, str(WORKER.parent))
import ledger_worker  # noqa: E402

_database_numbers = itertools.count()


def _postgres_bin() -> Path | None:
    initdb = shutil.which("initdb")
    candidates = [initdb] if initdb else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    for candidate in candidates:
        binary = Path(candidate).resolve().parent
        if (binary / "pg_ctl").exists():
            return binary
    return None


class PostgresServer:
    """A throw-away PostgreSQL server in a temporary directory: superuser ``postgres``, trust
    authentication, a Unix socket only; :meth:`stop` and :meth:`start` simulate an outage."""

    def __init__(self) -> None:
        pytest.importorskip("psycopg", reason='psycopg 3 is not installed (pip install "dpcert[postgres]")')
        binary = _postgres_bin()
        if binary is None:
            pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found; apt-get install postgresql")
        self.binary = binary
        self.root = Path(tempfile.mkdtemp(prefix="dpcert-pg-"))
        self.data = self.root / "data"
        self.run_as: list[str] = []
        if os.geteuid() == 0:  # initdb refuses to run as root: run the server as an unprivileged user
            runuser = shutil.which("runuser")
            if runuser is None:
                shutil.rmtree(self.root)
                pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
            account = pwd.getpwnam("nobody")
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self.run_as = [runuser, "-u", "nobody", "--"]
        try:
            subprocess.run(
                [*self.run_as, str(binary / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres"]
                + ["-E", "UTF8", "--locale=C", "--no-sync"],
                check=True,
                capture_output=True,
                cwd=self.root,
            )
            self.start()
        except subprocess.CalledProcessError as exc:
            shutil.rmtree(self.root, ignore_errors=True)
            pytest.skip(f"could not start a PostgreSQL server: {exc.stderr.decode(errors='replace')[-300:]}")

    def _pg_ctl(self, *args: str, check: bool = True) -> None:
        subprocess.run(
            [*self.run_as, str(self.binary / "pg_ctl"), "-D", str(self.data), *args],
            check=check,
            capture_output=True,
            cwd=self.root,
        )

    def start(self) -> None:
        options = f"-k {self.root} -c listen_addresses='' -c fsync=off -c max_connections=40"
        self._pg_ctl("-o", options, "-l", str(self.root / "log"), "-w", "start")

    def stop(self) -> None:
        """Stop at once, as a crash: server processes killed, no checkpoint, clients cut off."""
        self._pg_ctl("-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        self._pg_ctl("-m", "immediate", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str, user: str = "postgres") -> str:
        return f"postgresql:///{database}?host={self.root}&user={user}"

    def new_database(self) -> str:
        """The name of a new, empty database."""
        import psycopg

        name = f"ledger_{os.getpid()}_{next(_database_numbers)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as db:
            db.execute(f"CREATE DATABASE {name}")
        return name


@pytest.fixture(scope="session")
def postgres_server():
    """Socket directory of a throw-away PostgreSQL server (superuser ``postgres``, trust auth)."""
    server = PostgresServer()
    try:
        yield server.root
    finally:
        server.remove()


@pytest.fixture
def postgres_url(postgres_server):
    """URL of a new, empty database on the session's server."""
    import psycopg

    name = f"ledger_{os.getpid()}_{next(_database_numbers)}"
    with psycopg.connect(
        f"postgresql:///postgres?host={postgres_server}&user=postgres", autocommit=True
    ) as db:
        db.execute(f"CREATE DATABASE {name}")
    return f"postgresql:///{name}?host={postgres_server}&user=postgres"


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_location(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "ledger.db")
    return request.getfixturevalue("postgres_url")


def _charge_sequence(ledger: Ledger) -> None:
    ledger.set_budget(None, Guarantee(1.0, 1e-6))
    ledger.set_budget("vip", Guarantee(3.0, 1e-6))
    laplace = laplace_certificate(4.0)
    ledger.charge([3, -(2**63), 2**63 - 1, "vip", "ünï"], laplace, run_id="a")
    ledger.charge(np.arange(5), gaussian_certificate(8.0, delta=1e-7), run_id="b", idempotency_key="k")
    for _ in range(12):
        try:
            ledger.charge(["vip", 3], laplace)
        except BudgetExceeded:
            pass


def _without_times(export: str) -> dict:
    data = json.loads(export)
    for row in data["charges"]:
        row.pop("created")
    return data


def test_postgres_ledger_matches_the_sqlite_ledger_call_for_call(tmp_path, postgres_url):
    with Ledger(tmp_path / "a.db") as sqlite_ledger, Ledger(postgres_url) as pg_ledger:
        _charge_sequence(sqlite_ledger)
        _charge_sequence(pg_ledger)
        # same users (integers first, then strings), refusals, compositions and export
        assert (
            pg_ledger.users() == sqlite_ledger.users() == [-(2**63), 0, 1, 2, 3, 4, 2**63 - 1, "vip", "ünï"]
        )
        assert _without_times(pg_ledger.export()) == _without_times(sqlite_ledger.export())
        assert pg_ledger.export("csv", per_user=True) == sqlite_ledger.export("csv", per_user=True)
        for user in (3, "vip"):
            history = [c.certificate for c in pg_ledger.charges(user)]
            budget = pg_ledger.budget(user)
            assert pg_ledger.spent(user).epsilon == compose(history, delta=budget.delta).epsilon
            assert pg_ledger.spent(user).epsilon <= budget.epsilon
        assert pg_ledger.verify().ok and pg_ledger.chain_head() == pg_ledger.verify().head
        assert pg_ledger.schema_version == sqlite_ledger.schema_version
        replay = pg_ledger.charge(
            np.arange(5), gaussian_certificate(8.0, delta=1e-7), run_id="b", idempotency_key="k"
        )
        assert replay.replayed and len(pg_ledger.charges(0)) == 1
        with pytest.raises(InvalidParameter, match="idempotency_key"):
            pg_ledger.charge([9], laplace_certificate(4.0), idempotency_key="k")


def test_postgres_verify_detects_an_edited_row_and_readers_do_not_write(postgres_url):
    import psycopg

    with Ledger(postgres_url) as ledger:
        ledger.charge([1, 2, 3], laplace_certificate(4.0), run_id="x")
        head = ledger.chain_head()
    with Ledger(postgres_url, readonly=True) as reader:
        assert reader.verify(head).ok
        with pytest.raises(InvalidParameter, match="readonly"):
            reader.charge([4], laplace_certificate(4.0))
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("UPDATE dpcert.charges SET run_id = 'y' WHERE id = 2")
    with Ledger(postgres_url) as ledger:
        report = ledger.verify()
        assert not report.ok and report.charges == 2 and "edited" in report.problem


def test_postgres_refuses_other_databases_and_newer_schemas(postgres_url):
    import psycopg

    with pytest.raises(InvalidParameter, match="no tables"):
        Ledger(postgres_url, readonly=True)
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("CREATE SCHEMA dpcert")  # the ledger's schema, holding another application's table
        db.execute("CREATE TABLE dpcert.accounts (id INT)")
    with pytest.raises(InvalidParameter, match="no dpcert schema version"):
        Ledger(postgres_url)
    with pytest.raises(InvalidParameter, match="reachable PostgreSQL"):
        Ledger(postgres_url.replace("/ledger_", "/missing_"))


# --------------------------------------------------------------------------- shared concurrency test
@pytest.mark.slow
def test_eight_writers_killed_at_random_never_exceed_lose_or_duplicate(ledger_location):
    """8 writer processes charge overlapping users (each user shared by 3) against a budget of 20
    charges; 3 of them are SIGKILLed after a random number of acknowledged commits (seeded)."""
    budget = Guarantee(2.5, 0.0)  # 20 charges of epsilon 0.125
    with Ledger(ledger_location) as ledger:
        ledger.set_budget(None, budget)
    workers, attempts = 8, 30
    rng = np.random.default_rng(20261123)
    killed = {int(w): int(rng.integers(1, 12)) for w in rng.choice(workers, size=3, replace=False)}
    processes = {
        w: subprocess.Popen(
            # a writer to be killed keeps charging until it is (its output may lag behind it)
            [
                sys.executable,
                str(WORKER),
                "race",
                ledger_location,
                str(w),
                str(10**9 if w in killed else attempts),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    }
    acknowledged: dict[int, list[str]] = {w: [] for w in range(workers)}
    selector = selectors.DefaultSelector()
    for w, process in processes.items():
        selector.register(process.stdout, selectors.EVENT_READ, w)
    open_streams = workers
    while open_streams:
        events = selector.select(timeout=300)
        assert events, "writers made no progress for 300 s"
        for key, _ in events:
            w = key.data
            line = key.fileobj.readline()
            if not line:
                selector.unregister(key.fileobj)
                open_streams -= 1
                continue
            acknowledged[w].append(line.strip())
            if w in killed and len(acknowledged[w]) == killed[w]:
                os.kill(processes[w].pid, signal.SIGKILL)
    codes = {w: process.wait(timeout=60) for w, process in processes.items()}
    assert all(codes[w] == 0 and len(acknowledged[w]) == attempts for w in codes if w not in killed)
    assert all(codes[w] == -signal.SIGKILL and len(acknowledged[w]) >= killed[w] for w in killed)

    with Ledger(ledger_location, readonly=True) as ledger:
        assert ledger.verify().ok
        rows = json.loads(ledger.export())["charges"]
        by_run: dict[str, list] = {}
        for row in rows:
            by_run.setdefault(row["run_id"], []).append(row["user_id"])
        for run_id, users in by_run.items():  # every stored charge whole, once
            worker = int(run_id[1:].split("-")[0])
            assert sorted(users) == sorted(ledger_worker.race_users(worker).tolist()), run_id
        for w in range(workers):
            committed = {r for r in acknowledged[w] if r != "-"}
            stored = {r for r in by_run if r.startswith(f"w{w}-")}
            assert committed <= stored  # no acknowledged charge lost
            # a killed writer may have committed one charge it could not acknowledge
            assert len(stored - committed) <= (1 if w in killed else 0)
        counts = []
        charged = set(ledger.users())  # a user whose writers were all killed early may have no charge
        assert charged <= set(range(ledger_worker.RACE_POPULATION))
        for user in sorted(charged):
            history = [c.certificate for c in ledger.charges(user)]
            assert compose(history, delta=0.0).epsilon <= budget.epsilon  # composed independently
            counts.append(len(history))
        assert max(counts) == 20  # the budget was reached, and refusals were needed
        assert any(r == "-" for lines in acknowledged.values() for r in lines)


def test_exports_and_verify_page_through_more_rows_than_one_fetch(tmp_path, postgres_url):
    """25,000 charge rows: more than one 10,000-row page of the server-side cursors."""
    users = np.arange(12_500)
    with Ledger(tmp_path / "a.db") as sqlite_ledger, Ledger(postgres_url) as pg_ledger:
        for ledger in (sqlite_ledger, pg_ledger):
            ledger.set_budget(None, Guarantee(1.0, 0.0))
            ledger.charge(users, laplace_certificate(4.0), run_id="one")
            ledger.charge(users[::-1], laplace_certificate(4.0), run_id="two")  # chain in the caller's order
        assert _without_times(pg_ledger.export()) == _without_times(sqlite_ledger.export())
        assert pg_ledger.export("csv", per_user=True) == sqlite_ledger.export("csv", per_user=True)
        report = pg_ledger.verify()
        assert report.ok and report.charges == 25_000 and report.head == pg_ledger.chain_head()


def test_postgres_refuses_user_ids_its_text_type_cannot_hold(postgres_url):
    with Ledger(postgres_url) as ledger:
        for bad in ("a\x00b", "\ud800"):
            with pytest.raises(InvalidParameter, match="user_ids"):
                ledger.charge([1, bad], laplace_certificate(4.0))
        assert ledger.users() == [] and ledger.verify().ok


def test_the_command_line_reads_and_charges_a_postgres_ledger(postgres_url, tmp_path):
    import json
    import os
    import shutil
    import subprocess
    import sys

    environment = dict(os.environ)
    environment["PATH"] = str(Path(sys.executable).parent) + os.pathsep + environment.get("PATH", "")
    if shutil.which("dpcert", path=environment["PATH"]) is None:
        pytest.skip("the dpcert console script is not installed beside this interpreter")

    def dpcert(*args):
        return subprocess.run(
            ["dpcert", *args], cwd=tmp_path, env=environment, capture_output=True, text=True
        )

    run = dpcert(
        "bandit",
        "run",
        "mab-se",
        "--privacy",
        "local",
        "--epsilon",
        "1",
        "--horizon",
        "2000",
        "--ledger",
        postgres_url,
        "--json",
    )
    assert run.returncode == 0, run.stderr
    shown = dpcert("ledger", "show", postgres_url, "--json")
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert summary["users"] > 0 and summary["max_user_epsilon"] <= 1.0 + 1e-12
    assert dpcert("ledger", "verify", postgres_url).returncode == 0
