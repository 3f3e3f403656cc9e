"""Benchmark: ledger charges per second, one writer and four concurrent writer processes, and the
cost of one user's 1000th Laplace charge under a budget.

Run as ``python benchmarks/ledger.py [--anchor COMMIT]``; prints the markdown section for
benchmarks/RESULTS.md.  ``python benchmarks/ledger.py --signing --anchor COMMIT`` prints only the schema-4
ledger (chained entries, unsigned and with signed heads) beside the ledger of an earlier commit.
``python benchmarks/ledger.py --backends [--postgres URL]`` prints only the
SQLite and PostgreSQL ledgers side by side (without a URL it starts a temporary PostgreSQL server
from the installed ``initdb``/``pg_ctl``, with the default, durable settings).  A "charge" here is
one user's participation (one row); a call charges many users in one transaction.  The anchor is
the ledger module of an earlier commit (default ``fb83ef1``, before the incremental budget check),
loaded from git and run side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import importlib.util
import multiprocessing
import os
import platform
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dpcert import Guarantee, signatures
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate

USERS_PER_CALL = 100_000
CALLS = 5
SMALL_CALLS = 300
WRITERS = 4


CERTIFICATE = gaussian_certificate(50.0, delta=1e-7)
LAPLACE = laplace_certificate(1000.0)  # epsilon 0.001 per charge
LAPLACE_BUDGET = Guarantee(10.0, 1e-5)
LAPLACE_CHARGES = 1000
ANCHOR_REPEATS = 3
REPOSITORY = Path(__file__).resolve().parents[1]


def load_anchor(commit: str):
    """The ledger module as of ``commit`` (read with ``git show``), imported under another name."""
    source = subprocess.run(
        ["git", "-C", str(REPOSITORY), "show", f"{commit}:src/dpcert/ledger/api.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    directory = Path(tempfile.mkdtemp())
    path = directory / "anchor_ledger.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("anchor_ledger", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def laplace_history(ledger_class, path: Path, durable: bool) -> dict[str, float]:
    """One user charged LAPLACE_CHARGES Laplace certificates, the budget checked on every charge."""
    with ledger_class(path, durable=durable) as ledger:
        ledger.set_budget(None, LAPLACE_BUDGET)
        seconds = []
        for index in range(LAPLACE_CHARGES):
            start = time.perf_counter()
            ledger.charge([1], LAPLACE, run_id=f"l-{index}")
            seconds.append(time.perf_counter() - start)
    return {
        "last": seconds[-1],
        "median": statistics.median(seconds),
        "mean": statistics.fmean(seconds),
        "max": max(seconds),
    }


def laplace_nth_charge(ledger_class, path: Path, durable: bool) -> float:
    """Median seconds of the 1000th, 1001st, … charge (history written without a budget first)."""
    with ledger_class(path, durable=durable) as ledger:
        for index in range(LAPLACE_CHARGES - 1):
            ledger.charge([1], LAPLACE, run_id=f"l-{index}")
        ledger.set_budget(None, LAPLACE_BUDGET)
        seconds = []
        for index in range(ANCHOR_REPEATS):
            start = time.perf_counter()
            ledger.charge([1], LAPLACE, run_id=f"n-{index}")
            seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


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


def laplace_section(root: Path, anchor_commit: str) -> None:
    anchor = load_anchor(anchor_commit).Ledger
    print(f"\n#### A user's {LAPLACE_CHARGES}th Laplace charge (budget checked on every charge)\n")
    print(
        f"One user, {LAPLACE_CHARGES} charges of Laplace epsilon = {LAPLACE.epsilon:g} under a default "
        f"budget ({LAPLACE_BUDGET.epsilon:g}, {LAPLACE_BUDGET.delta:g}), method `best`, one process. "
        f"Anchor: the ledger of commit `{anchor_commit}` (re-composes the history on every charge), "
        f"timed on charges {LAPLACE_CHARGES}..{LAPLACE_CHARGES + ANCHOR_REPEATS - 1} (median) after "
        f"writing the first {LAPLACE_CHARGES - 1} without a budget.\n"
    )
    print("| ledger | synchronous | 1000th charge (ms) | median (ms) | mean over 1000 (ms) | slowest (ms) |")
    print("|---|---|---|---|---|---|")
    for durable in (True, False):
        mode = "FULL" if durable else "NORMAL"
        anchor_seconds = laplace_nth_charge(anchor, root / f"anchor-{mode}.db", durable)
        print(f"| anchor `{anchor_commit}` | {mode} | {1e3 * anchor_seconds:.1f} | | | |")
        ours = laplace_history(Ledger, root / f"ours-{mode}.db", durable)
        print(
            f"| this ledger | {mode} | {1e3 * ours['last']:.2f} | {1e3 * ours['median']:.2f} | "
            f"{1e3 * ours['mean']:.2f} | {1e3 * ours['max']:.0f} |"
        )
        ours_nth = laplace_nth_charge(Ledger, root / f"ours-nth-{mode}.db", durable)
        print(f"| this ledger, fresh process at charge 1000 | {mode} | {1e3 * ours_nth:.1f} | | | |")


CHAIN_REPEATS = 5


class UnchainedLedger(Ledger):
    """This ledger with the hash chain switched off (NULL hashes): isolates the cost of hashing."""

    def _chain_blob(self, head, entry, ids):  # noqa: ANN001, ANN201
        return None


def batched_throughput(ledger_class, path: Path) -> tuple[float, float]:
    """(charges per wall second, charges per CPU second) of CALLS budget-checked calls."""
    with ledger_class(path) as ledger:
        ledger.set_budget(None, Guarantee(10.0, 1e-5))
        users = np.arange(USERS_PER_CALL)
        wall, cpu = time.perf_counter(), time.process_time()
        for call in range(CALLS):
            ledger.charge(users, CERTIFICATE, run_id=f"call-{call}")
        return (
            CALLS * USERS_PER_CALL / (time.perf_counter() - wall),
            CALLS * USERS_PER_CALL / (time.process_time() - cpu),
        )


def chain_section(root: Path, anchor_commit: str) -> None:
    variants = [
        (f"anchor `{anchor_commit}` (no chain)", load_anchor(anchor_commit).Ledger),
        ("this ledger, hash chain off (ablation)", UnchainedLedger),
        ("this ledger (hash-chained rows)", Ledger),
    ]
    results: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in variants}
    for repeat in range(CHAIN_REPEATS):  # interleaved, so that load changes hit every variant alike
        for index, (name, ledger_class) in enumerate(variants):
            results[name].append(batched_throughput(ledger_class, root / f"chain-{repeat}-{index}.db"))
    print("\n#### Hash chain: batched charge throughput side by side\n")
    print(
        f"{CALLS} calls of {USERS_PER_CALL:,} users each, default budget checked, synchronous=FULL; "
        f"variants interleaved, best of {CHAIN_REPEATS} (wall and CPU seconds measured separately).\n"
    )
    print("| ledger | charges per second (wall) | charges per CPU second | CPU throughput vs anchor |")
    print("|---|---|---|---|")
    anchor_cpu = max(cpu for _, cpu in results[variants[0][0]])
    for name, _ in variants:
        wall = max(w for w, _ in results[name])
        cpu = max(c for _, c in results[name])
        print(f"| {name} | {wall:,.0f} | {cpu:,.0f} | {cpu / anchor_cpu:.2f} |")


SIGNING_REPEATS = 3
SMALL_REPEATS = 3
MILLION = 1_000_000


def one_call_seconds(ledger_class, path: Path, users: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one budget-checked charge of ``users`` users (durable)."""
    with ledger_class(path) as ledger:
        ledger.set_budget(None, Guarantee(10.0, 1e-5))
        ids = np.arange(users)
        wall, cpu = time.perf_counter(), time.process_time()
        ledger.charge(ids, CERTIFICATE, run_id="million")
        return time.perf_counter() - wall, time.process_time() - cpu


def small_call_seconds(ledger_class, path: Path) -> tuple[float, float]:
    """(wall, CPU) milliseconds per one-user charge (budget checked, synchronous=NORMAL: the
    per-transaction work rather than the fsync)."""
    with ledger_class(path, durable=False) as ledger:
        ledger.set_budget(None, Guarantee(10.0, 1e-5))
        wall, cpu = time.perf_counter(), time.process_time()
        for call in range(SMALL_CALLS):
            ledger.charge([call % 50], CERTIFICATE, run_id=f"small-{call}")
        return 1e3 * (time.perf_counter() - wall) / SMALL_CALLS, 1e3 * (
            time.process_time() - cpu
        ) / SMALL_CALLS


def verify_seconds(ledger_class, path: Path, **options) -> tuple[float, float]:
    """(wall, CPU) seconds of one verification."""
    with ledger_class(path, readonly=True) as ledger:
        wall, cpu = time.perf_counter(), time.process_time()
        report = ledger.verify(**options)
        seconds = time.perf_counter() - wall, time.process_time() - cpu
    assert report.ok, report.problem
    return seconds


def signing_section(root: Path, anchor_commit: str) -> None:
    """Schema version 4 (chained entries, signed heads) against the ledger of ``anchor_commit``."""
    key = signatures.generate_private_key()
    anchor = load_anchor(anchor_commit).Ledger

    class SignedLedger(Ledger):
        def __init__(self, path, **options):  # noqa: ANN001, ANN003
            super().__init__(path, signing_key=key, **options)

    variants = [
        (f"anchor `{anchor_commit}` (schema 3: chained rows only)", anchor),
        ("this ledger, unsigned (schema 4: chained entries)", Ledger),
        ("this ledger, signed heads (Ed25519)", SignedLedger),
    ]
    results: dict[str, dict[str, list[tuple[float, float]]]] = {name: {} for name, _ in variants}
    for repeat in range(SIGNING_REPEATS):  # interleaved, so that load changes hit every variant alike
        for index, (name, ledger_class) in enumerate(variants):
            out = results[name]
            batched = root / f"sign-{repeat}-{index}.db"
            out.setdefault("batched", []).append(batched_throughput(ledger_class, batched))
            options = {"public_key": key.public_key()} if ledger_class is SignedLedger else {}
            out.setdefault("verify", []).append(verify_seconds(ledger_class, batched, **options))
            for small_repeat in range(SMALL_REPEATS):
                small = root / f"small-{repeat}-{small_repeat}-{index}.db"
                out.setdefault("small", []).append(small_call_seconds(ledger_class, small))
            million = root / f"million-{repeat}-{index}.db"
            out.setdefault("million", []).append(one_call_seconds(ledger_class, million, MILLION))
    print("\n#### Chained entries and signed heads: side by side\n")
    print(
        f"Batched: {CALLS} calls of {USERS_PER_CALL:,} users, synchronous=FULL; one by one: {SMALL_CALLS} "
        f"one-user calls, synchronous=NORMAL (the per-transaction work, not the fsync); one call of "
        f"{MILLION:,} users, synchronous=FULL; verify: the batched ledger ({CALLS * USERS_PER_CALL:,} rows; "
        f"the signed one against the expected public key). Default budget checked on every charge; "
        f"variants interleaved, best of {SIGNING_REPEATS} "
        f"({SIGNING_REPEATS * SMALL_REPEATS} for one by one); "
        "wall and CPU time (this process) measured separately, CPU first.\n"
    )
    print(
        "| ledger | batched (charges per CPU s / wall s) | one by one (CPU ms / wall ms per call) | "
        f"one call of {MILLION:,} users (CPU s / wall s) | verify (CPU s / wall s) |"
    )
    print("|---|---|---|---|---|")
    for name, _ in variants:
        out = results[name]
        batched_wall = max(w for w, _ in out["batched"])
        batched_cpu = max(c for _, c in out["batched"])
        print(
            f"| {name} | {batched_cpu:,.0f} / {batched_wall:,.0f} | "
            f"{min(c for _, c in out['small']):.2f} / {min(w for w, _ in out['small']):.2f} | "
            f"{min(c for _, c in out['million']):.2f} / {min(w for w, _ in out['million']):.2f} | "
            f"{min(c for _, c in out['verify']):.2f} / {min(w for w, _ in out['verify']):.2f} |"
        )


BACKEND_REPEATS = 3


@contextlib.contextmanager
def temporary_postgres() -> Iterator[str]:
    """URL of a database on a new PostgreSQL server (Unix socket only, fsync on), stopped afterwards."""
    initdb = shutil.which("initdb") or max(glob.glob("/usr/lib/postgresql/*/bin/initdb"), default=None)
    if initdb is None:
        raise SystemExit("PostgreSQL binaries not found (apt-get install postgresql) and no --postgres URL")
    binary = Path(initdb).resolve().parent
    root = Path(tempfile.mkdtemp(prefix="dpcert-bench-pg-"))
    run_as: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        account = pwd.getpwnam("nobody")
        os.chown(root, account.pw_uid, account.pw_gid)
        run_as = ["runuser", "-u", "nobody", "--"]
    data = str(root / "data")
    try:
        subprocess.run(
            [*run_as, str(binary / "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8"],
            check=True,
            capture_output=True,
            cwd=root,
        )
        subprocess.run(
            [*run_as, str(binary / "pg_ctl"), "-D", data, "-l", str(root / "log"), "-w", "start"]
            + ["-o", f"-k {root} -c listen_addresses=''"],
            check=True,
            capture_output=True,
            cwd=root,
        )
        yield f"postgresql:///postgres?host={root}&user=postgres"
    finally:
        subprocess.run(
            [*run_as, str(binary / "pg_ctl"), "-D", data, "-m", "fast", "stop"], capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(server_url: str, name: str) -> str:
    """Create database ``name`` (dropping an older one) on the server of ``server_url``; its URL."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as db:
        db.execute(f"DROP DATABASE IF EXISTS {name}")
        db.execute(f"CREATE DATABASE {name}")
    path, _, query = server_url.partition("?")
    return f"{path.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


def backends_section(root: Path, server_url: str) -> None:
    """Charges per second on SQLite and on PostgreSQL, batched and one by one, interleaved."""
    variants = [
        ("SQLite", True, "synchronous=FULL"),
        ("PostgreSQL", True, "synchronous_commit=on"),
        ("SQLite", False, "synchronous=NORMAL"),
        ("PostgreSQL", False, "synchronous_commit=off"),
    ]
    batched: dict[int, list[float]] = {i: [] for i in range(len(variants))}
    single: dict[int, list[float]] = {i: [] for i in range(len(variants))}
    for repeat in range(BACKEND_REPEATS):  # interleaved, so that load changes hit every variant alike
        for index, (backend, durable, _) in enumerate(variants):
            for kind, results, run in (("b", batched, single_writer), ("s", single, None)):
                name = f"bench_{kind}{repeat}{index}"
                location = (
                    str(root / f"{name}.db") if backend == "SQLite" else fresh_database(server_url, name)
                )
                if run is None:
                    results[index].append(small_calls(location, durable))
                else:
                    results[index].append(run(location, True, durable))
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print("### Ledger on PostgreSQL\n")
    print(
        "Command: `python benchmarks/ledger.py --backends` (a temporary PostgreSQL server on a Unix socket)  "
    )
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores; `uptime`: {load}  ")
    print(
        f"Batched: {CALLS} calls of {USERS_PER_CALL:,} users each; one by one: {SMALL_CALLS} one-user "
        f"calls (one transaction each). Default per-user budget checked on every charge; variants "
        f"interleaved, best of {BACKEND_REPEATS}.\n"
    )
    print("| backend | commit setting | batched (charges per second) | one by one (charges per second) |")
    print("|---|---|---|---|")
    for index, (backend, _, setting) in enumerate(variants):
        print(f"| {backend} | {setting} | {max(batched[index]):,.0f} | {max(single[index]):,.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--anchor", default="fb83ef1", help="commit whose ledger is the anchor")
    parser.add_argument("--backends", action="store_true", help="only SQLite and PostgreSQL side by side")
    parser.add_argument("--postgres", help="URL of a PostgreSQL database allowed to create databases")
    parser.add_argument(
        "--signing", action="store_true", help="only chained entries and signed heads against the anchor"
    )
    args = parser.parse_args()
    if args.signing:
        load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print(f"Command: `python benchmarks/ledger.py --signing --anchor {args.anchor}`  ")
        print(f"Machine: {platform.machine()}, {os.cpu_count()} cores; `uptime` before: {load}  ")
        with tempfile.TemporaryDirectory() as directory:
            signing_section(Path(directory), args.anchor)
        load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print(f"\n`uptime` after: {load}")
        return
    if args.backends:
        with tempfile.TemporaryDirectory() as directory:
            if args.postgres:
                backends_section(Path(directory), args.postgres)
            else:
                with temporary_postgres() as url:
                    backends_section(Path(directory), url)
        return
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
    with tempfile.TemporaryDirectory() as directory:
        chain_section(Path(directory), args.anchor)
    with tempfile.TemporaryDirectory() as directory:
        laplace_section(Path(directory), args.anchor)


if __name__ == "__main__":
    main()
