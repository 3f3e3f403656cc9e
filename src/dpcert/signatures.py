"""Ed25519 signatures on certificates and audit reports: authenticity, not only consistency.

:meth:`Certificate.verify` re-derives a claim from its parameters, so an edit that breaks
consistency is caught; but a *consistent* forgery (a weaker mechanism honestly certified and passed
off as someone else's release, or an audit report rewritten end to end) verifies.  A signature binds a
JSON document to the holder of a private key.

The signed bytes are the document's canonical JSON (keys sorted, no whitespace, floats written by
Python's shortest round-trip ``repr``) including its ``"signature"`` member without the signature
value; that member states the algorithm, the signer's name, the public key (raw 32 bytes, base64)
and the signature (64 bytes, base64), so the signer's name is covered too (Ed25519: Bernstein et al.
2012; RFC 8032).  Verification requires the *expected* public key from the caller: a key embedded in
the document only says who claims to have signed.

A signature covers parsed content, so the text must parse the same way for every reader: a document
with a duplicate key at any depth (``"sigma": 0.5, "sigma": 3.73``: Python keeps the last copy, other
parsers the first) is refused by :func:`load_document` before its signature is looked at, as are
``NaN`` and ``Infinity`` (:mod:`dpcert._json`).

Needs the ``cryptography`` package (``pip install "dpcert[signing]"``).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpcert import _json
from dpcert.errors import DPCertError, InvalidParameter

ALGORITHM = "ed25519"
SIGNATURE_MEMBER = "signature"
SIGNATURE_KEYS = frozenset({"algorithm", "signer", "public_key", "value"})


class SignatureInvalid(DPCertError):
    """A document's signature is missing, malformed, from another key, or does not match its content."""


@dataclass(frozen=True)
class SignatureInfo:
    """Who signed a document, and whether the signature was checked against an expected key."""

    signer: str
    public_key: str  # raw Ed25519 public key, base64
    verified: bool

    @property
    def fingerprint(self) -> str:
        """First 16 hex digits of SHA-256 of the raw public key (for humans to compare)."""
        return hashlib.sha256(base64.b64decode(self.public_key)).hexdigest()[:16]

    def describe(self) -> str:
        state = "verified" if self.verified else "NOT checked (no public key given)"
        who = self.signer or "an unnamed signer"
        return f"signed by {who} (ed25519 key {self.fingerprint}), signature {state}"


UNSIGNED = "unsigned"


def _crypto():
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DPCertError('signatures need the cryptography package: pip install "dpcert[signing]"') from exc
    return ed25519, serialization, InvalidSignature


def canonical_bytes(document: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: canonical JSON of ``document`` with the signature member reduced to
    its algorithm, signer and public key (everything but the signature value itself is covered)."""
    content = dict(document)
    member = content.get(SIGNATURE_MEMBER)
    if isinstance(member, Mapping):
        content[SIGNATURE_MEMBER] = {k: v for k, v in member.items() if k != "value"}
    return json.dumps(
        content, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False
    ).encode()


# --------------------------------------------------------------------------- keys
def generate_private_key() -> Any:
    """A new Ed25519 private key (from the operating system's random source)."""
    ed25519, _, _ = _crypto()
    return ed25519.Ed25519PrivateKey.generate()


def private_key_pem(private_key: Any) -> bytes:
    _, serialization, _ = _crypto()
    return private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def public_key_pem(key: Any) -> bytes:
    """PEM of the public half of ``key`` (a private or a public key)."""
    _, serialization, _ = _crypto()
    public = key.public_key() if hasattr(key, "public_key") else key
    return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


MAX_KEY_BYTES = 1 << 16
"""Largest PEM key file read (an Ed25519 PEM key is under 200 bytes)."""


def _key_bytes(source: str | Path | bytes, name: str, kind: str) -> bytes:
    """The bytes of a PEM key given as bytes or a file path; an unreadable, missing, directory or
    oversized file is :class:`InvalidParameter` naming ``name``."""
    if isinstance(source, bytes):
        return source
    try:
        with open(source, "rb") as handle:
            data = handle.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise InvalidParameter(
            name, str(source)[:200], f"a readable PEM Ed25519 {kind} key file ({exc.strerror})"
        ) from None
    if len(data) > MAX_KEY_BYTES:
        raise InvalidParameter(name, str(source)[:200], f"a PEM key file of at most {MAX_KEY_BYTES} bytes")
    return data


def load_private_key(source: str | Path | bytes, *, name: str = "key") -> Any:
    """An Ed25519 private key from PEM bytes or a PEM file (``name``: the parameter errors name)."""
    ed25519, serialization, _ = _crypto()
    data = _key_bytes(source, name, "private")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise InvalidParameter(name, str(source)[:80], "an unencrypted PEM Ed25519 private key") from exc
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise InvalidParameter(name, type(key).__name__, "an Ed25519 private key")
    return key


def load_public_key(source: str | Path | bytes, *, name: str = "public_key") -> Any:
    """An Ed25519 public key from PEM bytes or a PEM file (``name``: the parameter errors name)."""
    ed25519, serialization, _ = _crypto()
    data = _key_bytes(source, name, "public")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise InvalidParameter(name, str(source)[:80], "a PEM Ed25519 public key") from exc
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise InvalidParameter(name, type(key).__name__, "an Ed25519 public key")
    return key


def _raw_public(key: Any) -> bytes:
    _, serialization, _ = _crypto()
    public = key.public_key() if hasattr(key, "public_key") else key
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


# --------------------------------------------------------------------------- documents
def sign_document(document: Mapping[str, Any], private_key: Any, *, signer: str = "") -> dict[str, Any]:
    """A copy of ``document`` with a signature member over its canonical content (replacing any)."""
    ed25519, _, _ = _crypto()
    if not isinstance(private_key, ed25519.Ed25519PrivateKey):
        raise InvalidParameter("private_key", type(private_key).__name__, "an Ed25519 private key")
    if not isinstance(signer, str):
        raise InvalidParameter("signer", signer, "a string naming the signer")
    signed = {k: v for k, v in document.items() if k != SIGNATURE_MEMBER}
    signed[SIGNATURE_MEMBER] = {
        "algorithm": ALGORITHM,
        "signer": signer,
        "public_key": base64.b64encode(_raw_public(private_key)).decode(),
    }
    signed[SIGNATURE_MEMBER]["value"] = base64.b64encode(private_key.sign(canonical_bytes(signed))).decode()
    return signed


def read_signature(document: Mapping[str, Any], public_key: Any | None = None) -> SignatureInfo | None:
    """The document's signature, checked against ``public_key`` when one is given.

    Returns ``None`` for an unsigned document when no key is expected.  Raises
    :class:`SignatureInvalid` if a key is expected and the document is unsigned, signed by another key,
    or altered after signing, and for a malformed signature member.
    """
    member = document.get(SIGNATURE_MEMBER)
    if member is None:
        if public_key is not None:
            raise SignatureInvalid("the document is unsigned but a public key was given to check it against")
        return None
    if not isinstance(member, Mapping) or member.get("algorithm") != ALGORITHM:
        raise SignatureInvalid(f"unsupported or malformed signature (expected algorithm {ALGORITHM!r})")
    if set(member) - SIGNATURE_KEYS:
        unknown = sorted(set(member) - SIGNATURE_KEYS)[0]
        raise SignatureInvalid(
            f"malformed signature member: unknown key {unknown!r} "
            f"(allowed {', '.join(sorted(SIGNATURE_KEYS))})"
        )
    try:
        claimed_key = base64.b64decode(str(member["public_key"]), validate=True)
        value = base64.b64decode(str(member["value"]), validate=True)
        signer = str(member.get("signer", ""))
    except (KeyError, ValueError) as exc:
        raise SignatureInvalid(f"malformed signature member: {exc}") from exc
    info = SignatureInfo(signer, base64.b64encode(claimed_key).decode(), verified=False)
    if public_key is None:
        return info
    ed25519, _, invalid_signature = _crypto()
    if not isinstance(public_key, ed25519.Ed25519PublicKey):
        raise InvalidParameter("public_key", type(public_key).__name__, "an Ed25519 public key")
    if _raw_public(public_key) != claimed_key:
        raise SignatureInvalid(
            f"the document is signed by another key ({info.fingerprint}) than the one expected "
            f"({SignatureInfo('', base64.b64encode(_raw_public(public_key)).decode(), False).fingerprint})"
        )
    try:
        public_key.verify(value, canonical_bytes(document))
    except invalid_signature:
        raise SignatureInvalid(
            "the signature does not match the document: it was altered after signing"
        ) from None
    return SignatureInfo(signer, info.public_key, verified=True)


def load_document(
    text: str | bytes, public_key: Any | None = None, *, what: str = "signed document"
) -> tuple[dict[str, Any], SignatureInfo | None]:
    """Parse a (signed) JSON document strictly, then read its signature as :func:`read_signature` does.

    A duplicate key at any depth, ``NaN`` or ``Infinity`` raises :class:`~dpcert._json.JSONFormatError`
    naming the key and where it is, before the signature is checked: the signed bytes are the
    canonical form of the parsed document, which is only meaningful if every reader parses it alike.
    ``what`` names the document in error messages.
    """
    document = _json.loads(text, what=what)
    if not isinstance(document, dict):
        raise _json.JSONFormatError(f"{what} must be a JSON object")
    return document, read_signature(document, public_key)
