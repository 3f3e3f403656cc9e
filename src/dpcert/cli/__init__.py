"""The ``dpcert`` command line (its contract: docs/cli.md).

Exit status: 0 success / "consistent"; 1 a verdict of "violated" or a refused charge; 2 bad input or
usage (one line on stderr naming the parameter and what is allowed, before any work starts); 3 an
internal error (one line; the traceback only with ``--debug``).  ``--json`` prints exactly one JSON
object on stdout.

Each command family lives in its own module exposing ``register(groups)``; the commands are declared
(name, help line, module) in :mod:`dpcert.cli._commands`, from which the parser is built: a command
module, and the parts of the library it imports, is loaded only when one of its commands runs (so
``dpcert --version``, ``--help`` and ``calibrate gaussian`` load neither SciPy's optimizers and
statistics nor dp_accounting).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Collection, Sequence

from dpcert import provenance
from dpcert.cli._commands import COMMAND_MODULES, COMMANDS, module_for
from dpcert.cli._common import GROUPS, CommandGroups, build_root_parser, run_command


def build_parser(modules: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: every command with its options (``modules`` None), or the commands of
    ``modules`` with their options and every other command by its name and help line only."""
    parser, groups = build_root_parser()
    for module in COMMAND_MODULES:
        if modules is None or module in modules:
            importlib.import_module(module).register(groups)
        else:
            for command in COMMANDS:
                if command.module == module:
                    groups.declare(command)
    return parser


def _command_word(argv: Sequence[str]) -> str | None:
    """The first positional word of ``argv`` (the root parser has only flag options)."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpcert`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    word = _command_word(argv)
    try:
        needed = module_for(argv, tuple(GROUPS))
        parser = build_parser(() if needed is None else (needed,))
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
