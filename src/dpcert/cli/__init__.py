"""The ``dpcert`` command line (its contract: docs/cli.md).

Exit status: 0 success / "consistent"; 1 a verdict of "violated" or a refused charge; 2 bad input or
usage (one line on stderr naming the parameter and what is allowed, before any work starts); 3 an
internal error (one line; the traceback only with ``--debug``).  ``--json`` prints exactly one JSON
object on stdout.

Each command family lives in its own module exposing ``register(groups)``; :data:`COMMAND_MODULES`
lists them in the order their commands are registered.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import ModuleType

from dpcert import provenance
from dpcert.cli import accounting, audit, bandit, demo, ledger, noise, shuffle, signing
from dpcert.cli._common import CommandGroups, build_root_parser, run_command

COMMAND_MODULES: tuple[ModuleType, ...] = (noise, demo, accounting, ledger, shuffle, audit, bandit, signing)


def build_parser():
    """The argument parser with the commands of every command module."""
    parser, groups = build_root_parser()
    for module in COMMAND_MODULES:
        module.register(groups)
    return parser


def _command_word(argv: Sequence[str]) -> str | None:
    """The first positional word of ``argv`` (the root parser has only flag options)."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpcert`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    word = _command_word(argv)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors (already reported on stderr)
        return exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:  # noqa: BLE001 - a command failed to register: internal error
        if "--debug" in argv:
            raise
        sys.stderr.write(f"dpcert: internal error: {type(exc).__name__}: {exc} (run with --debug)\n")
        return 3
    if not hasattr(args, "handler"):
        if word is None:
            sys.stderr.write("dpcert: error: a COMMAND is required (see 'dpcert --help')\n")
        else:
            sys.stderr.write(f"dpcert: error: {word} is not available (see 'dpcert --help')\n")
        return 2
    args.argv = ["dpcert", *argv]  # the command line results record as how they were made
    args.clock = provenance.Clock()  # when the command's work started
    return run_command(args)


__all__ = ["COMMAND_MODULES", "CommandGroups", "build_parser", "main"]
