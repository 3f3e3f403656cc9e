"""Start-up time of the ``dpcert`` console script against ``python -c "import numpy"``.

Run as ``python benchmarks/startup.py [--repeats N]`` with the environment's ``bin`` directory holding
the ``dpcert`` script next to this interpreter.  The commands are run interleaved (one of each per
round, in turn) so that they share the same load; the table reports the median and the best wall time
of each and their ratios to the numpy import.  Prints a markdown section for benchmarks/RESULTS.md.
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


def commands() -> dict[str, list[str]]:
    script = str(Path(sys.executable).with_name("dpcert"))
    return {
        'python -c "pass"': [sys.executable, "-c", "pass"],
        'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
        "dpcert --version": [script, "--version"],
        "dpcert --help": [script, "--help"],
        "dpcert calibrate laplace --epsilon 1": [script, "calibrate", "laplace", "--epsilon", "1"],
    }


def wall_time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=21)
    repeats = parser.parse_args().repeats
    runs = commands()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for command in runs.values():  # warm the file cache once
        wall_time(command)
    load_before = os.getloadavg()
    for _ in range(repeats):
        for name, command in runs.items():
            times[name].append(wall_time(command))
    load_after = os.getloadavg()
    anchor = times['python -c "import numpy"']
    anchor_median, anchor_best = statistics.median(anchor), min(anchor)
    print("## CLI start-up\n")
    print(f"Command: `python benchmarks/startup.py --repeats {repeats}`  ")
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end.  "
    )
    print(
        f"The commands ran interleaved, {repeats} rounds (one of each per round); wall time per "
        'process, ratio to `python -c "import numpy"` side by side (goal for `--version` and '
        "`--help`: at most 3x).\n"
    )
    print("| command | median s | best s | median / numpy import | best / numpy import |")
    print("|---|---:|---:|---:|---:|")
    for name, values in times.items():
        median, best = statistics.median(values), min(values)
        print(
            f"| `{name}` | {median:.3f} | {best:.3f} | {median / anchor_median:.2f} | "
            f"{best / anchor_best:.2f} |"
        )


if __name__ == "__main__":
    main()
