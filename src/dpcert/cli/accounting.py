"""``dpcert account compose``: the certificate of a composition of certified mechanisms."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dpcert import _json, provenance
from dpcert.accounting.composition import ALL_METHODS, compose
from dpcert.certificates import Certificate
from dpcert.cli._common import (
    EXIT_OK,
    ONE_OF,
    CommandGroups,
    bounded_integer,
    delta_value,
    emit,
    input_file,
    plot_certificate,
    read_text_file,
)
from dpcert.errors import CertificateFormatError, InvalidParameter


def register(groups: CommandGroups) -> None:
    parser = groups.add(
        "account",
        "compose",
        _account_compose,
    )
    parser.add_argument(
        "--certificate",
        action="extend",
        nargs="+",
        required=True,
        metavar="FILE.json",
        type=input_file,
        help="certificate file(s), repeated once per use; a file may also hold a JSON list of certificates",
    )
    parser.add_argument(
        "--count",
        type=bounded_integer(1, MAX_MECHANISMS),
        default=1,
        metavar="K",
        help="use the certificates K times each (default 1)",
    )
    parser.add_argument("--method", choices=ALL_METHODS, default="best", **ONE_OF)
    parser.add_argument("--delta", type=delta_value, required=True, help="target delta of the composition")


MAX_MECHANISMS = 100_000
"""Most mechanisms one composition takes (certificates x --count)."""


def read_certificates(path: str | Path) -> list[Any]:
    """Certificates in a JSON file (one object or a list of objects), each re-verified."""
    text = read_text_file(path, "--certificate")
    data = _json.loads(text, what=f"{path}: certificate")  # duplicate keys, NaN and Infinity refused
    items = data if isinstance(data, list) else [data]
    certificates = []
    for item in items:
        if not isinstance(item, dict):
            raise CertificateFormatError(f"{path}: expected a certificate object or a list of them")
        certificates.append(Certificate.from_dict(item))
    return certificates


def _account_compose(args: argparse.Namespace) -> int:
    distinct = [c for path in args.certificate for c in read_certificates(path)]
    if len(distinct) * args.count > MAX_MECHANISMS:
        raise InvalidParameter(
            "--count",
            args.count,
            f"certificates x count <= {MAX_MECHANISMS} (here {len(distinct)} certificates)",
        )
    certificates = distinct * args.count
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
        record=provenance.CALCULATION,
    )
    plot_certificate(args, composed)
    return EXIT_OK
