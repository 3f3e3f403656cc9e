"""``dpcert account compose``: the certificate of a composition of certified mechanisms.

Also registers the ``dpcert ledger`` commands (:mod:`dpcert.cli.ledger`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dpcert.accounting.composition import ALL_METHODS, compose
from dpcert.certificates import Certificate
from dpcert.cli import ledger as ledger_commands
from dpcert.cli._common import EXIT_OK, CommandGroups, emit, number
from dpcert.errors import CertificateFormatError, InvalidParameter


def register(groups: CommandGroups) -> None:
    parser = groups.add(
        "account",
        "compose",
        "epsilon of the composition of certified mechanisms at delta",
        _account_compose,
    )
    parser.add_argument(
        "--certificate",
        action="extend",
        nargs="+",
        required=True,
        metavar="FILE.json",
        help="certificate file(s), repeated once per use; a file may also hold a JSON list of certificates",
    )
    parser.add_argument("--method", choices=ALL_METHODS, default="best")
    parser.add_argument("--delta", type=number, required=True, help="target delta of the composition")
    ledger_commands.register(groups)


def read_certificates(path: str) -> list[Certificate]:
    """Certificates in a JSON file (one object or a list of objects), each re-verified."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InvalidParameter(
            "certificate", path, f"a readable certificate JSON file ({exc.strerror})"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CertificateFormatError(f"{path}: certificate is not valid JSON: {exc}") from exc
    items = data if isinstance(data, list) else [data]
    certificates = []
    for item in items:
        if not isinstance(item, dict):
            raise CertificateFormatError(f"{path}: expected a certificate object or a list of them")
        certificates.append(Certificate.from_dict(item))
    return certificates


def _account_compose(args: argparse.Namespace) -> int:
    certificates = [c for path in args.certificate for c in read_certificates(path)]
    composed = compose(certificates, method=args.method, delta=args.delta)
    method = composed.parameters.get("method", "gaussian (exact)")
    emit(
        args,
        {
            "epsilon": composed.epsilon,
            "delta": composed.delta,
            "method": method,
            "mechanisms": len(certificates),
            "certificate": composed.to_dict(),
        },
        [
            ("epsilon", composed.epsilon),
            ("delta", composed.delta),
            ("method", method),
            ("mechanisms", len(certificates)),
            ("basis", composed.basis),
        ],
    )
    return EXIT_OK
