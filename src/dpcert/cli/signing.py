"""``dpcert keygen | sign | verify``: Ed25519 signatures on certificates and audit reports."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from dpcert import _json, signatures
from dpcert.audits.report import AuditReport
from dpcert.certificates import Certificate
from dpcert.cli._common import EXIT_OK, EXIT_VIOLATED, NAME_MAX, CommandGroups, emit, read_text_file
from dpcert.errors import CertificateMismatch, InvalidParameter


def register(groups: CommandGroups) -> None:
    parser = groups.add(None, "keygen", _keygen)
    parser.add_argument(
        "--out", type=Path, required=True, metavar="KEY.pem", help="private key file (refused if present)"
    )
    parser = groups.add(None, "sign", _sign)
    parser.add_argument("path", type=Path, metavar="FILE.json")
    parser.add_argument("--key", type=Path, required=True, metavar="KEY.pem", help="the private key")
    parser.add_argument("--signer", default="", help="who signs (recorded in the signature)")
    parser.add_argument("--out", type=Path, default=None, help="write here instead of FILE.signed.json")
    parser = groups.add(None, "verify", _verify)
    parser.add_argument("path", type=Path, metavar="FILE.json")
    parser.add_argument("--public-key", type=Path, required=True, metavar="PUB.pem")


def _read_json(path: Path) -> dict[str, Any]:
    text = read_text_file(path, "path")
    data = _json.loads(text, what=f"path {path}")  # duplicate keys, NaN and Infinity refused (exit 2)
    if not isinstance(data, dict):
        raise InvalidParameter("path", str(path), "a JSON object (a certificate or an audit report)")
    return data


def _new_file(path: Path, name: str) -> Path:
    if not path.name:
        raise InvalidParameter(name, str(path), "a file name")
    if any(len(part.encode(errors="surrogateescape")) > NAME_MAX for part in path.parts):
        raise InvalidParameter(name, str(path), f"file and directory names of at most {NAME_MAX} bytes")
    if path.exists() or path.is_symlink():
        raise InvalidParameter(name, str(path), "a path that does not exist yet (nothing is overwritten)")
    if not path.parent.is_dir():
        raise InvalidParameter(name, str(path), "a path in an existing directory")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise InvalidParameter(name, str(path), "a path in a writable directory")
    return path


def _keygen(args: argparse.Namespace) -> int:
    private_path = _new_file(args.out, "--out")
    public_path = _new_file(args.out.with_suffix(".pub.pem"), "--out (its .pub.pem)")
    key = signatures.generate_private_key()
    private_path.touch(mode=0o600)
    private_path.write_bytes(signatures.private_key_pem(key))
    public_path.write_bytes(signatures.public_key_pem(key))
    emit(
        args,
        {"private_key": str(private_path), "public_key": str(public_path)},
        [("private key", str(private_path)), ("public key", str(public_path))],
    )
    return EXIT_OK


def _sign(args: argparse.Namespace) -> int:
    out = _new_file(args.out or args.path.with_suffix(".signed.json"), "--out")
    document = _read_json(args.path)
    _check_document(document, None)  # never sign what does not verify
    key = signatures.load_private_key(args.key, name="--key")
    signed = signatures.sign_document(document, key, signer=args.signer)
    out.write_text(json.dumps(signed, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    info = signatures.read_signature(signed)
    assert info is not None  # just signed
    emit(
        args,
        {"signed": str(out), "signer": args.signer, "fingerprint": info.fingerprint},
        [("signed", str(out)), ("signer", args.signer or "(unnamed)"), ("key", info.fingerprint)],
    )
    return EXIT_OK


def _check_document(document: dict[str, Any], public_key: Any | None) -> tuple[str, str]:
    """(kind, one-line summary) after checking the signature (if a key is given) and consistency."""
    if str(document.get("format", "")).startswith("dpcert.certificate"):
        certificate = Certificate.from_dict(document, public_key=public_key)
        return "certificate", certificate.summary()
    if "verdict" in document and "counts" in document:
        signatures.read_signature(document, public_key)
        content = {k: v for k, v in document.items() if k != signatures.SIGNATURE_MEMBER}
        return "audit report", AuditReport.from_dict(content).summary()
    raise InvalidParameter("path", document.get("format"), "a dpcert certificate or audit report")


def _verify(args: argparse.Namespace) -> int:
    document = _read_json(args.path)
    public_key = signatures.load_public_key(args.public_key, name="--public-key")
    try:
        kind, summary = _check_document(document, public_key)
    except (signatures.SignatureInvalid, CertificateMismatch) as exc:
        if args.json:
            sys.stdout.write(json.dumps({"valid": False, "reason": str(exc)}) + "\n")
        sys.stderr.write(f"dpcert: forged or altered: {exc}\n")
        return EXIT_VIOLATED
    info = signatures.read_signature(document, public_key)
    assert info is not None  # a key was given: an unsigned document raised above
    emit(
        args,
        {
            "valid": True,
            "kind": kind,
            "signer": info.signer,
            "fingerprint": info.fingerprint,
            "summary": summary,
        },
        [
            ("valid", "yes"),
            ("kind", kind),
            ("signer", info.signer or "(unnamed)"),
            ("key", info.fingerprint),
            ("summary", summary),
        ],
    )
    return EXIT_OK
