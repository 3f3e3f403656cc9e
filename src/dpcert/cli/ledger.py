"""``dpcert ledger show|export|budget|verify|migrate``: inspect, export, set budgets of, verify or
migrate a ledger.

``show``, ``export`` and ``verify`` open the file read-only and refuse a file that is not a dpcert ledger
(exit 2, the file untouched); ``budget`` and ``migrate`` write.  Writers take ``--signing-key KEY.pem``
(the operator's Ed25519 key from ``dpcert keygen``): a ledger created with a key is signed on every
write and refuses writers without it; ``verify --public-key KEY.pub.pem`` checks those signatures.
Exit status: 0 success, 1 refused or verification failed, 2 bad input (one line naming the
parameter), 3 storage or internal error.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from dpcert.certificates import Guarantee
from dpcert.cli._common import (
    EXIT_OK,
    EXIT_VIOLATED,
    CommandGroups,
    emit,
    ledger_location,
    number,
    plot_file,
)
from dpcert.errors import DPCertError, LedgerIntegrityError, LedgerStorageError, UnknownUser
from dpcert.ledger.api import Ledger
from dpcert.ledger.chain import UserId, load_signing_key, load_verifying_key
from dpcert.viz.plots import plot_spent

EXIT_INTERNAL = 3


def _guarded(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Map a failed write to exit 3 and any unexpected error to one line and exit 3."""

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except LedgerStorageError as exc:
            sys.stderr.write(f"dpcert: error: {exc}\n")
            return EXIT_INTERNAL
        except LedgerIntegrityError as exc:
            sys.stderr.write(f"dpcert: refused: {exc}\n")
            return EXIT_VIOLATED
        except (DPCertError, BrokenPipeError):
            raise
        except Exception as exc:
            if getattr(args, "debug", False):
                traceback.print_exc()
            sys.stderr.write(f"dpcert: internal error: {type(exc).__name__}: {exc}\n")
            return EXIT_INTERNAL

    return run


def register(groups: CommandGroups) -> None:
    parser = groups.add("ledger", "show", _guarded(_show))
    parser.add_argument("path", type=ledger_location, metavar="FILE.db|URL")
    parser.add_argument("--user", help="show one user (an integer id is tried first, then the string)")
    parser.add_argument(
        "--delta", type=number, default=None, help="delta at which to report epsilon (default: the budget's)"
    )
    parser.add_argument(
        "--plot",
        type=plot_file,
        default=None,
        metavar="FILE.png",
        help="draw the distribution of spent epsilon over users against the budget (matplotlib)",
    )
    parser = groups.add(
        "ledger",
        "export",
        _guarded(_export),
    )
    parser.add_argument("path", type=ledger_location, metavar="FILE.db|URL")
    parser.add_argument("--format", choices=("json", "csv"), default="json")
    parser.add_argument(
        "--per-user",
        action="store_true",
        help="CSV: one row per user with charges, spent (epsilon, delta) and budget (JSON always has them)",
    )
    parser = groups.add(
        "ledger",
        "budget",
        _guarded(_budget),
    )
    parser.add_argument("path", type=ledger_location, metavar="FILE.db|URL")
    parser.add_argument("--epsilon", type=number, required=True, help="budget epsilon (>= 0)")
    parser.add_argument("--delta", type=number, required=True, help="budget delta (0 <= delta < 1)")
    parser.add_argument("--user", help="one user's budget (an existing integer id first, then the string)")
    add_signing_key(parser)
    parser = groups.add(
        "ledger",
        "verify",
        _guarded(_verify),
    )
    parser.add_argument("path", type=ledger_location, metavar="FILE.db|URL")
    parser.add_argument(
        "--head", default=None, help="a chain head recorded earlier (from `ledger show`): detects truncation"
    )
    parser.add_argument(
        "--public-key",
        type=Path,
        default=None,
        metavar="KEY.pub.pem",
        help="the operator's Ed25519 public key: every signed head must be signed by it and the last one "
        "must cover the whole chain (detects a history rewritten without the private key)",
    )
    parser = groups.add(
        "ledger",
        "migrate",
        _guarded(_migrate),
    )
    parser.add_argument("path", type=ledger_location, metavar="FILE.db|URL")
    add_signing_key(parser)


def add_signing_key(parser: argparse.ArgumentParser) -> None:
    """``--signing-key KEY.pem`` on a command that writes a ledger."""
    parser.add_argument(
        "--signing-key",
        type=Path,
        default=None,
        metavar="KEY.pem",
        help="the operator's Ed25519 private key (dpcert keygen): a new ledger is signed with it on every "
        "write; a ledger created with a key is written only with that key",
    )


def _resolve_user(ledger: Ledger, text: str, *, must_exist: bool = True) -> UserId:
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
    if not must_exist:
        return candidates[0]
    raise UnknownUser(f"unknown user {text!r}: the ledger {ledger.path} has no charge for them")


def _show(args: argparse.Namespace) -> int:
    with Ledger(args.path, readonly=True) as ledger:
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
            head = ledger.chain_head()
            entry_head = ledger.entry_head()
            signed_by = ledger.signing_key_fingerprint()
            payload = {
                "path": str(args.path),
                "schema_version": ledger.schema_version,
                "chain_head": head,
                "entry_head": entry_head,
                "signed_by": signed_by,
                "default_budget": default.to_dict() if default else None,
                **summary.to_dict(),
            }
            rows = [
                ("users", summary.users),
                ("charges", summary.charges),
                ("distinct histories", summary.histories),
                ("max user epsilon", summary.max_epsilon),
                ("at delta", summary.max_certificate.delta if summary.max_certificate is not None else 0.0),
                ("worst user", summary.max_user if summary.max_user is not None else "none"),
                ("default budget", f"({default.epsilon:g}, {default.delta:g})" if default else "none"),
                (
                    "chain head",
                    head if head is not None else "none (schema version < 3: see `dpcert ledger migrate`)",
                ),
                ("entry head", entry_head or "none (schema version < 4)"),
                ("signed by", signed_by or "nobody (an unsigned ledger)"),
            ]
        if args.plot is not None:
            args.plot.parent.mkdir(parents=True, exist_ok=True)
            totals = list(ledger.user_totals(delta=args.delta))
            budgets = {t.budget.epsilon for t in totals if t.budget is not None}
            plot_spent(
                [t.epsilon for t in totals],
                min(budgets) if budgets else None,
                args.plot,
                title=f"{Path(str(args.path)).name}: privacy spent per user",
            )
            payload["plot"] = str(args.plot)
            rows.append(("plot", str(args.plot)))
    emit(args, payload, rows)
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    if args.per_user and args.format != "csv":
        sys.stderr.write("dpcert: error: invalid --per-user: allowed only with --format csv\n")
        return 2
    with Ledger(args.path, readonly=True) as ledger:
        if args.json and args.format == "csv":  # the CSV text inside one JSON object
            text = ledger.export("csv", per_user=args.per_user)
            sys.stdout.write(json.dumps({"format": "csv", "text": text}) + "\n")
        else:
            ledger.write_export(sys.stdout, args.format, per_user=args.per_user)
            if args.format == "json":
                sys.stdout.write("\n")
    return EXIT_OK


def _budget(args: argparse.Namespace) -> int:
    budget = Guarantee(args.epsilon, args.delta)  # validates epsilon and delta before the file is opened
    key = load_signing_key(args.signing_key)
    with Ledger(args.path, signing_key=key) as ledger:
        user = None if args.user is None else _resolve_user(ledger, args.user, must_exist=False)
        ledger.set_budget(user, budget)
        payload = {"path": str(args.path), "user": user, "epsilon": budget.epsilon, "delta": budget.delta}
    emit(
        args,
        payload,
        [
            ("ledger", str(args.path)),
            ("budget of", "every user (default)" if user is None else f"user {user!r}"),
            ("epsilon", budget.epsilon),
            ("delta", budget.delta),
        ],
    )
    return EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    public_key = load_verifying_key(args.public_key)  # a bad key file is bad input, before the ledger
    with Ledger(args.path, readonly=True) as ledger:
        report = ledger.verify(head=args.head, public_key=public_key)
    payload = {"path": str(args.path), **report.to_dict()}
    if report.ok:
        if report.signed_by is None:
            signed = "no (an unsigned ledger)"
        elif public_key is None:
            signed = f"consistent with the key in the ledger ({report.signed_by}); no expected key given"
        else:
            signed = f"yes, by the expected key ({report.signed_by})"
        emit(
            args,
            payload,
            [
                ("ledger", str(args.path)),
                ("verified", "yes"),
                ("charges", report.charges),
                ("chain head", report.head),
                ("entries", report.entries),
                ("entry head", report.entry_head),
                ("signed", signed),
            ],
        )
        return EXIT_OK
    if args.json:
        emit(args, payload, [])
    sys.stderr.write(f"dpcert: verification failed: {report.problem}\n")
    return EXIT_VIOLATED


def _migrate(args: argparse.Namespace) -> int:
    key = load_signing_key(args.signing_key)
    with Ledger(args.path, readonly=True) as ledger:
        before = ledger.schema_version
    with Ledger(args.path, signing_key=key, migrate=True) as ledger:
        report = ledger.verify()
        after = ledger.schema_version
        fingerprint = ledger.signing_key_fingerprint()
    payload = {
        "path": str(args.path),
        "from_version": before,
        "schema_version": after,
        "signed_by": fingerprint,
        **{k: v for k, v in report.to_dict().items() if k != "signed_by"},
    }
    emit(
        args,
        payload,
        [
            ("ledger", str(args.path)),
            ("schema version", f"{before} -> {after}" if before != after else f"{after} (already current)"),
            ("signed by", fingerprint or "nobody (no --signing-key)"),
            ("verified", "yes" if report.ok else f"no: {report.problem}"),
            ("entry head", report.entry_head),
        ],
    )
    return EXIT_OK if report.ok else EXIT_VIOLATED
