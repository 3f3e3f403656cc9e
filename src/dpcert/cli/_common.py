"""Shared plumbing of the command line: parser groups, output, error mapping."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dpcert.errors import BudgetExceeded, DPCertError

EXIT_OK = 0
EXIT_VIOLATED = 1
EXIT_BAD_INPUT = 2

GROUPS = {
    "calibrate": "compute the least noise for a target (epsilon, delta)",
    "account": "what (epsilon, delta) do these parameters guarantee?",
    "bandit": "run private bandit algorithms with certified accounting",
    "ledger": "inspect or export a per-user privacy ledger",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 already; keep the message short
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"dpcert: error: {message}\n")


@dataclass
class CommandGroups:
    """Sub-parser collections into which command modules add their commands."""

    root: argparse._SubParsersAction
    groups: dict[str, argparse._SubParsersAction]

    def add(
        self, group: str | None, name: str, help_text: str, handler: Callable[[argparse.Namespace], int]
    ) -> argparse.ArgumentParser:
        """Add ``dpcert [group] name``; every command gets ``--json``."""
        target = self.root if group is None else self.groups[group]
        parser = target.add_parser(name, help=help_text, description=help_text)
        parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        parser.set_defaults(handler=handler)
        return parser


def build_root_parser() -> tuple[argparse.ArgumentParser, CommandGroups]:
    from dpcert import __version__

    parser = _Parser(prog="dpcert", description="Differential privacy with checkable certificates.")
    parser.add_argument("--version", action="version", version=f"dpcert {__version__}")
    root = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    groups = {}
    for name, help_text in GROUPS.items():
        group_parser = root.add_parser(name, help=help_text, description=help_text)
        groups[name] = group_parser.add_subparsers(
            title="subcommands", metavar="SUBCOMMAND", parser_class=_Parser
        )
        group_parser.set_defaults(handler=_missing_subcommand(group_parser))
    return parser, CommandGroups(root, groups)


def _missing_subcommand(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def handler(_: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT

    return handler


def number(text: str) -> float:
    """argparse type: a float (range checks happen in the library, which names the parameter)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def integer(text: str) -> int:
    """argparse type: an integer (``1e6`` style accepted when integral)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not math.isfinite(value) or not value.is_integer():
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    return int(value)


def emit(args: argparse.Namespace, payload: dict[str, Any], rows: Sequence[tuple[str, Any]]) -> None:
    """Print ``payload`` as one JSON object (``--json``) or ``rows`` as a two-column table."""
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(payload, allow_nan=False) + "\n")
        return
    width = max((len(label) for label, _ in rows), default=0)
    for label, value in rows:
        if isinstance(value, float):
            value = f"{value:.6g}"
        sys.stdout.write(f"{label:<{width}}  {value}\n")


def certificate_rows(certificate: Any, *, neighbouring: bool = True) -> list[tuple[str, Any]]:
    """Table rows for a certificate: epsilon, delta, trust model, [neighbouring,] basis."""
    rows: list[tuple[str, Any]] = [
        ("epsilon", certificate.epsilon),
        ("delta", certificate.delta),
        ("trust model", certificate.trust_model.value),
    ]
    if neighbouring:
        rows.append(("neighbouring", certificate.neighbouring.value))
    rows.append(("basis", certificate.basis))
    return rows


def run_command(args: argparse.Namespace) -> int:
    """Run the handler; map dpcert errors to exit codes with a message on stderr."""
    try:
        return int(args.handler(args))
    except BudgetExceeded as exc:
        sys.stderr.write(f"dpcert: refused: {exc}\n")
        return EXIT_VIOLATED
    except DPCertError as exc:
        sys.stderr.write(f"dpcert: error: {exc}\n")
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK
