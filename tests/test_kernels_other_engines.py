"""Seeded runs of the elimination, robust, LDP-linear and MAB engines give the same regret, bit for bit,
under three OpenBLAS kernels (each run in its own interpreter, since OpenBLAS picks its kernel at load).

Every value that reaches an argmax, an elimination, a threshold, a clip or the regret comes from
:mod:`dpcert._fixed_order` or from elementwise numpy operations, never from BLAS or LAPACK, whose
summation order depends on the kernel."""

from __future__ import annotations

import json
import platform
import sys

import pytest
from kernel_subprocess import KERNELS, environment, run_json

_CASES = [
    ("dp-dpe", "central", 1.0, 1e-5, 3000, {"dimension": 4, "arms": 10}),
    ("dp-dpe", "local", 1.0, 1e-5, 3000, {"dimension": 4, "arms": 10}),
    ("dp-dpe", "shuffle", 1.0, 1e-5, 3000, {"dimension": 4, "arms": 10}),
    ("dp-pe", "central", 1.0, 1e-5, 3000, {"dimension": 4, "arms": 10}),
    ("dpe-fixedu", "none", None, None, 3000, {"dimension": 4, "arms": 10, "fixed_users": 20}),
    ("robust-elimination", "local", 1.0, None, 3000, {}),
    ("robust-elimination", "none", None, None, 3000, {}),
    ("ldp-linear", "local", 1.0, 0.1, 400, {}),
    ("ldp-linear-combiner", "local", 1.0, 0.1, 400, {}),
    ("mab-se", "central", 1.0, None, 3000, {}),
    ("sdp-ae", "shuffle", 1.0, 1e-5, 3000, {}),
]

_SCRIPT = """
import hashlib, json, sys
import numpy as np
from dpcert.bandits import registry
from dpcert.bandits.registry import RunConfig
out = {}
for name, privacy, epsilon, delta, horizon, options in json.loads(sys.argv[1]):
    config = RunConfig(name, privacy, epsilon, delta, horizon=horizon, runs=3, seed=7, options=options)
    regret = np.ascontiguousarray(registry.algorithm(name).run(config).cumulative_regret, dtype=np.float64)
    out[name + "/" + privacy] = hashlib.sha256(regret.tobytes()).hexdigest()
print(json.dumps(out))
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS x86 kernels")
def test_regret_hashes_are_the_same_under_three_openblas_kernels():
    argument = json.dumps(_CASES)
    outputs = run_json([([sys.executable, "-c", _SCRIPT, argument], environment(k)) for k in KERNELS], 300)
    hashes = dict(zip(KERNELS, outputs, strict=True))
    reference = hashes[None]
    assert len(reference) == len(_CASES)
    differing = {
        kernel: sorted(key for key in reference if hashes[kernel][key] != reference[key])
        for kernel in ("Haswell", "Sandybridge")
    }
    assert not any(differing.values()), f"regret differs from the default kernel's: {differing}"
