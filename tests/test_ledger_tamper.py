"""Tampering with a signed ledger as an attacker who can write the file would: with ``sqlite3`` and
``hashlib`` only (every new chain value computed by hand from the documented formulas, not with
dpcert's functions).  ``Ledger.verify(public_key=...)`` and ``dpcert ledger verify --public-key`` must
name the first broken entry; an untouched ledger verifies; writers refuse what they cannot vouch for.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from dpcert import Guarantee, signatures
from dpcert.cli import main
from dpcert.errors import BudgetExceeded, InvalidParameter, LedgerIntegrityError
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.laplace import laplace_certificate

GENESIS = bytes(32)
BUDGET = Guarantee(1.5, 1e-6)


# --------------------------------------------------------------------------- the attacker's tools
def rows_of(db: sqlite3.Connection) -> list[tuple]:
    return db.execute(
        "SELECT c.id, c.user_id, s.sha256, c.run_id, c.idempotency_key, c.created FROM charges AS c "
        "JOIN certificates AS s ON s.id = c.certificate_id ORDER BY c.id"
    ).fetchall()


def row_hash(previous: bytes, user, digest: str, run_id, key, created: float) -> bytes:
    """The documented row hash: SHA-256(prev || SHA-256(domain || JSON fields) || user record)."""
    fields = json.dumps([digest, run_id, key, repr(float(created))]).encode()
    entry = hashlib.sha256(b"dpcert ledger charge v1\x00" + fields).digest()
    record = b"s" + user.encode() if isinstance(user, str) else b"i" + user.to_bytes(8, "big", signed=True)
    return hashlib.sha256(previous + entry + record).digest()


def entry_hash(previous: bytes, kind: str, body: str) -> bytes:
    """The documented entry hash: SHA-256(domain || prev || JSON([kind, body]))."""
    return hashlib.sha256(
        b"dpcert ledger entry v4\x00" + previous + json.dumps([kind, body]).encode()
    ).digest()


def canonical(body: dict) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rechain(path: Path, *statements: str, edit_body=None, drop_signatures: bool = False) -> None:
    """Run ``statements``, then recompute every row hash and every entry (row heads, hashes) by hand."""
    db = sqlite3.connect(path)
    with db:
        for statement in statements:
            db.execute(statement)
        previous = GENESIS
        row_heads = []
        for charge_id, user, digest, run_id, key, created in rows_of(db):
            current = row_hash(previous, user, digest, run_id, key, created)
            db.execute(
                "UPDATE charges SET prev_hash = ?, hash = ? WHERE id = ?", (previous, current, charge_id)
            )
            previous = current
            row_heads.append(current)
        entries = db.execute("SELECT id, kind, body FROM entries ORDER BY id").fetchall()
        previous, consumed = GENESIS, 0
        for entry_id, kind, text in entries:
            body = json.loads(text)
            if edit_body is not None:
                body = edit_body(entry_id, kind, body)
            if kind in ("schema", "charge") and body["rows"]:
                consumed += body["rows"]
                body["row_head"] = row_heads[consumed - 1].hex()
            text = canonical(body)
            current = entry_hash(previous, kind, text)
            db.execute(
                "UPDATE entries SET body = ?, prev_hash = ?, hash = ? WHERE id = ?",
                (text, previous, current, entry_id),
            )
            previous = current
        if drop_signatures:
            db.execute("DELETE FROM signatures")
    db.close()


def tamper(path: Path, *statements: str, params: tuple = ()) -> None:
    db = sqlite3.connect(path)
    with db:
        for statement in statements:
            db.execute(statement, params) if params else db.execute(statement)
    db.close()


def file_digest(path: Path) -> str:
    """SHA-256 of the ledger's logical content (every table's rows): a checkpoint of the write-ahead log
    by a connection closing moves bytes between files without changing it."""
    db = sqlite3.connect(path)
    text = "\n".join(db.iterdump())
    db.close()
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def operator_key():
    return signatures.generate_private_key()


@pytest.fixture
def key_files(tmp_path, operator_key):
    private = tmp_path / "operator.pem"
    public = tmp_path / "operator.pub.pem"
    private.write_bytes(signatures.private_key_pem(operator_key))
    public.write_bytes(signatures.public_key_pem(operator_key))
    return private, public


def make_ledger(path: Path, key) -> None:
    """Entries: 1 schema, 2 default budget, 3 vip's budget, 4-7 charges (13 rows, one idempotency key)."""
    with Ledger(path, signing_key=key) as ledger:
        ledger.set_budget(None, BUDGET)
        ledger.set_budget("vip", Guarantee(3.0, 1e-6))
        ledger.charge([1, 2, 3, 4], laplace_certificate(2.0), run_id="r1")  # epsilon 0.5 each
        ledger.charge(["vip", "ann", 2], laplace_certificate(2.0), run_id="r2", idempotency_key="k2")
        ledger.charge([5, 6, 7], laplace_certificate(4.0), run_id="r3")
        ledger.charge([1, "ann", 9], laplace_certificate(4.0))


def check(path: Path, public: Path, first_broken: str, capsys, *, expected_key=None) -> None:
    """Both the Python API and the CLI report failure, naming the first broken entry."""
    with Ledger(path, readonly=True) as ledger:
        report = ledger.verify(public_key=expected_key if expected_key is not None else public)
    assert not report.ok
    assert report.problem.startswith(first_broken), report.problem
    capsys.readouterr()
    assert main(["ledger", "verify", str(path), "--public-key", str(public)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and first_broken in err[0], err


# --------------------------------------------------------------------------- an untouched ledger
def test_an_untouched_signed_ledger_verifies_and_its_signatures_check_independently(
    tmp_path, operator_key, key_files, capsys
):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    private, public = key_files
    with Ledger(path, readonly=True) as ledger:
        report = ledger.verify(public_key=public)
        head = ledger.entry_head()
    assert report.ok, report.problem
    assert (report.charges, report.entries) == (13, 7)
    # the entry head and every signature recomputed with hashlib and the cryptography package alone
    db = sqlite3.connect(path)
    previous = GENESIS
    for _, kind, text in db.execute("SELECT id, kind, body FROM entries ORDER BY id"):
        previous = entry_hash(previous, kind, text)
    assert previous.hex() == head == report.entry_head
    signed = db.execute("SELECT entries, schema_version, head, signature FROM signatures ORDER BY entries")
    signed = signed.fetchall()
    db.close()
    assert [s[0] for s in signed] == [1, 2, 3, 4, 5, 6, 7]  # one signed head per write transaction
    verifier = signatures.load_public_key(public)
    for count, version, signed_head, signature in signed:
        message = b"dpcert ledger signed head v4\x00" + struct.pack(">QQ", version, count) + signed_head
        verifier.verify(signature, message)  # raises if invalid
    assert signed[-1][2] == previous
    assert main(["ledger", "verify", str(path), "--public-key", str(public)]) == 0
    assert "yes, by the expected key" in capsys.readouterr().out
    assert main(["ledger", "verify", str(path), "--head", report.head]) == 0
    assert main(["ledger", "verify", str(path), "--head", head, "--public-key", str(public)]) == 0


# --------------------------------------------------------------------------- budgets
def test_an_edited_default_budget_is_named(tmp_path, operator_key, key_files, capsys):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    tamper(
        path, """UPDATE meta SET value = '{"epsilon": 100.0, "delta": 1e-06}' WHERE key = 'default_budget'"""
    )
    check(path, key_files[1], "default budget: (100.0, 1e-06) stored, (1.5, 1e-06) chained", capsys)


@pytest.mark.parametrize(
    "statement, first_broken",
    [
        (
            "UPDATE budgets SET epsilon = 30 WHERE user_id = 'vip'",
            "budget of user 'vip': (30.0, 1e-06) stored",
        ),
        ("INSERT INTO budgets VALUES (5, 50.0, 1e-6)", "budget of user 5: not backed by a chained entry"),
        (
            "DELETE FROM budgets WHERE user_id = 'vip'",
            "budget of user 'vip': chained (3.0, 1e-06) but missing",
        ),
    ],
)
def test_an_edited_user_budget_is_named(tmp_path, operator_key, key_files, capsys, statement, first_broken):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    tamper(path, statement)
    check(path, key_files[1], first_broken, capsys)


def test_overspending_after_a_budget_edit_is_detected_even_when_the_budget_is_put_back(
    tmp_path, operator_key, key_files, capsys
):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    original = (
        sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'default_budget'").fetchone()[0]
    )
    # the attacker raises the default budget: the operator's own writer refuses to extend that ledger
    tamper(
        path, """UPDATE meta SET value = '{"epsilon": 10.0, "delta": 1e-06}' WHERE key = 'default_budget'"""
    )
    with Ledger(path, signing_key=operator_key) as ledger:
        with pytest.raises(LedgerIntegrityError, match=r"does not verify \(default budget: \(10.0"):
            ledger.charge(["eve"], laplace_certificate(1.0), run_id="a")
    # a writer that does not check (charges written by hand, as an older dpcert would) overspends ...
    with Ledger(path, signing_key=operator_key) as ledger:
        ledger._chain_verified = True  # skip the check, to build the overspent ledger
        ledger.charge(["eve"], laplace_certificate(1.0), run_id="a")
        ledger.charge(["eve"], laplace_certificate(1.0), run_id="b")
        spent = ledger.spent("eve", delta=BUDGET.delta).epsilon
    # Two Laplace(epsilon = 1) releases: the privacy loss is exactly 2 with probability 1/4 (both
    # outputs on the far side of both means), so delta(eps') >= (1 - e^(eps' - 2)) / 4 and every valid
    # epsilon at delta = 1e-6 is >= 2 + ln(1 - 4e-6); basic composition bounds it by 2.
    assert 2.0 + math.log1p(-4e-6) <= spent <= 2.0
    check(path, key_files[1], "default budget: (10.0, 1e-06) stored, (1.5, 1e-06) chained", capsys)
    tamper(path, "UPDATE meta SET value = ? WHERE key = 'default_budget'", params=(original,))  # hidden again
    check(path, key_files[1], "user 'eve': spent epsilon=", capsys)
    with Ledger(path, readonly=True) as ledger:
        problem = ledger.verify(public_key=key_files[1]).problem
    assert f"epsilon={spent:.6g} exceeds the chained budget (1.5, 1e-06)" in problem


def test_a_budget_lowered_by_the_operator_below_earlier_spending_still_verifies(
    tmp_path, operator_key, key_files
):
    """Spending is checked against the budget in force when each user was charged, not a later one."""
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)  # users 1 and 'ann' have spent 0.75 under the default of 1.5
    with Ledger(path, signing_key=operator_key) as ledger:
        ledger.set_budget(None, Guarantee(0.6, 1e-6))
        ledger.charge([8], laplace_certificate(2.0))  # 0.5 <= 0.6
        assert ledger.verify(public_key=key_files[1]).ok
        ledger.set_budget(None, Guarantee(0.4, 1e-6))
        assert ledger.verify(public_key=key_files[1]).ok


# --------------------------------------------------------------------------- idempotency
def fingerprint(user_ids: list, certificate, run_id) -> str:
    """The documented request fingerprint, recomputed with hashlib."""
    digest = hashlib.sha256(json.dumps([run_id, certificate.to_json()]).encode())
    for user in sorted(user_ids, key=lambda u: (isinstance(u, str), u)):
        text = str(user)
        digest.update(f"{'s' if isinstance(user, str) else 'i'}{len(text)}:{text}".encode())
    return digest.hexdigest()


def test_a_pre_inserted_idempotency_record_is_named_and_never_replayed(
    tmp_path, operator_key, key_files, capsys
):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    certificate = laplace_certificate(2.0)
    users = [1, 2, 3]
    request = fingerprint(users, certificate, "nightly-7")  # a predictable future charge
    digest = hashlib.sha256(certificate.to_json().encode()).hexdigest()
    tamper(
        path,
        "INSERT INTO idempotency (key, request, run_id, users, certificate_sha256, created) "
        "VALUES ('nightly-7', ?, 'nightly-7', 3, ?, 0.0)",
        params=(request, digest),
    )
    check(path, key_files[1], "idempotency key 'nightly-7': not backed by a chained entry", capsys)
    with Ledger(path, signing_key=operator_key) as ledger:
        before = [len(ledger.charges(u)) for u in users]
        with pytest.raises(LedgerIntegrityError, match="'nightly-7': not backed by a chained entry"):
            ledger.charge(users, certificate, run_id="nightly-7", idempotency_key="nightly-7")
        assert [len(ledger.charges(u)) for u in users] == before  # refused, not a silent no-op


def test_an_edited_idempotency_record_is_named(tmp_path, operator_key, key_files, capsys):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    tamper(path, "UPDATE idempotency SET users = 2 WHERE key = 'k2'")
    check(path, key_files[1], "idempotency key 'k2': differs from its chained entry 5", capsys)
    tamper(path, "DELETE FROM idempotency WHERE key = 'k2'")
    check(path, key_files[1], "idempotency key 'k2': chained in entry 5 but missing from the table", capsys)


# --------------------------------------------------------------------------- downgrades
def test_a_downgraded_file_is_refused_never_re_chained(tmp_path, operator_key, key_files, capsys):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    tamper(
        path,
        "UPDATE charges SET user_id = 99 WHERE id = 2",  # the row the attacker wants changed
        "ALTER TABLE charges DROP COLUMN prev_hash",
        "ALTER TABLE charges DROP COLUMN hash",
        "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
    )
    before = file_digest(path)
    for writer in ({}, {"signing_key": operator_key}, {"signing_key": operator_key, "migrate": True}):
        with pytest.raises(InvalidParameter) as raised:
            Ledger(path, **writer)
        assert "not migrated implicitly" in str(raised.value) or "downgraded" in str(raised.value)
    assert file_digest(path) == before  # nothing re-chained
    check(path, key_files[1], "schema version 2 has no hash chain", capsys)
    assert main(["ledger", "migrate", str(path), "--signing-key", str(key_files[0])]) == 2
    assert "it was downgraded" in capsys.readouterr().err
    assert file_digest(path) == before


def test_a_version_4_file_without_its_hash_columns_or_chained_tables_is_refused(tmp_path, operator_key):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    tamper(path, "ALTER TABLE charges DROP COLUMN hash")
    with pytest.raises(InvalidParameter, match="hash columns"):
        Ledger(path, signing_key=operator_key)
    with pytest.raises(InvalidParameter, match="hash columns"):
        Ledger(path, readonly=True)
    other = tmp_path / "other.db"
    make_ledger(other, operator_key)
    tamper(other, "DROP TABLE signatures")
    with pytest.raises(InvalidParameter, match="tables missing: signatures"):
        Ledger(other, signing_key=operator_key)


def test_a_schema_version_edit_is_named(tmp_path, operator_key, key_files, capsys):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    tamper(path, "UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    with pytest.raises(InvalidParameter, match="schema version 4: this one has version 3"):
        Ledger(path, signing_key=operator_key)
    check(path, key_files[1], "schema version 3 chains only its charge rows", capsys)


# --------------------------------------------------------------------------- re-chaining by hand
def test_a_history_re_chained_by_hand_fails_at_its_first_signed_head(
    tmp_path, operator_key, key_files, capsys
):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    rechain(path, "UPDATE charges SET user_id = 99 WHERE id = 9")  # a row of entry 6 (the 3rd charge)
    with Ledger(path, readonly=True) as ledger:  # every hash is consistent again ...
        unkeyed = ledger.verify()
    assert unkeyed.problem.startswith("entry 6: its signed head differs from the chain")  # ... but not signed
    check(path, key_files[1], "entry 6: its signed head differs from the chain", capsys)
    with pytest.raises(LedgerIntegrityError, match="re-chained without the signing key"):
        with Ledger(path, signing_key=operator_key) as ledger:
            ledger.charge([1], laplace_certificate(8.0))  # the operator never signs over it


def test_a_history_re_chained_with_the_signatures_and_key_removed_needs_the_expected_key(
    tmp_path, operator_key, key_files, capsys
):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)

    def unsigned(entry_id, kind, body):
        if entry_id == 1:
            body["public_key"] = None
        if kind == "charge" and body["run_id"] == "r3":
            body["run_id"] = "forged"
        return body

    rechain(
        path,
        "UPDATE charges SET run_id = 'forged' WHERE run_id = 'r3'",
        edit_body=unsigned,
        drop_signatures=True,
    )
    # an unsigned history is only consistent: without an expected key nothing tells it from the original
    with Ledger(path, readonly=True) as ledger:
        report = ledger.verify()
    assert report.ok and report.signed_by is None
    check(path, key_files[1], "entry 1: the ledger's signing key is none, not the expected key", capsys)


def test_a_history_re_signed_with_another_key_is_named(tmp_path, operator_key, key_files, capsys):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    intruder = signatures.generate_private_key()
    intruder_public = signatures.public_key_pem(intruder)
    raw = intruder.public_key().public_bytes_raw()

    def forged(entry_id, kind, body):
        if entry_id == 1:
            body["public_key"] = base64.b64encode(raw).decode()
        if kind == "charge" and body["run_id"] == "r3":
            body["run_id"] = "forged"
        return body

    rechain(path, "UPDATE charges SET run_id = 'forged' WHERE run_id = 'r3'", edit_body=forged)
    db = sqlite3.connect(path)
    with db:
        db.execute("DELETE FROM signatures")
        heads = db.execute("SELECT id, hash FROM entries ORDER BY id").fetchall()
        for count, head in heads:
            message = b"dpcert ledger signed head v4\x00" + struct.pack(">QQ", 4, count) + head
            db.execute("INSERT INTO signatures VALUES (?, 4, ?, ?)", (count, head, intruder.sign(message)))
    db.close()
    with Ledger(path, readonly=True) as ledger:
        assert ledger.verify().ok  # consistent, and signed ... by the intruder's key
        assert ledger.verify(public_key=signatures.load_public_key(intruder_public)).ok
    fp = hashlib.sha256(raw).hexdigest()[:16]
    check(path, key_files[1], f"entry 1: the ledger's signing key is {fp}, not the expected key", capsys)


# --------------------------------------------------------------------------- rows, entries, truncation
@pytest.mark.parametrize(
    "statements, first_broken",
    [
        (["UPDATE charges SET user_id = 99 WHERE id = 8"], "charge 8: content does not match its hash"),
        (["UPDATE charges SET created = created + 1 WHERE id = 1"], "charge 1: content does not match"),
        (["DELETE FROM charges WHERE id = 6"], "charge 7: previous hash does not match"),
        (
            [
                "UPDATE charges SET id = -5 WHERE id = 5",
                "UPDATE charges SET id = 5 WHERE id = 6",
                "UPDATE charges SET id = 6 WHERE id = -5",
            ],
            "charge 5: previous hash does not match",
        ),
        (
            [  # a row appended with the right hashes, but no entry covers it
                "INSERT INTO charges (id, user_id, certificate_id, run_id, created, prev_hash, hash) "
                "SELECT 100, 100, certificate_id, run_id, created, hash, hash FROM charges WHERE id = 13",
            ],
            "charge 100: not backed by a chained entry",
        ),
        (
            ["UPDATE entries SET body = replace(body, 'r2', 'r9') WHERE id = 5"],
            "entry 5: content does not match",
        ),
        (["DELETE FROM entries WHERE id = 3"], "entry 3: stored with id 4"),
        (["DELETE FROM entries WHERE id = 7", "DELETE FROM charges WHERE id > 10"], "entry 7: signed (up to"),
        (
            ["DELETE FROM signatures WHERE entries = 7"],
            "entry 7: written after the last signed head (entry 6)",
        ),
        (
            ["UPDATE signatures SET signature = zeroblob(64) WHERE entries = 3"],
            "entry 3: its signature is not",
        ),
    ],
)
def test_row_and_entry_edits_deletions_insertions_and_reorderings_are_named(
    tmp_path, operator_key, key_files, capsys, statements, first_broken
):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    tamper(path, *statements)
    check(path, key_files[1], first_broken, capsys)


def test_an_entry_appended_by_hand_after_the_last_signed_head_is_named(
    tmp_path, operator_key, key_files, capsys
):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    db = sqlite3.connect(path)
    last, head = db.execute("SELECT id, hash FROM entries ORDER BY id DESC LIMIT 1").fetchone()
    db.close()
    body = canonical({"user": ["s", "eve"], "epsilon": 99.0, "delta": 1e-6})
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "INSERT INTO entries VALUES (?, 'budget', ?, NULL, ?, ?)",
            (last + 1, body, head, entry_hash(head, "budget", body)),
        )
        db.execute("INSERT INTO budgets VALUES ('eve', 99.0, 1e-6)")
    db.close()
    check(path, key_files[1], f"entry {last + 1}: written after the last signed head (entry {last})", capsys)
    with pytest.raises(LedgerIntegrityError, match=f"entry {last + 1}: written after the last signed head"):
        with Ledger(path, signing_key=operator_key) as ledger:
            ledger.charge(["eve"], laplace_certificate(1.0))


# --------------------------------------------------------------------------- writers and keys
def test_writers_must_hold_the_ledger_key(tmp_path, operator_key, key_files, capsys):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    with pytest.raises(InvalidParameter, match="signing_key.*private key the ledger .* is signed with"):
        Ledger(path)
    with pytest.raises(InvalidParameter, match="signing_key.*the key the ledger"):
        Ledger(path, signing_key=signatures.generate_private_key())
    before = file_digest(path)
    assert main(["ledger", "budget", str(path), "--epsilon", "9", "--delta", "0"]) == 2
    assert "signing_key" in capsys.readouterr().err
    assert file_digest(path) == before
    assert (
        main(
            [
                "ledger",
                "budget",
                str(path),
                "--epsilon",
                "2",
                "--delta",
                "1e-6",
                "--signing-key",
                str(key_files[0]),
            ]
        )
        == 0
    )
    with Ledger(path, readonly=True) as ledger:
        assert ledger.default_budget() == Guarantee(2.0, 1e-6)
        assert ledger.verify(public_key=key_files[1]).ok
    unsigned = tmp_path / "unsigned.db"
    with Ledger(unsigned) as ledger:
        ledger.charge([1], laplace_certificate(1.0))
        assert ledger.verify().ok and ledger.verify().signed_by is None
        assert not ledger.verify(public_key=key_files[1]).ok
    with pytest.raises(InvalidParameter, match="created unsigned"):
        Ledger(unsigned, signing_key=operator_key)


def test_bad_key_files_are_bad_input_and_a_broken_file_a_storage_error(
    tmp_path, operator_key, key_files, capsys
):
    path = tmp_path / "ledger.db"
    make_ledger(path, operator_key)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key\n")
    for arguments in (
        ["--public-key", str(tmp_path / "absent.pub.pem")],
        ["--public-key", str(garbage)],
        ["--public-key", str(key_files[0])],  # a private key where the public one is expected
    ):
        assert main(["ledger", "verify", str(path), *arguments]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "public_key" in err[0], err
    assert (
        main(["ledger", "budget", str(path), "--epsilon", "1", "--delta", "0", "--signing-key", str(garbage)])
        == 2
    )
    assert "signing_key" in capsys.readouterr().err
    with pytest.raises(InvalidParameter, match="public_key"):
        Ledger(path, readonly=True).verify(public_key="/nonexistent/key.pem")
    # a ledger whose pages are damaged after its schema: reading its rows fails, a verdict in one line
    big = tmp_path / "big.db"
    with Ledger(big, signing_key=operator_key) as ledger:
        for call in range(4):
            ledger.charge(range(call * 2000, (call + 1) * 2000), laplace_certificate(1.0))
    data = bytearray(big.read_bytes())
    assert len(data) > 20 * 4096
    data[len(data) // 2 :] = b"\xff" * (len(data) - len(data) // 2)
    big.write_bytes(bytes(data))
    assert main(["ledger", "verify", str(big), "--public-key", str(key_files[1])]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "damaged" in err[0], err


def test_a_bandit_run_signs_the_ledger_it_charges_and_refuses_without_the_key(tmp_path, key_files, capsys):
    path = tmp_path / "ledger.db"
    private, public = key_files
    run = [
        "bandit",
        "run",
        "dp-dpe",
        "--privacy",
        "central",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--horizon",
        "2000",
    ]
    run += ["--option", "dimension=3", "--option", "arms=8", "--ledger", str(path)]
    assert main([*run, "--signing-key", str(private)]) == 0
    with Ledger(path, readonly=True) as ledger:
        report = ledger.verify(public_key=public)
        users = len(ledger.users())
    assert report.ok and report.signed_by is not None and users > 0
    assert report.entries >= 2  # the schema entry and at least one charge, each head signed
    capsys.readouterr()
    before = file_digest(path)
    assert main(run) == 2  # the ledger is signed: a run without the key is refused before it charges
    assert "signing_key" in capsys.readouterr().err
    assert file_digest(path) == before
    assert main([*run[:-2], "--signing-key", str(private)]) == 2  # a key without a ledger
    assert "--signing-key" in capsys.readouterr().err


def genuine_version_3(path: Path) -> None:
    """A ledger as an earlier dpcert (schema version 3: chained rows, nothing else) left it."""
    with Ledger(path) as ledger:
        ledger.set_budget(None, BUDGET)
        ledger.charge([1, 2, "ann"], laplace_certificate(2.0), run_id="r1", idempotency_key="k1")
        ledger.charge([2, 3], laplace_certificate(4.0), run_id="r2")
    tamper(
        path,
        "DROP TABLE entries",
        "DROP TABLE signatures",
        "UPDATE meta SET value = '3' WHERE key = 'schema_version'",
    )


def test_ledger_migrate_chains_and_signs_a_genuine_old_ledger_once(tmp_path, key_files, capsys):
    private, public = key_files
    path = tmp_path / "old.db"
    genuine_version_3(path)
    assert main(["ledger", "verify", str(path), "--public-key", str(public)]) == 1
    assert "schema version 3 chains only its charge rows" in capsys.readouterr().err
    assert main(["ledger", "migrate", str(path), "--signing-key", str(private), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["from_version"], data["schema_version"], data["ok"]) == (3, 4, True)
    assert data["entries"] == 3  # schema (covering the 5 rows), the default budget, the idempotency record
    assert main(["ledger", "verify", str(path), "--public-key", str(public)]) == 0
    assert main(["ledger", "show", str(path)]) == 0
    fp = hashlib.sha256(signatures.load_public_key(public).public_bytes_raw()).hexdigest()[:16]
    assert f"signed by           {fp}" in capsys.readouterr().out
    with Ledger(path, signing_key=private) as ledger:  # the migrated budget and idempotency record hold
        assert ledger.charge(
            [1, 2, "ann"], laplace_certificate(2.0), run_id="r1", idempotency_key="k1"
        ).replayed
        with pytest.raises(BudgetExceeded):
            ledger.charge([2], laplace_certificate(0.5))  # 0.5 + 0.25 + 2 > 1.5
        assert ledger.verify(public_key=public).ok
    assert main(["ledger", "migrate", str(path), "--signing-key", str(private)]) == 0  # already current
    assert "already current" in capsys.readouterr().out


def test_ledger_migrate_refuses_an_old_ledger_whose_rows_do_not_verify(tmp_path, key_files, capsys):
    path = tmp_path / "old.db"
    genuine_version_3(path)
    tamper(path, "UPDATE charges SET user_id = 7 WHERE id = 4")
    before = file_digest(path)
    assert main(["ledger", "migrate", str(path), "--signing-key", str(key_files[0])]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not migrated, its hash chain is broken: charge 4:" in err[0], err
    assert file_digest(path) == before


WRITER = """
import sys
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.laplace import laplace_certificate
path, key, name = sys.argv[1:4]
with Ledger(path, signing_key=key, timeout=120, durable=False) as ledger:
    for index in range(20):
        ledger.charge([f"{name}-{index % 5}", "shared"], laplace_certificate(100.0), run_id=f"{name}-{index}")
"""


def test_concurrent_signed_writers_interleave_and_every_head_is_signed(tmp_path, operator_key, key_files):
    path = tmp_path / "ledger.db"
    private, public = key_files
    with Ledger(path, signing_key=operator_key) as ledger:
        ledger.set_budget(None, Guarantee(10.0, 1e-6))
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(private), name]) for name in ("a", "b")
    ]
    assert [writer.wait(timeout=300) for writer in writers] == [0, 0]
    with Ledger(path, readonly=True) as ledger:
        report = ledger.verify(public_key=public)
        assert report.ok, report.problem
        assert (report.entries, report.charges) == (2 + 40, 80)
        assert len(ledger.charges("shared")) == 40
    db = sqlite3.connect(path)
    counts = [row[0] for row in db.execute("SELECT entries FROM signatures ORDER BY entries")]
    runs = [
        json.loads(row[0])["run_id"][0]
        for row in db.execute("SELECT body FROM entries WHERE kind = 'charge'")
    ]
    db.close()
    assert counts == list(range(1, 43))  # every write transaction signed its head
    assert sorted(runs) == ["a"] * 20 + ["b"] * 20


# --------------------------------------------------------------------------- the same on PostgreSQL
@pytest.fixture(scope="module")
def postgres_server():
    from test_ledger_postgres import PostgresServer  # the throw-away server of the PostgreSQL tests

    server = PostgresServer()
    try:
        yield server
    finally:
        server.remove()


@pytest.mark.parametrize(
    "statement, first_broken",
    [
        (
            "UPDATE meta SET value = '{\"epsilon\": 100.0, \"delta\": 1e-06}' WHERE key = 'default_budget'",
            "default budget:",
        ),
        (
            "INSERT INTO idempotency VALUES ('nightly', 'x', NULL, 1, 'y', 0.0)",
            "idempotency key 'nightly': not backed by a chained entry",
        ),
        ("UPDATE charges SET run_id = 'r9' WHERE id = 8", "charge 8: content does not match its hash"),
        ("DELETE FROM signatures WHERE entries = 7", "entry 7: written after the last signed head (entry 6)"),
    ],
)
def test_tampering_with_a_signed_postgres_ledger_is_named(
    postgres_server, operator_key, key_files, capsys, statement, first_broken
):
    import psycopg

    url = postgres_server.url(postgres_server.new_database())
    make_ledger(url, operator_key)
    with Ledger(url, readonly=True) as ledger:
        assert ledger.verify(public_key=key_files[1]).ok
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("SET search_path TO dpcert")
        db.execute(statement)
    check(url, key_files[1], first_broken, capsys)
