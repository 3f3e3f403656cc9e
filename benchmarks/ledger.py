"""Benchmark: ledger charges per second, one writer and four concurrent writer processes.

Run as ``python benchmarks/ledger.py``; prints the markdown section for benchmarks/RESULTS.md.
A "charge" here is one user's participation (one row); a call charges many users in one transaction.
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from dpcert import Guarantee
from dpcert.accounting.ledger import Ledger
from dpcert.mechanisms.gaussian import gaussian_certificate

USERS_PER_CALL = 100_000
CALLS = 5
SMALL_CALLS = 300
WRITERS = 4


CERTIFICATE = gaussian_certificate(50.0, delta=1e-7)


def single_writer(path: Path, budget: bool, durable: bool) -> float:
    """Users charged per second by one process (CALLS calls of USERS_PER_CALL users)."""
    with Ledger(path, durable=durable) as ledger:
        if budget:
            ledger.set_budget(None, Guarantee(10.0, 1e-5))
        users = np.arange(USERS_PER_CALL)
        start = time.perf_counter()
        for call in range(CALLS):
            ledger.charge(users, CERTIFICATE, run_id=f"call-{call}")
        return CALLS * USERS_PER_CALL / (time.perf_counter() - start)


def small_calls(path: Path, durable: bool) -> float:
    """Transactions per second for one-user charges (with a budget); commits dominate (fsync)."""
    with Ledger(path, durable=durable) as ledger:
        ledger.set_budget(None, Guarantee(10.0, 1e-5))
        start = time.perf_counter()
        for call in range(SMALL_CALLS):
            ledger.charge([call % 50], CERTIFICATE, run_id=f"small-{call}")
        return SMALL_CALLS / (time.perf_counter() - start)


def writer(path: str, worker: int, barrier) -> None:
    with Ledger(path) as ledger:
        users = worker * USERS_PER_CALL // 2 + np.arange(USERS_PER_CALL)  # half shared with the next writer
        barrier.wait()
        for call in range(CALLS):
            ledger.charge(users, CERTIFICATE, run_id=f"w{worker}-{call}")


def four_writers(path: Path) -> float:
    """Users charged per second by WRITERS processes charging at once (overlapping user sets)."""
    with Ledger(path) as ledger:
        ledger.set_budget(None, Guarantee(10.0, 1e-5))
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(WRITERS + 1)
    processes = [context.Process(target=writer, args=(str(path), w, barrier)) for w in range(WRITERS)]
    for process in processes:
        process.start()
    barrier.wait()
    start = time.perf_counter()
    for process in processes:
        process.join()
    seconds = time.perf_counter() - start
    assert all(p.exitcode == 0 for p in processes)
    with Ledger(path) as ledger:
        summary = ledger.spent_summary()
        assert summary.charges == WRITERS * CALLS * USERS_PER_CALL
    return WRITERS * CALLS * USERS_PER_CALL / seconds


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        rows = [
            ("1 writer, no budget, durable (synchronous=FULL)", single_writer(root / "a.db", False, True)),
            ("1 writer, default per-user budget checked, durable", single_writer(root / "b.db", True, True)),
            (
                "1 writer, default per-user budget checked, synchronous=NORMAL",
                single_writer(root / "c.db", True, False),
            ),
            (f"{WRITERS} writer processes, budget checked, durable", four_writers(root / "d.db")),
        ]
        transactions = [small_calls(root / "e.db", True), small_calls(root / "f.db", False)]
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print("### Ledger (accounting)\n")
    print("Command: `python benchmarks/ledger.py`  ")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores; `uptime`: {load}  ")
    print(
        f"Each call charges {USERS_PER_CALL:,} users in one transaction ({CALLS} calls per writer); "
        "a charge is one user's participation.\n"
    )
    print("| setting | charges per second |")
    print("|---|---|")
    for name, rate in rows:
        print(f"| {name} | {rate:,.0f} |")
    print(f"| 1 writer, one-user calls, durable (transactions per second) | {transactions[0]:,.0f} |")
    print(
        f"| 1 writer, one-user calls, synchronous=NORMAL (transactions per second) | {transactions[1]:,.0f} |"
    )


if __name__ == "__main__":
    main()
