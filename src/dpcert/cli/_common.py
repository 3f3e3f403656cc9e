"""Shared plumbing of the command line: parser groups, argument types, output, error mapping.

Exit status (CLI.md): 0 success / "consistent"; 1 a verdict of "violated" or a refused charge; 2 bad
input or usage, one line on stderr naming the parameter and what is allowed, checked before any work;
3 an internal or storage error, one line on stderr (the traceback only with ``--debug``).

``dpcert --help`` and ``dpcert --version`` import no command module (:mod:`dpcert.cli` loads only
the module of the command given), so they start in about the time the package itself takes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from dpcert import provenance
from dpcert._validation import available_memory as available_memory
from dpcert.cli._commands import Command, declared
from dpcert.errors import (
    BudgetExceeded,
    DPCertError,
    InvalidParameter,
    LedgerStorageError,
    PluginError,
    SchedulerUnavailable,
)
from dpcert.viz.plots import plot_profile

EXIT_OK = 0
EXIT_VIOLATED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

GROUPS = {
    "calibrate": "compute the least noise for a target (epsilon, delta)",
    "account": "what (epsilon, delta) do these parameters guarantee?",
    "bandit": "run private bandit algorithms with certified accounting",
    "ledger": "inspect or export a per-user privacy ledger",
}

MAGNITUDE_RANGE = (1e-50, 1e50)
"""Range of every positive real parameter (epsilon, sigma, scale, sensitivity, bound, ...).

Within it every ratio the accountants form (sensitivity/sigma, sensitivity/epsilon) stays within
1e100, where the Gaussian and Laplace profiles and their root finders are exact in double precision;
outside it they can overflow or underflow (e.g. a subnormal epsilon = 1e-308)."""

SEED_LIMIT = 2**128
"""Seeds are integers ``0 <= seed < 2**128`` (numpy's SeedSequence entropy)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line on stderr, exit status 2
        self.exit(EXIT_BAD_INPUT, f"dpcert: error: {message} (see '{self.prog} --help')\n")


@dataclass
class CommandGroups:
    """Sub-parser collections into which command modules add their commands."""

    root: argparse._SubParsersAction
    groups: dict[str, argparse._SubParsersAction]

    def add(
        self, group: str | None, name: str, handler: Callable[[argparse.Namespace], int]
    ) -> argparse.ArgumentParser:
        """Add ``dpcert [group] name`` (declared in :mod:`dpcert.cli._commands`, whose help line it
        shows); every command gets ``--json`` and ``--debug``."""
        help_text = declared(group, name).help
        target = self.root if group is None else self.groups[group]
        parser = target.add_parser(name, help=help_text, description=help_text)
        parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        add_debug_flag(parser, default=argparse.SUPPRESS)
        if group == "account":
            parser.add_argument(
                "--plot",
                type=plot_file,
                default=None,
                metavar="FILE.png",
                help="also draw the privacy profile delta(epsilon) with the claimed point (matplotlib)",
            )
        parser.set_defaults(handler=handler)
        return parser

    def declare(self, command: Command) -> None:
        """List ``command`` (its name and help line) without its options: a command that is not run."""
        target = self.root if command.group is None else self.groups[command.group]
        target.add_parser(command.name, help=command.help, description=command.help)


def dpcert_version() -> str:
    """The installed dpcert's version (the one provenance records), ``unknown`` when not installed."""
    import importlib.metadata  # about 0.1 s: read only when a command needs it

    try:
        return importlib.metadata.version("dpcert")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class _VersionAction(argparse.Action):
    """``--version``: print ``dpcert VERSION`` and exit 0 (the version is looked up only then)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        sys.stdout.write(f"dpcert {dpcert_version()}\n")
        parser.exit()


def add_debug_flag(parser: argparse.ArgumentParser, default: Any = False) -> None:
    parser.add_argument(
        "--debug", action="store_true", default=default, help="print the traceback of an internal error"
    )


def build_root_parser() -> tuple[argparse.ArgumentParser, CommandGroups]:
    """The root parser with its command groups (each command module then registers its commands)."""
    parser = _Parser(prog="dpcert", description="Differential privacy with checkable certificates.")
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    add_debug_flag(parser)
    root = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    groups = {}
    for name, help_text in GROUPS.items():
        group_parser = root.add_parser(name, help=help_text, description=help_text)
        groups[name] = group_parser.add_subparsers(
            title="subcommands", metavar="SUBCOMMAND", parser_class=_Parser
        )
        add_debug_flag(group_parser, default=argparse.SUPPRESS)
        group_parser.set_defaults(handler=_missing_subcommand(group_parser, groups[name]))
    return parser, CommandGroups(root, groups)


def _missing_subcommand(
    parser: argparse.ArgumentParser, subcommands: argparse._SubParsersAction
) -> Callable[[argparse.Namespace], int]:
    def handler(_: argparse.Namespace) -> int:
        names = ", ".join(subcommands.choices)
        sys.stderr.write(
            f"dpcert: error: {parser.prog} needs a subcommand: {names} (see '{parser.prog} --help')\n"
        )
        return EXIT_BAD_INPUT

    return handler


ONE_OF: dict[str, Any] = {"metavar": "NAME", "help": "%(choices)s (default %(default)s)"}
"""``add_argument`` keywords for an option with named choices."""


# --------------------------------------------------------------------------- argument types
def number(text: str) -> float:
    """argparse type: a float (range checks happen in the library, which names the parameter)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def positive(text: str) -> float:
    """argparse type: a positive real number within :data:`MAGNITUDE_RANGE`."""
    value = number(text)
    low, high = MAGNITUDE_RANGE
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: allowed {low:g} <= value <= {high:g} (dpcert's numeric range)"
        )
    return value


DELTA_MIN = 1e-300
"""Smallest positive delta: below it (subnormal numbers) the Gaussian profile's root finders divide by
zero."""


def delta_value(text: str) -> float:
    """argparse type: a delta, ``0`` or ``1e-300 <= delta < 1``."""
    value = number(text)
    if not (value == 0.0 or DELTA_MIN <= value < 1.0):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: allowed 0 or {DELTA_MIN:g} <= delta < 1")
    return value


def integer(text: str) -> int:
    """argparse type: an integer (``1e6`` style accepted when integral)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not math.isfinite(value) or not value.is_integer():
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    if abs(value) < 2**53:
        return int(value)
    try:  # exact for large integers written out in full
        return int(text)
    except ValueError:
        return int(value)


def bounded_integer(low: int, high: int) -> Callable[[str], int]:
    """argparse type: an integer with ``low <= value <= high``."""

    def parse(text: str) -> int:
        value = integer(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: allowed {low} <= value <= {high:g}")
        return value

    parse.__name__ = "integer"
    return parse


def seed(text: str) -> int:
    """argparse type: a random seed, an integer ``0 <= seed < 2**128``."""
    value = integer(text)
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: allowed an integer 0 <= seed < 2**128")
    return value


def _nearest_existing(path: Path) -> Path:
    probe = path.absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def _short_names(text: str) -> None:
    if any(len(part.encode(errors="surrogateescape")) > NAME_MAX for part in Path(text).parts):
        raise argparse.ArgumentTypeError(
            f"{text[:60]!r}...: allowed file and directory names of at most {NAME_MAX} bytes"
        )


def output_file(text: str) -> Path:
    """argparse type: a file that can be written (its directory exists and is writable, its name has
    at most 255 bytes)."""
    path = Path(text)
    _short_names(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory: allowed a file path")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text!r}: allowed a file in an existing directory ({parent} does not exist)"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(
            f"{text!r}: allowed a file in a writable directory ({parent} is not)"
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text!r}: allowed a writable file (it is read-only)")
    return path


def output_file_anywhere(text: str) -> Path:
    """argparse type: a file to be written whose missing parent directories will be created."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory: allowed a file path")
    output_directory(str(path.absolute().parent))
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text!r}: allowed a writable file (it is read-only)")
    return path


PLOT_SUFFIXES = (".png", ".pdf", ".svg")
NAME_MAX = 255


def plot_file(text: str) -> Path:
    """argparse type: a figure to be written (``.png``, ``.pdf`` or ``.svg``), checked before any work:
    names of at most 255 bytes and a writable place (missing directories are created, the file is
    opened for appending and removed again if it did not exist)."""
    path = Path(text)
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise argparse.ArgumentTypeError(
            f"{text!r}: allowed a figure file ending in {', '.join(PLOT_SUFFIXES)}"
        )
    _short_names(text)
    path = output_file_anywhere(text)
    existed = path.exists()
    try:
        path.absolute().parent.mkdir(parents=True, exist_ok=True)  # created now rather than after the work
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed a writable file ({exc.strerror})") from None
    if not existed:
        path.unlink()
    return path


def output_directory(text: str) -> Path:
    """argparse type: a directory that exists and is writable, or that can be created (a missing one
    is created and removed again, so a place where the permissions allow it but the file system does
    not, such as ``/proc``, is refused here rather than after the work)."""
    path = Path(text)
    _short_names(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is an existing file: allowed a directory")
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: allowed a directory path ({existing} is a file)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(
            f"{text!r}: allowed a writable directory ({existing} is not writable)"
        )
    if not path.exists():
        made = [path.absolute()]
        while made[-1].parent != existing.absolute() and made[-1].parent != made[-1]:
            made.append(made[-1].parent)
        try:
            path.mkdir(parents=True)
        except OSError as exc:
            raise argparse.ArgumentTypeError(
                f"{text!r}: allowed a directory that can be created ({exc.strerror})"
            ) from None
        for directory in made:  # the deepest first: only what was created here
            with contextlib.suppress(OSError):
                directory.rmdir()
    return path


def input_file(text: str) -> Path:
    """argparse type: an existing, readable regular file."""
    path = Path(text)
    if not path.is_file():
        reason = "no such file"
        if path.exists():
            reason = "a directory" if path.is_dir() else "not a regular file"
        raise argparse.ArgumentTypeError(f"{text!r}: allowed an existing regular file ({reason})")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text!r}: allowed a readable file (permission denied)")
    return path


# --------------------------------------------------------------------------- resources
def gib(size: float) -> str:
    return f"{size / 2**30:.3g} GiB"


# --------------------------------------------------------------------------- output
MAX_INPUT_BYTES = 64 << 20
"""Largest JSON document a command reads (certificates, reports, matrices): 64 MiB."""


def read_text_file(path: str | Path, parameter: str, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of ``path``, refused up front (:class:`InvalidParameter` naming ``parameter``) when
    it cannot be read, is a directory, is not UTF-8 or holds more than ``limit`` bytes (read no further)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InvalidParameter(parameter, str(path), f"a readable file ({exc.strerror})") from None
    if len(data) > limit:
        raise InvalidParameter(parameter, str(path), f"a file of at most {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidParameter(
            parameter, str(path), f"a UTF-8 text file (byte {exc.start} is not UTF-8)"
        ) from None


def emit(
    args: argparse.Namespace,
    payload: dict[str, Any],
    rows: Sequence[tuple[str, Any]],
    *,
    record: str | None = None,
) -> None:
    """Print ``payload`` as one JSON object (``--json``) or ``rows`` as a two-column table.

    ``record``: a :mod:`dpcert.provenance` format; the JSON object then carries the provenance record
    (version, command, package versions, machine) under ``"provenance"``.
    """
    if getattr(args, "json", False):
        if record is not None:
            with provenance.command_line(getattr(args, "argv", ["dpcert"])):
                made = provenance.record(
                    record, seeds=provenance.seeds(None), clock=getattr(args, "clock", None)
                )
                payload = {**payload, provenance.KEY: made}
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


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def run_command(args: argparse.Namespace) -> int:
    """Run the handler; map errors to exit codes with one line on stderr.

    ``BudgetExceeded`` (a refused charge) exits 1; a ledger's storage error (a server out of reach, a
    missing privilege, a full disk) or a Dask scheduler out of reach or without workers exits 3 with
    one line; any other dpcert error (bad input, a
    certificate that does not verify, an unmet precondition) exits 2; anything else is an internal
    error (3), whose traceback is printed only with ``--debug``.
    """
    try:
        return int(args.handler(args))
    except BudgetExceeded as exc:
        sys.stderr.write(f"dpcert: refused: {_one_line(exc)}\n")
        return EXIT_VIOLATED
    except (LedgerStorageError, SchedulerUnavailable, PluginError) as exc:
        sys.stderr.write(f"dpcert: error: {_one_line(exc)}\n")
        return EXIT_INTERNAL
    except DPCertError as exc:
        sys.stderr.write(f"dpcert: error: {_one_line(exc)}\n")
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        sys.stderr.write("dpcert: interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the contract: every other failure is exit 3
        if getattr(args, "debug", False):
            traceback.print_exc(file=sys.stderr)
        hint = "" if getattr(args, "debug", False) else " (run with --debug for the traceback)"
        sys.stderr.write(f"dpcert: internal error: {type(exc).__name__}: {_one_line(exc)}{hint}\n")
        return EXIT_INTERNAL


def plot_certificate(args: argparse.Namespace, certificate: Any) -> None:
    """``--plot FILE.png``: draw ``certificate``'s privacy profile there (after the result is printed)."""
    if getattr(args, "plot", None) is not None:
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        plot_profile(certificate, args.plot)
        if not getattr(args, "json", False):
            sys.stdout.write(f"profile plot written to {args.plot}\n")


LEDGER_URL_PREFIXES = ("postgresql://", "postgres://")


def ledger_location(text: str) -> Path | str:
    """argparse type: a ledger file path, or a ``postgresql://`` URL (kept as text)."""
    return text if text.startswith(LEDGER_URL_PREFIXES) else Path(text)


def ledger_output(text: str) -> Path | str:
    """argparse type: a ledger to charge: a writable file path, or a ``postgresql://`` URL."""
    return text if text.startswith(LEDGER_URL_PREFIXES) else output_file(text)
