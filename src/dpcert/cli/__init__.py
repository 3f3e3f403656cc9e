"""The ``dpcert`` command line (contract: CLI.md).

Exit status: 0 success; 1 a verdict of "violated" or a refused charge; 2 bad input, with a message on
stderr naming the parameter and its allowed range.  ``--json`` prints exactly one JSON object on stdout.

Each command family lives in its own module exposing ``register(groups)``; the modules are listed in
:data:`COMMAND_MODULES`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from dpcert.cli._common import CommandGroups, build_root_parser, run_command

COMMAND_MODULES: tuple[str, ...] = (
    "dpcert.cli.noise",
    "dpcert.cli.demo",
    "dpcert.cli.accounting",
    "dpcert.cli.shuffle",
    "dpcert.cli.audit",
    "dpcert.cli.bandit",
    "dpcert.cli.signing",
)


def build_parser():
    parser, groups = build_root_parser()
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpcert`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help(sys.stderr)
        return 2
    return run_command(args)


__all__ = ["CommandGroups", "build_parser", "main"]
