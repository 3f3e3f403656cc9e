"""Benchmark: compose() through its relation-aware RDP path and through exact loss distributions,
side by side with dp_accounting computing the same compositions directly.

Cases (δ = 1e-5):

* 50 per-step certificates of shuffled fixed-size batches (n = 60 000, m = 600, σ = 1.1, replace-one)
  composed by ``compose(..., method="best")`` against dp_accounting's ``RdpAccountant(REPLACE_ONE)`` on
  the single event ``SelfComposed(SampledWithoutReplacement(...), 50)``; and the same 50 steps charged
  one by one to a user of a ledger with budget ε = 8.
* 125 runs of 4-ary randomized response (p = 0.97) against dp_accounting's pessimistic PLD
  (``from_randomized_response(...).self_compose(125)``).
* 1 000 mixed certificates (500 × 4-RR p = 0.97, 300 × 2-RR p = 0.9, 150 Laplace b = 40, 50 Gaussian
  σ = 30) at δ = 1e-6 against dp_accounting's pessimistic PLDs composed directly.

Run as ``python benchmarks/compose_paths.py``; prints the markdown section for benchmarks/RESULTS.md.
Process CPU time (``time.process_time``), best of ``REPEATS``; dpcert's memoised single-mechanism PLDs
and RDP vectors are cleared before each dpcert run (a cold start).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import rdp_privacy_accountant

from dpcert import Guarantee
from dpcert.accounting.composition import clear_pld_cache, compose, compose_counts
from dpcert.ledger.api import Ledger
from dpcert.mechanisms import randomized_response
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate
from dpcert.mechanisms.randomized_response import randomized_response_certificate
from dpcert.mechanisms.sampled_without_replacement import sampled_without_replacement_certificate
from dpcert.theory import rdp as rdp_events

REPEATS = 3


def _cold() -> None:
    clear_pld_cache()
    rdp_events._cached_leaf_curve.cache_clear()
    randomized_response.randomized_response_loss_pmf.cache_clear()


def _timed(run: Callable[[], float], cold: bool) -> tuple[float, float]:
    best, value = float("inf"), float("nan")
    for _ in range(REPEATS):
        if cold:
            _cold()
        start = time.process_time()
        value = run()
        best = min(best, time.process_time() - start)
    return value, best


def fixed_batches() -> list[tuple[str, float, float]]:
    step = sampled_without_replacement_certificate(1.1, 600, 60_000, 1, delta=1e-5 / 50)

    def dpcert_run() -> float:
        return compose([step] * 50, delta=1e-5).epsilon

    def dp_accounting_run() -> float:
        accountant = rdp_privacy_accountant.RdpAccountant(
            neighboring_relation=NeighboringRelation.REPLACE_ONE
        )
        accountant.compose(
            dp_event.SelfComposedDpEvent(
                dp_event.SampledWithoutReplacementDpEvent(60_000, 600, dp_event.GaussianDpEvent(1.1)), 50
            )
        )
        return float(accountant.get_epsilon(1e-5))

    def ledger_run() -> float:
        with tempfile.TemporaryDirectory() as folder, Ledger(Path(folder) / "ledger.db") as ledger:
            ledger.set_budget(None, Guarantee(8.0, 1e-5))
            for index in range(50):
                ledger.charge(np.array([7]), step, run_id=f"step-{index}")
            return ledger.spent(7, delta=1e-5).epsilon

    rows = []
    for name, run, cold in (
        ("dpcert compose, 50 per-step certificates", dpcert_run, True),
        ("dp_accounting RdpAccountant, one event", dp_accounting_run, False),
        ("dpcert ledger, 50 charges (budget 8)", ledger_run, True),
    ):
        value, seconds = _timed(run, cold)
        rows.append((name, value, seconds))
    return rows


def randomized_response_runs() -> list[tuple[str, float, float]]:
    certificate = randomized_response_certificate(0.97, 4)

    def dpcert_run() -> float:
        return compose_counts([(certificate, 125)], delta=1e-5).epsilon

    def dp_accounting_run() -> float:
        return float(pld.from_randomized_response(0.97, 4).self_compose(125).get_epsilon_for_delta(1e-5))

    def generic_run() -> float:  # the ε0-DP composition dpcert used before the loss pmfs
        return compose_counts([(certificate, 125)], method="optimal", delta=1e-5).epsilon

    return [
        ("dpcert compose (best)", *_timed(dpcert_run, True)),
        ("dp_accounting PLD, pessimistic", *_timed(dp_accounting_run, False)),
        ("dpcert optimal (KOV, ε0-DP only)", *_timed(generic_run, True)),
    ]


def mixed() -> list[tuple[str, float, float]]:
    parts: list[tuple[Any, int, Callable[[], Any]]] = [
        (randomized_response_certificate(0.97, 4), 500, lambda: pld.from_randomized_response(0.97, 4)),
        (randomized_response_certificate(0.9, 2), 300, lambda: pld.from_randomized_response(0.9, 2)),
        (laplace_certificate(40.0), 150, lambda: pld.from_laplace_mechanism(40.0)),
        (gaussian_certificate(30.0, delta=1e-9), 50, lambda: pld.from_gaussian_mechanism(30.0)),
    ]
    certificates = [certificate for certificate, count, _ in parts for _ in range(count)]

    def dpcert_run() -> float:
        return compose(certificates, delta=1e-6).epsilon

    def dp_accounting_run() -> float:
        total = None
        for _, count, build in parts:
            single = build().self_compose(count)
            total = single if total is None else total.compose(single)
        assert total is not None
        return float(total.get_epsilon_for_delta(1e-6))

    return [
        ("dpcert compose (best)", *_timed(dpcert_run, True)),
        ("dp_accounting PLD, pessimistic", *_timed(dp_accounting_run, False)),
    ]


def _table(title: str, rows: list[tuple[str, float, float]]) -> str:
    lines = [f"**{title}**", "", "| computation | ε | CPU s (best of 3) |", "|---|---|---|"]
    lines += [f"| {name} | {value:.4f} | {seconds:.3f} |" for name, value, seconds in rows]
    return "\n".join(lines)


def main() -> None:
    load = os.getloadavg()[0]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    sections = [
        _table("50 shuffled fixed-size batch steps, replace-one, δ = 1e-5", fixed_batches()),
        _table("125 × 4-ary randomized response (p = 0.97), δ = 1e-5", randomized_response_runs()),
        _table("1 000 mixed certificates, δ = 1e-6", mixed()),
    ]
    print("## compose(): relation-aware RDP and exact loss distributions (benchmarks/compose_paths.py)\n")
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"load average {load:.2f} at the start; commit {commit}; "
        "command `python benchmarks/compose_paths.py`.\n"
    )
    print("\n\n".join(sections))


if __name__ == "__main__":
    main()
