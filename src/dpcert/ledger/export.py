"""What a ledger reports and exports: per-user totals, the worst-off user, the export formats.

:meth:`~dpcert.ledger.api.Ledger.write_export` reads the rows in one snapshot and hands them to
:func:`write_charges_csv`, :func:`write_user_totals_csv` or :func:`write_json`, which write them as
they come (memory bounded by the distinct certificates).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TextIO

from dpcert._notebook import html_table, markdown_table
from dpcert.certificates import Certificate, Guarantee
from dpcert.ledger.chain import UserId

EXPORT_FORMAT = "dpcert.ledger-export/1"
ChargeRow = tuple[int, UserId, str | None, float, str, int, str | None]
"""A charge as exported: charge id, user id, run id, time, certificate SHA-256, certificate row id,
idempotency key."""


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

    def _notebook_rows(self) -> list[tuple[str, Any]]:
        worst = self.max_certificate
        return [
            ("users", self.users),
            ("charges", self.charges),
            ("distinct histories", self.histories),
            ("worst-off user", self.max_user if self.max_user is not None else "none"),
            (
                "their spent (ε, δ)",
                f"({worst.epsilon:.6g}, {worst.delta:.3g})" if worst is not None else "none",
            ),
        ]

    def _repr_markdown_(self) -> str:
        return markdown_table("Ledger", self._notebook_rows())

    def _repr_html_(self) -> str:
        return html_table("Ledger", self._notebook_rows())


@dataclass(frozen=True)
class UserTotal:
    """One user's number of charges, composed spent (ε, δ) and applicable budget."""

    user_id: UserId
    charges: int
    epsilon: float
    delta: float
    budget: Guarantee | None

    @property
    def within_budget(self) -> bool | None:
        if self.budget is None:
            return None
        return self.epsilon <= self.budget.epsilon and self.delta <= self.budget.delta

    def to_dict(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "charges": self.charges,
            "epsilon": self.epsilon if math.isfinite(self.epsilon) else None,
            "delta": self.delta,
            "budget": self.budget.to_dict() if self.budget is not None else None,
            "within_budget": self.within_budget,
        }


def write_user_totals_csv(stream: TextIO, totals: Iterable[UserTotal]) -> None:
    """One CSV row per user: charges, spent (ε, δ) by ``repr``, budget and whether it holds."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(
        ["user_id", "charges", "epsilon", "delta", "budget_epsilon", "budget_delta", "within_budget"]
    )
    for total in totals:
        budget = total.budget
        writer.writerow(
            [
                total.user_id,
                total.charges,
                repr(total.epsilon),
                repr(total.delta),
                "" if budget is None else repr(budget.epsilon),
                "" if budget is None else repr(budget.delta),
                "" if budget is None else str(total.within_budget).lower(),
            ]
        )


def write_charges_csv(
    stream: TextIO, charges: Iterable[ChargeRow], certificate: Callable[[int], Certificate]
) -> None:
    """One CSV row per charge; ``certificate`` gives the certificate of a certificate row id."""
    writer = csv.writer(stream, lineterminator="\n")
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
            "idempotency_key",
        ]
    )
    for charge_id, user_id, run_id, created, digest, cid, key in charges:
        charged = certificate(cid)
        writer.writerow(
            [
                charge_id,
                user_id,
                "" if run_id is None else run_id,
                repr(created),
                digest,
                charged.mechanism,
                repr(charged.epsilon),
                repr(charged.delta),
                "" if key is None else key,
            ]
        )


def write_json(
    stream: TextIO,
    *,
    schema_version: int,
    certificates: Iterable[tuple[str, Certificate]],
    charges: Iterable[ChargeRow],
    totals: Iterable[UserTotal],
    default_budget: Guarantee | None,
    budgets: Iterable[tuple[UserId, float, float]],
) -> None:
    """One JSON object (format :data:`EXPORT_FORMAT`): the certificates by SHA-256, every charge,
    each user's totals, the default budget and the users' own budgets."""

    def dumps(value: Any) -> str:
        return json.dumps(value, allow_nan=False)

    stream.write(f'{{"format": {dumps(EXPORT_FORMAT)}, "schema_version": {schema_version}')
    stream.write(', "certificates": {')
    for index, (digest, certificate) in enumerate(certificates):
        stream.write(f"{', ' if index else ''}{dumps(digest)}: {dumps(certificate.to_dict())}")
    stream.write('}, "charges": [')
    for index, (charge_id, user_id, run_id, created, digest, _, key) in enumerate(charges):
        row = {
            "charge_id": charge_id,
            "user_id": user_id,
            "run_id": run_id,
            "created": created,
            "certificate": digest,
            "idempotency_key": key,
        }
        stream.write((", " if index else "") + dumps(row))
    stream.write('], "users": [')
    for index, total in enumerate(totals):
        stream.write((", " if index else "") + dumps(total.to_dict()))
    stream.write(
        f'], "default_budget": {dumps(default_budget.to_dict() if default_budget else None)}, "budgets": ['
    )
    for index, (user, epsilon, delta) in enumerate(budgets):
        stream.write((", " if index else "") + dumps({"user_id": user, "epsilon": epsilon, "delta": delta}))
    stream.write("]}")


__all__ = [
    "EXPORT_FORMAT",
    "ChargeRow",
    "SpentSummary",
    "UserTotal",
    "write_charges_csv",
    "write_json",
    "write_user_totals_csv",
]
