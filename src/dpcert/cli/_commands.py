"""The declarations of the ``dpcert`` commands: what each is called, its help line, and its module.

The parser is built from these declarations alone; the module implementing a command (which imports
the library parts the command needs) is loaded only when that command is run, or when the full
parser is asked for.  A command module's ``register(groups)`` adds the options of the commands
declared here with its name, and takes their help lines from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    """``dpcert [group] name``: implemented by ``module``, described by ``help``."""

    group: str | None
    name: str
    module: str
    help: str


_GAUSSIAN = "dpcert.cli.gaussian"
_NOISE = "dpcert.cli.noise"
_SHUFFLE = "dpcert.cli.shuffle"
_LEDGER = "dpcert.cli.ledger"
_BANDIT = "dpcert.cli.bandit"
_SIGNING = "dpcert.cli.signing"

COMMANDS: tuple[Command, ...] = (
    Command("calibrate", "gaussian", _GAUSSIAN, "least Gaussian sigma for (epsilon, delta)"),
    Command("calibrate", "laplace", _NOISE, "least Laplace scale for epsilon-DP"),
    Command(
        "calibrate",
        "discrete-gaussian",
        _NOISE,
        "least discrete Gaussian sigma for (epsilon, delta) (integer-exact sampler)",
    ),
    Command(
        "calibrate",
        "dp-sgd",
        _NOISE,
        "least DP-SGD noise multiplier for (epsilon, delta) over a training schedule",
    ),
    Command("account", "gaussian", _NOISE, "epsilon of a (k-fold) Gaussian mechanism at delta"),
    Command(
        "account",
        "dp-sgd",
        _NOISE,
        "epsilon at delta (or delta at epsilon) of a DP-SGD run with a given noise multiplier",
    ),
    Command("account", "laplace", _NOISE, "epsilon of a Laplace mechanism"),
    Command(None, "demo", "dpcert.cli.demo", "all three jobs end to end, small (< 60 s)"),
    Command(
        "account",
        "compose",
        "dpcert.cli.accounting",
        "epsilon of the composition of certified mechanisms at delta",
    ),
    Command("ledger", "show", _LEDGER, "users, charges, the worst-off user (or one user); opens read-only"),
    Command(
        "ledger",
        "export",
        _LEDGER,
        "every charge (or each user's totals) as JSON or CSV on stdout, streamed; opens read-only",
    ),
    Command(
        "ledger",
        "budget",
        _LEDGER,
        "set the default per-user budget, or one user's (creates the ledger if absent)",
    ),
    Command(
        "ledger",
        "verify",
        _LEDGER,
        "recompute the hash chain, certificates and users' state; exit 1 naming the first broken entry",
    ),
    Command(
        "ledger",
        "migrate",
        _LEDGER,
        "migrate a genuine ledger of an earlier dpcert (schema version 1-3) to the chained, signed format",
    ),
    Command(
        "calibrate",
        "binomial-sum",
        _SHUFFLE,
        "bit-sum shuffle protocol (g, b, p) for a sum of N users' vectors at (epsilon, delta)",
    ),
    Command(
        "calibrate",
        "shuffle",
        _SHUFFLE,
        "largest local epsilon0 whose shuffled protocol meets (epsilon, delta)",
    ),
    Command("account", "binomial-sum", _SHUFFLE, "epsilon of a bit-sum shuffle protocol at delta"),
    Command("account", "shuffle", _SHUFFLE, "epsilon of N shuffled epsilon0-LDP reports at delta"),
    Command(None, "audit", "dpcert.cli.audit", "test a privacy claim (epsilon, delta) from samples"),
    Command("bandit", "run", _BANDIT, "run R repetitions of a bandit algorithm"),
    Command("bandit", "list", _BANDIT, "list the registered bandit algorithms"),
    Command(None, "reproduce", _BANDIT, "reproduce a paper figure (see --list)"),
    Command(None, "keygen", _SIGNING, "create an Ed25519 key pair for signing certificates and reports"),
    Command(None, "sign", _SIGNING, "sign a certificate or audit report (JSON) with an Ed25519 key"),
    Command(
        None, "verify", _SIGNING, "check a signed certificate or audit report: signature, then consistency"
    ),
)

SECURE_GAUSSIAN = _NOISE + ":calibrate_secure_gaussian"
"""The handler of ``calibrate gaussian --secure`` (the integer-exact mechanism, with its samplers and
the discrete Gaussian profile), loaded by :func:`load_handler` only when that option is given."""

COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(command.module for command in COMMANDS))
"""The command modules, in the order their commands are registered."""


def declared(group: str | None, name: str) -> Command:
    """The declaration of ``dpcert [group] name`` (a ``KeyError`` for a command not declared here)."""
    for command in COMMANDS:
        if command.group == group and command.name == name:
            return command
    raise KeyError(f"dpcert {group or ''} {name}: not a declared command")


def module_for(argv: Sequence[str], groups: Sequence[str]) -> str | None:
    """The module of the command ``argv`` names, or None (no command, a group alone, an unknown name).

    The root parser and the group parsers have flag options only, so the command is the first word
    not starting with ``-`` (and, for a group, the sub-command the next such word).
    """
    words = [word for word in argv if not word.startswith("-")]
    if not words:
        return None
    group = words[0] if words[0] in groups else None
    name = words[1] if group is not None and len(words) > 1 else (None if group is not None else words[0])
    if name is None:
        return None
    return next((c.module for c in COMMANDS if c.group == group and c.name == name), None)


def load_handler(reference: str) -> Callable[[Any], int]:
    """The handler ``module:function`` names, its module imported now (as a command's module is)."""
    module, _, name = reference.partition(":")
    handler: Callable[[Any], int] = getattr(importlib.import_module(module), name)
    return handler
