"""PostgreSQL storage for :class:`dpcert.ledger.api.Ledger` (``Ledger("postgresql://…")``).

Same tables, schema version, hash chain and export as the SQLite ledger; the ledger's logic is shared
(:class:`~dpcert.ledger.api.Ledger`), only the storage operations differ:

* **one named schema.**  The ledger's tables live in the PostgreSQL schema named by the URL's
  ``schema`` parameter, ``dpcert`` by default (``postgresql://alice@db.example.org/privacy?schema=dp``;
  dpcert removes the parameter before handing the URL to libpq).  Every (re)connection runs
  ``SET search_path TO <schema>, pg_catalog, pg_temp``, so every statement resolves in that schema,
  whatever the role's own ``search_path`` (PostgreSQL's default ``"$user", public`` puts a schema
  named after the role first, the per-user pattern its manual recommends, 5.10.6 "Usage Patterns"):
  every role and machine opening the same URL sees one ledger and one budget.  A new ledger creates
  its schema if absent (when the role may create schemas in the database, else one line naming the
  privilege).  A second ledger is never created silently: if the named schema holds no ledger but one
  of the schemas on the role's search path, or ``public``, holds a dpcert ledger, opening refuses
  (exit 2) naming that schema and the ``schema=`` to add.  Ledgers written by earlier versions of
  dpcert live in the role's current schema, usually ``public``: open them with ``?schema=public``
  (honoured as any other schema), or move their tables into ``dpcert`` with ``ALTER TABLE public.meta
  SET SCHEMA dpcert`` (and likewise for the others) so that the default URL finds them;
* every write transaction first locks the ``schema_version`` row of ``meta`` with ``SELECT … FOR
  UPDATE``.  Every charge appends to one hash chain (each row stores the hash of the row before it),
  so charges are totally ordered anyway; the row lock serialises writers exactly as SQLite's write
  lock does, the budget check and the charge then run on a state no other writer can change, and a
  killed client's transaction is rolled back by the server.  Readers are never blocked (MVCC);
* verification and exports read in one ``REPEATABLE READ`` snapshot;
* **outages.**  A connection lost between transactions (a server restart, a dropped link) is
  re-opened before the next statement with a bounded retry: attempts after 0.5, 1, 2 and 4 s
  (:data:`RECONNECT_DELAYS`, 7.5 s in all).  A write cut off before its ``COMMIT`` was sent is rolled
  back by the server; one whose ``COMMIT`` got no answer is looked up after reconnecting
  (``pg_xact_status`` of its transaction id, PostgreSQL ≥ 13; after a server restart a charge must
  also find its last row): committed, the call succeeds.  A write known to be rolled back raises
  :class:`~dpcert.errors.LedgerWriteInterrupted`, on which :meth:`Ledger.charge` and
  :meth:`Ledger.set_budget` run once more from the start, budget check included (nothing of the first
  run was recorded).  If the server cannot be reached again, the error says the outcome is unknown (a
  charge retried with the same idempotency key is then recorded at most once).  A server out of reach
  for longer than the retries, like every other storage failure, is a
  :class:`~dpcert.errors.LedgerStorageError` with a one-line message (``dpcert`` exits 3);
* **privileges.**  A statement the role may not run ends in one line naming the missing privilege
  and the object, with the ``GRANT`` that fixes it (e.g. ``role alice lacks INSERT on
  dpcert.charges``).  A writer needs ``USAGE`` on the schema and ``SELECT``, ``INSERT`` and
  ``UPDATE`` on its tables (``INSERT`` and ``UPDATE`` only where a statement writes); a reader
  (``readonly=True``) needs ``USAGE`` and ``SELECT``;
* user ids are stored as text that keeps integers and strings apart and sorts as SQLite does
  (integers first, in numeric order, then strings in byte order): ``i`` + the 20-digit value
  ``u + 2^63``, or ``s`` + the string, in a ``COLLATE "C"`` column.

Requires psycopg 3 (``pip install "dpcert[postgres]"``).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from dpcert.errors import DPCertError, InvalidParameter, LedgerStorageError, LedgerWriteInterrupted

_OFFSET = 2**63
_CREATE_LOCK = 0x6470636572740001  # advisory lock held while a new ledger's tables are created
DEFAULT_SCHEMA = "dpcert"
RECONNECT_DELAYS = (0.5, 1.0, 2.0, 4.0)  # seconds slept before each attempt to re-open a lost connection
_XACT_STATUS_POLLS = (0.05, 0.1, 0.2, 0.5, 1.0)  # waits for a lost COMMIT's backend to finish
# A server that answers a connection with one of these (server-side FATAL) is starting, stopping or
# full: an outage to wait out.  Any other answer (no such database or role, a wrong password) is bad
# input.  libpq gives no SQLSTATE for a failed connection, only its message.
_TRANSIENT_REFUSALS = (
    "starting up",
    "shutting down",
    "recovery mode",
    "not yet accepting connections",
    "not accepting connections",
    "too many clients",
    "connection slots are reserved",
)
_LEDGER_MARKERS = ("meta", "certificates", "charges", "histories", "users", "budgets")  # in every version
_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# The table privileges each statement of a writer may need (a reader needs SELECT only).
_WRITER_PRIVILEGES = {
    "meta": ("SELECT", "INSERT", "UPDATE"),
    "certificates": ("SELECT", "INSERT"),
    "charges": ("SELECT", "INSERT"),
    "histories": ("SELECT", "INSERT"),
    "users": ("SELECT", "INSERT", "UPDATE"),
    "budgets": ("SELECT", "INSERT", "UPDATE"),
    "idempotency": ("SELECT", "INSERT"),
}

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS certificates ("
    "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, "
    "json TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS charges ("
    'id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, user_id TEXT COLLATE "C" NOT NULL, '
    "certificate_id BIGINT NOT NULL REFERENCES certificates(id), run_id TEXT, "
    "created DOUBLE PRECISION NOT NULL, idempotency_key TEXT, prev_hash BYTEA, hash BYTEA)",
    "CREATE INDEX IF NOT EXISTS charges_by_user ON charges(user_id)",
    "CREATE TABLE IF NOT EXISTS histories ("
    "id BIGINT GENERATED BY DEFAULT AS IDENTITY (START WITH 1) PRIMARY KEY, key TEXT NOT NULL UNIQUE)",
    "INSERT INTO histories (id, key) VALUES (0, '') ON CONFLICT DO NOTHING",
    'CREATE TABLE IF NOT EXISTS users (user_id TEXT COLLATE "C" PRIMARY KEY, '
    "history_id BIGINT NOT NULL REFERENCES histories(id), charges BIGINT NOT NULL)",
    'CREATE TABLE IF NOT EXISTS budgets (user_id TEXT COLLATE "C" PRIMARY KEY, '
    "epsilon DOUBLE PRECISION NOT NULL, delta DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, request TEXT NOT NULL, run_id TEXT, "
    "users BIGINT NOT NULL, certificate_sha256 TEXT NOT NULL, created DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries (id BIGINT PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, "
    "idempotency_key TEXT UNIQUE, prev_hash BYTEA NOT NULL, hash BYTEA NOT NULL)",
    "CREATE TABLE IF NOT EXISTS signatures (entries BIGINT PRIMARY KEY, schema_version INTEGER NOT NULL, "
    "head BYTEA NOT NULL, signature BYTEA NOT NULL)",
]


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise InvalidParameter(
            "path", "postgresql://…", 'a SQLite path, or install psycopg 3: pip install "dpcert[postgres]"'
        ) from exc
    return psycopg


def _redacted(url: str) -> str:
    """The URL without its password (for messages)."""
    url = re.sub(r"([?&]password=)[^&]*", r"\1***", url)
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _quoted(name: str) -> str:
    """An SQL identifier as it would be typed (quoted unless plain lower case)."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'


def split_url(url: str) -> tuple[str, str]:
    """(the URL without dpcert's ``schema`` parameter, for libpq; the schema name) of a ledger URL."""
    base, _, query = url.partition("?")
    kept: list[str] = []
    schemas: list[str] = []
    for item in query.split("&") if query else []:
        key, _, value = item.partition("=")
        if unquote(key) == "schema":
            schemas.append(unquote(value))
        elif item:
            kept.append(item)
    if len(schemas) > 1:
        raise InvalidParameter("schema", schemas, "one schema parameter in the URL")
    schema = schemas[0] if schemas else DEFAULT_SCHEMA
    if not _SCHEMA_NAME.fullmatch(schema) or schema.lower().startswith("pg_"):
        raise InvalidParameter(
            "schema",
            schema,
            "a schema name of 1 to 63 letters, digits and underscores, not starting with a digit or pg_",
        )
    return base + ("?" + "&".join(kept) if kept else ""), schema


def _out_of_reach(exc: BaseException) -> bool:
    """Whether a failed connection is an outage (no answer, or a server starting, stopping or full)."""
    text = str(exc)
    return "FATAL" not in text or any(refusal in text for refusal in _TRANSIENT_REFUSALS)


class PostgresStore:
    """The PostgreSQL storage of a ledger (see the module docstring); the interface of ``SQLiteStore``."""

    kind = "PostgreSQL"

    def __init__(self, url: str, *, durable: bool, timeout: float, readonly: bool) -> None:
        psycopg = _psycopg()
        self._psycopg = psycopg
        self.path = _redacted(url)
        self._url, self.schema = split_url(url)
        self.readonly = readonly
        self.durable = durable
        self._timeout = timeout
        self._configured = False  # configure() ran: its settings are applied again on reconnection
        self._has_meta = False
        self._open = False  # a transaction or snapshot of this store is open on the connection
        self._cursors = 0
        self._batch: list[str] = []
        self._search_path: list[str] | None = None  # the role's own, as found on the first connection
        self.role = ""
        self.database = ""
        self._server_started: Any = None  # changes when the server restarts
        self._evidence: tuple[str, bytes] | None = None  # (user, hash) of the open charge's last row
        self.database_errors = (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn)
        self.connection = self._connect("the ledger was not opened")

    def damaged(self, exc: BaseException) -> bool:
        """Only text that is not UTF-8: the server checks its own pages, and its errors are its own."""
        return isinstance(exc, UnicodeDecodeError)

    # connections
    def _connect(self, consequence: str) -> Any:
        """A new connection set up for the ledger, tried again while the server is out of reach
        (after each of :data:`RECONNECT_DELAYS`); a :class:`LedgerStorageError` once they are spent."""
        psycopg = self._psycopg
        last: BaseException | None = None
        for delay in (0.0, *RECONNECT_DELAYS):
            time.sleep(delay)
            try:
                connection = psycopg.connect(
                    self._url, autocommit=True, connect_timeout=max(1, round(min(self._timeout, 10.0)))
                )
            except psycopg.OperationalError as exc:
                if not _out_of_reach(exc):
                    raise InvalidParameter(
                        "path", self.path, f"a reachable PostgreSQL database: {_one_line(exc)}"
                    ) from exc
                last = exc
                continue
            version = connection.info.server_version
            if version < 130000:  # pg_current_xact_id and pg_xact_status (a lost COMMIT looked up)
                connection.close()
                raise InvalidParameter(
                    "path", self.path, f"a PostgreSQL server of version 13 or later (this one is {version})"
                )
            try:
                self._set_up(connection)
            except psycopg.OperationalError as exc:
                connection.close()
                last = exc
                continue
            return connection
        raise LedgerStorageError(
            f"ledger {self.path}: the PostgreSQL server cannot be reached ({_one_line(last)}; "
            f"{1 + len(RECONNECT_DELAYS)} attempts over {sum(RECONNECT_DELAYS):g} s); {consequence}"
        )

    def _set_up(self, connection: Any) -> None:
        """The session settings of every (re)connection: the ledger's schema first on the search path."""
        role, database, search_path, started = connection.execute(
            "SELECT current_user, current_database(), current_schemas(false), pg_postmaster_start_time()"
        ).fetchone()
        self.role, self.database, self._server_started = str(role), str(database), started
        if self._search_path is None:
            self._search_path = [str(name) for name in search_path]
        settings = [
            ("search_path", f'"{self.schema}", pg_catalog, pg_temp'),
            ("lock_timeout", str(int(self._timeout * 1000))),
            ("default_transaction_read_only", "on" if self.readonly else "off"),
        ]
        if self._configured:
            settings.append(("synchronous_commit", "on" if self.durable else "off"))
        for name, value in settings:
            connection.execute("SELECT pg_catalog.set_config(%s, %s, false)", (name, value))

    def _lost(self, exc: BaseException) -> bool:
        """Whether ``exc`` ended the connection (server gone, restarted or shutting down)."""
        if not isinstance(exc, self._psycopg.OperationalError):
            return False
        state = getattr(exc, "sqlstate", None) or ""
        connection = self.connection
        return bool(
            connection.closed
            or connection.broken
            or state.startswith("08")
            or state in ("57P01", "57P02", "57P03")
        )

    def _reconnect(self, consequence: str) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()
        self.connection = self._connect(consequence)

    def _autocommit(self, operation: Callable[[Any], Any]) -> Any:
        """Run one statement outside any transaction (a read or a session setting, so safe to run
        again): on a lost connection, reconnect (bounded) and run it once more."""
        psycopg = self._psycopg
        try:
            return operation(self.connection)
        except psycopg.Error as exc:
            if not self._lost(exc):
                self._raise(exc, writing=False, consequence="nothing was changed")
        self._reconnect("nothing was changed")
        try:
            return operation(self.connection)
        except psycopg.Error as exc:
            self._raise(exc, writing=False, consequence="nothing was changed")

    # generic SQL (the ledger writes ``?`` placeholders; its SQL has no literal ``?`` or ``%``)
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        query, values = sql.replace("?", "%s"), tuple(params)
        if self._open:  # errors are handled by the transaction or snapshot
            return self.connection.execute(query, values)
        return self._autocommit(lambda connection: connection.execute(query, values))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        with self.connection.cursor() as cursor:
            cursor.executemany(sql.replace("?", "%s"), [tuple(r) for r in rows])

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        """The rows of a query, fetched in pages from a server-side cursor inside a transaction
        (export and verify run in one), so that memory stays bounded; else fetched at once."""
        if not self._open:
            yield from self.execute(sql, params)
            return
        self._cursors += 1
        with self.connection.cursor(name=f"dpcert_stream_{self._cursors}") as cursor:
            cursor.itersize = 10_000
            cursor.execute(sql.replace("?", "%s"), tuple(params))
            yield from cursor

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        return int(self.execute(sql + " RETURNING id", params).fetchone()[0])

    @property
    def in_transaction(self) -> bool:
        return self._open

    def close(self) -> None:
        self.connection.close()

    # user ids
    @staticmethod
    def uid(user_id: int | str) -> str:
        if isinstance(user_id, str):
            if "\x00" in user_id or any("\ud800" <= ch <= "\udfff" for ch in user_id):
                raise InvalidParameter(
                    "user_ids", user_id, "strings without NUL or lone surrogates (PostgreSQL text)"
                )
            return "s" + user_id
        return f"i{user_id + _OFFSET:020d}"

    @staticmethod
    def user(stored: str) -> int | str:
        if stored[:1] == "s":
            return stored[1:]
        if stored[:1] == "i" and len(stored) == 21 and stored[1:].isdigit():
            return int(stored[1:]) - _OFFSET
        raise DPCertError(f"malformed stored user id {stored!r}")

    # schema
    def tables(self) -> set[str]:
        """The tables of the ledger's schema (a role without ``USAGE`` on it is told so).  An empty
        schema is refused if another schema on the role's search path, or ``public``, holds a dpcert
        ledger, rather than start a second one."""
        rows = self.execute(
            "SELECT c.relname FROM pg_catalog.pg_class AS c "
            "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE n.nspname = ? AND c.relkind IN ('r', 'p')",
            (self.schema,),
        )
        names = {str(row[0]) for row in rows}
        rights = self.execute(
            "SELECT pg_catalog.has_schema_privilege(oid, 'USAGE'), "
            "pg_catalog.has_schema_privilege(oid, 'CREATE') FROM pg_catalog.pg_namespace WHERE nspname = ?",
            (self.schema,),
        ).fetchone()
        if rights is not None and not rights[0]:  # its tables would silently drop out of the search path
            missing = ["USAGE"] if names or self.readonly or rights[1] else ["USAGE", "CREATE"]
            schema = _quoted(self.schema)
            raise LedgerStorageError(self._lacking(missing, f"schema {schema}", f"SCHEMA {schema}"))
        if not names:
            self._refuse_a_second_ledger()
        return names

    def _refuse_a_second_ledger(self) -> None:
        candidates = [name for name in [*(self._search_path or []), "public"] if name != self.schema]
        rows = self.execute(
            "SELECT n.nspname FROM pg_catalog.pg_class AS c "
            "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE n.nspname = ANY(?) AND c.relkind IN ('r', 'p') AND c.relname = ANY(?) "
            "GROUP BY n.nspname HAVING COUNT(*) = ?",
            (candidates, list(_LEDGER_MARKERS), len(_LEDGER_MARKERS)),
        )
        found = {str(row[0]) for row in rows}
        if found:
            other = next(name for name in candidates if name in found)
            raise InvalidParameter(
                "schema",
                self.schema,
                f"the schema of this database's dpcert ledger: schema {self.schema} has none, but schema "
                f"{other} (on role {self.role}'s search path or public) holds one; add schema={other} to "
                f"the URL, or move its tables into schema {self.schema}, rather than start a second ledger",
            )

    def configure(self) -> None:
        # durable=False: a commit returns before its WAL record is flushed (survives client crashes,
        # not a server crash), as SQLite's synchronous=NORMAL.
        self._configured = True
        value = "on" if self.durable else "off"
        self._autocommit(
            lambda connection: connection.execute(
                "SELECT pg_catalog.set_config('synchronous_commit', %s, false)", (value,)
            )
        )

    def schema_statements(self) -> list[str]:
        """The new ledger's schema (if absent; inside the creation transaction) and tables."""
        exists = self.connection.execute(
            "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s", (self.schema,)
        ).fetchone()
        create = [] if exists else [f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"']
        return create + list(_SCHEMA)

    def prepare(self) -> None:
        pass

    # transactions
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction holding the row lock on ``meta.schema_version`` (see the module docstring).

        A new database has no ``meta`` row yet: its creation is serialised by an advisory lock.  A
        connection found lost when the transaction begins is re-opened (nothing has run yet).  One lost
        later raises :class:`~dpcert.errors.LedgerWriteInterrupted` if the server rolled the
        transaction back (a lost ``COMMIT`` is looked up first), so that the write may run again.
        """
        psycopg = self._psycopg
        xid = self._begin_write()
        try:
            yield
        except BaseException as exc:
            self._open = False
            self._rollback()
            if isinstance(exc, psycopg.Error):
                self._raise(exc, writing=True, consequence="nothing was recorded")
            raise
        self._open = False
        try:
            self.connection.execute("COMMIT")
        except psycopg.Error as exc:
            if self._lost(exc):
                self._settle_lost_commit(xid, exc)
                return
            self._rollback()
            self._raise(exc, writing=True, consequence="nothing was recorded")

    def _begin_write(self) -> str | None:
        """``BEGIN`` and the writer's lock; the transaction id (for a lost ``COMMIT``)."""
        psycopg = self._psycopg
        self._evidence = None
        for attempt in (1, 2):
            try:
                self.connection.execute("BEGIN")
                self._open = True
                self._has_meta = self._has_meta or "meta" in self.tables()
                if self._has_meta:
                    row = self.connection.execute(
                        "SELECT pg_catalog.pg_current_xact_id()::text FROM meta "
                        "WHERE key = 'schema_version' FOR UPDATE"
                    ).fetchone()
                else:
                    row = self.connection.execute(
                        "SELECT pg_catalog.pg_current_xact_id()::text, pg_catalog.pg_advisory_xact_lock(%s)",
                        (_CREATE_LOCK,),
                    ).fetchone()
                return None if row is None else str(row[0])
            except BaseException as exc:
                self._open = False
                lost = self._lost(exc)
                self._rollback()
                if lost and attempt == 1:
                    self._reconnect("nothing was recorded")
                    continue
                if isinstance(exc, psycopg.Error):
                    self._raise(exc, writing=True, consequence="nothing was recorded")
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _settle_lost_commit(self, xid: str | None, cause: BaseException) -> None:
        """Return if the transaction whose ``COMMIT`` got no answer committed; else raise, saying
        whether it was rolled back or its outcome is unknown.

        After reconnecting, the server says whether the transaction id committed (``pg_xact_status``,
        waiting while its server process finishes).  A server that restarted meanwhile (a crash) may
        have handed a transaction id whose records were lost to a new transaction: there, a charge
        counts as committed only if its last row (user and chain hash) is in the table.
        """
        lost = f"ledger {self.path}: the connection to the server was lost while committing"
        lost += f" ({_one_line(cause)})"
        unknown = (
            "whether this write was recorded is unknown (a charge retried with the same idempotency key "
            "is recorded at most once)"
        )
        started = self._server_started
        self._reconnect(f"the connection had been lost while committing: {unknown}")
        status = None if xid is None else self._transaction_status(xid)
        if status == "committed" and self._server_started != started:
            if self._evidence is None:
                status = None
            else:
                user, last_hash = self._evidence
                found = self._autocommit(
                    lambda connection: connection.execute(
                        "SELECT 1 FROM charges WHERE user_id = %s AND hash = %s",
                        (user, last_hash),
                        binary=True,
                    ).fetchone()
                )
                status = "committed" if found is not None else "aborted"
        if status == "committed":
            return
        if status == "aborted":
            raise LedgerWriteInterrupted(f"{lost}; the server rolled it back: nothing was recorded")
        raise LedgerStorageError(f"{lost}; {unknown}")

    def _transaction_status(self, xid: str) -> str | None:
        """``committed``, ``aborted`` or (still running after the waits) ``in progress``."""
        psycopg = self._psycopg
        status = None
        for wait in (0.0, *_XACT_STATUS_POLLS):  # its server process may still be finishing
            time.sleep(wait)
            try:
                status = self.connection.execute(
                    "SELECT pg_catalog.pg_xact_status(%s::xid8)", (xid,)
                ).fetchone()[0]
            except psycopg.errors.InvalidParameterValue:  # "in the future": lost in a crash, never committed
                return "aborted"
            except psycopg.Error as exc:
                self._raise(exc, writing=False, consequence="whether the last write was recorded is unknown")
            if status != "in progress":
                break
        return None if status is None else str(status)

    def _rollback(self) -> None:
        connection = self.connection
        if connection.closed or connection.broken:
            return
        if connection.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
            with contextlib.suppress(self._psycopg.Error):
                connection.execute("ROLLBACK")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction: every query inside sees the same committed state."""
        if self._open:
            yield
            return
        self._autocommit(lambda connection: connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ"))
        self._open = True
        try:
            yield
        except self._psycopg.Error as exc:
            self._open = False
            self._rollback()
            self._raise(exc, writing=False, consequence="nothing was changed")
        finally:
            self._open = False
            self._rollback()

    # errors
    def _raise(self, exc: BaseException, *, writing: bool, consequence: str) -> None:
        """Raise ``exc`` as a one-line :class:`LedgerStorageError` if it is a storage failure (server
        gone, out of disk or memory, read-only, a lock held too long, a missing privilege), else as is."""
        psycopg = self._psycopg
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            raise LedgerStorageError(self._privilege_message(exc, writing)) from exc
        if self._lost(exc):
            lost = (
                f"ledger {self.path}: the connection to the server was lost ({_one_line(exc)}); {consequence}"
            )
            # a write cut off before its COMMIT is rolled back by the server: it may run again
            raise (LedgerWriteInterrupted if writing else LedgerStorageError)(lost) from exc
        state = getattr(exc, "sqlstate", None) or ""
        causes = {
            "53": "the server is out of disk space, memory or connections",
            "58": "the server had an I/O error",
            "25006": "the database or session is read-only",
            "55P03": f"another writer held the ledger's lock longer than the timeout ({self._timeout:g} s)",
            "57": "the server is shutting down or cancelled the statement",
        }
        for prefix, cause in causes.items():
            if state.startswith(prefix):
                raise LedgerStorageError(
                    f"ledger {self.path}: cannot {'write' if writing else 'read'}: {cause} "
                    f"({_one_line(exc)}); {consequence}"
                ) from exc
        raise exc

    def _privilege_message(self, exc: BaseException, writing: bool) -> str:
        """One line naming the privilege the role lacks, the object, and the ``GRANT`` that gives it."""
        diag = getattr(exc, "diag", None)
        words = str(getattr(diag, "message_primary", None) or exc).split()
        name = words[-1].strip('"') if words else ""  # "permission denied for table charges" (any language)
        role, schema = _quoted(self.role), _quoted(self.schema)
        checks: list[tuple[str, str, str]] = []  # (function, object, privilege)
        where = grant_on = ""
        if name in _WRITER_PRIVILEGES:
            target = f"{schema}.{name}"
            for privilege in _WRITER_PRIVILEGES[name] if writing and not self.readonly else ("SELECT",):
                checks.append(("has_table_privilege", target, privilege))
            where, grant_on = target, target
        elif name == self.schema:
            for privilege in ("USAGE", "CREATE") if writing and not self._has_meta else ("USAGE",):
                checks.append(("has_schema_privilege", self.schema, privilege))
            where, grant_on = f"schema {schema}", f"SCHEMA {schema}"
        elif name == self.database:
            checks.append(("has_database_privilege", self.database, "CREATE"))
            where, grant_on = f"database {_quoted(self.database)}", f"DATABASE {_quoted(self.database)}"
        missing: list[str] = []
        with contextlib.suppress(self._psycopg.Error):
            for function, target, privilege in checks:
                row = self.connection.execute(
                    f"SELECT pg_catalog.{function}(%s, %s)", (target, privilege)
                ).fetchone()
                if not row[0]:
                    missing.append(privilege)
        if not missing:
            return f"ledger {self.path}: role {role} was refused a privilege: {_one_line(exc)}"
        return self._lacking(missing, where, grant_on)

    def _lacking(self, missing: list[str], where: str, grant_on: str) -> str:
        role, privileges = _quoted(self.role), ", ".join(missing)
        grant = f"GRANT {privileges} ON {grant_on} TO {role}"
        if grant_on.startswith("DATABASE"):
            schema = _quoted(self.schema)
            grant += f" (to create the ledger's schema), or CREATE SCHEMA {schema} AUTHORIZATION {role}"
        return f"ledger {self.path}: role {role} lacks {privileges} on {where}; an owner can run: {grant}"

    # the bulk statements of a charge (inside a write transaction)
    def charge_groups(
        self, ids: Sequence[int | str]
    ) -> list[tuple[int, float | None, float | None, int, str]]:
        """The charged users grouped by (history id, own budget ε, δ): (history, ε, δ, count, a user)."""
        stored = [self.uid(u) for u in ids]
        self._batch = stored
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT COALESCE(u.history_id, 0), b2.epsilon, b2.delta, COUNT(*), MIN(b.user_id) "
                "FROM unnest(%s::text[]) AS b(user_id) "
                "LEFT JOIN users AS u ON u.user_id = b.user_id "
                "LEFT JOIN budgets AS b2 ON b2.user_id = b.user_id "
                "GROUP BY 1, 2, 3",
                (stored,),
                binary=True,
            )
            return cursor.fetchall()

    def write_charge(
        self,
        ids: Sequence[int | str],
        certificate_id: int,
        run_id: str | None,
        created: float,
        idempotency_key: str | None,
        chain: bytes,
        new_history: dict[int, int],
    ) -> None:
        """Insert the charge rows (ids in the caller's order, so the chain follows row ids) and the state.

        Row ids come from an identity sequence while the writer lock is held, so they increase with
        the chain; a rolled-back charge leaves a gap, which the chain ignores (it follows id order).
        """
        stored = self._batch
        if len(stored) != len(ids) or len(chain) != 32 * (len(ids) + 1):
            raise DPCertError(f"ledger {self.path}: internal error: batch and chain lengths differ")
        self._evidence = (stored[-1], bytes(chain[-32:]))
        with self.connection.cursor() as cursor:  # binary parameters: no text escaping of the hashes
            # The hashes go to the server as one blob, sliced per row (cheaper than two bytea arrays).
            cursor.execute(
                "INSERT INTO charges "
                "(user_id, certificate_id, run_id, created, idempotency_key, prev_hash, hash) "
                "SELECT r.user_id, %(certificate)s, %(run)s, %(created)s, %(key)s, "
                "substring(%(chain)s::bytea FROM (32 * r.seq - 31)::int FOR 32), "
                "substring(%(chain)s::bytea FROM (32 * r.seq + 1)::int FOR 32) "
                "FROM unnest(%(users)s::text[]) WITH ORDINALITY AS r(user_id, seq) ORDER BY r.seq",
                {
                    "certificate": certificate_id,
                    "run": run_id,
                    "created": created,
                    "key": idempotency_key,
                    "chain": chain,
                    "users": stored,
                },
                binary=True,
            )
            cursor.execute(
                "INSERT INTO users (user_id, history_id, charges) "
                "SELECT b.user_id, m.new, COALESCE(u.charges, 0) + 1 FROM unnest(%s::text[]) AS b(user_id) "
                "LEFT JOIN users AS u ON u.user_id = b.user_id "
                "JOIN unnest(%s::bigint[], %s::bigint[]) AS m(old, new) ON m.old = COALESCE(u.history_id, 0) "
                "ON CONFLICT (user_id) DO UPDATE SET history_id = excluded.history_id, "
                "charges = excluded.charges",
                (stored, list(new_history.keys()), list(new_history.values())),
                binary=True,
            )
        self._batch = []
