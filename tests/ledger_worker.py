"""Helper process for the ledger's crash and concurrency tests (run as a script, not collected).

``python ledger_worker.py stream DB``
    Charge run ``i`` (users ``(700 i + range(2000)) mod 5000``) for i = 0, 1, … forever, with a
    (never reached) default budget, printing ``i`` after each commit, until killed.
``python ledger_worker.py contend DB WORKER ATTEMPTS``
    Try ``ATTEMPTS`` charges of the shared users 0..99 plus the worker's own users
    ``1000 (WORKER + 1) + range(50)``; print ``{"worker": w, "ok": n, "refused": m}`` as JSON.
``python ledger_worker.py race DB WORKER ATTEMPTS``
    Try ``ATTEMPTS`` charges (run ids ``wWORKER-i``) of the overlapping users :func:`race_users`,
    printing each run id after its commit (``-`` for a refusal), until done or killed.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from dpcert import BudgetExceeded, Guarantee
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.laplace import laplace_certificate

STREAM_USERS = 2000
STREAM_POPULATION = 5000
STREAM_SHIFT = 700
STREAM_BUDGET = Guarantee(1000.0, 0.0)
SHARED_USERS = 100
OWN_USERS = 50


def stream_users(index: int) -> np.ndarray:
    return (STREAM_SHIFT * index + np.arange(STREAM_USERS)) % STREAM_POPULATION


def contend_users(worker: int) -> np.ndarray:
    return np.concatenate([np.arange(SHARED_USERS), 1000 * (worker + 1) + np.arange(OWN_USERS)])


RACE_POPULATION = 80
RACE_USERS = 30


def race_users(worker: int) -> np.ndarray:
    """Worker ``w`` charges users ``(10 w + range(30)) mod 80``: each user is shared by 3 workers."""
    return (10 * worker + np.arange(RACE_USERS)) % RACE_POPULATION


def stream(path: str) -> None:
    ledger = Ledger(path)
    ledger.set_budget(None, STREAM_BUDGET)  # never reached, but checked inside every transaction
    certificate = laplace_certificate(10.0)
    index = 0
    while True:
        ledger.charge(stream_users(index), certificate, run_id=f"run-{index}")
        sys.stdout.write(f"{index}\n")
        sys.stdout.flush()
        index += 1


def contend(path: str, worker: int, attempts: int) -> None:
    ledger = Ledger(path)
    certificate = laplace_certificate(8.0)  # epsilon = 0.125 exactly
    ok = refused = 0
    for attempt in range(attempts):
        try:
            ledger.charge(contend_users(worker), certificate, run_id=f"w{worker}-{attempt}")
            ok += 1
        except BudgetExceeded:
            refused += 1
    sys.stdout.write(json.dumps({"worker": worker, "ok": ok, "refused": refused}) + "\n")


def race(path: str, worker: int, attempts: int) -> None:
    ledger = Ledger(path)
    certificate = laplace_certificate(8.0)  # epsilon = 0.125 exactly
    for attempt in range(attempts):
        run_id = f"w{worker}-{attempt}"
        try:
            ledger.charge(race_users(worker), certificate, run_id=run_id)
        except BudgetExceeded:
            run_id = "-"
        sys.stdout.write(run_id + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1] == "stream":
        stream(sys.argv[2])
    elif sys.argv[1] == "contend":
        contend(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "race":
        race(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        raise SystemExit(f"unknown mode {sys.argv[1]!r}")
