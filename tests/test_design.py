"""Near-G-optimal design (docs/PAPER_NOTES.md, properties D1–D6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcert.bandits.design import Design, near_g_optimal_design, support_bound
from dpcert.errors import InvalidParameter


def sphere(rng: np.random.Generator, k: int, d: int) -> np.ndarray:
    x = rng.standard_normal((k, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def leverages_full_space(arms: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """xᵀ V(π)⁺ x computed in the original space with a pseudo-inverse (independent of the design's basis)."""
    matrix = (arms * weights[:, None]).T @ arms
    pinv = np.linalg.pinv(matrix, rcond=1e-10)
    return np.einsum("ij,jk,ik->i", arms, pinv, arms)


def check_design(arms: np.ndarray, design: Design, rank: int, factor: float = 2.0) -> None:
    w = design.weights
    assert w.shape == (arms.shape[0],)
    assert np.all(w >= 0) and math.isclose(w.sum(), 1.0, rel_tol=1e-12)  # D1
    lev = leverages_full_space(arms, w)
    assert lev.max() <= factor * rank * (1 + 1e-9)  # D2, recomputed independently
    assert math.isclose(lev.max(), design.g_value, rel_tol=1e-6)
    assert design.support.size <= support_bound(arms.shape[1])  # D3
    assert math.isclose(float(w @ lev), rank, rel_tol=1e-8)  # D4: Σ π(x) xᵀV⁻¹x = rank


def test_support_bound_matches_spec_golden_values():
    # S = ⌈4 d ln ln d + 16⌉: 4·20·ln ln 20 + 16 = 103.775 → 104 (spec Appendix A)
    assert support_bound(20) == 104
    assert support_bound(3) == math.ceil(12 * math.log(math.log(3)) + 16)
    assert support_bound(2) == 16 and support_bound(1) == 16


def test_paper_setting_d20_k1000():
    arms = sphere(np.random.default_rng(0), 1000, 20)
    design = near_g_optimal_design(arms)
    check_design(arms, design, 20)
    assert design.rank == 20


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 60), d=st.integers(1, 8))
def test_random_arm_sets(seed, k, d):
    arms = sphere(np.random.default_rng(seed), k, d)
    design = near_g_optimal_design(arms)
    check_design(arms, design, int(np.linalg.matrix_rank(arms)))


def test_g_is_at_least_rank_for_any_design():
    # Kiefer–Wolfowitz lower bound: the trace identity forces max ≥ average = d
    rng = np.random.default_rng(1)
    arms = sphere(rng, 40, 6)
    for _ in range(20):
        weights = rng.dirichlet(np.ones(40))
        assert leverages_full_space(arms, weights).max() >= 6 - 1e-9


def test_cross_polytope_known_optimum():
    # D5: for {±e_i}, the uniform design is G-optimal with g = d exactly
    d = 7
    arms = np.vstack([np.eye(d), -np.eye(d)])
    uniform = np.full(2 * d, 1 / (2 * d))
    assert np.allclose(leverages_full_space(arms, uniform), d)
    design = near_g_optimal_design(arms)
    check_design(arms, design, d)
    # the design must put weight ≥ 1/(2d) on each axis pair, since e_iᵀV⁻¹e_i = 1/(π(e_i)+π(−e_i)) ≤ 2d
    pair_weights = design.weights[:d] + design.weights[d:]
    assert pair_weights.min() >= 1 / (2 * d) - 1e-12


def test_rank_deficient_arms_work_in_their_span():
    # D6: 30 arms in a 3-dimensional subspace of R^10
    rng = np.random.default_rng(2)
    arms = rng.standard_normal((30, 3)) @ np.linalg.qr(rng.standard_normal((10, 3)))[0].T
    arms /= np.linalg.norm(arms, axis=1, keepdims=True)
    design = near_g_optimal_design(arms)
    assert design.rank == 3
    check_design(arms, design, 3)


def test_finer_factor_reaches_near_d_optimality():
    arms = sphere(np.random.default_rng(3), 200, 5)
    design = near_g_optimal_design(arms, factor=1.05)
    check_design(arms, design, 5, factor=1.05)


def test_single_and_two_arms():
    arm = np.array([[0.6, 0.8, 0.0]])
    design = near_g_optimal_design(arm)
    assert design.weights.tolist() == [1.0] and math.isclose(design.g_value, 1.0)
    two = np.array([[1.0, 0.0], [0.0, 1.0]])
    design = near_g_optimal_design(two)
    assert np.allclose(design.weights, 0.5) and math.isclose(design.g_value, 2.0)


def test_support_pruning_keeps_both_bounds():
    arms = sphere(np.random.default_rng(4), 300, 6)
    design = near_g_optimal_design(arms, max_support=8)
    assert design.support.size <= 8
    assert leverages_full_space(arms, design.weights).max() <= 12 * (1 + 1e-9)


@pytest.mark.parametrize(
    "arms, kwargs",
    [
        (np.zeros((3, 2)), {}),
        (np.ones(4), {}),
        (np.array([[np.nan, 1.0]]), {}),
        (np.eye(3), {"factor": 1.0}),
        (np.eye(3), {"max_support": 2}),
    ],
)
def test_bad_inputs_raise_named_errors(arms, kwargs):
    with pytest.raises(InvalidParameter):
        near_g_optimal_design(arms, **kwargs)
