"""The ``dpcert`` command line (contract: CLI.md).

Exit status: 0 success / "consistent"; 1 a verdict of "violated" or a refused charge; 2 bad input or
usage (one line on stderr naming the parameter and what is allowed, before any work starts); 3 an
internal error (one line; the traceback only with ``--debug``).  ``--json`` prints exactly one JSON
object on stdout.

Each command family lives in its own module exposing ``register(groups)``; :data:`COMMAND_MODULES`
maps each module to the top-level words it registers, so that a command imports only its own module
and ``dpcert --help`` / ``--version`` import none (they start in about the time numpy takes to import).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Sequence

from dpcert.cli._common import CommandGroups, build_root_parser, run_command

COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "dpcert.cli.noise": ("calibrate", "account"),
    "dpcert.cli.demo": ("demo",),
    "dpcert.cli.accounting": ("account",),
    "dpcert.cli.ledger": ("ledger",),
    "dpcert.cli.shuffle": ("calibrate", "account"),
    "dpcert.cli.audit": ("audit",),
    "dpcert.cli.bandit": ("bandit", "reproduce"),
    "dpcert.cli.signing": ("keygen", "sign", "verify"),
}

TOP_LEVEL_COMMANDS: dict[str, str] = {
    "audit": "test a privacy claim (epsilon, delta) from samples (TARGET file.py:fn is executed)",
    "demo": "all three jobs end to end, small (< 60 s)",
    "reproduce": "reproduce a paper figure (see --list)",
    "keygen": "create an Ed25519 key pair for signing certificates and reports",
    "sign": "sign a certificate or audit report (JSON) with an Ed25519 key",
    "verify": "check a signed certificate or audit report: signature, then consistency",
}
"""Top-level commands that are not groups, with the help shown by ``dpcert --help``."""


def build_parser(modules: Iterable[str] | None = None):
    """The argument parser with the commands of ``modules`` (default: every command module)."""
    modules = list(COMMAND_MODULES if modules is None else modules)
    loaded = {word for module in modules for word in COMMAND_MODULES.get(module, ())}
    stubs = {name: text for name, text in TOP_LEVEL_COMMANDS.items() if name not in loaded}
    parser, groups = build_root_parser(stubs)
    for name in modules:
        importlib.import_module(name).register(groups)
    return parser


def _command_word(argv: Sequence[str]) -> str | None:
    """The first positional word of ``argv`` (the root parser has only flag options)."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpcert`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    word = _command_word(argv)
    modules = [module for module, words in COMMAND_MODULES.items() if word in words]
    if word is not None and not modules:  # a word no module lists: load them all and let argparse judge
        modules = list(COMMAND_MODULES)
    try:
        parser = build_parser(modules)
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors (already reported on stderr)
        return exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:  # noqa: BLE001 - a command module failed to load: internal error
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
    return run_command(args)


__all__ = ["COMMAND_MODULES", "CommandGroups", "build_parser", "main"]
