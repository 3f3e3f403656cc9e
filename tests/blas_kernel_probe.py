"""Hashes of seeded LinUCB results, printed as JSON: run by tests/test_same_numbers.py in subprocesses,
each under another OpenBLAS kernel (``OPENBLAS_CORETYPE``)."""

from __future__ import annotations

import hashlib
import json

import numpy as np

from dpcert.bandits.algorithms import linucb_kernel
from dpcert.bandits.algorithms.linucb import ALGORITHMS, run_batched_linucb
from dpcert.bandits.algorithms.linucb_privatizers import LocalGaussianRandomizer, TreeGaussian
from dpcert.bandits.calibration.linucb import calibrate
from dpcert.bandits.environments.contextual import vaswani_instance
from dpcert.provenance import openblas_core
from dpcert.reproductions.chowdhury_zhou_2022 import figure_runs


def digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def main() -> None:
    engines = ["numpy"] + (["numba"] if linucb_kernel.AVAILABLE else [])
    out: dict[str, object] = {"core": openblas_core(), "engines": engines}
    for engine in engines:
        runs = figure_runs(0.2, runs=3, horizon=2000, engine=engine)
        out[f"figure/{engine}"] = {name: digest(run.cumulative_regret) for name, run in sorted(runs.items())}
        # a contextual instance (arms redrawn every round, NumPy path only) and a fixed one with noisy
        # models repaired (λ set for a tenth of the noise), actions and regret
        env = vaswani_instance(3, 5, 40, np.random.default_rng(1))
        common = {"epsilon": 1.0, "delta": 0.1, "horizon": 300, "dimension": 5, "calibration": "paper"}
        privatizers = [calibrate(name, batch_size=1, **common).privatizer for name in ALGORITHMS[:3]]
        result = run_batched_linucb(
            env, privatizers, horizon=300, batch_size=1, rng=np.random.default_rng(3), radius="theory",
            engine=engine,
        )  # fmt: skip
        out[f"theory/{engine}"] = [digest(result.actions), digest(result.cumulative_regret)]
    contextual = vaswani_instance(3, 4, 30, np.random.default_rng(5), fixed_arms=False)
    result = run_batched_linucb(
        contextual, [LocalGaussianRandomizer(1.0), TreeGaussian(1.0, 200)], horizon=200, batch_size=1,
        rng=np.random.default_rng(6), engine="numpy",
    )  # fmt: skip
    out["contextual/numpy"] = [digest(result.actions), digest(result.cumulative_regret)]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
