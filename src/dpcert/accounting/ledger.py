"""A durable per-user privacy ledger on SQLite.

``Ledger(path)`` records, for each user, every participation (a *charge*) in a mechanism, and composes
each user's participations into the privacy they have spent.  Design:

* stdlib :mod:`sqlite3` in WAL mode; each :meth:`Ledger.charge` is **one** ``BEGIN IMMEDIATE``
  transaction, so a crash (even SIGKILL) leaves either the whole charge or none of it, and
  concurrent writers (threads or processes) are serialised by SQLite's write lock;
* each distinct certificate is stored once (``certificates``, keyed by the SHA-256 of its JSON) and
  charge rows reference it; certificates are re-verified when read back (a corrupted row raises
  :class:`~dpcert.errors.CertificateFormatError`);
* each user's *history* (the multiset of certificates charged to them) is kept in ``users`` as a
  reference to a row of ``histories``; users with the same history share it, so the budget check of a
  charge on 10^6 users composes each distinct history once, inside the transaction;
* the schema version lives in the ``meta`` table.

With a budget set (per user or for everyone), a charge that would take *any* of its users beyond
their budget (composed with ``compose(..., method=ledger.method, delta=budget.delta)``) is refused as
a whole with :class:`~dpcert.errors.BudgetExceeded` and nothing is written.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import numbers
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.accounting.composition import ALL_METHODS, compose_counts
from dpcert.certificates import Certificate, Guarantee
from dpcert.errors import (
    BudgetExceeded,
    CertificateFormatError,
    DPCertError,
    InvalidParameter,
    UnknownUser,
)

SCHEMA_VERSION = 1
EXPORT_FORMAT = "dpcert.ledger-export/1"
UserId = int | str

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS certificates (
    id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY, user_id NOT NULL, certificate_id INTEGER NOT NULL REFERENCES certificates(id),
    run_id TEXT, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS charges_by_user ON charges(user_id);
CREATE TABLE IF NOT EXISTS histories (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
INSERT OR IGNORE INTO histories (id, key) VALUES (0, '');
CREATE TABLE IF NOT EXISTS users (
    user_id PRIMARY KEY, history_id INTEGER NOT NULL REFERENCES histories(id), charges INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS budgets (user_id PRIMARY KEY, epsilon REAL NOT NULL, delta REAL NOT NULL);
"""


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


@dataclass(frozen=True)
class SpentSummary:
    """The worst-off user of the ledger and a few totals."""

    users: int
    charges: int
    histories: int
    max_user: UserId | None
    max_certificate: Certificate | None

    @property
    def max_epsilon(self) -> float:
        return self.max_certificate.epsilon if self.max_certificate is not None else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "users": self.users,
            "charges": self.charges,
            "histories": self.histories,
            "max_user": self.max_user,
            "max_user_epsilon": self.max_epsilon,
            "max_user_delta": self.max_certificate.delta if self.max_certificate is not None else 0.0,
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


def _budget(value: object) -> Guarantee:
    if not isinstance(value, Guarantee):
        raise InvalidParameter("budget", value, "a dpcert.Guarantee(epsilon >= 0, 0 <= delta < 1)")
    return value


# --------------------------------------------------------------------------- the ledger
class Ledger:
    """A per-user privacy ledger stored in the SQLite file ``path``.

    Parameters
    ----------
    path
        Database file (created if absent, unless ``create=False``).
    method
        Composition method used for budgets and :meth:`spent` (default ``"best"``).
    durable
        ``True`` (default): ``synchronous=FULL``, committed charges survive power loss; ``False``:
        ``synchronous=NORMAL``, committed charges survive process crashes (WAL), faster.
    timeout
        Seconds to wait for another writer's lock before giving up.
    create
        If false, refuse to open a file that does not exist yet.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        method: str = "best",
        durable: bool = True,
        timeout: float = 60.0,
        create: bool = True,
    ) -> None:
        self.path = Path(path)
        if method not in ALL_METHODS:
            raise InvalidParameter("method", method, "one of " + ", ".join(ALL_METHODS))
        self.method = method
        if not create and not self.path.is_file():
            raise InvalidParameter("path", str(self.path), "an existing dpcert ledger file")
        timeout = check.positive_finite("timeout", timeout)
        try:
            self._db = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise InvalidParameter("path", str(self.path), f"a writable ledger location: {exc}") from exc
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._initialise()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise InvalidParameter(
                "path", str(self.path), f"a dpcert ledger (SQLite database): {exc}"
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
    def _stored_schema_version(self) -> str | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError:  # no meta table yet: a new ledger
            return None
        return None if row is None else str(row[0])

    def _initialise(self) -> None:
        stored = self._stored_schema_version()
        if stored is not None and stored != str(SCHEMA_VERSION):
            raise InvalidParameter(
                "path", str(self.path), f"a ledger with schema version {SCHEMA_VERSION} (found {stored})"
            )
        if stored is None:  # create the schema (no write lock is taken for an existing ledger)
            self._create_schema()
        self._db.execute("CREATE TEMP TABLE IF NOT EXISTS batch_users (user_id PRIMARY KEY) WITHOUT ROWID")
        self._db.execute("CREATE TEMP TABLE IF NOT EXISTS history_map (old INTEGER PRIMARY KEY, new INTEGER)")

    def _create_schema(self) -> None:
        with self._transaction():
            for statement in _SCHEMA.strip().split(";"):
                if statement.strip():
                    self._db.execute(statement)
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
            elif row[0] != str(SCHEMA_VERSION):
                raise InvalidParameter(
                    "path", str(self.path), f"a ledger with schema version {SCHEMA_VERSION} (found {row[0]})"
                )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed if the block succeeds, else rolled back."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error:
            self._db.execute("ROLLBACK")
            raise

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
    def set_budget(self, user_id: UserId | None, budget: Guarantee) -> None:
        """Set the budget of one user, or (``user_id=None``) the default budget of every user."""
        budget = _budget(budget)
        with self._transaction() as db:
            if user_id is None:
                db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('default_budget', ?)",
                    (json.dumps(budget.to_dict()),),
                )
            else:
                db.execute(
                    "INSERT OR REPLACE INTO budgets (user_id, epsilon, delta) VALUES (?, ?, ?)",
                    (_user_id(user_id), budget.epsilon, budget.delta),
                )

    def default_budget(self) -> Guarantee | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'default_budget'").fetchone()
        if row is None:
            return None
        data = json.loads(row[0])
        return Guarantee(float(data["epsilon"]), float(data["delta"]))

    def budget(self, user_id: UserId) -> Guarantee | None:
        """The budget that applies to ``user_id`` (their own, else the default, else ``None``)."""
        row = self._db.execute(
            "SELECT epsilon, delta FROM budgets WHERE user_id = ?", (_user_id(user_id),)
        ).fetchone()
        return Guarantee(row[0], row[1]) if row is not None else self.default_budget()

    # ----------------------------------------------------------------- certificates and histories
    def _store_certificate(self, certificate: Certificate) -> tuple[int, str]:
        text = certificate.to_json()
        digest = hashlib.sha256(text.encode()).hexdigest()
        row = self._db.execute("SELECT id FROM certificates WHERE sha256 = ?", (digest,)).fetchone()
        if row is not None:
            return int(row[0]), digest
        cursor = self._db.execute("INSERT INTO certificates (sha256, json) VALUES (?, ?)", (digest, text))
        return int(cursor.lastrowid), digest

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
            raise CertificateFormatError(f"ledger {self.path}: certificate {certificate_id}: {exc}") from exc
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
        return int(self._db.execute("INSERT INTO histories (key) VALUES (?)", (key,)).lastrowid)

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
    def charge(
        self,
        user_ids: Sequence[UserId] | np.ndarray | UserId,
        certificate: Certificate,
        run_id: str | None = None,
    ) -> ChargeReceipt:
        """Record one participation of each user in the mechanism ``certificate``, atomically.

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
        ids = _user_ids(user_ids)
        created = time.time()
        with self._transaction() as db:
            certificate_id, digest = self._store_certificate(certificate)
            db.execute("DELETE FROM temp.batch_users")
            db.executemany("INSERT INTO temp.batch_users (user_id) VALUES (?)", ((u,) for u in ids))
            groups = db.execute(
                "SELECT COALESCE(u.history_id, 0), b2.epsilon, b2.delta, COUNT(*), MIN(b.user_id) "
                "FROM temp.batch_users AS b "
                "LEFT JOIN users AS u ON u.user_id = b.user_id "
                "LEFT JOIN budgets AS b2 ON b2.user_id = b.user_id "
                "GROUP BY 1, 2, 3"
            ).fetchall()
            default = self.default_budget()
            db.execute("DELETE FROM temp.history_map")
            new_history: dict[int, int] = {}
            for old_id in {int(g[0]) for g in groups}:
                counts = self._history(old_id)
                counts[certificate_id] = counts.get(certificate_id, 0) + 1
                new_history[old_id] = self._history_id(counts)
            db.executemany("INSERT INTO temp.history_map (old, new) VALUES (?, ?)", new_history.items())
            refusals = []
            for old_id, epsilon, delta, count, example in groups:
                budget = Guarantee(epsilon, delta) if epsilon is not None else default
                if budget is None:
                    continue
                within, spent = self._fits_budget(int(old_id), certificate_id, budget)
                if not within:
                    refusals.append((count, example, spent, budget))
            if refusals:
                count = sum(r[0] for r in refusals)
                _, example, spent, budget = max(refusals, key=lambda r: r[2])
                raise BudgetExceeded(
                    f"charge refused: {count} of {len(ids)} users would exceed their budget, e.g. user "
                    f"{example!r} would reach epsilon={spent:.6g} > {budget.epsilon:g} at "
                    f"delta={budget.delta:g}; nothing was recorded"
                )
            db.execute(
                "INSERT INTO charges (user_id, certificate_id, run_id, created) "
                "SELECT user_id, ?, ?, ? FROM temp.batch_users",
                (certificate_id, run_id, created),
            )
            db.execute(
                "INSERT INTO users (user_id, history_id, charges) "
                "SELECT b.user_id, m.new, COALESCE(u.charges, 0) + 1 FROM temp.batch_users AS b "
                "LEFT JOIN users AS u ON u.user_id = b.user_id "
                "JOIN temp.history_map AS m ON m.old = COALESCE(u.history_id, 0) WHERE true "
                "ON CONFLICT (user_id) DO UPDATE SET history_id = excluded.history_id, "
                "charges = excluded.charges"
            )
            db.execute("DELETE FROM temp.batch_users")
        return ChargeReceipt(run_id, len(ids), digest)

    # ----------------------------------------------------------------- queries
    def users(self) -> list[UserId]:
        """Every user charged at least once (integers first, then strings, each in order)."""
        return [row[0] for row in self._db.execute("SELECT user_id FROM users ORDER BY user_id")]

    def _user_row(self, user_id: UserId) -> tuple[int, int]:
        row = self._db.execute(
            "SELECT history_id, charges FROM users WHERE user_id = ?", (_user_id(user_id),)
        ).fetchone()
        if row is None:
            raise UnknownUser(f"unknown user {user_id!r}: the ledger {self.path} has no charge for them")
        return int(row[0]), int(row[1])

    def charges(self, user_id: UserId) -> list[Charge]:
        """Every charge of ``user_id``, oldest first (certificates re-verified)."""
        self._user_row(user_id)
        rows = self._db.execute(
            "SELECT id, user_id, run_id, created, certificate_id FROM charges WHERE user_id = ? ORDER BY id",
            (_user_id(user_id),),
        ).fetchall()
        return [Charge(r[0], r[1], r[2], r[3], self._certificate(r[4])) for r in rows]

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
                worst = (example, certificate)
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

    # ----------------------------------------------------------------- export
    def export(self, format: str = "json") -> str:
        """Every charge, certificate and budget as JSON (one object) or CSV (one row per charge)."""
        if format not in ("json", "csv"):
            raise InvalidParameter("format", format, "json or csv")
        ids = [row[0] for row in self._db.execute("SELECT id FROM certificates ORDER BY id")]
        certificates = {cid: self._certificate(cid) for cid in ids}
        digests = dict(self._db.execute("SELECT id, sha256 FROM certificates").fetchall())
        rows = self._db.execute(
            "SELECT id, user_id, run_id, created, certificate_id FROM charges ORDER BY id"
        ).fetchall()
        if format == "csv":
            buffer = io.StringIO()
            writer = csv.writer(buffer, lineterminator="\n")
            writer.writerow(
                [
                    "charge_id",
                    "user_id",
                    "run_id",
                    "created",
                    "certificate_sha256",
                    "mechanism",
                    "epsilon",
                    "delta",
                ]
            )
            for charge_id, user_id, run_id, created, cid in rows:
                certificate = certificates[cid]
                writer.writerow(
                    [
                        charge_id,
                        user_id,
                        "" if run_id is None else run_id,
                        repr(created),
                        digests[cid],
                        certificate.mechanism,
                        repr(certificate.epsilon),
                        repr(certificate.delta),
                    ]
                )
            return buffer.getvalue()
        default = self.default_budget()
        budgets = self._db.execute("SELECT user_id, epsilon, delta FROM budgets ORDER BY user_id").fetchall()
        payload = {
            "format": EXPORT_FORMAT,
            "schema_version": self.schema_version,
            "certificates": {digests[cid]: certificates[cid].to_dict() for cid in ids},
            "charges": [
                {
                    "charge_id": charge_id,
                    "user_id": user_id,
                    "run_id": run_id,
                    "created": created,
                    "certificate": digests[cid],
                }
                for charge_id, user_id, run_id, created, cid in rows
            ],
            "default_budget": default.to_dict() if default else None,
            "budgets": [{"user_id": u, "epsilon": e, "delta": d} for u, e, d in budgets],
        }
        return json.dumps(payload, allow_nan=False)


__all__ = ["Charge", "ChargeReceipt", "Ledger", "SpentSummary"]
