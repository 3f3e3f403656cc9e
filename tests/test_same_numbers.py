"""Same numbers on every CPU: the LinUCB engines' choices do not depend on the BLAS kernel.

The arm scores go through BLAS in the NumPy path, whose summation order depends on the CPU kernel
OpenBLAS picks; the engines choose the maximiser of the index as computed in one fixed order
(:mod:`dpcert.bandits.algorithms.linucb_model`).  The subprocess test runs seeded LinUCB runs of both
engines under three OpenBLAS kernels and requires identical bits; the others check the pieces.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpcert.bandits.algorithms.linucb_model import (
    UNIT_ROUNDOFF,
    choose_arms,
    fixed_order_scores,
    score_error_bound,
    ucb_index,
)

PROBE = Path(__file__).with_name("blas_kernel_probe.py")
KERNELS = (None, "Haswell", "Sandybridge")


def _probe(kernel: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    if kernel is not None:
        env["OPENBLAS_CORETYPE"] = kernel
    done = subprocess.run(
        [sys.executable, str(PROBE)], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS x86 kernels")
def test_linucb_results_are_identical_under_three_blas_kernels_and_both_engines():
    results = [_probe(kernel) for kernel in KERNELS]
    cores = [r["core"] for r in results]
    if None in cores or len(set(cores)) < 2:
        pytest.skip(f"numpy's BLAS does not switch OpenBLAS kernels here (cores {cores})")
    assert cores[1:] == ["Haswell", "Sandybridge"]  # the environment variable took effect
    first = results[0]
    for other in results[1:]:
        assert {k: v for k, v in other.items() if k != "core"} == {
            k: v for k, v in first.items() if k != "core"
        }
    for engine in first["engines"][1:]:  # the compiled rounds equal the NumPy path
        assert first[f"figure/{engine}"] == first["figure/numpy"]
        assert first[f"theory/{engine}"] == first["theory/numpy"]


def _random_models(rng: np.random.Generator, runs: int, d: int, arms: int):
    """Random θ̂ and V⁻¹ (runs, 2, p), unit-norm arm features' design columns (runs, p, K)."""
    rows, cols = np.triu_indices(d)
    p = d + rows.size
    features = rng.standard_normal((runs, arms, d))
    features /= np.linalg.norm(features, axis=2, keepdims=True)
    design = np.concatenate(
        [features, features[..., rows] * features[..., cols] * np.where(rows == cols, 1.0, 2.0)], axis=2
    ).transpose(0, 2, 1)
    weights = np.zeros((runs, 2, p))
    weights[:, 0, :d] = rng.standard_normal((runs, d)) * 10.0 ** rng.uniform(-3, 3, (runs, 1))
    root = rng.standard_normal((runs, d, d))
    inverse = root @ root.transpose(0, 2, 1) / d + 10.0 ** rng.uniform(-4, 2, (runs, 1, 1)) * np.eye(d)
    weights[:, 1, d:] = inverse[:, rows, cols]
    return weights, np.ascontiguousarray(design), features, inverse


def test_fixed_order_scores_are_the_mean_and_squared_width():
    rng = np.random.default_rng(0)
    d = 4
    weights, design, features, inverse = _random_models(rng, 20, d, 15)
    means, widths = fixed_order_scores(weights, design, d)
    np.testing.assert_allclose(means, np.einsum("rkd,rd->rk", features, weights[:, 0, :d]), rtol=1e-12)
    exact = np.einsum("rki,rij,rkj->rk", features, inverse, features)
    np.testing.assert_allclose(widths, exact, rtol=1e-10, atol=1e-12 * np.abs(inverse).max())


def test_blas_index_lies_within_the_stated_bound_of_the_fixed_order_index():
    rng = np.random.default_rng(1)
    d = 5
    worst = 0.0
    for _ in range(20):
        weights, design, _, _ = _random_models(rng, 50, d, 40)
        beta = rng.uniform(0.1, 30.0, 50)
        blas = np.einsum("rsp,rpk->rsk", weights, design, optimize=True)  # BLAS through tensordot
        blas_index = ucb_index(blas[:, 0], blas[:, 1], beta[:, None])
        fixed_index = ucb_index(*fixed_order_scores(weights, design, d), beta[:, None])
        bound = score_error_bound(weights, 1.0, beta[:, None])[:, 0]
        bound = bound + 8.0 * UNIT_ROUNDOFF * (np.abs(blas_index).max(axis=1) + bound)
        gap = np.abs(blas_index - fixed_index).max(axis=1)
        assert np.all(gap <= bound)
        worst = max(worst, float((gap / bound).max()))
    assert worst > 0.0  # the two orders do differ somewhere, so the check compared something


def test_choose_arms_returns_the_fixed_order_maximiser_with_the_lowest_index_on_ties():
    rng = np.random.default_rng(2)
    d, runs, arms = 3, 200, 12
    weights, design, _, _ = _random_models(rng, runs, d, arms)
    # exact ties (copies of an arm) and near-ties (an arm scaled by 1 ± 1e-15) in most runs
    design[:, :, 7] = design[:, :, 2]
    design[: runs // 2, :, 9] = design[: runs // 2, :, 4] * (1.0 + 1e-15)
    beta = rng.uniform(0.0, 5.0, runs)
    beta[:10] = 0.0
    fixed_index = ucb_index(*fixed_order_scores(weights, design, d), beta[:, None])
    # the BLAS index perturbed by up to a quarter of the bound: what any summation order could give
    bound = score_error_bound(weights, 1.0, beta[:, None])
    noisy_index = fixed_index + rng.uniform(-0.25, 0.25, fixed_index.shape) * bound
    chosen = choose_arms(noisy_index[:, None], weights, design, d, beta[:, None], 1.0)[:, 0]
    np.testing.assert_array_equal(chosen, np.argmax(fixed_index, axis=1))
    assert not np.any(chosen == 7)  # arm 2 comes first among the copies
    # a NaN model: the first NaN arm, as np.argmax and the compiled rounds
    weights[0, 0, 0] = np.nan
    fixed_index = ucb_index(*fixed_order_scores(weights, design, d), beta[:, None])
    chosen = choose_arms(fixed_index[:, None], weights, design, d, beta[:, None], 1.0)[:, 0]
    assert chosen[0] == np.argmax(fixed_index[0]) == 0
