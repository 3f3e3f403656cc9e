"""Start-up time of the ``dpcert`` console script against ``python -c "import numpy"``.

Run as ``python benchmarks/startup.py [--repeats N]`` with the environment's ``bin`` directory holding
the ``dpcert`` script next to this interpreter.  The commands are run interleaved (one of each per
round, in turn) so that they share the same load; the table reports, per process, the median and the
best wall time and the median CPU time (user + system, from ``os.wait4``) of each, and their ratios to
the numpy import (the anchor, run in the same rounds).  The last row runs ``calibrate gaussian`` in an
interpreter where ``import numba`` fails, as on an installation without the optional extra ``fast``:
its difference to the row above is what importing numba costs every command.  The row importing
numpy and ``scipy.special`` shows what ``calibrate gaussian`` would cost if its exact Gaussian profile
still took log Φ from SciPy (it uses :func:`dpcert.theory.normal.log_ndtr`).  Prints a markdown
section for benchmarks/RESULTS.md, ending with the ratios of ``calibrate gaussian`` and ``--version``
to the numpy import against the goal of at most 2x.

``--bytecode-cache DIR`` runs every process with ``PYTHONPYCACHEPREFIX=DIR`` and bytecode writing on
(as an ordinary installation, which keeps compiled modules); without it the environment is used as
it is (with ``PYTHONDONTWRITEBYTECODE=1`` every dpcert module is compiled from source in every
process).  ``--before SRC`` adds a row running ``calibrate gaussian`` from another source tree
(``PYTHONPATH=SRC``, e.g. a ``git worktree`` of an earlier commit) in the same rounds.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ANCHOR = 'python -c "import numpy"'
FLOOR = 'python -c "import numpy, scipy.special"'
"""The numpy import plus ``scipy.special``: the floor ``calibrate gaussian`` had while its exact Gaussian
profile took ``log_ndtr`` from SciPy (shown for comparison)."""
GOAL = 2.0
"""Goal: ``calibrate gaussian`` (whole process) at most twice ``python -c "import numpy"``."""
CALIBRATE = ["calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5"]
_WITHOUT_NUMBA = (
    f"import sys; sys.modules['numba'] = None; from dpcert.cli import main; sys.exit(main({CALIBRATE!r}))"
)


def commands(before: str | None) -> dict[str, list[str]]:
    script = str(Path(sys.executable).with_name("dpcert"))
    rows = {
        'python -c "pass"': [sys.executable, "-c", "pass"],
        ANCHOR: [sys.executable, "-c", "import numpy"],
        FLOOR: [sys.executable, "-c", "import numpy, scipy.special"],
        "dpcert --version": [script, "--version"],
        "dpcert --help": [script, "--help"],
        "dpcert " + " ".join(CALIBRATE): [script, *CALIBRATE],
        "dpcert calibrate laplace --epsilon 1": [script, "calibrate", "laplace", "--epsilon", "1"],
        "dpcert " + " ".join(CALIBRATE) + " (numba not importable)": [sys.executable, "-c", _WITHOUT_NUMBA],
    }
    if before is not None:
        rows["dpcert " + " ".join(CALIBRATE) + " (before: " + before + ")"] = [
            "env",
            f"PYTHONPATH={before}",
            sys.executable,
            "-c",
            f"import sys; from dpcert.cli import main; sys.exit(main({CALIBRATE!r}))",
        ]
    return rows


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one process running ``command``."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{command} exited with {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--bytecode-cache", metavar="DIR", help="PYTHONPYCACHEPREFIX for every process")
    parser.add_argument("--before", metavar="SRC", help="source tree of an earlier dpcert for one more row")
    options = parser.parse_args()
    repeats = options.repeats
    runs = commands(options.before)
    env = dict(os.environ)
    if options.bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = options.bytecode_cache
    bytecode = (
        f"compiled modules kept in `PYTHONPYCACHEPREFIX={options.bytecode_cache}`"
        if options.bytecode_cache
        else f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}"
    )
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for command in runs.values():  # warm the file cache once
        run_once(command, env)
    load_before = os.getloadavg()
    for _ in range(repeats):
        for name, command in runs.items():
            seconds, cpu_seconds = run_once(command, env)
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)
    load_after = os.getloadavg()
    anchor_wall, anchor_best = statistics.median(wall[ANCHOR]), min(wall[ANCHOR])
    anchor_cpu = statistics.median(cpu[ANCHOR])
    print("## CLI start-up: calibrate gaussian against the numpy import\n")
    print(f"Command: `python benchmarks/startup.py {' '.join(sys.argv[1:])}`; {bytecode}.  ")
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.platform()}; load average {', '.join(f'{v:.2f}' for v in load_before)} at the "
        f"start, {', '.join(f'{v:.2f}' for v in load_after)} at the end.  "
    )
    print(
        f"The commands ran interleaved, {repeats} rounds (one of each per round); per process: wall "
        f"time (median, best) and CPU time (user + system, median), with ratios to `{ANCHOR}` run in "
        "the same rounds (goal for `calibrate gaussian`: at most 2x).\n"
    )
    print(
        "| command | median wall s | best wall s | median CPU s | wall / numpy | best / numpy | CPU / numpy |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in runs:
        median, best = statistics.median(wall[name]), min(wall[name])
        cpu_median = statistics.median(cpu[name])
        print(
            f"| `{name}` | {median:.3f} | {best:.3f} | {cpu_median:.3f} | {median / anchor_wall:.2f} | "
            f"{best / anchor_best:.2f} | {cpu_median / anchor_cpu:.2f} |"
        )
    print()
    for name in ("dpcert " + " ".join(CALIBRATE), "dpcert --version"):
        ratio = statistics.median(wall[name]) / anchor_wall
        verdict = "met" if ratio <= GOAL else "not met"
        print(
            f"`{name}`: {ratio:.2f}x the numpy import (median wall), {min(wall[name]) / anchor_best:.2f}x "
            f"(best), {statistics.median(cpu[name]) / anchor_cpu:.2f}x (median CPU); goal <= {GOAL:g}x: "
            f"{verdict}.  "
        )


if __name__ == "__main__":
    main()
