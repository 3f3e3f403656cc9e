"""The ledger's hash chains and signed heads: what is hashed, what is signed, and the keys.

Every charge row is hash-chained to the one before (:func:`chain_hashes`, over :func:`entry_digest`
and :func:`user_record`), and the whole state is a chained log of entries (:func:`entry_hash` over
:func:`canonical_body`).  An operator's Ed25519 key signs :func:`head_message` of the chain head
(:func:`load_signing_key`, :func:`signature_valid`).  These bytes are the ledger's on-disk format:
every function here is pinned by the ledger tests.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import signatures
from dpcert.errors import DPCertError, InvalidParameter

UserId = int | str
GENESIS = bytes(32)  # the "previous hash" of the first charge row
_CHAIN_DOMAIN = b"dpcert ledger charge v1\x00"


def entry_digest(
    certificate_sha256: str, run_id: str | None, idempotency_key: str | None, created: float
) -> bytes:
    """SHA-256 of the fields a charge call shares: certificate hash, run id, idempotency key, time."""
    fields = json.dumps([certificate_sha256, run_id, idempotency_key, repr(float(created))])
    return hashlib.sha256(_CHAIN_DOMAIN + fields.encode()).digest()


def user_record(user_id: UserId) -> bytes:
    """Canonical bytes of a user id: ``i`` + 8-byte big-endian integer, or ``s`` + UTF-8 text."""
    if isinstance(user_id, str):
        return b"s" + user_id.encode("utf-8", "surrogatepass")
    if type(user_id) is not int:  # e.g. a REAL written over an integer id
        raise TypeError(f"a user id must be an int or a str, not {type(user_id).__name__}")
    return b"i" + user_id.to_bytes(8, "big", signed=True)


def chain_hashes(previous: bytes, entry: bytes, user_ids: Sequence[UserId]) -> list[bytes]:
    """Row hashes ``h_i = SHA-256(h_{i-1} || entry || user_record(u_i))`` with ``h_0 = previous``.

    Each charge row stores ``h_{i-1}`` (``prev_hash``) and ``h_i`` (``hash``): the chain commits to
    every row's content (user, certificate hash, run id, idempotency key, time) and to its position,
    as in an append-only hash-chained log (Haber & Stornetta 1991).
    """
    sha256 = hashlib.sha256
    result: list[bytes] = []
    append = result.append
    if set(map(type, user_ids)) <= {int}:
        packed = np.asarray(user_ids, dtype=">i8").tobytes()
        prefix = entry + b"i"
        for start in range(0, len(packed), 8):
            previous = sha256(previous + prefix + packed[start : start + 8]).digest()
            append(previous)
        return result
    for user in user_ids:
        previous = sha256(previous + entry + user_record(user)).digest()
        append(previous)
    return result


_ENTRY_DOMAIN = b"dpcert ledger entry v4\x00"
_HEAD_DOMAIN = b"dpcert ledger signed head v4\x00"


def canonical_body(body: dict[str, Any]) -> str:
    """An entry's body as stored and hashed: JSON with sorted keys, no spaces, floats by ``repr``."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def entry_hash(previous: bytes, kind: str, body: str) -> bytes:
    """Hash of a ledger entry: ``SHA-256(domain || previous || JSON([kind, body]))``.

    Entry ``k`` stores ``h_{k-1}`` (``prev_hash``) and ``h_k`` (``hash``), ``h_0`` = :data:`GENESIS`.
    """
    return hashlib.sha256(_ENTRY_DOMAIN + previous + json.dumps([kind, body]).encode()).digest()


def head_message(schema_version: int, entries: int, head: bytes) -> bytes:
    """The bytes an operator signs: domain, schema version and entry count (8-byte big-endian), head."""
    return _HEAD_DOMAIN + struct.pack(">QQ", schema_version, entries) + head


def _ed25519() -> Any:
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DPCertError(
            'signed ledgers need the cryptography package: pip install "dpcert[signing]"'
        ) from exc
    return ed25519, serialization, InvalidSignature


def raw_public_key(key: Any) -> bytes:
    """The raw 32 bytes of an Ed25519 public key (of a private key's public half)."""
    _, serialization, _ = _ed25519()
    public = key.public_key() if hasattr(key, "public_key") else key
    return bytes(public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def key_fingerprint(raw: bytes | None) -> str:
    """First 16 hex digits of SHA-256 of a raw public key (as :class:`dpcert.signatures.SignatureInfo`)."""
    if raw is None:
        return "none"
    return signatures.SignatureInfo("", base64.b64encode(raw).decode(), False).fingerprint


def load_signing_key(value: object) -> Any | None:
    """The operator's Ed25519 private key from a key object or a PEM file; ``None`` passes through."""
    return _load_key(value, "signing_key", "private", signatures.load_private_key, "Ed25519PrivateKey")


def load_verifying_key(value: object) -> Any | None:
    """The expected Ed25519 public key from a key object or a PEM file; ``None`` passes through."""
    return _load_key(value, "public_key", "public", signatures.load_public_key, "Ed25519PublicKey")


def _load_key(value: object, name: str, kind: str, load: Any, key_class: str) -> Any | None:
    """An Ed25519 ``kind`` key (class ``key_class`` of ``cryptography``) given as a key object or the
    path of its PEM file; ``name`` is the parameter named in errors."""
    if value is None:
        return None
    if isinstance(value, (str, Path)):
        try:
            return load(Path(value))
        except OSError as exc:
            raise InvalidParameter(
                name, str(value), f"a readable PEM Ed25519 {kind} key file ({exc.strerror})"
            ) from exc
        except InvalidParameter as exc:
            raise InvalidParameter(name, str(value), exc.allowed) from exc
    ed25519, _, _ = _ed25519()
    if not isinstance(value, getattr(ed25519, key_class)):
        raise InvalidParameter(
            name, type(value).__name__, f"an Ed25519 {kind} key or the path of its PEM file"
        )
    return value


def signature_valid(raw_public: bytes, signature: bytes, message: bytes) -> bool:
    """Whether ``signature`` is a valid Ed25519 signature of ``message`` by the raw public key."""
    ed25519, _, invalid_signature = _ed25519()
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(raw_public).verify(signature, message)
    except (invalid_signature, ValueError):
        return False
    return True


def user_json(user: UserId) -> list[Any]:
    """A user id as written in an entry's body: ``["s", text]`` or ``["i", integer]``."""
    return ["s", user] if isinstance(user, str) else ["i", int(user)]


def user_from_json(value: Any) -> UserId:
    """The user id of :func:`user_json`'s form (``ValueError`` if malformed)."""
    if isinstance(value, list) and len(value) == 2:
        if value[0] == "s" and isinstance(value[1], str):
            return value[1]
        if value[0] == "i" and type(value[1]) is int:
            return int(value[1])
    raise ValueError(f"malformed user {value!r}")


__all__ = [
    "GENESIS",
    "UserId",
    "canonical_body",
    "chain_hashes",
    "entry_digest",
    "entry_hash",
    "head_message",
    "key_fingerprint",
    "load_signing_key",
    "load_verifying_key",
    "raw_public_key",
    "signature_valid",
    "user_from_json",
    "user_json",
    "user_record",
]
