"""``dpcert ledger show|export``: inspect or export a per-user privacy ledger."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dpcert.accounting.ledger import Ledger, UserId
from dpcert.cli._common import EXIT_OK, CommandGroups, emit, number
from dpcert.errors import UnknownUser


def register(groups: CommandGroups) -> None:
    parser = groups.add("ledger", "show", "users, charges and the worst-off user (or one user)", _show)
    parser.add_argument("path", type=Path, metavar="FILE.db")
    parser.add_argument("--user", help="show one user (an integer id is tried first, then the string)")
    parser.add_argument(
        "--delta", type=number, default=None, help="delta at which to report epsilon (default: the budget's)"
    )
    parser = groups.add("ledger", "export", "every charge as JSON or CSV on stdout", _export)
    parser.add_argument("path", type=Path, metavar="FILE.db")
    parser.add_argument("--format", choices=("json", "csv"), default="json")


def _resolve_user(ledger: Ledger, text: str) -> UserId:
    try:
        candidates: list[UserId] = [int(text), text]
    except ValueError:
        candidates = [text]
    for candidate in candidates:
        try:
            ledger.charges(candidate)
            return candidate
        except UnknownUser:
            continue
    raise UnknownUser(f"unknown user {text!r}: the ledger {ledger.path} has no charge for them")


def _show(args: argparse.Namespace) -> int:
    with Ledger(args.path, create=False) as ledger:
        if args.user is not None:
            user = _resolve_user(ledger, args.user)
            spent = ledger.spent(user, delta=args.delta)
            budget = ledger.budget(user)
            remaining = ledger.remaining(user) if budget is not None else None
            charges = len(ledger.charges(user))
            payload = {
                "user": user,
                "epsilon": spent.epsilon,
                "delta": spent.delta,
                "charges": charges,
                "budget": budget.to_dict() if budget else None,
                "remaining_epsilon": remaining.epsilon if remaining else None,
                "certificate": spent.to_dict(),
            }
            rows = [
                ("user", user),
                ("epsilon", spent.epsilon),
                ("delta", spent.delta),
                ("charges", charges),
                ("budget", f"({budget.epsilon:g}, {budget.delta:g})" if budget else "none"),
                ("remaining epsilon", remaining.epsilon if remaining else "n/a"),
                ("basis", spent.basis),
            ]
        else:
            summary = ledger.spent_summary(delta=args.delta)
            default = ledger.default_budget()
            payload = {
                "path": str(args.path),
                "schema_version": ledger.schema_version,
                "default_budget": default.to_dict() if default else None,
                **summary.to_dict(),
            }
            rows = [
                ("users", summary.users),
                ("charges", summary.charges),
                ("distinct histories", summary.histories),
                ("max user epsilon", summary.max_epsilon),
                ("at delta", payload["max_user_delta"]),
                ("worst user", summary.max_user if summary.max_user is not None else "none"),
                ("default budget", f"({default.epsilon:g}, {default.delta:g})" if default else "none"),
            ]
    emit(args, payload, rows)
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    with Ledger(args.path, create=False) as ledger:
        text = ledger.export(args.format)
    if args.json and args.format == "csv":
        sys.stdout.write(json.dumps({"format": "csv", "text": text}) + "\n")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK
