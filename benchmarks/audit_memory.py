"""Peak memory of classifier-search audits, the audit's process and its forked processes together,
against the memory plan the search refuses draw counts by (``_held_bytes``).

Run as ``python benchmarks/audit_memory.py [--only NAME,...] [--samples 10000000] [--workers 1,2]
[--seed 0] [--interval 0.05]``; prints a markdown section for ``benchmarks/RESULTS.md``.

Each audit runs in a fresh interpreter (a child of this script), so one audit's freed memory does not
hide the next one's.  A thread of that interpreter reads, every ``--interval`` seconds, the
proportional set size (``Pss`` of ``/proc/PID/smaps_rollup``: every page divided among the processes
that share it, so memory a forked process shares with its parent counts once) of the interpreter and
of every process descended from it, and keeps the largest sum.  The interpreter's own size before the
audit (Python, NumPy, SciPy) is subtracted: what remains is the audit's.  Samples can miss a peak
shorter than the interval, so the measured peaks are lower bounds on the true ones.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time

import numpy as np

from dpcert.audits import CandidatePairs, ClassifierSearch, audit
from dpcert.audits.benchmark_mechanisms import benchmark_mechanism
from dpcert.audits.classifier_search import HELD_COPIES, _held_bytes

NAMES = (
    "DPSniper-LaplaceParallel",
    "DPSniper-Rappor",
    "DPSniper-SVT3",
    "DPSniper-NumericalSVT",
    "DPSniper-SVT34Parallel",
)
GIB = float(1 << 30)


def _pss(pid: int) -> int:
    """The process's proportional set size in bytes (0 once it has ended)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return 0
    return 0


def _descendants(root: int) -> list[int]:
    """The pids of every process descended from ``root`` (parent links read from ``/proc/PID/stat``)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        parents[int(entry)] = int(text[text.rindex(")") + 2 :].split()[1])
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


class PeakSampler:
    """Samples the summed Pss of this process and its descendants in a thread; ``peak`` in bytes and
    ``processes`` at the peak."""

    def __init__(self, interval: float) -> None:
        self.interval, self.peak, self.processes, self.samples = interval, 0, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            children = _descendants(me)
            total = _pss(me) + sum(_pss(pid) for pid in children)
            if total > self.peak:
                self.peak, self.processes = total, 1 + len(children)
            self.samples += 1
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measure(name: str, samples: int, workers: int, seed: int, interval: float) -> dict:
    """One audit in this process, its peak memory and its plan."""
    entry = benchmark_mechanism(name)
    pairs = CandidatePairs(entry.pairs(), relation=entry.relation)
    search = ClassifierSearch(pairs, workers=workers)
    probe = np.asarray(entry.mechanism(entry.pairs()[0][0], np.random.default_rng(0), size=1))
    width = int(np.prod(probe.shape[1:], dtype=np.int64)) if probe.ndim > 1 else 1
    before = _pss(os.getpid())
    start = time.perf_counter()
    with PeakSampler(interval) as sampler:
        report = audit(
            entry.mechanism, epsilon=entry.claimed_epsilon, search=search, samples=samples, seed=seed
        )
    return {
        "name": name,
        "samples": samples,
        "workers": workers,
        "width": width,
        "plan_bytes": _held_bytes(search, samples, width),
        "peak_bytes": sampler.peak - before,
        "processes_at_peak": sampler.processes,
        "baseline_bytes": before,
        "readings": sampler.samples,
        "seconds": time.perf_counter() - start,
        "bound": report.epsilon_lower_bound,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(NAMES))
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # NAME:WORKERS, run in a fresh interpreter
    args = parser.parse_args()
    if args.one:
        name, workers = args.one.rsplit(":", 1)
        print(json.dumps(measure(name, args.samples, int(workers), args.seed, args.interval)))
        return
    rows = []
    for name in args.only.split(","):
        for workers in (int(w) for w in args.workers.split(",")):
            command = [
                sys.executable,
                __file__,
                "--one",
                f"{name}:{workers}",
                "--samples",
                str(args.samples),
                "--seed",
                str(args.seed),
                "--interval",
                str(args.interval),
            ]
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            print(json.dumps(result), file=sys.stderr, flush=True)
            rows.append(result)
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}; load average {os.getloadavg()[0]:.2f} at the end."
    )
    print()
    print(f"Command: `python benchmarks/audit_memory.py {' '.join(sys.argv[1:])}`")
    print()
    print(
        f"| mechanism | draws per input | width | workers | plan ({HELD_COPIES:g} copies + chunks) "
        "| peak, all processes (Pss) | of the plan | processes at the peak | time | bound |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['name']} | {r['samples']:.0e} | {r['width']} | {r['workers']} "
            f"| {r['plan_bytes'] / GIB:.2f} GiB | {r['peak_bytes'] / GIB:.2f} GiB "
            f"| {r['peak_bytes'] / r['plan_bytes']:.0%} | {r['processes_at_peak']} | {r['seconds']:.0f} s "
            f"| {r['bound']:.4f} |"
        )


if __name__ == "__main__":
    main()
