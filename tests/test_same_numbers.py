"""Same numbers on every CPU: the LinUCB engines' choices do not depend on the BLAS kernel.

The arm scores go through BLAS in the NumPy path, whose summation order depends on the CPU kernel
OpenBLAS picks; the engines choose the maximiser of the index as computed in one fixed order
(:mod:`dpcert.bandits.algorithms.linucb_model`).  The subprocess test runs seeded LinUCB runs of both
engines under three OpenBLAS kernels and requires identical bits; the others check the pieces.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import numpy as np
import pytest
from kernel_subprocess import KERNELS, NO_AVX512, environment, run_json

from dpcert._numerics import UNIT_ROUNDOFF
from dpcert.bandits.algorithms.linucb_model import (
    choose_arms,
    fixed_order_scores,
    score_error_bound,
    ucb_index,
)

PROBE = Path(__file__).with_name("blas_kernel_probe.py")


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS x86 kernels")
def test_linucb_results_are_identical_under_three_blas_kernels_and_both_engines():
    # and once more with numpy's AVX-512 loops turned off
    settings = [environment(kernel) for kernel in KERNELS] + [environment("Haswell", NO_AVX512)]
    results = run_json([([sys.executable, str(PROBE)], env) for env in settings])
    cores = [r["core"] for r in results]
    if None in cores or len(set(cores)) < 2:
        pytest.skip(f"numpy's BLAS does not switch OpenBLAS kernels here (cores {cores})")
    assert cores[1:] == ["Haswell", "Sandybridge", "Haswell"]  # the environment variable took effect
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


def _sums_in_order(weights: np.ndarray, design: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Σ_j w_j x_j over the entries in ``order`` (rows of ``weights`` (runs, 2, p)), each term rounded."""
    total = np.zeros((weights.shape[0], 2, design.shape[2]))
    for j in order:
        total += weights[:, :, j, None] * design[:, None, j, :]
    return total


def test_indices_from_sums_in_other_orders_lie_within_the_stated_bound():
    # the BLAS kernel's order (which one depends on the machine), the reversed and a shuffled order
    rng = np.random.default_rng(1)
    d = 5
    worst = {"blas": 0.0, "reversed": 0.0, "shuffled": 0.0}
    for _ in range(20):
        weights, design, _, _ = _random_models(rng, 50, d, 40)
        size = weights.shape[2]
        beta = rng.uniform(0.1, 30.0, 50)
        fixed_index = ucb_index(*fixed_order_scores(weights, design, d), beta[:, None])
        bound = score_error_bound(weights, 1.0, beta[:, None])[:, 0]
        others = {
            "blas": np.einsum("rsp,rpk->rsk", weights, design, optimize=True),  # BLAS through tensordot
            "reversed": _sums_in_order(weights, design, np.arange(size)[::-1]),
            "shuffled": _sums_in_order(weights, design, rng.permutation(size)),
        }
        for name, sums in others.items():
            index = ucb_index(sums[:, 0], sums[:, 1], beta[:, None])
            allowed = bound + 8.0 * UNIT_ROUNDOFF * (np.abs(index).max(axis=1) + 3.0 * bound)
            gap = np.abs(index - fixed_index).max(axis=1)
            assert np.all(gap <= allowed), name
            worst[name] = max(worst[name], float((gap / allowed).max()))
    # other orders do round differently here, so the bound was tested on real differences
    assert worst["reversed"] > 0.0 and worst["shuffled"] > 0.0


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
