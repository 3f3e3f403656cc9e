"""Same numbers under every OpenBLAS kernel: engine variants and the audits.

Seeded runs of robust elimination in client model M2 and of the LDP linear bandit with Maler as the
learner (the default runs of every family are in tests/test_kernels_other_engines.py), a rejection set
chosen on correlated vector outputs (Fisher's discriminant) and an audit with a neighbour search run in
three interpreters, with ``OPENBLAS_CORETYPE`` unset, Haswell and Sandybridge (OpenBLAS picks its
kernel when it loads).  Every value that reaches a decision or a result there comes from
:mod:`dpcert._fixed_order` or elementwise numpy, never from BLAS or LAPACK, so the hashes must agree
bit for bit.  (Before these engines and audits were fixed-order, robust elimination, the rejection
set and the audit differed between the kernels on this file's seeds.)
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import numpy as np
import pytest
from kernel_subprocess import KERNELS, environment, run_json

TESTS = Path(__file__).parent

_SCRIPT = r"""
import hashlib, json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from blas_kernel_probe import openblas_core
from dpcert.audits import VectorSearch, audit
from dpcert.audits.reference_mechanisms import gaussian_noise
from dpcert.audits.selection import select_rejection_set
from dpcert.bandits import registry
from dpcert.bandits.registry import RunConfig

def digest(value):
    return hashlib.sha256(value).hexdigest()[:24]

def text(value):
    return json.dumps(value, sort_keys=True, default=repr).encode()

def timeless(value):  # a record without its wall-clock times
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, (list, tuple)):
        return [timeless(v) for v in value]
    return value

out = {"core": openblas_core()}
cases = [  # label, algorithm, privacy, epsilon, delta, horizon, runs, options
    # the families' default runs are in test_kernels_other_engines.py; here the variants they do not run
    ("robust-elimination/M2", "robust-elimination", "local", 1.0, None, 3000, 3, {"model": "M2"}),
    ("ldp-linear/maler", "ldp-linear", "local", 1.0, 0.1, 200, 2, {"learner": "maler"}),
]
for label, name, privacy, epsilon, delta, horizon, runs, options in cases:
    config = RunConfig(name, privacy, epsilon, delta, horizon=horizon, runs=runs, seed=7, options=options)
    regret = registry.algorithm(name).run(config).cumulative_regret
    out[label] = digest(np.ascontiguousarray(regret, dtype=np.float64).tobytes())
# the rejection set chosen on correlated vector outputs: Fisher's discriminant (covariance and solve)
def draws(rng, shift):  # elementwise only, so the inputs are the same bits under every kernel
    x = rng.standard_normal((20_000, 5)) * np.array([1.0, 0.3, 2.5, 0.7, 1.6])
    x[:, 1] += 0.9 * x[:, 0]
    x[:, 3] -= 0.7 * x[:, 2]
    return x + shift
rng = np.random.default_rng(11)
draws_a, draws_b = draws(rng, 0.0), draws(rng, np.array([0.3, -0.2, 0.2, 0.1, -0.3]))
selection = select_rejection_set(draws_a, draws_b, (20_000, 20_000), 0.0, 0.95)
out["selection"] = digest(text([selection.rejection_set.to_dict(), selection.numerator, selection.projected]))
# a neighbour search on a vector Gaussian mechanism: the pair, the set (a projection), its counts, the bound
report = audit(gaussian_noise(1.0), epsilon=1.0, samples=40_000, seed=3, search=VectorSearch(4, 1.0))
out["audit-search"] = digest(text(timeless(report.to_dict())))
print(json.dumps(out))
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS x86 kernels")
def test_robust_ldp_linear_and_audit_results_are_identical_under_three_blas_kernels():
    outputs = run_json([([sys.executable, "-c", _SCRIPT, str(TESTS)], environment(k)) for k in KERNELS], 300)
    results = dict(zip(KERNELS, outputs, strict=True))
    cores = [results[kernel].pop("core") for kernel in KERNELS]
    if None in cores or len(set(cores)) < 2:
        pytest.skip(f"numpy's BLAS does not switch OpenBLAS kernels here (cores {cores})")
    assert cores[1:] == ["Haswell", "Sandybridge"]  # the environment variable took effect
    reference = results[None]
    assert len(reference) == 4  # two runs, the selection and the audit
    for kernel in KERNELS[1:]:
        differing = sorted(key for key in reference if results[kernel][key] != reference[key])
        assert not differing, f"results differ under OPENBLAS_CORETYPE={kernel}: {differing}"


def test_fixed_order_covariance_and_discriminant_agree_with_numpy_to_rounding():
    from dpcert.audits.selection import _covariance, _fitted_features  # private helpers

    rng = np.random.default_rng(5)
    for size, dimension in ((2, 1), (7, 3), (5000, 6)):
        values = rng.standard_normal((size, dimension)) * rng.uniform(0.1, 10.0, dimension) + 3.0
        covariance = _covariance(values)
        np.testing.assert_array_equal(covariance, covariance.T)
        expected = np.atleast_2d(np.cov(values, rowvar=False))
        np.testing.assert_allclose(covariance, expected, rtol=1e-12, atol=1e-14 * np.abs(expected).max())
    values_a = rng.standard_normal((4000, 4))
    values_b = rng.standard_normal((4000, 4)) * 1.5 + 0.2
    weights = np.asarray(_fitted_features(values_a, values_b)[0].weights)
    covariance = 0.5 * (np.cov(values_a, rowvar=False) + np.cov(values_b, rowvar=False))
    ridge = 1e-9 * np.trace(covariance) / 4
    expected = np.linalg.solve(covariance + ridge * np.eye(4), values_b.mean(0) - values_a.mean(0))
    np.testing.assert_allclose(weights, expected, rtol=1e-10)
