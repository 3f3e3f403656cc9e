"""``python -m dpcert`` imports only what the command it runs needs.

Each command line runs in a fresh interpreter under ``python -X importtime``, whose report on stderr
lists every module the process imported; the heavy libraries must not be among them for
``--version``, ``--help`` and ``calibrate gaussian`` (a property of the import graph, not a timing:
the times are in ``benchmarks/startup.py``).  A command that needs one of them (``account gaussian
--plot`` draws with matplotlib) shows that the reading can see it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpcert.cli import build_parser
from dpcert.cli._commands import COMMANDS, module_for
from dpcert.cli._common import GROUPS
from dpcert.mechanisms.gaussian import calibrate_gaussian

FORBIDDEN = ("scipy.optimize", "scipy.stats", "dp_accounting", "matplotlib", "statsmodels", "numba")


def imported(*argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The process running ``python -X importtime -m dpcert ARGV`` and the modules it imported."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONIMPORTTIME"}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dpcert", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    names = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", done.stderr, re.MULTILINE))
    return done, names


def heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == f or n.startswith(f + ".") for f in FORBIDDEN))


@pytest.mark.parametrize(
    "argv",
    [
        ("--version",),
        ("--help",),
        ("calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--research", "--json"),
    ],
)
def test_light_commands_import_no_heavy_library(argv: tuple[str, ...]) -> None:
    done, names = imported(*argv)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dpcert.cli" in names and "numpy" in names  # the report was read
    assert heavy(names) == []
    assert not any(n.startswith(("dpcert.bandits", "dpcert.audits", "dpcert.ledger")) for n in names)


_LOADED = (
    "import json, sys\n"
    "from dpcert.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
    "sys.exit(code)\n"
)


def loaded(*argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The process running the ``dpcert`` entry point on ARGV and ``sys.modules`` at its end (which,
    unlike the importtime report, includes modules loaded by ``importlib.import_module``)."""
    done = subprocess.run([sys.executable, "-c", _LOADED, *argv], capture_output=True, text=True, timeout=120)
    line = done.stderr.rsplit("\nMODULES ", 1)[-1]
    return done, set(json.loads(line))


HEAVY_DPCERT = (
    "dpcert.accounting",
    "dpcert.mechanisms.gaussian",
    "dpcert.mechanisms.secure",
    "dpcert.mechanisms.discrete_gaussian",
    "dpcert.mechanisms.discrete_laplace",
    "dpcert.mechanisms.laplace",
    "dpcert.mechanisms.shuffle",
    "dpcert.mechanisms.subsampled_gaussian",
    "dpcert.mechanisms.sampled_without_replacement",
    "dpcert.theory.pld",
    "dpcert.cli.noise",
)
"""The accountants, the mechanisms other than the Gaussian profile (the samplers, the discrete
mechanisms, DP-SGD's subsampled Gaussians) and the privacy-loss distributions: none is needed to
calibrate a Gaussian σ (the mechanisms package itself loads its names lazily)."""


def test_calibrate_gaussian_imports_no_scipy_no_metadata_and_no_heavy_dpcert_module() -> None:
    """Its exact profile takes log Φ from the standard library (dpcert.theory.normal), and its
    command module (dpcert.cli.gaussian) imports the Gaussian profile and certificates only."""
    for argv in (
        ("calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5"),
        ("calibrate", "gaussian", "--epsilon", "0.3", "--delta", "1e-9", "--compositions", "4", "--json"),
        ("--version",),
    ):
        done, names = loaded(*argv)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "numpy" in names and "dpcert.cli" in names, argv
        assert not any(n == "scipy" or n.startswith("scipy.") for n in names), argv
        # the package metadata is read for the version and for the provenance a --json record carries
        assert ("importlib.metadata" in names) == (argv == ("--version",) or "--json" in argv), argv
        assert not any(n == h or n.startswith(h + ".") for n in names for h in HEAVY_DPCERT), argv
        if argv[0] == "calibrate":
            light = {"dpcert.cli.gaussian", "dpcert.mechanisms.gaussian_profile", "dpcert.theory.normal"}
            assert light <= names


def test_the_reading_sees_the_secure_form_load_its_samplers() -> None:
    """``calibrate gaussian --secure`` loads its handler (and the integer-exact samplers) when run."""
    done, names = loaded("calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--secure", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["sampler"] == "integer-exact"
    assert {"dpcert.cli.noise", "dpcert.mechanisms.secure.samplers"} <= names


def test_calibrate_gaussian_prints_the_calibration_of_the_library() -> None:
    done, _ = imported("calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--research", "--json")
    assert json.loads(done.stdout)["sigma"] == calibrate_gaussian(1.0, 1e-5).sigma


def test_the_reading_sees_a_heavy_import(tmp_path: Path) -> None:
    """A command that draws a figure imports matplotlib, and the reading finds it."""
    plot = tmp_path / "profile.png"
    done, names = imported("account", "gaussian", "--sigma", "4", "--delta", "1e-5", "--plot", str(plot))
    assert done.returncode == 0, done.stderr[-2000:]
    assert plot.is_file()
    assert "matplotlib" in heavy(names)


def _sub_parser(parser: argparse.ArgumentParser, words: list[str]) -> argparse.ArgumentParser:
    for word in words:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def test_each_command_is_registered_by_its_declared_module_only_when_needed() -> None:
    """A command line selects the module its command is declared in; the parser built for it has that
    module's commands with their handlers and every other command by name and help line only."""
    for command in COMMANDS:
        words = [command.name] if command.group is None else [command.group, command.name]
        assert module_for([*words, "--json"], tuple(GROUPS)) == command.module
        parser = build_parser({command.module})
        for other in COMMANDS:
            other_words = [other.name] if other.group is None else [other.group, other.name]
            sub = _sub_parser(parser, other_words)
            assert sub.description == other.help
            assert (sub.get_default("handler") is not None) == (other.module == command.module), other
    assert module_for(["--debug", "--version"], tuple(GROUPS)) is None
    assert module_for(["calibrate"], tuple(GROUPS)) is None
    assert module_for(["calibrate", "no-such"], tuple(GROUPS)) is None
    assert module_for(["no-such"], tuple(GROUPS)) is None
