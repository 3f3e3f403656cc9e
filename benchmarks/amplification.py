"""Amplification by shuffling: dpcert's bounds side by side with Wang et al.'s code, and inverse speed.

Run as ``python benchmarks/amplification.py``; prints the markdown section for benchmarks/RESULTS.md.

The anchor is ``amplificationUB`` of github.com/wangsw/PrivacyAmplification (Wang et al. 2024,
"Privacy amplification via shuffling: unified, simplified, and tightened"), taken from a local git
mirror (``WANG_REPO``, default the fetched snapshot) into a temporary directory and imported from
there: it is never a dependency of dpcert.  ``--calibrate-only`` times only the generic
``largest_local_epsilon`` (also runs against an older dpcert put first on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from types import ModuleType

from dpcert.theory import amplification as amp
from dpcert.theory.randomizer_matrix import (
    randomized_response_matrix,
    randomizer_matrix,
    unary_encoding_matrix,
)

DELTA = 1e-6
ROWS = ((1.0, 10_000), (4.0, 1_000_000), (2.0, 100_000))  # (epsilon0, n)
DEFAULT_MIRROR = "/work/.mirror/wangsw+PrivacyAmplification/repo"
CALIBRATIONS = ((1.0, 1e-6, 1_000), (0.5, 1e-6, 10_000), (0.1, 1e-6, 100_000), (0.05, 1e-6, 1_000_000))


def load_anchor() -> tuple[ModuleType | None, str]:
    """Wang et al.'s ``unifiedamplification`` module and the commit it was taken from."""
    mirror = os.environ.get("WANG_REPO", DEFAULT_MIRROR)
    try:
        commit = subprocess.run(
            ["git", "-C", mirror, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        source = subprocess.run(
            ["git", "-C", mirror, "show", "HEAD:unifiedamplification.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        return None, f"not available ({error})"
    directory = tempfile.mkdtemp(prefix="wang-anchor-")
    path = os.path.join(directory, "unifiedamplification.py")
    with open(path, "w") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location("unifiedamplification", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, commit


def timed(function, *args, **kwargs) -> tuple[float, float]:
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - start


def calibrate_rows() -> list[str]:
    lines = [
        "| target (epsilon, delta) | n | largest epsilon0 (generic, numeric) | seconds |",
        "|---|---:|---:|---:|",
    ]
    for epsilon, delta, users in CALIBRATIONS:
        epsilon0, seconds = timed(amp.largest_local_epsilon, epsilon, delta, users)
        lines.append(f"| ({epsilon}, {delta:g}) | {users} | {epsilon0:.6f} | {seconds:.3f} |")
    return lines


def geometric_matrix(epsilon0: float, size: int) -> list[list[float]]:
    """Truncated geometric randomizer on {0..size-1}: R(x, y) ∝ exp(-(eps0/2)|x - y|/(size - 1))."""
    scale = epsilon0 / (2.0 * (size - 1))
    rows = []
    for x in range(size):
        weights = [math.exp(-scale * abs(x - y)) for y in range(size)]
        total = sum(weights)
        rows.append([w / total for w in weights])
    return rows


def stated_randomizers() -> list[tuple[str, list[list[float]]]]:
    return [
        ("binary randomized response, eps0 = 2", randomized_response_matrix(2.0, 2)),
        ("10-ary randomized response, eps0 = 2", randomized_response_matrix(2.0, 10)),
        ("optimized unary encoding, k = 8, eps0 = 2", unary_encoding_matrix(0.5, 1.0 / (math.e**2 + 1), 8)),
        ("truncated geometric on 16 values", geometric_matrix(2.0, 16)),
    ]


def stated_rows() -> list[str]:
    """epsilon at DELTA of randomizers stated by their matrix, against the generic and RR clone values."""
    lines = [
        "| randomizer (matrix) | eps0 | clone probability: generic e^-eps0 / stated / RR 2/(e^eps0+1) "
        "| n | generic (FMT20) eps | stated-matrix eps | RR clone eps (Wang et al. general row) | s |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for name, rows in stated_randomizers():
        stated = randomizer_matrix(rows)
        epsilon0 = stated.epsilon0
        clones = (
            f"{math.exp(-epsilon0):.4f} / {stated.clone_probability:.4f} / {2 / (math.exp(epsilon0) + 1):.4f}"
        )
        for users in (10_000, 1_000_000):
            generic = amp.shuffled_epsilon(DELTA, epsilon0, users)
            mine, seconds = timed(
                amp.shuffled_epsilon, DELTA, epsilon0, users, randomizer="matrix", matrix=rows
            )
            clone = amp.shuffled_epsilon(DELTA, epsilon0, users, randomizer="k-rr", categories=3)
            lines.append(
                f"| {name} | {epsilon0:.4f} | {clones} | {users} | {generic:.5f} | {mine:.5f} | {clone:.5f} "
                f"| {seconds:.2f} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calibrate-only", action="store_true")
    parser.add_argument("--stated-only", action="store_true", help="only the stated-matrix table")
    parser.add_argument("--anchor-iterations", type=int, default=12, help="T of amplificationUB (theirs: 12)")
    args = parser.parse_args()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    if args.stated_only:
        print(f"load {load}")
        print("\n".join(stated_rows()))
        return
    if args.calibrate_only:
        print(f"dpcert from {os.path.dirname(amp.__file__)}; load {load}")
        print("\n".join(calibrate_rows()))
        return

    lines = ["## Amplification (benchmarks/amplification.py)", ""]
    lines.append(
        f"Command: `python benchmarks/amplification.py`; machine: {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; load average at start: {load}."
    )
    anchor, commit = load_anchor()
    lines.append(
        f"Anchor: wangsw/PrivacyAmplification `amplificationUB` (commit {commit[:12]}), run in this "
        f"process with T = {args.anchor_iterations} bisection steps (its own default), general-mechanism "
        "parameters p = q = e^eps0, beta = (e^eps0 - 1)/(e^eps0 + 1)."
        if anchor is not None
        else f"Anchor: wangsw/PrivacyAmplification {commit}; compared with its published values only."
    )
    lines.append("Seconds are wall time (`time.perf_counter`) of one call in this process, for both.")
    lines.append("")
    lines.append(
        "| (eps0, n) | anchor eps | anchor s | dpcert stronger clone (binary/k-ary RR) eps | s "
        "| ratio to anchor | dpcert generic eps (FMT20) | s | exact binary RR eps |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for epsilon0, users in ROWS:
        if anchor is not None:
            p, beta, q0, q1 = anchor.computeUBParameters(epsilon0, None, None)
            theirs, their_seconds = timed(
                anchor.amplificationUB, p, beta, q0, q1, users, DELTA, args.anchor_iterations
            )
            theirs_text, seconds_text = f"{theirs:.4f}", f"{their_seconds:.2f}"
        else:
            theirs, theirs_text, seconds_text = math.nan, "n/a", "n/a"
        clone, clone_seconds = timed(
            amp.shuffled_epsilon, DELTA, epsilon0, users, randomizer="k-rr", categories=3
        )
        generic, generic_seconds = timed(amp.shuffled_epsilon, DELTA, epsilon0, users)
        exact = (
            f"{amp.shuffled_epsilon(DELTA, epsilon0, users, randomizer='binary-rr'):.4f}"
            if users <= amp.BINARY_RR_EXACT_MAX_USERS
            else "(n > 1000: not computed)"
        )
        lines.append(
            f"| ({epsilon0:g}, {users}) | {theirs_text} | {seconds_text} | {clone:.5f} | {clone_seconds:.2f} "
            f"| {clone / theirs:.4f} | {generic:.4f} | {generic_seconds:.2f} | {exact} |"
        )
    lines.append("")
    lines.append("Exact binary randomized response against the bounds (delta = 1e-6, epsilon at delta):")
    lines.append("")
    lines.append("| (eps0, n) | exact binary RR | stronger clone | generic FMT20 | exact s |")
    lines.append("|---|---:|---:|---:|---:|")
    for epsilon0, users in ((1.0, 1000), (2.0, 1000), (4.0, 1000), (2.0, 100)):
        amp._binary_rr_others.cache_clear()
        exact, exact_seconds = timed(amp.shuffled_epsilon, DELTA, epsilon0, users, randomizer="binary-rr")
        clone = amp.shuffled_epsilon(DELTA, epsilon0, users, randomizer="k-rr", categories=3)
        generic = amp.shuffled_epsilon(DELTA, epsilon0, users)
        lines.append(
            f"| ({epsilon0:g}, {users}) | {exact:.4f} | {clone:.4f} | {generic:.4f} | {exact_seconds:.2f} |"
        )
    lines.append("")
    lines.append("Randomizers stated by their matrix (`--randomizer matrix --matrix FILE`), delta = 1e-6:")
    lines.append("")
    lines.extend(stated_rows())
    lines.append("")
    lines.append("`calibrate shuffle` inverse, generic randomizer (`largest_local_epsilon`, in process):")
    lines.append("")
    lines.extend(calibrate_rows())
    lines.append("")
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    lines.append(f"Load average at the end: {load}.")
    print("\n".join(lines))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
