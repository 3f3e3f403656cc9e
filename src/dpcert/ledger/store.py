"""Where a ledger lives: the :class:`Store` protocol, the schema, and the SQLite store.

:class:`~dpcert.ledger.api.Ledger` runs its SQL (``?`` placeholders) through a store and computes
everything else (budget checks, compositions, the hash chain) itself, so SQLite
(:class:`SQLiteStore`) and PostgreSQL (:class:`~dpcert.ledger.postgres.PostgresStore`) keep the same
tables, schema version and chain.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from dpcert.errors import DPCertError, InvalidParameter, LedgerStorageError
from dpcert.ledger.chain import UserId

SCHEMA_VERSION = 4
LEGACY_TABLES = frozenset({"meta", "certificates", "charges", "histories", "users", "budgets"})
CHAINED_TABLES = frozenset({"entries", "signatures"})  # new in schema version 4
LEDGER_TABLES = LEGACY_TABLES | CHAINED_TABLES

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS certificates (
    id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY, user_id NOT NULL, certificate_id INTEGER NOT NULL REFERENCES certificates(id),
    run_id TEXT, created REAL NOT NULL, idempotency_key TEXT, prev_hash BLOB, hash BLOB);
CREATE INDEX IF NOT EXISTS charges_by_user ON charges(user_id);
CREATE TABLE IF NOT EXISTS histories (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
INSERT OR IGNORE INTO histories (id, key) VALUES (0, '');
CREATE TABLE IF NOT EXISTS users (
    user_id PRIMARY KEY, history_id INTEGER NOT NULL REFERENCES histories(id), charges INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS budgets (user_id PRIMARY KEY, epsilon REAL NOT NULL, delta REAL NOT NULL);
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY, request TEXT NOT NULL, run_id TEXT, users INTEGER NOT NULL,
    certificate_sha256 TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, idempotency_key TEXT UNIQUE,
    prev_hash BLOB NOT NULL, hash BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS signatures (
    entries INTEGER PRIMARY KEY, schema_version INTEGER NOT NULL, head BLOB NOT NULL,
    signature BLOB NOT NULL);
"""

# Schema migrations: MIGRATIONS[v] takes a ledger of schema version v to v + 1.
MIGRATIONS = {
    1: (
        "ALTER TABLE charges ADD COLUMN idempotency_key TEXT",
        "CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, request TEXT NOT NULL, run_id TEXT, "
        "users INTEGER NOT NULL, certificate_sha256 TEXT NOT NULL, created REAL NOT NULL)",
    ),
    2: ("ALTER TABLE charges ADD COLUMN prev_hash BLOB", "ALTER TABLE charges ADD COLUMN hash BLOB"),
    3: (),  # the chained tables come from the backend's schema statements (see Ledger._migrate_rows_3)
}

# SQLite's primary result codes (https://www.sqlite.org/rescode.html), as numbers: the sqlite3
# module names them (and reports ``sqlite_errorcode``) only from Python 3.11.
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14


class Store(Protocol):
    """What :class:`~dpcert.ledger.api.Ledger` asks of its storage.

    A store runs the ledger's SQL (``?`` placeholders, results as row tuples) and the few operations
    whose SQL differs between engines: schema set-up, write and snapshot transactions, the bulk
    statements of a charge, and the storage form of user ids.
    """

    @property
    def kind(self) -> str:
        """The engine's name, as errors say it (``"SQLite"``, ``"PostgreSQL"``)."""

    @property
    def path(self) -> Path | str:
        """Where the ledger lives: a file, or a URL without its password."""

    @property
    def database_errors(self) -> tuple[type[Exception], ...]:
        """The engine's errors that mean "this database is not a dpcert ledger"."""

    def damaged(self, exc: BaseException) -> bool:
        """True when ``exc``, raised while reading, means the stored data are damaged (not a busy
        database, a lost connection or a missing privilege)."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any: ...

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        """The rows of a query, fetched as they are consumed."""

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Run an ``INSERT`` of one row into a table with an ``id`` key and return the new id."""

    def close(self) -> None: ...

    def uid(self, user_id: UserId) -> Any:
        """A user id as stored."""

    def user(self, stored: Any) -> UserId:
        """A stored user id as the user id it is."""

    def tables(self) -> set[str]:
        """The names of the tables of the database (of the ledger's schema)."""

    def configure(self) -> None:
        """Per-connection settings of a writer (before the schema is created)."""

    def schema_statements(self) -> list[str]:
        """The statements that create the ledger's tables (current schema version) if absent."""

    def prepare(self) -> None:
        """Per-connection objects used by charges (after the schema exists)."""

    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction, serialised with every other writer: committed if the block
        succeeds, else rolled back."""

    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every query inside sees the same committed state."""

    def charge_groups(self, ids: Sequence[UserId]) -> list[tuple[int, float | None, float | None, int, Any]]:
        """The charged users grouped by (history id, own budget ε, δ): (history, ε, δ, count, a user
        as stored)."""

    def write_charge(
        self,
        ids: Sequence[UserId],
        certificate_id: int,
        run_id: str | None,
        created: float,
        idempotency_key: str | None,
        chain: bytes,
        new_history: dict[int, int],
    ) -> None:
        """Insert the charge rows of ``ids`` (after :meth:`charge_groups`) and update the users' state."""


class SQLiteStore:
    """The SQLite storage of a ledger: one file, writers serialised by ``BEGIN IMMEDIATE``.

    A storage backend runs the ledger's SQL (``?`` placeholders) and the few operations whose SQL
    differs between engines: schema set-up, write and snapshot transactions, the bulk statements of
    a charge, and the storage form of user ids.  The ledger's logic (budget checks, compositions,
    the hash chain) lives in :class:`~dpcert.ledger.api.Ledger` alone.
    """

    kind = "SQLite"
    database_errors = (sqlite3.DatabaseError,)

    def damaged(self, exc: BaseException) -> bool:
        """A malformed file, text that is not UTF-8 or any database error other than a busy or locked
        database or a failed write."""
        if isinstance(exc, UnicodeDecodeError):
            return True
        if not isinstance(exc, sqlite3.DatabaseError):
            return False
        text = str(exc).lower()
        return not any(word in text for word in ("locked", "busy", "readonly", "read-only", "disk i/o"))

    def __init__(self, path: Path, *, durable: bool, timeout: float, readonly: bool) -> None:
        self.path = path
        self.readonly = readonly
        self.durable = durable
        try:
            if readonly:  # never writes to the file: no journal switch, no schema, no migration
                self._timeout = timeout
                self._opened = self._file_state()
                self.connection = sqlite3.connect(
                    self.reader_uri(path), timeout=timeout, isolation_level=None, uri=True
                )
            else:
                self.connection = sqlite3.connect(str(path), timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise InvalidParameter("path", str(path), f"a readable ledger location: {exc}") from exc

    @staticmethod
    def reader_uri(path: Path) -> str:
        """The URI a read-only reader opens ``path`` by.

        With a write-ahead log beside the file (a writer has it open, or left frames to checkpoint),
        ``mode=ro`` reads through the writer's log and shared memory, files that already exist.
        Without one, every committed write is in the file itself: it is opened ``immutable=1``, which
        creates no ``-wal`` or ``-shm`` file, so a reader needs no write access to the directory and
        leaves no file of its own that the owner's next write could not open.  A writer that starts
        while such a reader is open is not seen by it (the commands that read are short).
        """
        resolved = path.resolve()
        wal = resolved.with_name(resolved.name + "-wal")
        mode = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
        return f"{resolved.as_uri()}?{mode}"

    def _file_state(self) -> tuple[int, int, int, bool]:
        """What tells a reader that the file changed: inode, size, modification time, a log beside it."""
        resolved = self.path.resolve()
        status = resolved.stat()
        wal = resolved.with_name(resolved.name + "-wal").exists()
        return (status.st_ino, status.st_size, status.st_mtime_ns, wal)

    def _refresh(self) -> None:
        """Before a reader's next statement outside a transaction: reopen when the file changed.

        An ``immutable`` connection never looks at the file again; after a writer's commit its cached
        pages would mix two states, so the reader reopens (immutable again, or ``mode=ro`` through the
        writer's log while the writer has the file open).
        """
        if not self.readonly or self.connection.in_transaction:
            return
        try:
            state = self._file_state()
        except OSError:
            return  # the file is gone or unreadable: the next statement reports it
        if state != self._opened:
            self.connection.close()
            self._opened = state
            self.connection = sqlite3.connect(
                self.reader_uri(self.path), timeout=self._timeout, isolation_level=None, uri=True
            )

    # generic SQL
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        self._refresh()
        return self.connection.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        return self.connection.executemany(sql, rows)

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        """The rows of a query, fetched as they are consumed (SQLite cursors are lazy)."""
        self._refresh()
        return iter(self.connection.execute(sql, params))

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Run an ``INSERT`` of one row into a table with an ``id`` key and return the new id."""
        row_id = self.connection.execute(sql, params).lastrowid
        if row_id is None:
            raise DPCertError(f"ledger {self.path}: internal error: an INSERT returned no row id")
        return int(row_id)

    @property
    def in_transaction(self) -> bool:
        return self.connection.in_transaction

    def close(self) -> None:
        self.connection.close()

    # user ids are stored as they are (SQLite keeps INTEGER and TEXT apart in one column)
    @staticmethod
    def uid(user_id: UserId) -> Any:
        return user_id

    @staticmethod
    def user(stored: Any) -> UserId:
        return stored

    # schema
    def tables(self) -> set[str]:
        return {
            row[0] for row in self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }

    def configure(self) -> None:
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
        self.connection.execute("PRAGMA foreign_keys=ON")
        self.connection.execute("PRAGMA temp_store=MEMORY")  # the per-charge batch table

    def schema_statements(self) -> list[str]:
        return [s for s in _SCHEMA.strip().split(";") if s.strip()]

    def prepare(self) -> None:
        """Per-connection objects used by charges (after the schema exists)."""
        self.connection.execute(
            "CREATE TEMP TABLE IF NOT EXISTS batch_rows (seq INTEGER PRIMARY KEY, user_id)"
        )
        self.connection.execute(
            "CREATE TEMP TABLE IF NOT EXISTS history_map (old INTEGER PRIMARY KEY, new INTEGER)"
        )

    # transactions
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One ``BEGIN IMMEDIATE`` transaction: committed if the block succeeds, else rolled back.

        SQLite rolls a transaction back by itself on some errors (a full disk, an I/O error); the
        rollback here is then skipped so that the real cause is what the caller sees.
        """
        db = self.connection
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise self._storage_error(exc) from exc
        try:
            yield
            db.execute("COMMIT")
        except BaseException as exc:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise self._storage_error(exc) from exc
            raise

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction: every query inside sees the same committed state."""
        self._refresh()
        db = self.connection
        if db.in_transaction:
            yield
            return
        db.execute("BEGIN")
        try:
            yield
        finally:
            if db.in_transaction:
                db.execute("COMMIT")

    def _storage_error(self, exc: sqlite3.OperationalError) -> DPCertError | sqlite3.OperationalError:
        """A clear error for a failed write; other errors (e.g. a busy timeout) pass unchanged."""
        code = getattr(exc, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        causes = {
            _SQLITE_FULL: "the disk (or the database's size limit) is full",
            _SQLITE_IOERR: "an I/O error occurred",
            _SQLITE_READONLY: "the file or its directory is read-only",
            _SQLITE_CANTOPEN: "the file or its journal cannot be opened",
        }
        if primary not in causes:
            return exc
        return LedgerStorageError(
            f"ledger {self.path}: cannot write: {causes[primary]} ({exc}); nothing was recorded"
        )

    # the bulk statements of a charge (inside a write transaction)
    def charge_groups(
        self, ids: Sequence[UserId]
    ) -> list[tuple[int, float | None, float | None, int, UserId]]:
        """The charged users grouped by (history id, own budget ε, δ): (history, ε, δ, count, a user)."""
        db = self.connection
        db.execute("DELETE FROM temp.batch_rows")
        # One JSON array (SQLite's json_each walks it in order) instead of one bound row per user.
        db.execute("INSERT INTO temp.batch_rows (user_id) SELECT value FROM json_each(?)", (json.dumps(ids),))
        if db.execute(
            "SELECT (SELECT MIN(seq) FROM temp.batch_rows), (SELECT MAX(seq) FROM temp.batch_rows)"
        ).fetchone() != (1, len(ids)):
            raise DPCertError(f"ledger {self.path}: internal error: batch rows are not numbered 1..n")
        return db.execute(
            "SELECT COALESCE(u.history_id, 0), b2.epsilon, b2.delta, COUNT(*), MIN(b.user_id) "
            "FROM temp.batch_rows AS b "
            "LEFT JOIN users AS u ON u.user_id = b.user_id "
            "LEFT JOIN budgets AS b2 ON b2.user_id = b.user_id "
            "GROUP BY 1, 2, 3"
        ).fetchall()

    def write_charge(
        self,
        ids: Sequence[UserId],
        certificate_id: int,
        run_id: str | None,
        created: float,
        idempotency_key: str | None,
        chain: bytes,
        new_history: dict[int, int],
    ) -> None:
        """Insert the charge rows of ``ids`` (after :meth:`charge_groups`) and update the users' state.

        ``chain`` is the previous head followed by the rows' hashes: row ``i`` (``seq = i``, in the
        caller's order) stores 32-byte slice ``i - 1`` as ``prev_hash`` and slice ``i`` as ``hash``.
        """
        db = self.connection
        db.execute("DELETE FROM temp.history_map")
        db.executemany("INSERT INTO temp.history_map (old, new) VALUES (?, ?)", new_history.items())
        # All hashes go to SQLite as one blob, sliced per row (binding two blobs per row costs more).
        db.execute(
            "INSERT INTO charges "
            "(user_id, certificate_id, run_id, created, idempotency_key, prev_hash, hash) "
            "SELECT user_id, ?1, ?2, ?3, ?4, substr(?5, 32 * seq - 31, 32), substr(?5, 32 * seq + 1, 32) "
            "FROM temp.batch_rows ORDER BY seq",
            (certificate_id, run_id, created, idempotency_key, chain),
        )
        db.execute(
            "INSERT INTO users (user_id, history_id, charges) "
            "SELECT b.user_id, m.new, COALESCE(u.charges, 0) + 1 FROM temp.batch_rows AS b "
            "LEFT JOIN users AS u ON u.user_id = b.user_id "
            "JOIN temp.history_map AS m ON m.old = COALESCE(u.history_id, 0) WHERE true "
            "ON CONFLICT (user_id) DO UPDATE SET history_id = excluded.history_id, "
            "charges = excluded.charges"
        )
        db.execute("DELETE FROM temp.batch_rows")


__all__ = [
    "CHAINED_TABLES",
    "LEDGER_TABLES",
    "LEGACY_TABLES",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SQLiteStore",
    "Store",
]
