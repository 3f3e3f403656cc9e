"""DP-SGD noise calibration: dpcert's ``calibrate_dp_sgd`` side by side with the libraries DP-SGD users run.

Run as ``python benchmarks/dp_sgd_calibration.py``; prints the markdown section for
benchmarks/RESULTS.md.  For each schedule (q, T) and target (ε, δ) it reports the noise multiplier z
that each library returns, the process CPU time of the call, and the δ(ε) that dpcert's certificate
proves for that z, i.e. whether the returned z meets the target by a proven bound.  Every timed call
runs in a fresh Python process (dpcert's profiles keep per-process caches of single-step PLDs, so a
repeated call in one process would time a cache hit), after the library is imported and one untimed
call on another schedule has loaded its lazy imports; the median of ``--repeats`` processes is shown.
The libraries:

* dpcert: :func:`dpcert.accounting.dp_sgd.calibrate_dp_sgd` (Poisson: the proven PLD bound and RDP;
  shuffle: the subsampled RDP of Wang, Balle & Kasiviswanathan 2019);
* dp_accounting ``mechanism_calibration.calibrate_dp_mechanism`` with its PLD accountant (pessimistic,
  discretisation 1e-4) and with its RDP accountant (tolerance ``DP_ACCOUNTING_TOL`` in z);
* Opacus ``accountants.utils.get_noise_multiplier`` with its RDP accountant (the default) and its PRV
  accountant, default ``epsilon_tolerance`` 0.01;
* prv_accountant ``dpsgd.find_noise_multiplier`` (Gopi, Lee & Wutschitz 2021), default ``eps_error`` 0.1.

Libraries that are not installed are reported as such.  None of them is a dependency of dpcert.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from dpcert.accounting.dp_sgd import calibrate_dp_sgd, dp_sgd_certificate

DP_ACCOUNTING_TOL = 1e-4
"""Absolute tolerance in z given to dp_accounting (about 0.01 % at z near 1, as tight as dpcert's 1e-4)."""


@dataclass(frozen=True)
class Case:
    name: str
    epsilon: float
    delta: float
    sampling: str
    sampling_probability: float
    steps: int
    batch_size: int | None = None
    dataset_size: int | None = None


CASES = (
    Case("q = 0.01, T = 1000", 1.0, 1e-5, "poisson", 0.01, 1000),
    Case("B = 256 of N = 60000, 10 epochs (T = 2350)", 3.0, 1e-5, "poisson", 256 / 60000, 2350, 256, 60000),
    Case("q = 0.001, T = 10000", 1.0, 1e-6, "poisson", 0.001, 10_000),
    Case("shuffle: B = 256 of N = 60000, 10 epochs", 3.0, 1e-5, "shuffle", 256 / 60000, 2350, 256, 60000),
)


def processor() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def dpcert_calibration(case: Case) -> float:
    schedule = (
        {"batch_size": case.batch_size, "dataset_size": case.dataset_size}
        if case.batch_size is not None
        else {"sampling_probability": case.sampling_probability}
    )
    result = calibrate_dp_sgd(
        epsilon=case.epsilon, delta=case.delta, steps=case.steps, sampling=case.sampling, **schedule
    )
    return result.noise_multiplier


def dp_accounting_calibration(case: Case, accountant: str) -> float:
    from dp_accounting import NeighboringRelation, dp_event
    from dp_accounting.mechanism_calibration import LowerEndpointAndGuess, calibrate_dp_mechanism
    from dp_accounting.pld import PLDAccountant
    from dp_accounting.rdp import RdpAccountant

    if case.sampling == "shuffle":
        relation = NeighboringRelation.REPLACE_ONE

        def step(z: float) -> dp_event.DpEvent:
            return dp_event.SampledWithoutReplacementDpEvent(
                case.dataset_size, case.batch_size, dp_event.GaussianDpEvent(z)
            )
    else:
        relation = NeighboringRelation.ADD_OR_REMOVE_ONE

        def step(z: float) -> dp_event.DpEvent:
            return dp_event.PoissonSampledDpEvent(case.sampling_probability, dp_event.GaussianDpEvent(z))

    def fresh():
        if accountant == "pld":
            return PLDAccountant(relation, value_discretization_interval=1e-4)
        return RdpAccountant(neighboring_relation=relation)

    # dp_accounting's default bracket starts at z = 0, where its sampling-without-replacement RDP
    # divides by zero: that case starts at 0.1 instead
    bracket = LowerEndpointAndGuess(0.1, 1.0) if case.sampling == "shuffle" else None
    return float(
        calibrate_dp_mechanism(
            fresh,
            lambda z: dp_event.SelfComposedDpEvent(step(z), case.steps),
            case.epsilon,
            case.delta,
            bracket_interval=bracket,
            tol=DP_ACCOUNTING_TOL,
        )
    )


def opacus_calibration(case: Case, accountant: str) -> float:
    from opacus.accountants.utils import get_noise_multiplier

    return float(
        get_noise_multiplier(
            target_epsilon=case.epsilon,
            target_delta=case.delta,
            sample_rate=case.sampling_probability,
            steps=case.steps,
            accountant=accountant,
        )
    )


def prv_calibration(case: Case) -> float:
    from prv_accountant.dpsgd import find_noise_multiplier

    return float(
        find_noise_multiplier(
            sampling_probability=case.sampling_probability,
            num_steps=case.steps,
            target_epsilon=case.epsilon,
            target_delta=case.delta,
        )
    )


def methods(case: Case) -> list[tuple[str, Callable[[Case], float]]]:
    rows: list[tuple[str, Callable[[Case], float]]] = [("dpcert", dpcert_calibration)]
    if version("dp-accounting") != "not installed":
        if case.sampling == "poisson":
            rows.append(("dp_accounting PLD (1e-4)", lambda c: dp_accounting_calibration(c, "pld")))
        rows.append(("dp_accounting RDP", lambda c: dp_accounting_calibration(c, "rdp")))
    if case.sampling == "poisson":  # the others account Poisson sampling only
        if version("opacus") != "not installed":
            rows.append(("Opacus RDP", lambda c: opacus_calibration(c, "rdp")))
            rows.append(("Opacus PRV", lambda c: opacus_calibration(c, "prv")))
        if version("prv-accountant") != "not installed":
            rows.append(("prv_accountant", prv_calibration))
    return rows


def timed_in_fresh_process(case_index: int, name: str) -> tuple[float, float]:
    """(z, CPU seconds) of one call of library ``name`` on ``CASES[case_index]`` in a new process."""
    command = [sys.executable, os.path.abspath(__file__), "--one", str(case_index), name]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    return result["z"], result["seconds"]


def one(case_index: int, name: str) -> None:
    """Child process: warm up library ``name``, time one call on the case, print JSON."""
    case = CASES[case_index]
    method = dict(methods(case))[name]
    warm = Case("warm-up", 1.0, 1e-5, case.sampling, 0.1, 10, 10, 100)
    if case.sampling == "poisson":
        warm = Case("warm-up", 1.0, 1e-5, "poisson", 0.1, 10)
    method(warm)
    start = time.process_time()
    z = method(case)
    print(json.dumps({"z": z, "seconds": time.process_time() - start}))


def proven_delta(case: Case, z: float) -> float:
    """δ(ε) that dpcert's certificate proves for noise multiplier z (1.0 if not even δ < 1)."""
    schedule = (
        {"batch_size": case.batch_size, "dataset_size": case.dataset_size}
        if case.batch_size is not None
        else {"sampling_probability": case.sampling_probability}
    )
    try:
        certificate = dp_sgd_certificate(
            z, epsilon=case.epsilon, steps=case.steps, sampling=case.sampling, **schedule
        )
    except ValueError:
        return 1.0
    return certificate.delta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", type=int, nargs="*", default=None, help="indices into CASES")
    parser.add_argument("--one", nargs=2, default=None, metavar=("CASE", "LIBRARY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.getLogger("absl").setLevel(logging.ERROR)  # dp_accounting's RDP warns per excluded order
    warnings.filterwarnings("ignore")
    if args.one is not None:
        one(int(args.one[0]), args.one[1])
        return
    load_start = os.getloadavg()[0]
    indices = args.cases if args.cases is not None else list(range(len(CASES)))
    print(
        "| schedule | target (ε, δ) | library | noise multiplier z | z / dpcert's "
        "| dpcert's proven δ(ε) at z | meets target (proven) | CPU s (median) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for index in indices:
        case = CASES[index]
        reference = math.nan
        for name, _ in methods(case):
            runs = [timed_in_fresh_process(index, name) for _ in range(args.repeats)]
            z = runs[0][0]
            assert all(run[0] == z for run in runs), f"{name} returned different z in different runs"
            seconds = statistics.median(run[1] for run in runs)
            if name == "dpcert":
                reference = z
            delta = proven_delta(case, z)
            print(
                f"| {case.name} | ({case.epsilon:g}, {case.delta:g}) | {name} | {z:.5f} | "
                f"{z / reference:.4f} | {delta:.3g} | {'yes' if delta <= case.delta else 'no'} | "
                f"{seconds:.2f} |",
                flush=True,
            )
    print()
    print(
        f"Machine: {os.cpu_count()} cores, {processor()}, Python "
        f"{platform.python_version()}; dpcert {version('dpcert')}, dp-accounting {version('dp-accounting')}, "
        f"opacus {version('opacus')} (torch {version('torch')}), prv-accountant {version('prv-accountant')}; "
        f"load average {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end."
    )


if __name__ == "__main__":
    main()
