"""A durable per-user privacy ledger on SQLite (or PostgreSQL).

``Ledger(path)`` (or ``Ledger("postgresql://USER@HOST/DB")``, see
:mod:`dpcert.ledger.postgres`) records, for each user, every participation (a *charge*)
in a mechanism, and composes each user's participations into the privacy they have spent.  Design:

* stdlib :mod:`sqlite3` in WAL mode; each :meth:`Ledger.charge` is **one** ``BEGIN IMMEDIATE``
  transaction, so a crash (even SIGKILL) leaves either the whole charge or none of it, and
  concurrent writers (threads or processes) are serialised by SQLite's write lock;
* each distinct certificate is stored once (``certificates``, keyed by the SHA-256 of its JSON) and
  charge rows reference it; certificates are re-verified when read back (a corrupted row raises
  :class:`~dpcert.errors.CertificateFormatError`);
* each user's *history* (the multiset of certificates charged to them) is kept in ``users`` as a
  reference to a row of ``histories``; users with the same history share it, so the budget check of a
  charge on 10^6 users composes each distinct history once, inside the transaction; composed ε of
  ``base + m × certificate`` are remembered and probed ahead, so N charges of one certificate cost
  O(log N) compositions (:meth:`Ledger._fits_budget`);
* every charge row is hash-chained to the one before (:func:`~dpcert.ledger.chain.chain_hashes`);
* the whole state is a chained log of *entries* (table ``entries``,
  :func:`~dpcert.ledger.chain.entry_hash`): entry 1 records the schema version and the operator's
  public key, then one entry per charge call (its row count, the hash of its last row, certificate,
  run id, time and idempotency record) and one per budget change.  :meth:`Ledger.verify`
  recomputes both chains and, from the entries, the budgets, the idempotency records and each
  user's state, and compares them with the tables: a budget or idempotency row no entry backs, a
  charge row no entry covers, or a user whose composed spending exceeded the budget chained at the
  time is reported;
* with ``signing_key`` (Ed25519, :mod:`dpcert.signatures`), every write transaction stores a
  signature over (schema version, entry count, head hash) in ``signatures``.  The chain alone is
  unkeyed SHA-256, so anyone able to write the file could rewrite and re-chain it; the signatures
  make a rewrite without the private key detectable by ``verify(public_key=...)``, which checks
  every stored signed head and that the last one covers the whole chain.  A ledger created with a
  key is only written with that key (a writer without it is refused: it could not sign, and its
  entries would be indistinguishable from an intruder's); a ledger created without one is never
  signed later (a first signature would vouch for history nobody signed).  Before each signed
  write the last signed head is checked, so a keyed writer never signs over entries written
  without the key;
* an optional idempotency key makes a retried, already committed charge a no-op; a key whose
  record no chained entry backs is refused (:class:`~dpcert.errors.LedgerIntegrityError`), not replayed;
* ``Ledger(path, readonly=True)`` never writes (no journal switch, schema or migration) and refuses
  files that are not dpcert ledgers; writers refuse another application's database too;
* the schema version lives in the ``meta`` table and in entry 1.  A ledger of an older schema
  version, or one whose chained tables or hash columns are missing, is refused for writing, never
  migrated (and re-chained) implicitly: a downgraded file would otherwise be re-chained as it
  stands.  A genuine ledger of an earlier dpcert is migrated explicitly, once, with
  ``Ledger(path, migrate=True, signing_key=...)`` (``dpcert ledger migrate``), which refuses files
  that already had the chained tables;
* storage goes through a backend object (:class:`~dpcert.ledger.store.SQLiteStore`, or
  :class:`~dpcert.ledger.postgres.PostgresStore` for a ``postgresql://`` URL) that runs the
  ledger's SQL and the few engine-specific operations; the budget checks, compositions and the hash
  chain are computed here for both.

With a budget set (per user or for everyone), a charge that would take *any* of its users beyond
their budget (composed with ``compose(..., method=ledger.method, delta=budget.delta)``) is refused as
a whole with :class:`~dpcert.errors.BudgetExceeded` and nothing is written.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import io
import itertools
import json
import math
import numbers
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TextIO, TypeVar

import numpy as np

from dpcert import _json as strict_json
from dpcert import _validation as check
from dpcert.accounting.composition import ALL_METHODS, compose_counts
from dpcert.certificates import Certificate, Guarantee
from dpcert.errors import (
    BudgetExceeded,
    CertificateFormatError,
    DPCertError,
    InvalidParameter,
    LedgerIntegrityError,
    LedgerWriteInterrupted,
    UnknownMechanism,
    UnknownUser,
)
from dpcert.ledger.chain import (
    GENESIS,
    UserId,
    canonical_body,
    chain_hashes,
    entry_digest,
    entry_hash,
    head_message,
    key_fingerprint,
    load_signing_key,
    load_verifying_key,
    raw_public_key,
    signature_valid,
    user_from_json,
    user_json,
)
from dpcert.ledger.export import (
    ChargeRow,
    SpentSummary,
    UserTotal,
    write_charges_csv,
    write_json,
    write_user_totals_csv,
)
from dpcert.ledger.postgres import PostgresStore
from dpcert.ledger.store import (
    CHAINED_TABLES,
    LEDGER_TABLES,
    LEGACY_TABLES,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLiteStore,
    Store,
)


@dataclass
class _Tail:
    """The last entry of the chain during a write transaction: entry count and head hash."""

    count: int
    head: bytes


# --------------------------------------------------------------------------- values
@dataclass(frozen=True)
class Charge:
    """One recorded participation of a user."""

    charge_id: int
    user_id: UserId
    run_id: str | None
    created: float
    certificate: Certificate


@dataclass(frozen=True)
class ChargeReceipt:
    """What :meth:`Ledger.charge` recorded."""

    run_id: str | None
    users: int
    certificate_sha256: str
    idempotency_key: str | None = None
    replayed: bool = False  # True if the key had already been committed: nothing new was recorded


@dataclass(frozen=True)
class ChainReport:
    """Outcome of :meth:`Ledger.verify`."""

    ok: bool
    charges: int  # rows checked (up to and including the first broken one)
    head: str | None  # hash of the last charge row that verified
    problem: str | None  # the first broken entry
    entries: int = 0  # entries checked (up to and including the first broken one)
    entry_head: str | None = None  # hash of the last entry that verified (what the operator signs)
    signed_by: str | None = None  # fingerprint of the key whose signatures were checked, if any

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "charges": self.charges,
            "head": self.head,
            "problem": self.problem,
            "entries": self.entries,
            "entry_head": self.entry_head,
            "signed_by": self.signed_by,
        }


# --------------------------------------------------------------------------- helpers
def _history_key(counts: dict[int, int]) -> str:
    return ",".join(f"{cid}:{counts[cid]}" for cid in sorted(counts))


def _parse_history(key: str) -> dict[int, int]:
    if not key:
        return {}
    result = {}
    for part in key.split(","):
        cid, count = part.split(":")
        result[int(cid)] = int(count)
    return result


def _user_id(value: object, name: str = "user_id") -> UserId:
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        result = int(value)
        if -(2**63) <= result < 2**63:
            return result
    raise InvalidParameter(name, value, "an integer in the signed 64-bit range or a string")


def _user_ids(value: object) -> list[UserId]:
    """Normalise user ids (scalar, sequence or numpy array) to a list of distinct ints/strings."""
    if isinstance(value, (str, numbers.Integral)) and not isinstance(value, bool):
        return [_user_id(value, "user_ids")]
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise InvalidParameter("user_ids", f"<array of shape {value.shape}>", "a 1-D array of user ids")
        if np.issubdtype(value.dtype, np.integer):
            if value.size and value.dtype.kind == "u" and int(value.max()) >= 2**63:
                raise InvalidParameter(
                    "user_ids", int(value.max()), "integers in the signed 64-bit range or strings"
                )
            ids: list[UserId] = value.astype(np.int64).tolist()
        elif value.dtype.kind in "US":
            ids = [str(v) for v in value.tolist()]
        else:
            raise InvalidParameter(
                "user_ids", f"<array of dtype {value.dtype}>", "integer or string user ids"
            )
    elif isinstance(value, Iterable):
        ids = [_user_id(v, "user_ids") for v in value]
    else:
        raise InvalidParameter("user_ids", value, "a user id or a sequence of user ids")
    if not ids:
        raise InvalidParameter("user_ids", [], "at least one user id")
    if len(set(ids)) != len(ids):
        raise InvalidParameter(
            "user_ids", "<ids with repeats>", "distinct user ids (one participation per user per charge)"
        )
    return ids


def _request_fingerprint(ids: list[UserId], certificate: Certificate, run_id: str | None) -> str:
    """SHA-256 of a charge request: the set of user ids (typed), the certificate and the run id."""
    digest = hashlib.sha256()
    digest.update(json.dumps([run_id, certificate.to_json()]).encode())
    for user in sorted(ids, key=lambda u: (isinstance(u, str), u)):
        text = str(user)
        digest.update(f"{'s' if isinstance(user, str) else 'i'}{len(text)}:{text}".encode())
    return digest.hexdigest()


def _budget(value: object) -> Guarantee:
    if not isinstance(value, Guarantee):
        raise InvalidParameter("budget", value, "a dpcert.Guarantee(epsilon >= 0, 0 <= delta < 1)")
    return value


def _is_postgres_url(path: object) -> bool:
    return isinstance(path, str) and path.split(":", 1)[0].lower() in ("postgresql", "postgres")


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _run_again_if_rolled_back(write: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a write once more if the connection to the ledger's server was lost during it and the
    server rolled it back (:class:`~dpcert.errors.LedgerWriteInterrupted`: nothing was recorded, so
    the write, its budget check included, starts afresh on the state as it then is)."""

    @functools.wraps(write)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return write(*args, **kwargs)
        except LedgerWriteInterrupted:
            return write(*args, **kwargs)

    return run


# --------------------------------------------------------------------------- the ledger
class Ledger:
    """A per-user privacy ledger stored in the SQLite file ``path`` or a PostgreSQL database.

    Parameters
    ----------
    path
        Database file (created if absent, unless ``create=False``), or a ``postgresql://`` URL
        (libpq syntax, e.g. ``postgresql://USER@HOST/DB`` or ``postgresql:///DB?host=/socket/dir``)
        of an existing database; its ledger tables are created if it has none, unless
        ``create=False``.  Requires psycopg 3 (``pip install "dpcert[postgres]"``).
    method
        Composition method used for budgets and :meth:`spent` (default ``"best"``).
    durable
        ``True`` (default): ``synchronous=FULL``, committed charges survive power loss; ``False``:
        ``synchronous=NORMAL``, committed charges survive process crashes (WAL), faster.  On
        PostgreSQL: ``synchronous_commit`` on or off (off: a server crash can lose the last commits).
    timeout
        Seconds to wait for another writer's lock before giving up.
    create
        If false, refuse to open a file that does not exist yet.
    readonly
        Never write (see the module docstring).
    signing_key
        The operator's Ed25519 private key (a key object or the path of its PEM file, see
        ``dpcert keygen``).  A new ledger created with a key records its public key in entry 1 and
        every write transaction signs the chain head; such a ledger is then written only with that
        key.  A ledger created without a key refuses one (see the module docstring).
    migrate
        Migrate a genuine ledger of schema version 1..3 to version 4 (chaining its rows, budgets and
        idempotency records as they stand, signed with ``signing_key`` if given).  Without it, an
        older ledger is refused for writing.  A file that already has the chained tables (a
        downgraded version-4 ledger) is refused.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        method: str = "best",
        durable: bool = True,
        timeout: float = 60.0,
        create: bool = True,
        readonly: bool = False,
        signing_key: Any = None,
        migrate: bool = False,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)) or not str(path) or "\x00" in str(path):
            raise InvalidParameter("path", path, "a file path or a postgresql:// URL")
        postgres = _is_postgres_url(path)
        self.path: Path | str = str(path) if postgres else Path(path)
        if method not in ALL_METHODS:
            raise InvalidParameter("method", method, "one of " + ", ".join(ALL_METHODS))
        self.method = method
        self.readonly = bool(readonly)
        timeout = check.positive_finite("timeout", timeout)
        self._signing_key = load_signing_key(signing_key)
        self._public = raw_public_key(self._signing_key) if self._signing_key is not None else None
        if migrate and readonly:
            raise InvalidParameter("migrate", True, "False for a read-only ledger (a migration writes)")
        self._migrate_requested = bool(migrate)
        self._signed_head: tuple[int, bytes] | None = None  # the last head this object signed and committed
        self._chain_verified = False  # verify() passed before this object's first write
        self._db: Store
        if postgres:
            self._db = PostgresStore(str(path), durable=durable, timeout=timeout, readonly=self.readonly)
            self.path = self._db.path  # the URL without its password
        else:
            file_path = Path(path)
            if (readonly or not create) and not file_path.is_file():
                raise InvalidParameter("path", str(file_path), "an existing dpcert ledger file")
            self._db = SQLiteStore(file_path, durable=durable, timeout=timeout, readonly=self.readonly)
        try:
            self._version = self._check_ledger()
            if not self.readonly:
                if postgres and self._version is None and not create:
                    raise InvalidParameter("path", str(self.path), "an existing dpcert ledger")
                self._db.configure()
                self._initialise()
        except (*self._db.database_errors, UnicodeDecodeError) as exc:
            self._db.close()
            raise InvalidParameter(
                "path", str(self.path), f"a dpcert ledger ({self._db.kind} database): {exc}"
            ) from exc
        except DPCertError:
            self._db.close()
            raise
        # Caches are keyed by content (certificate JSON, history key), never by row id: ids of rows
        # written by a refused (rolled back) charge can be reused for other content.
        self._certificates: dict[str, tuple[str, Certificate]] = {}
        self._composed: dict[tuple[Any, str, float | None], Certificate] = {}
        self._epsilons: dict[tuple[Any, str, float], float] = {}
        self._probes: dict[tuple[Any, str, str, float], dict[int, float]] = {}

    # ----------------------------------------------------------------- set-up
    def _check_ledger(self) -> int | None:
        """The stored schema version; ``None`` for a file with no tables (a new ledger).

        Reads only.  Refuses another application's database (tables but no dpcert ``meta``), a
        ledger missing tables, and a schema version newer than this code knows.
        """
        tables = self._db.tables()
        if not tables:
            if self.readonly:
                raise InvalidParameter(
                    "path", str(self.path), "a dpcert ledger (this database has no tables)"
                )
            return None
        row = None
        if "meta" in tables:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            raise InvalidParameter(
                "path",
                str(self.path),
                f"a dpcert ledger (this {self._db.kind} database has no dpcert schema version)",
            )
        try:
            version = int(row[0])
        except ValueError:
            version = -1
        if not 1 <= version <= SCHEMA_VERSION:
            raise InvalidParameter(
                "path", str(self.path), f"a ledger with schema version 1..{SCHEMA_VERSION} (found {row[0]})"
            )
        missing = (LEDGER_TABLES if version >= 4 else LEGACY_TABLES) - tables
        if missing:
            raise InvalidParameter(
                "path",
                str(self.path),
                f"a dpcert ledger of schema version {version} (tables missing: {', '.join(sorted(missing))})",
            )
        if version >= 3:
            try:
                self._db.execute("SELECT prev_hash, hash FROM charges LIMIT 0").fetchall()
            except self._db.database_errors as exc:
                raise InvalidParameter(
                    "path",
                    str(self.path),
                    f"a dpcert ledger of schema version {version} with its hash columns "
                    f"(charges.prev_hash and charges.hash are missing: the file was altered): {exc}",
                ) from None
        return version

    def _initialise(self) -> None:
        if self._version is None:
            self._create_schema()
        elif self._version < SCHEMA_VERSION:
            if not self._migrate_requested:
                raise self._old_version(self._version)
            self._migrate()
        else:
            self._check_key_policy(self._chained_public_key())
        self._db.prepare()

    def _old_version(self, version: int) -> InvalidParameter:
        """The refusal to write a ledger of an older schema version (never migrated implicitly)."""
        return InvalidParameter(
            "path",
            str(self.path),
            f"a ledger of schema version {SCHEMA_VERSION}: this one has version {version}, whose budgets, "
            "idempotency records and schema version are not chained or signed; it is not migrated "
            "implicitly, since a downgraded file would be re-chained as it stands. If it is a genuine "
            f"ledger of an earlier dpcert, migrate it once: dpcert ledger migrate {self.path} "
            "--signing-key KEY",
        )

    def _create_schema(self) -> None:
        with self._transaction():
            if self._db.tables():
                version = self._check_ledger()  # another process created it meanwhile
                self._version = version
                if version is not None and version < SCHEMA_VERSION:
                    raise self._old_version(version)
                self._check_key_policy(self._chained_public_key())
                return
            for statement in self._db.schema_statements():
                self._db.execute(statement)
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            tail = _Tail(0, GENESIS)
            self._append(tail, "schema", self._schema_body(None, 0, GENESIS))
            self._sign(tail)
        self._version = SCHEMA_VERSION

    def _schema_body(self, migrated_from: int | None, rows: int, row_head: bytes) -> dict[str, Any]:
        """Entry 1: the schema version, the operator's public key and the (migrated) rows it covers."""
        return {
            "schema_version": SCHEMA_VERSION,
            "public_key": base64.b64encode(self._public).decode() if self._public is not None else None,
            "migrated_from": migrated_from,
            "rows": rows,
            "row_head": row_head.hex(),
        }

    def _migrate(self) -> None:
        with self._transaction():
            version = self._check_ledger()  # re-read under the write lock
            self._version = version
            if version is None or version >= SCHEMA_VERSION:
                return
            present = CHAINED_TABLES & self._db.tables()
            if present:
                raise InvalidParameter(
                    "path",
                    str(self.path),
                    f"a genuine ledger of an earlier dpcert: this one has the chained tables of schema "
                    f"version {SCHEMA_VERSION} ({', '.join(sorted(present))}) but says version "
                    f"{self._version}, so it was downgraded; it is not re-chained",
                )
            if self._version == 3:  # its rows are chained already: adopt them only if they verify
                previous = GENESIS
                for row in self._chain_rows():
                    previous, problem = self._check_row(row, previous)
                    if problem is not None:
                        raise LedgerIntegrityError(
                            f"ledger {self.path}: not migrated, its hash chain is broken: {problem}"
                        )
            self._migrated_from = self._version
            self._migrate_steps()

    def _migrate_steps(self) -> None:
        """Apply the migrations from the stored version to :data:`~dpcert.ledger.store.SCHEMA_VERSION`
        (in a transaction)."""
        if self._version is None:
            raise DPCertError(
                f"ledger {self.path}: internal error: migrating a ledger with no schema version"
            )
        version = int(self._version)
        while version < SCHEMA_VERSION:
            for statement in MIGRATIONS[version]:
                self._db.execute(statement)
            migrate_rows = getattr(self, f"_migrate_rows_{version}", None)
            if migrate_rows is not None:
                migrate_rows()
            version += 1
        self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
        self._version = version

    def _chain_rows(self) -> Iterator[tuple[int, UserId, str, str | None, str | None, float, Any, Any]]:
        """(id, user, certificate SHA-256, run id, idempotency key, created, prev_hash, hash) by id."""
        user = self._db.user
        for row in self._db.stream(
            "SELECT c.id, c.user_id, s.sha256, c.run_id, c.idempotency_key, c.created, "
            "c.prev_hash, c.hash FROM charges AS c "
            "LEFT JOIN certificates AS s ON s.id = c.certificate_id ORDER BY c.id"
        ):
            yield (row[0], user(row[1]), *row[2:])

    def _migrate_rows_3(self) -> None:
        """Create the chained tables; entry 1 covers the rows as they stand, then the budgets and
        idempotency records as entries; the head is signed with the operator's key if given."""
        for statement in self._db.schema_statements():
            self._db.execute(statement)
        rows = int(self._db.execute("SELECT COUNT(*) FROM charges").fetchone()[0])
        tail = _Tail(0, GENESIS)
        self._append(tail, "schema", self._schema_body(self._migrated_from, rows, self._head_bytes()))
        default = self.default_budget()
        if default is not None:
            self._append(tail, "budget", {"user": None, "epsilon": default.epsilon, "delta": default.delta})
        for user, epsilon, delta in self._db.execute(
            "SELECT user_id, epsilon, delta FROM budgets ORDER BY user_id"
        ).fetchall():
            body = {"user": user_json(self._db.user(user)), "epsilon": float(epsilon), "delta": float(delta)}
            self._append(tail, "budget", body)
        for key, request, run_id, users, digest, created in self._db.execute(
            "SELECT key, request, run_id, users, certificate_sha256, created FROM idempotency ORDER BY key"
        ).fetchall():
            body = {
                "idempotency_key": key,
                "request": request,
                "run_id": run_id,
                "rows": int(users),
                "certificate": digest,
                "created": float(created),
            }
            self._append(tail, "idempotency", body, key)
        self._sign(tail)

    def _migrate_rows_2(self) -> None:
        """Chain the rows of a version-2 ledger as they stand (their earlier history is not provable)."""
        previous = GENESIS
        updates: list[tuple[bytes, bytes, int]] = []
        for charge_id, user, digest, run_id, key, created, _, _ in self._chain_rows():
            current = chain_hashes(previous, entry_digest(digest, run_id, key, created), [user])[0]
            updates.append((previous, current, charge_id))
            previous = current
            if len(updates) >= 10_000:
                self._db.executemany("UPDATE charges SET prev_hash = ?, hash = ? WHERE id = ?", updates)
                updates.clear()
        self._db.executemany("UPDATE charges SET prev_hash = ?, hash = ? WHERE id = ?", updates)

    # ----------------------------------------------------------------- the chain of entries
    def _chained_public_key(self) -> bytes | None:
        """The operator's public key recorded in entry 1 (``None``: an unsigned ledger)."""
        row = self._db.execute("SELECT body FROM entries WHERE id = 1").fetchone()
        if row is None:
            return None
        try:
            value = strict_json.loads(row[0], what="ledger entry 1").get("public_key")
            return None if value is None else base64.b64decode(str(value), validate=True)
        except (ValueError, AttributeError) as exc:
            raise LedgerIntegrityError(f"ledger {self.path}: entry 1 is malformed ({exc})") from None

    def _check_key_policy(self, chained: bytes | None) -> None:
        """Refuse a writer whose key is not the one the ledger was created with (see the module docstring)."""
        if chained == self._public:
            return
        if chained is None:
            raise InvalidParameter(
                "signing_key",
                key_fingerprint(self._public),
                f"none: the ledger {self.path} was created unsigned, and signing it now would vouch for "
                "history nobody signed (create a new ledger with the key)",
            )
        if self._public is None:
            raise InvalidParameter(
                "signing_key",
                None,
                f"the private key the ledger {self.path} is signed with "
                f"(ed25519 {key_fingerprint(chained)}): "
                "a writer without it cannot sign its entries, which would be indistinguishable from an "
                "intruder's",
            )
        raise InvalidParameter(
            "signing_key",
            key_fingerprint(self._public),
            f"the key the ledger {self.path} is signed with (ed25519 {key_fingerprint(chained)})",
        )

    def _writable_tail(self) -> _Tail:
        """The chain's last entry, under the write lock, after checking that this writer may extend it.

        With a signing key, the last signed head must be the current head and carry a valid
        signature: a keyed writer never signs over entries written without the key.  (A head this
        object signed and committed itself is not checked again.)
        """
        self._check_key_policy(self._chained_public_key())
        row = self._db.execute("SELECT id, hash FROM entries ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            raise LedgerIntegrityError(
                f"ledger {self.path}: its chain has no entries (entry 1 was deleted); nothing was recorded"
            )
        tail = _Tail(int(row[0]), bytes(row[1]))
        if self._public is not None and (tail.count, tail.head) != self._signed_head:
            signed = self._db.execute(
                "SELECT entries, schema_version, head, signature FROM signatures "
                "ORDER BY entries DESC LIMIT 1"
            ).fetchone()
            if (
                signed is None
                or int(signed[0]) != tail.count
                or bytes(signed[2]) != tail.head
                or not signature_valid(
                    self._public, bytes(signed[3]), head_message(int(signed[1]), tail.count, tail.head)
                )
            ):
                last = "none" if signed is None else f"entry {int(signed[0])}"
                raise LedgerIntegrityError(
                    f"ledger {self.path}: its head (entry {tail.count}) is not the last signed head "
                    f"({last}): "
                    "the ledger was changed without the signing key; nothing was recorded "
                    "(run dpcert ledger verify --public-key)"
                )
        return tail

    def _append(
        self, tail: _Tail, kind: str, body: dict[str, Any], idempotency_key: str | None = None
    ) -> None:
        """Append one entry after ``tail`` (inside a write transaction) and advance ``tail``."""
        text = canonical_body(body)
        digest = entry_hash(tail.head, kind, text)
        self._db.execute(
            "INSERT INTO entries (id, kind, body, idempotency_key, prev_hash, hash) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (tail.count + 1, kind, text, idempotency_key, tail.head, digest),
        )
        tail.count += 1
        tail.head = digest

    def _sign(self, tail: _Tail) -> None:
        """Store the operator's signature over (schema version, entry count, head), if a key is held."""
        if self._signing_key is None:
            return
        signature = self._signing_key.sign(head_message(SCHEMA_VERSION, tail.count, tail.head))
        self._db.execute(
            "INSERT INTO signatures (entries, schema_version, head, signature) VALUES (?, ?, ?, ?)",
            (tail.count, SCHEMA_VERSION, tail.head, signature),
        )

    @contextlib.contextmanager
    def _write(self) -> Iterator[tuple[Any, _Tail]]:
        """A write transaction that appends entries: the whole ledger is verified before this object's
        first write, the writer and the head are checked first, and the new head is signed before the
        commit (only if entries were appended)."""
        if not self._chain_verified:  # never extend a chain that does not verify
            report = self.verify()
            if not report.ok:
                raise LedgerIntegrityError(
                    f"ledger {self.path}: does not verify ({report.problem}); nothing was recorded "
                    "(run dpcert ledger verify)"
                )
            self._chain_verified = True
        signed = None
        with self._transaction() as db:
            tail = self._writable_tail()
            start = tail.count
            yield db, tail
            if tail.count != start and self._signing_key is not None:
                self._sign(tail)
                signed = (tail.count, tail.head)
        if signed is not None:  # committed: the next write by this object need not re-check its signature
            self._signed_head = signed

    def entry_head(self) -> str | None:
        """Hex hash of the last entry: the head the operator signs (``None`` below schema version 4)."""
        if self._version is not None and self._version < SCHEMA_VERSION:
            return None
        row = self._db.execute("SELECT hash FROM entries ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else bytes(row[0]).hex()

    def signing_key_fingerprint(self) -> str | None:
        """Fingerprint of the public key recorded in entry 1 (``None``: an unsigned ledger)."""
        if self._version is not None and self._version < SCHEMA_VERSION:
            return None
        chained = self._chained_public_key()
        return None if chained is None else key_fingerprint(chained)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Any]:
        """One write transaction, serialised with every other writer of the ledger: committed if the
        block succeeds, else rolled back (see the storage backend's ``transaction``)."""
        if self.readonly:
            raise InvalidParameter("readonly", True, "False to change the ledger (opened read-only)")
        with self._db.transaction():
            yield self._db

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])

    # ----------------------------------------------------------------- budgets
    @_run_again_if_rolled_back
    def set_budget(self, user_id: UserId | None, budget: Guarantee) -> None:
        """Set the budget of one user, or (``user_id=None``) the default budget of every user."""
        budget = _budget(budget)
        user = None if user_id is None else _user_id(user_id)
        with self._write() as (db, tail):
            body = {
                "user": None if user is None else user_json(user),
                "epsilon": budget.epsilon,
                "delta": budget.delta,
            }
            self._append(tail, "budget", body)
            if user is None:
                db.execute(
                    "INSERT INTO meta (key, value) VALUES ('default_budget', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (json.dumps(budget.to_dict()),),
                )
            else:
                db.execute(
                    "INSERT INTO budgets (user_id, epsilon, delta) VALUES (?, ?, ?) ON CONFLICT (user_id) "
                    "DO UPDATE SET epsilon = excluded.epsilon, delta = excluded.delta",
                    (self._db.uid(user), budget.epsilon, budget.delta),
                )

    def default_budget(self) -> Guarantee | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'default_budget'").fetchone()
        if row is None:
            return None
        data = strict_json.loads(row[0], what="ledger default budget")
        return Guarantee(float(data["epsilon"]), float(data["delta"]))

    def budget(self, user_id: UserId) -> Guarantee | None:
        """The budget that applies to ``user_id`` (their own, else the default, else ``None``)."""
        row = self._db.execute(
            "SELECT epsilon, delta FROM budgets WHERE user_id = ?", (self._db.uid(_user_id(user_id)),)
        ).fetchone()
        return Guarantee(row[0], row[1]) if row is not None else self.default_budget()

    # ----------------------------------------------------------------- certificates and histories
    def _store_certificate(self, certificate: Certificate) -> tuple[int, str]:
        text = certificate.to_json()
        digest = hashlib.sha256(text.encode()).hexdigest()
        row = self._db.execute("SELECT id FROM certificates WHERE sha256 = ?", (digest,)).fetchone()
        if row is not None:
            return int(row[0]), digest
        return self._db.insert_id(
            "INSERT INTO certificates (sha256, json) VALUES (?, ?)", (digest, text)
        ), digest

    def _certificate(self, certificate_id: int) -> Certificate:
        """Read a stored certificate, check its content hash and re-verify it (cached by content)."""
        row = self._db.execute(
            "SELECT sha256, json FROM certificates WHERE id = ?", (certificate_id,)
        ).fetchone()
        if row is None:
            raise CertificateFormatError(f"ledger {self.path}: certificate {certificate_id} is missing")
        digest, text = row
        cached = self._certificates.get(digest)
        if cached is not None and cached[0] == text:
            return cached[1]
        if not isinstance(text, str) or hashlib.sha256(text.encode()).hexdigest() != digest:
            raise CertificateFormatError(
                f"ledger {self.path}: certificate {certificate_id} is corrupted (content hash mismatch)"
            )
        try:
            certificate = Certificate.from_json(text)
        except CertificateFormatError as exc:
            raise type(exc)(f"ledger {self.path}: certificate {certificate_id}: {exc}") from exc
        self._certificates[digest] = (text, certificate)
        return certificate

    def _history_key_of(self, history_id: int) -> str:
        row = self._db.execute("SELECT key FROM histories WHERE id = ?", (history_id,)).fetchone()
        if row is None:
            raise CertificateFormatError(f"ledger {self.path}: history {history_id} is missing")
        return str(row[0])

    def _history(self, history_id: int) -> dict[int, int]:
        return _parse_history(self._history_key_of(history_id))

    def _history_id(self, counts: dict[int, int]) -> int:
        key = _history_key(counts)
        row = self._db.execute("SELECT id FROM histories WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return int(row[0])
        return self._db.insert_id("INSERT INTO histories (key) VALUES (?)", (key,))

    def _compose_history(self, history_id: int, method: str, delta: float | None) -> Certificate:
        """Composition of a history's certificates, cached by content (certificate hashes and counts)."""
        counts = self._history(history_id)
        if not counts:
            raise UnknownUser("a user with no charges has spent nothing")
        pairs = [(self._certificate(cid), count) for cid, count in counts.items()]
        content = tuple(sorted((self._digest(cid), count) for cid, count in counts.items()))
        cache_key = (content, method, delta)
        cached = self._composed.get(cache_key)
        if cached is not None:
            return cached
        composed = compose_counts(pairs, method=method, delta=delta)
        self._composed[cache_key] = composed
        return composed

    def _digest(self, certificate_id: int) -> str:
        row = self._db.execute("SELECT sha256 FROM certificates WHERE id = ?", (certificate_id,)).fetchone()
        return str(row[0])

    def _content(self, counts: dict[int, int]) -> tuple[tuple[str, int], ...]:
        """A history by content: sorted (certificate SHA-256, count) pairs (row ids can be reused)."""
        return tuple(sorted((self._digest(cid), count) for cid, count in counts.items()))

    def _composed_epsilon(self, content: tuple[tuple[str, int], ...], delta: float) -> float:
        """ε of the composition of ``content`` at ``delta`` by the ledger's method (∞ if none is finite)."""
        key = (content, self.method, delta)
        cached = self._epsilons.get(key)
        if cached is not None:
            return cached
        pairs = [(self._certificate_by_digest(digest), count) for digest, count in content]
        try:
            epsilon = compose_counts(pairs, method=self.method, delta=delta).epsilon
        except InvalidParameter:  # no finite epsilon at this delta
            epsilon = math.inf
        self._epsilons[key] = epsilon
        return epsilon

    def _certificate_by_digest(self, digest: str) -> Certificate:
        cached = self._certificates.get(digest)
        if cached is not None:
            return cached[1]
        row = self._db.execute("SELECT id FROM certificates WHERE sha256 = ?", (digest,)).fetchone()
        if row is None:
            raise CertificateFormatError(f"ledger {self.path}: certificate {digest} is missing")
        return self._certificate(int(row[0]))

    def _fits_budget(self, history_id: int, certificate_id: int, budget: Guarantee) -> tuple[bool, float]:
        """Whether a history plus one more ``certificate_id`` stays within ``budget``.

        Returns ``(within, epsilon)``; ``epsilon`` is the composed ε of the new history when it was
        computed, else that of a longer history known to be within the budget.

        The new history is ``base + t·c`` (``c`` the charged certificate, ``base`` the rest).  Composed
        ε values of ``base + m·c`` are remembered per ``(base, c, method, δ)`` (by content).  The charge
        is accepted if ``base + t·c`` itself composes within the budget, or if some ``base + m·c``
        with ``m >= t`` does: the first ``t`` of ``m`` composed mechanisms are a post-processing of all
        ``m`` (Dwork & Roth 2014, Prop. 2.1), so a certificate for ``m`` holds for ``t``.  Once a key has
        been seen, the check probes ahead (``2t``, or half way to the least count known to exceed the
        budget), so a user charged the same certificate ``N`` times costs O(log N) compositions in all.
        A charge is refused only if ``base + t·c`` itself composes beyond the budget.
        """
        counts = self._history(history_id)
        t = counts.pop(certificate_id, 0) + 1
        base = self._content(counts)
        digest = self._digest(certificate_id)
        probes = self._probes.setdefault((base, digest, self.method, budget.delta), {})
        limit = budget.epsilon
        covering = [e for m, e in probes.items() if m >= t and e <= limit]
        if covering:
            return True, max(covering)

        def composed(m: int) -> float:
            epsilon = self._composed_epsilon(tuple(sorted(base + ((digest, m),))), budget.delta)
            probes[m] = epsilon
            return epsilon

        if probes and not any(m <= t and e > limit for m, e in probes.items()):
            above = [m for m, e in probes.items() if m > t and e > limit]
            ahead = 2 * t if not above else (t + min(above)) // 2
            if ahead > t:
                epsilon = composed(ahead)
                if epsilon <= limit:
                    return True, epsilon
        epsilon = composed(t)
        return epsilon <= limit, epsilon

    # ----------------------------------------------------------------- charging
    @_run_again_if_rolled_back
    def charge(
        self,
        user_ids: Sequence[UserId] | np.ndarray | UserId,
        certificate: Certificate,
        run_id: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> ChargeReceipt:
        """Record one participation of each user in the mechanism ``certificate``, atomically.

        With an ``idempotency_key``, a charge whose key was already committed (the same users,
        certificate and run id) records nothing and returns the first receipt with
        ``replayed=True``: a client that lost the answer to a committed charge can safely retry.

        Raises
        ------
        BudgetExceeded
            If the charge would take any user beyond their budget; nothing is written.
        InvalidParameter
            For an empty list, repeated ids, ids that are neither integers nor strings, or a
            ``certificate`` that is not a :class:`Certificate`.
        """
        if not isinstance(certificate, Certificate):
            raise InvalidParameter("certificate", type(certificate).__name__, "a dpcert.Certificate")
        certificate.verify()
        if run_id is not None and not isinstance(run_id, str):
            raise InvalidParameter("run_id", run_id, "a string or None")
        if idempotency_key is not None and (not isinstance(idempotency_key, str) or not idempotency_key):
            raise InvalidParameter("idempotency_key", idempotency_key, "a non-empty string or None")
        ids = _user_ids(user_ids)
        created = time.time()
        request = None
        with self._write() as (db, tail):
            if idempotency_key is not None:
                request = _request_fingerprint(ids, certificate, run_id)
                replay = self._replay(idempotency_key, request)
                if replay is not None:
                    return replay
            certificate_id, digest = self._store_certificate(certificate)
            groups = db.charge_groups(ids)
            default = self.default_budget()
            new_history: dict[int, int] = {}
            for old_id in {int(g[0]) for g in groups}:
                counts = self._history(old_id)
                counts[certificate_id] = counts.get(certificate_id, 0) + 1
                new_history[old_id] = self._history_id(counts)
            refusals = []
            for old_id, epsilon, delta, count, example in groups:
                budget = Guarantee(epsilon, delta) if epsilon is not None else default
                if budget is None:
                    continue
                within, spent = self._fits_budget(int(old_id), certificate_id, budget)
                if not within:
                    refusals.append((count, db.user(example), spent, budget))
            if refusals:
                count = sum(r[0] for r in refusals)
                _, example, spent, budget = max(refusals, key=lambda r: r[2])
                raise BudgetExceeded(
                    f"charge refused: {count} of {len(ids)} users would exceed their budget, e.g. user "
                    f"{example!r} would reach epsilon={spent:.6g} > {budget.epsilon:g} at "
                    f"delta={budget.delta:g}; nothing was recorded"
                )
            # Row i (in the caller's order) stores hashes[i-1] as prev_hash and hashes[i] as hash.
            head = self._head_bytes()
            chain = self._chain_blob(head, entry_digest(digest, run_id, idempotency_key, created), ids)
            db.write_charge(ids, certificate_id, run_id, created, idempotency_key, chain, new_history)
            body = {
                "rows": len(ids),
                "row_head": (chain[-32:] if chain is not None else head).hex(),
                "certificate": digest,
                "run_id": run_id,
                "idempotency_key": idempotency_key,
                "created": created,
                "request": request,
            }
            self._append(tail, "charge", body, idempotency_key)
            if idempotency_key is not None:
                db.execute(
                    "INSERT INTO idempotency (key, request, run_id, users, certificate_sha256, created) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (idempotency_key, request, run_id, len(ids), digest, created),
                )
        return ChargeReceipt(run_id, len(ids), digest, idempotency_key)

    def _chain_blob(self, head: bytes, entry: bytes, ids: Sequence[UserId]) -> bytes | None:
        """``head`` followed by the row hashes of ``ids`` (32 bytes each)."""
        return head + b"".join(chain_hashes(head, entry, ids))

    def _head_bytes(self) -> bytes:
        row = self._db.execute("SELECT hash FROM charges ORDER BY id DESC LIMIT 1").fetchone()
        return GENESIS if row is None or row[0] is None else bytes(row[0])

    def chain_head(self) -> str | None:
        """Hex hash of the last charge row (the chain head; the genesis value for an empty ledger).

        Record it elsewhere: :meth:`verify` with ``head=`` then detects a truncated or rewritten
        ledger.  ``None`` for a ledger of schema version < 3 opened read-only (not yet chained).
        """
        if self._version is not None and self._version < 3:
            return None
        return self._head_bytes().hex()

    def _replay(self, key: str, request: str) -> ChargeReceipt | None:
        """The receipt of an already committed charge with idempotency ``key``, if any."""
        row = self._db.execute(
            "SELECT request, run_id, users, certificate_sha256 FROM idempotency WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        entry = self._db.execute(
            "SELECT kind, body FROM entries WHERE idempotency_key = ?", (key,)
        ).fetchone()
        backed = False
        if entry is not None and entry[0] in ("charge", "idempotency"):
            body = strict_json.loads(entry[1], what="ledger idempotency entry")
            backed = (body.get("request"), body.get("run_id"), body.get("rows"), body.get("certificate")) == (
                row[0],
                row[1],
                int(row[2]),
                row[3],
            )
        if not backed:
            raise LedgerIntegrityError(
                f"ledger {self.path}: idempotency key {key!r} has a record that no chained entry backs "
                "(written by hand: replaying it would skip a charge); nothing was recorded "
                "(run dpcert ledger verify)"
            )
        if row[0] != request:
            raise InvalidParameter(
                "idempotency_key",
                key,
                "a key not already used by a different charge (other users, certificate or run id)",
            )
        return ChargeReceipt(row[1], int(row[2]), str(row[3]), key, replayed=True)

    # ----------------------------------------------------------------- queries
    def users(self) -> list[UserId]:
        """Every user charged at least once (integers first, then strings, each in order)."""
        return [
            self._db.user(row[0]) for row in self._db.execute("SELECT user_id FROM users ORDER BY user_id")
        ]

    def _user_row(self, user_id: UserId) -> tuple[int, int]:
        row = self._db.execute(
            "SELECT history_id, charges FROM users WHERE user_id = ?", (self._db.uid(_user_id(user_id)),)
        ).fetchone()
        if row is None:
            raise UnknownUser(f"unknown user {user_id!r}: the ledger {self.path} has no charge for them")
        return int(row[0]), int(row[1])

    def charges(self, user_id: UserId) -> list[Charge]:
        """Every charge of ``user_id``, oldest first (certificates re-verified)."""
        self._user_row(user_id)
        rows = self._db.execute(
            "SELECT id, user_id, run_id, created, certificate_id FROM charges WHERE user_id = ? ORDER BY id",
            (self._db.uid(_user_id(user_id)),),
        ).fetchall()
        return [Charge(r[0], self._db.user(r[1]), r[2], r[3], self._certificate(r[4])) for r in rows]

    def spent(self, user_id: UserId, method: str | None = None, delta: float | None = None) -> Certificate:
        """The composed certificate of everything ``user_id`` took part in.

        ``delta`` defaults to the user's budget δ if a budget applies, else to the sum of the
        components' δ; ``method`` defaults to the ledger's method.
        """
        history_id, _ = self._user_row(user_id)
        if delta is None:
            budget = self.budget(user_id)
            delta = budget.delta if budget is not None else None
        return self._compose_history(history_id, method or self.method, delta)

    def remaining(self, user_id: UserId) -> Guarantee:
        """ε headroom at the budget's δ: budget ε minus the composed spent ε (floored at 0).

        Composition is not additive, so a mechanism of this ε is not guaranteed to fit; :meth:`charge`
        decides.  Raises :class:`InvalidParameter` if no budget applies to the user.
        """
        self._user_row(user_id)
        budget = self.budget(user_id)
        if budget is None:
            raise InvalidParameter(
                "budget", None, f"a budget for user {user_id!r} or a default (Ledger.set_budget)"
            )
        spent = self.spent(user_id, delta=budget.delta).epsilon
        return Guarantee(max(0.0, budget.epsilon - spent), budget.delta)

    def spent_summary(self, method: str | None = None, delta: float | None = None) -> SpentSummary:
        """The user with the largest spent ε (each distinct history composed once) and totals.

        ``delta`` defaults to the default budget's δ if one is set, else to each history's sum of δ.
        """
        if delta is None:
            default = self.default_budget()
            delta = default.delta if default is not None else None
        users, charges = self._db.execute("SELECT COUNT(*), COALESCE(SUM(charges), 0) FROM users").fetchone()
        histories = self._db.execute(
            "SELECT history_id, MIN(user_id) FROM users GROUP BY history_id"
        ).fetchall()
        worst: tuple[UserId, Certificate] | None = None
        for history_id, example in histories:
            certificate = self._compose_history(int(history_id), method or self.method, delta)
            if worst is None or certificate.epsilon > worst[1].epsilon:
                worst = (self._db.user(example), certificate)
        return SpentSummary(
            int(users),
            int(charges),
            len(histories),
            worst[0] if worst else None,
            worst[1] if worst else None,
        )

    def max_spent(self, method: str | None = None, delta: float | None = None) -> tuple[UserId, Certificate]:
        """(user, composed certificate) of a user with the largest spent ε."""
        summary = self.spent_summary(method, delta)
        if summary.max_user is None or summary.max_certificate is None:
            raise UnknownUser(f"the ledger {self.path} has no charges")
        return summary.max_user, summary.max_certificate

    # ----------------------------------------------------------------- verification
    def verify(self, head: str | None = None, public_key: Any = None) -> ChainReport:
        """Recompute both hash chains and every table's state from the chained entries.

        Reports the first broken entry: an entry or charge row whose ``prev_hash`` is not the hash of
        the one before it (deleted, inserted or re-ordered), whose content no longer matches its hash
        (edited), a charge entry whose rows end elsewhere than its chained row head (rows rewritten
        and re-chained), a charge row no entry covers, a certificate that fails its content hash or
        re-verification, a user whose stored state differs from their charge rows, a budget or
        idempotency record that differs from (or is not backed by) a chained entry, a user whose
        composed spending (at this ledger's method) exceeds the chained budget in force when they
        were charged, and a schema version that differs from the chained one.

        Signatures: with ``public_key`` (the operator's Ed25519 public key, a key object or the path
        of its PEM file), the ledger must have been created with that key, every stored signed head
        must be a head of the chain signed by it, and the last signed head must be the last entry: a
        rewrite by anyone without the private key is reported, however it was re-chained.  Without
        ``public_key`` the signatures are checked against the key recorded in entry 1, which only
        shows consistency (an intruder could replace that key and every signature).

        With ``head`` (a chain head recorded earlier: a charge row's hash, see :meth:`chain_head`, or
        an entry's, see :meth:`entry_head`), a chain that no longer contains it is reported too.
        """
        if head is not None:
            head = str(head).strip().lower()
            if len(head) != 64 or any(ch not in "0123456789abcdef" for ch in head):
                raise InvalidParameter("head", head, "a chain head: 64 hexadecimal digits")
        verifying_key = load_verifying_key(public_key)
        expected_key = raw_public_key(verifying_key) if verifying_key is not None else None
        if self._version is not None and self._version < SCHEMA_VERSION:
            chain = "has no hash chain" if self._version < 3 else "chains only its charge rows"
            return ChainReport(
                False,
                0,
                None,
                f"schema version {self._version} {chain}: its budgets, idempotency records and schema "
                f"version are not chained or signed (version {SCHEMA_VERSION}); migrate a genuine ledger "
                f"of an earlier dpcert with: dpcert ledger migrate {self.path}",
            )
        try:
            with self._snapshot():
                return self._verify(bytes.fromhex(head) if head is not None else None, expected_key)
        except Exception as exc:  # noqa: BLE001 - only damage of the stored data is a verdict
            if not self._db.damaged(exc):
                raise
            return ChainReport(
                False,
                0,
                None,
                f"the ledger's stored data are damaged and cannot be read ({type(exc).__name__}: {exc})",
            )

    def _check_row(self, row: tuple[Any, ...], previous: bytes) -> tuple[bytes, str | None]:
        """The hash of one charge row recomputed after ``previous``, or the problem with it."""
        charge_id, user, digest, run_id, key, created, stored_prev, stored_hash = row
        if digest is None:
            return previous, f"charge {charge_id}: its certificate row is missing"
        if stored_prev is None or bytes(stored_prev) != previous:
            return previous, (
                f"charge {charge_id}: previous hash does not match the row before it "
                "(a charge was deleted, inserted or re-ordered)"
            )
        try:
            expected = chain_hashes(previous, entry_digest(digest, run_id, key, created), [user])[0]
        except (TypeError, ValueError, OverflowError):
            return previous, f"charge {charge_id}: malformed content"
        if stored_hash is None or bytes(stored_hash) != expected:
            return previous, f"charge {charge_id}: content does not match its hash (edited)"
        return expected, None

    def _verify(self, head: bytes | None, expected_key: bytes | None) -> ChainReport:
        signed = {
            int(count): (int(version), bytes(signed_head), bytes(signature))
            for count, version, signed_head, signature in self._db.execute(
                "SELECT entries, schema_version, head, signature FROM signatures ORDER BY entries"
            ).fetchall()
        }
        rows = entries = 0
        row_previous = previous = GENESIS
        last_row_id: Any = None
        head_seen = head is None or head == GENESIS
        chained_key: bytes | None = None
        verifier: bytes | None = expected_key
        default: Guarantee | None = None
        own: dict[Any, Guarantee] = {}
        budget_log: list[tuple[Any, Any, Guarantee]] = []  # (last row id before it, stored user, budget)
        idempotency: dict[str, tuple[tuple[Any, ...], int]] = {}
        row_stream = self._chain_rows()

        def broken(problem: str) -> ChainReport:
            return ChainReport(
                False,
                rows,
                row_previous.hex(),
                problem,
                entries,
                previous.hex(),
                None if verifier is None else key_fingerprint(verifier),
            )

        for entry_id, kind, text, column_key, stored_prev, stored_hash in self._db.stream(
            "SELECT id, kind, body, idempotency_key, prev_hash, hash FROM entries ORDER BY id"
        ):
            entries += 1
            where = f"entry {entries}"
            if int(entry_id) != entries:
                return broken(
                    f"{where}: stored with id {entry_id} (an entry was deleted, inserted or re-ordered)"
                )
            if stored_prev is None or bytes(stored_prev) != previous:
                return broken(
                    f"{where}: previous hash does not match the entry before it "
                    "(an entry was deleted, inserted or re-ordered)"
                )
            try:
                expected = entry_hash(previous, str(kind), str(text))
                body = strict_json.loads(text, what="ledger entry")
                if not isinstance(body, dict):
                    raise ValueError("not an object")
            except (TypeError, ValueError) as exc:
                return broken(f"{where}: malformed content ({exc})")
            if stored_hash is None or bytes(stored_hash) != expected:
                return broken(f"{where}: content does not match its hash (edited)")
            previous = expected
            head_seen = head_seen or previous == head
            try:
                if entries == 1:
                    if kind != "schema":
                        return broken(f"{where}: a {kind} entry where the schema entry should be")
                    if body["schema_version"] != self._version:
                        return broken(
                            f"{where}: chained schema version {body['schema_version']}, stored version "
                            f"{self._version} (the meta table was altered)"
                        )
                    if body["public_key"] is not None:
                        chained_key = base64.b64decode(str(body["public_key"]), validate=True)
                    if expected_key is not None and chained_key != expected_key:
                        return broken(
                            f"{where}: the ledger's signing key is {key_fingerprint(chained_key)}, not the "
                            f"expected key {key_fingerprint(expected_key)}"
                            + (
                                " (the ledger is unsigned or its key was removed)"
                                if chained_key is None
                                else ""
                            )
                        )
                    verifier = expected_key if expected_key is not None else chained_key
                elif kind == "budget":
                    budget = Guarantee(float(body["epsilon"]), float(body["delta"]))
                    stored_user = None if body["user"] is None else self._db.uid(user_from_json(body["user"]))
                    if stored_user is None:
                        default = budget
                    else:
                        own[stored_user] = budget
                    budget_log.append((last_row_id, stored_user, budget))
                elif kind == "idempotency":
                    record = (body["request"], body["run_id"], int(body["rows"]), body["certificate"])
                    if body["idempotency_key"] in idempotency:
                        return broken(f"{where}: idempotency key {body['idempotency_key']!r} chained twice")
                    idempotency[body["idempotency_key"]] = ((*record, float(body["created"])), entries)
                elif kind != "charge":
                    return broken(f"{where}: unknown kind {kind!r}")
                count = int(body["rows"]) if kind in ("schema", "charge") else 0
                key = body.get("idempotency_key") if kind in ("charge", "idempotency") else None
                if column_key != key:
                    return broken(
                        f"{where}: its idempotency key column ({column_key!r}) differs from its content"
                    )
                fields = (
                    (body["certificate"], body["run_id"], body["idempotency_key"], float(body["created"]))
                    if kind == "charge"
                    else None
                )
                for _ in range(count):
                    row = next(row_stream, None)
                    if row is None:
                        return broken(f"{where}: chains {count} charge rows, the table ends before them")
                    rows += 1
                    row_previous, problem = self._check_row(row, row_previous)
                    if problem is not None:
                        return broken(problem)
                    head_seen = head_seen or row_previous == head
                    if fields is not None and (row[2], row[3], row[4], row[5]) != fields:
                        return broken(
                            f"charge {row[0]}: not part of {where} (its certificate, run id, idempotency key "
                            "or time differ)"
                        )
                    last_row_id = row[0]
                if count and row_previous.hex() != body["row_head"]:
                    return broken(
                        f"{where}: its charge rows end at hash {row_previous.hex()[:16]}…, "
                        "not at the chained "
                        f"row head {str(body['row_head'])[:16]}… (rows rewritten and re-chained)"
                    )
                if kind == "charge" and key is not None:
                    if key in idempotency:
                        return broken(f"{where}: idempotency key {key!r} chained twice")
                    record = (body["request"], body["run_id"], count, body["certificate"])
                    idempotency[key] = ((*record, float(body["created"])), entries)
            except (KeyError, TypeError, ValueError) as exc:
                return broken(f"{where}: malformed content ({type(exc).__name__}: {exc})")
            if entries in signed and verifier is None:
                return broken(f"{where}: signed, but entry 1 names no signing key (the key was removed)")
            if verifier is not None and entries in signed:
                version, signed_head, signature = signed[entries]
                if signed_head != previous or version != self._version:
                    return broken(
                        f"{where}: its signed head differs from the chain (rewritten and re-chained "
                        "without the signing key)"
                    )
                if not signature_valid(verifier, signature, head_message(version, entries, signed_head)):
                    return broken(f"{where}: its signature is not valid for key {key_fingerprint(verifier)}")
        if entries == 0:
            return broken("entry 1: missing (the ledger has no chained entries)")
        extra = next(row_stream, None)
        if extra is not None:
            return broken(f"charge {extra[0]}: not backed by a chained entry (written outside the ledger)")
        if verifier is not None:
            if not signed:
                return broken(f"entry 1: not signed (no signed head for key {key_fingerprint(verifier)})")
            last = max(signed)
            if last > entries:
                return broken(
                    f"entry {entries + 1}: signed (up to entry {last}) but missing (the ledger was truncated)"
                )
            if last < entries:
                return broken(
                    f"entry {last + 1}: written after the last signed head (entry {last}) without the "
                    "signing key"
                )
        if not head_seen:
            assert head is not None
            return broken(
                f"the recorded head {head.hex()} is not in the chain (the ledger was truncated or rewritten)"
            )
        for (cid,) in self._db.execute("SELECT id FROM certificates ORDER BY id").fetchall():
            try:
                self._certificate(cid)
            except UnknownMechanism:
                raise  # not evidence of tampering: this environment cannot re-derive the certificate
            except DPCertError as exc:
                return broken(f"certificate {cid}: {exc}")
        problem = (
            self._verify_user_state()
            or self._verify_budgets(default, own)
            or self._verify_idempotency(idempotency)
            or self._verify_spending(budget_log, last_row_id)
        )
        if problem is not None:
            return broken(problem)
        return ChainReport(
            True,
            rows,
            row_previous.hex(),
            None,
            entries,
            previous.hex(),
            None if verifier is None else key_fingerprint(verifier),
        )

    def _verify_budgets(self, default: Guarantee | None, own: dict[Any, Guarantee]) -> str | None:
        """The first budget whose stored value differs from the chained one, if any."""

        def text(budget: Guarantee | None) -> str:
            return "none" if budget is None else f"({budget.epsilon!r}, {budget.delta!r})"

        try:
            stored_default = self.default_budget()
        except (ValueError, KeyError, TypeError, InvalidParameter) as exc:
            return f"default budget: malformed ({exc})"
        if stored_default != default:
            return f"default budget: {text(stored_default)} stored, {text(default)} chained (edited)"
        remaining = dict(own)
        for user, epsilon, delta in self._db.stream(
            "SELECT user_id, epsilon, delta FROM budgets ORDER BY user_id"
        ):
            chained = remaining.pop(user, None)
            name = repr(self._db.user(user))
            if chained is None:
                return f"budget of user {name}: not backed by a chained entry (written outside the ledger)"
            if (epsilon, delta) != (chained.epsilon, chained.delta):
                return f"budget of user {name}: ({epsilon!r}, {delta!r}) stored, {text(chained)} chained"
        for user, chained in remaining.items():
            return (
                f"budget of user {self._db.user(user)!r}: chained {text(chained)} but missing from the table"
            )
        return None

    def _verify_idempotency(self, chained: dict[str, tuple[tuple[Any, ...], int]]) -> str | None:
        """The first idempotency record that differs from (or is not backed by) a chained entry."""
        remaining = dict(chained)
        for key, request, run_id, users, digest, created in self._db.stream(
            "SELECT key, request, run_id, users, certificate_sha256, created FROM idempotency ORDER BY key"
        ):
            entry = remaining.pop(key, None)
            if entry is None:
                return (
                    f"idempotency key {key!r}: not backed by a chained entry (a charge with this key "
                    "would be skipped)"
                )
            if (request, run_id, int(users), digest, float(created)) != entry[0]:
                return f"idempotency key {key!r}: differs from its chained entry {entry[1]} (edited)"
        for key, entry in remaining.items():
            return f"idempotency key {key!r}: chained in entry {entry[1]} but missing from the table"
        return None

    def _verify_spending(self, budget_log: list[tuple[Any, Any, Guarantee]], last_row_id: Any) -> str | None:
        """The first user whose composed spending exceeded the chained budget in force when charged.

        Budget changes cut the charge rows into epochs; a user's spent ε only grows with their
        history (post-processing: Dwork & Roth 2014, Prop. 2.1), so the users charged in an epoch are
        checked at its last row against the budgets in force during it.  Each distinct (history,
        budget) is composed once, at this ledger's method.
        """
        if not budget_log or last_row_id is None:
            return None
        if all(mark is None for mark, _, _ in budget_log):
            return self._verify_final_spending(budget_log)
        marks = sorted({m for m, _, _ in budget_log if m is not None and m < last_row_id})
        default: Guarantee | None = None
        own: dict[Any, Guarantee] = {}
        applied = 0
        start = None
        digests: dict[int, str] = {}
        composed: dict[tuple[Any, ...], float] = {}
        for end in [*marks, last_row_id]:
            while applied < len(budget_log) and (
                budget_log[applied][0] is None or (start is not None and budget_log[applied][0] <= start)
            ):
                _, user, budget = budget_log[applied]
                if user is None:
                    default = budget
                else:
                    own[user] = budget
                applied += 1
            if default is not None or own:
                sql = "SELECT c.user_id, c.certificate_id, COUNT(*) FROM charges AS c WHERE c.id <= ?"
                params: tuple[Any, ...] = (end,)
                if start is not None:
                    sql += " AND c.user_id IN (SELECT user_id FROM charges WHERE id > ? AND id <= ?)"
                    params = (end, start, end)
                sql += " GROUP BY c.user_id, c.certificate_id ORDER BY c.user_id, c.certificate_id"
                for user, group in itertools.groupby(self._db.stream(sql, params), key=lambda row: row[0]):
                    applies = own.get(user, default)
                    if applies is None:
                        continue
                    budget = applies
                    content = []
                    for _, cid, count in group:
                        if int(cid) not in digests:
                            digests[int(cid)] = self._digest(int(cid))
                        content.append((digests[int(cid)], int(count)))
                    key = (tuple(sorted(content)), budget.epsilon, budget.delta)
                    epsilon = composed.get(key)
                    if epsilon is None:
                        epsilon = composed[key] = self._composed_epsilon(key[0], budget.delta)
                    if epsilon > budget.epsilon:
                        return (
                            f"user {self._db.user(user)!r}: spent epsilon={epsilon:.6g} exceeds the chained "
                            f"budget ({budget.epsilon:g}, {budget.delta:g}) in force at charge {end} "
                            "(overspent: a budget was raised outside the ledger)"
                        )
            start = end
        return None

    def _verify_final_spending(self, budget_log: list[tuple[Any, Any, Guarantee]]) -> str | None:
        """:meth:`_verify_spending` when every budget was set before the first charge: one epoch, whose
        budgets are the final ones and whose histories are the users' stored ones (both checked equal
        to the chain before this runs), grouped in SQL by (history, own budget)."""
        default = None
        for _, user, budget in budget_log:
            if user is None:
                default = budget
        groups = self._db.stream(
            "SELECT u.history_id, b.epsilon, b.delta, MIN(u.user_id) FROM users AS u "
            "LEFT JOIN budgets AS b ON b.user_id = u.user_id WHERE u.charges > 0 GROUP BY 1, 2, 3 ORDER BY 4"
        )
        for history_id, epsilon, delta, example in groups:
            applies = Guarantee(epsilon, delta) if epsilon is not None else default
            if applies is None:
                continue
            budget = applies
            spent = self._composed_epsilon(self._content(self._history(int(history_id))), budget.delta)
            if spent > budget.epsilon:
                return (
                    f"user {self._db.user(example)!r}: spent epsilon={spent:.6g} exceeds the chained "
                    f"budget ({budget.epsilon:g}, {budget.delta:g}) in force when charged "
                    "(overspent: a budget was raised outside the ledger)"
                )
        return None

    def _verify_user_state(self) -> str | None:
        """The first user whose stored state differs from their charge rows, if any."""
        stored = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(charges), 0) FROM users WHERE charges > 0"
        ).fetchone()
        counted = self._db.execute("SELECT COUNT(DISTINCT user_id), COUNT(*) FROM charges").fetchone()
        aggregate = self._db.stream(
            "SELECT user_id, certificate_id, COUNT(*) FROM charges GROUP BY user_id, certificate_id "
            "ORDER BY user_id, certificate_id"
        )
        for user, group in itertools.groupby(aggregate, key=lambda row: row[0]):
            counts = {int(cid): int(count) for _, cid, count in group}
            row = self._db.execute(
                "SELECT history_id, charges FROM users WHERE user_id = ?", (user,)
            ).fetchone()
            if row is None:
                return f"user {self._db.user(user)!r}: has charge rows but no stored state"
            key = self._db.execute("SELECT key FROM histories WHERE id = ?", (row[0],)).fetchone()
            if int(row[1]) != sum(counts.values()) or key is None or key[0] != _history_key(counts):
                return (
                    f"user {self._db.user(user)!r}: stored state ({row[1]} charges) does not match their "
                    f"{sum(counts.values())} charge rows"
                )
        if tuple(stored) != tuple(counted):
            return (
                f"users: {stored[0]} users with {stored[1]} charges stored, "
                f"{counted[0]} users with {counted[1]} charges in the rows"
            )
        return None

    # ----------------------------------------------------------------- export
    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        """A read transaction: every query inside sees the same committed state."""
        with self._db.snapshot():
            yield

    def user_totals(self, delta: float | None = None) -> Iterator[UserTotal]:
        """Each user's charges, composed spent (ε, δ) and budget, in user order (streamed).

        ``delta`` defaults to the user's budget δ if a budget applies, else to the sum of the
        components' δ (as :meth:`spent`).  Each distinct (history, δ) is composed once.
        """
        default = self.default_budget()
        composed: dict[tuple[int, float | None], Certificate] = {}
        cursor = self._db.stream(
            "SELECT u.user_id, u.history_id, u.charges, b.epsilon, b.delta FROM users AS u "
            "LEFT JOIN budgets AS b ON b.user_id = u.user_id ORDER BY u.user_id"
        )
        for user_id, history_id, charges, budget_epsilon, budget_delta in cursor:
            budget = Guarantee(budget_epsilon, budget_delta) if budget_epsilon is not None else default
            at = delta if delta is not None else (budget.delta if budget is not None else None)
            key = (int(history_id), at)
            certificate = composed.get(key)
            if certificate is None:
                certificate = composed[key] = self._compose_history(int(history_id), self.method, at)
            yield UserTotal(
                self._db.user(user_id), int(charges), certificate.epsilon, certificate.delta, budget
            )

    def write_export(self, stream: TextIO, format: str = "json", *, per_user: bool = False) -> None:
        """Write the export to ``stream`` row by row (memory bounded by the distinct certificates).

        ``format="json"``: one object with the certificates, every charge, each user's totals and the
        budgets.  ``format="csv"``: one row per charge, or (``per_user=True``) one row per user with
        their totals.
        """
        if format not in ("json", "csv"):
            raise InvalidParameter("format", format, "json or csv")
        with self._snapshot():
            if format == "csv" and per_user:
                write_user_totals_csv(stream, self.user_totals())
            elif format == "csv":
                write_charges_csv(stream, self._charge_rows(), self._certificate)
            else:
                write_json(
                    stream,
                    schema_version=self.schema_version,
                    certificates=self._certificate_rows(),
                    charges=self._charge_rows(),
                    totals=self.user_totals(),
                    default_budget=self.default_budget(),
                    budgets=self._budget_rows(),
                )

    def export(self, format: str = "json", *, per_user: bool = False) -> str:
        """The export of :meth:`write_export` as one string."""
        buffer = io.StringIO()
        self.write_export(buffer, format, per_user=per_user)
        return buffer.getvalue()

    def _certificate_rows(self) -> Iterator[tuple[str, Certificate]]:
        for cid, digest in self._db.execute("SELECT id, sha256 FROM certificates ORDER BY id"):
            yield digest, self._certificate(cid)

    def _charge_rows(self) -> Iterator[ChargeRow]:
        user = self._db.user
        return (
            (row[0], user(row[1]), *row[2:])
            for row in self._db.stream(
                "SELECT c.id, c.user_id, c.run_id, c.created, s.sha256, c.certificate_id, c.idempotency_key "
                "FROM charges AS c JOIN certificates AS s ON s.id = c.certificate_id ORDER BY c.id"
                if self._version is None or self._version >= 2
                else "SELECT c.id, c.user_id, c.run_id, c.created, s.sha256, c.certificate_id, NULL "
                "FROM charges AS c JOIN certificates AS s ON s.id = c.certificate_id ORDER BY c.id"
            )
        )

    def _budget_rows(self) -> Iterator[tuple[UserId, float, float]]:
        for user, epsilon, delta in self._db.execute(
            "SELECT user_id, epsilon, delta FROM budgets ORDER BY user_id"
        ):
            yield self._db.user(user), epsilon, delta


__all__ = ["ChainReport", "Charge", "ChargeReceipt", "Ledger"]
