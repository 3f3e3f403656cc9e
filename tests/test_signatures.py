"""Ed25519 signatures: a consistent forgery fails, a genuine document passes (API and console script).

The forgery that consistency checks cannot catch: an attacker certifies a weaker mechanism honestly
(its parameters do re-derive its claim) and passes it off as the signer's.  Only the signature over
the whole document exposes it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from dpcert import Certificate  # noqa: E402
from dpcert.errors import CertificateMismatch  # noqa: E402
from dpcert.mechanisms.gaussian import gaussian_certificate  # noqa: E402
from dpcert.signatures import (  # noqa: E402
    SignatureInvalid,
    canonical_bytes,
    generate_private_key,
    read_signature,
    sign_document,
)


@pytest.fixture(scope="module")
def keys():
    private = generate_private_key()
    return private, private.public_key()


def test_genuine_certificate_verifies_and_states_its_signer(keys):
    private, public = keys
    certificate = gaussian_certificate(3.0, delta=1e-5)
    text = certificate.sign(private, signer="Privacy team")
    again = Certificate.from_json(text, public_key=public)
    assert again == certificate
    assert again.signature.verified and again.signature.signer == "Privacy team"
    assert "signed by Privacy team" in again.summary() and "verified" in again.summary()
    assert certificate.authenticity == "unsigned" and certificate.summary().endswith("; unsigned")


def test_consistent_forgery_is_rejected(keys):
    private, public = keys
    genuine = json.loads(gaussian_certificate(3.0, delta=1e-5).sign(private, signer="Privacy team"))
    # a weaker mechanism, honestly certified (it verifies on its own), wearing the genuine signature
    forged = json.loads(gaussian_certificate(30.0, delta=1e-5).to_json())
    forged["signature"] = genuine["signature"]
    Certificate.from_dict(forged)  # consistency alone accepts it ...
    with pytest.raises(SignatureInvalid, match="altered"):
        Certificate.from_dict(forged, public_key=public)  # ... the signature does not


def test_signature_by_another_key_and_unsigned_documents_are_rejected(keys):
    _, public = keys
    other = generate_private_key()
    text = gaussian_certificate(3.0, delta=1e-5).sign(other, signer="Privacy team")
    with pytest.raises(SignatureInvalid, match="another key"):
        Certificate.from_json(text, public_key=public)
    with pytest.raises(SignatureInvalid, match="unsigned"):
        Certificate.from_json(gaussian_certificate(3.0, delta=1e-5).to_json(), public_key=public)
    # without an expected key the signature is recorded, but as not checked
    unchecked = Certificate.from_json(text)
    assert unchecked.signature is not None and not unchecked.signature.verified
    assert "NOT checked" in unchecked.authenticity


def test_every_member_is_covered_and_a_changed_signer_breaks_the_signature(keys):
    private, public = keys
    document = sign_document({"format": "x", "a": 1.5, "b": [1, 2]}, private, signer="A")
    assert read_signature(document, public).verified
    for key, value in [("a", 1.5000000000000002), ("b", [2, 1]), ("c", None)]:
        changed = dict(document, **{key: value})
        with pytest.raises(SignatureInvalid):
            read_signature(changed, public)
    renamed = dict(document, signature=dict(document["signature"], signer="B"))
    with pytest.raises(SignatureInvalid):  # the signer's name is covered: nobody can re-attribute it
        read_signature(renamed, public)
    # canonical bytes do not depend on member order
    assert canonical_bytes({"b": [1, 2], "a": 1.5}) == canonical_bytes({"a": 1.5, "b": [1, 2]})


def _dpcert(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment["PATH"] = str(Path(sys.executable).parent) + os.pathsep + environment.get("PATH", "")
    if shutil.which("dpcert", path=environment["PATH"]) is None:
        pytest.skip("the dpcert console script is not installed beside this interpreter")
    return subprocess.run(
        ["dpcert", *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=120
    )


def test_console_keygen_sign_verify_and_a_forgery(tmp_path):
    assert _dpcert("keygen", "--out", "key.pem", cwd=tmp_path).returncode == 0
    assert (tmp_path / "key.pub.pem").exists()
    assert _dpcert("keygen", "--out", "key.pem", cwd=tmp_path).returncode == 2  # never overwrites a key
    (tmp_path / "g.json").write_text(gaussian_certificate(3.0, delta=1e-5).to_json())
    signed = _dpcert("sign", "g.json", "--key", "key.pem", "--signer", "Team", cwd=tmp_path)
    assert signed.returncode == 0, signed.stderr
    ok = _dpcert("verify", "g.signed.json", "--public-key", "key.pub.pem", "--json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["valid"] is True and json.loads(ok.stdout)["signer"] == "Team"
    document = json.loads((tmp_path / "g.signed.json").read_text())
    forged = json.loads(gaussian_certificate(30.0, delta=1e-5).to_json())
    forged["signature"] = document["signature"]
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    bad = _dpcert("verify", "forged.json", "--public-key", "key.pub.pem", cwd=tmp_path)
    assert bad.returncode == 1 and "forged or altered" in bad.stderr
    # an unsigned file and a non-certificate are refused with the right codes
    assert _dpcert("verify", "g.json", "--public-key", "key.pub.pem", cwd=tmp_path).returncode == 1
    (tmp_path / "other.json").write_text("[1, 2]")
    assert _dpcert("verify", "other.json", "--public-key", "key.pub.pem", cwd=tmp_path).returncode == 2


def test_a_tampered_claim_under_a_valid_signature_still_fails_consistency(keys):
    # signing never makes an inconsistent claim acceptable: sign_document signs anything, verify re-derives
    private, public = keys
    data = json.loads(gaussian_certificate(3.0, delta=1e-5).to_json())
    data["guarantee"]["epsilon"] = 0.01
    signed = sign_document(data, private, signer="Team")
    with pytest.raises(CertificateMismatch):
        Certificate.from_dict(signed, public_key=public)
