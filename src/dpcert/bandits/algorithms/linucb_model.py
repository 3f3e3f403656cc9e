"""What the NumPy and the compiled LinUCB rounds share: the arm choice in a fixed order, and the repair.

Both paths of :func:`dpcert.bandits.algorithms.linucb.run_batched_linucb` (the NumPy rounds and
:mod:`dpcert.bandits.algorithms.linucb_kernel`) choose the arm maximising the UCB index as computed in
one fixed order (:func:`fixed_order_scores`), with the lowest arm index winning exact ties, so that the
choice does not depend on the CPU or the BLAS kernel.  A noisy model that is not positive definite is
repaired from an eigen-decomposition computed in an order the code fixes (:func:`repair_models`).
"""

from __future__ import annotations

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert._numerics import UNIT_ROUNDOFF


def fixed_order_scores(
    weights: np.ndarray, design: np.ndarray, dimension: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(⟨φ, θ̂⟩, ‖φ‖²_{V⁻¹})`` of every arm in the order the compiled rounds use.

    ``weights`` (runs, 2, p): per run the mean weights θ̂ (first ``dimension`` entries of row 0) and the
    width weights upper(V⁻¹) (entries ``dimension ..`` of row 1); ``design`` (runs, p, K) the arms'
    columns ``[φ, upper(φφᵀ) ⊙ (1 on, 2 off the diagonal)]``.  Each sum starts at 0 and adds one rounded
    product per entry, entries in increasing order (no fused multiply-add): the same bits on every CPU.
    """
    runs, _, size = weights.shape
    means = np.zeros((runs, design.shape[2]))
    widths = np.zeros_like(means)
    for j in range(size):
        target, row = (means, 0) if j < dimension else (widths, 1)
        target += weights[:, row, j, None] * design[:, j, :]
    return means, widths


def ucb_index(means: np.ndarray, widths: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``mean + β √max(width, 0)`` (``beta`` broadcast against the arms' axis), as the compiled rounds."""
    return means + beta * np.sqrt(np.maximum(widths, 0.0))


def score_error_bound(weights: np.ndarray, design_bound: float, beta: np.ndarray) -> np.ndarray:
    """A bound ``D_m + β √D_w`` on how far an index from sums in any order (a BLAS kernel's) lies from
    the fixed-order one, before the rounding of the index's own operations.

    Any summation order of n rounded (or fused) products errs by at most ``γ_n Σ|w_j x_j|``, with
    ``γ_n = nu/(1 − nu)`` and u the unit round-off (Higham 2002, Thm 3.1 and §3.1), so two orders differ by
    at most twice that; ``Σ|w_j x_j| ≤ ‖w‖₁ x_max`` with ``x_max ≥ max |x|`` (``design_bound``), and the
    computed ‖w‖₁ errs by at most a factor ``1 + 2nu``: ``D = 2γ_n ‖w‖₁ x_max (1 + 2nu)`` for the means
    (D_m) and the widths (D_w).  ``max(·, 0)`` moves a difference by no more, and the square root moves
    a difference Δ by at most √Δ.  ``weights`` (..., 2G, p): rows g and G + g hold model g's mean and
    width weights (as :func:`fixed_order_scores`); ``beta`` (..., G); returns (..., G).
    """
    size = weights.shape[-1]
    gamma = size * UNIT_ROUNDOFF / (1.0 - size * UNIT_ROUNDOFF)
    inflate = 2.0 * gamma * design_bound * (1.0 + 2.0 * size * UNIT_ROUNDOFF)
    norms = np.abs(weights).sum(axis=-1)
    models = norms.shape[-1] // 2
    return inflate * norms[..., :models] + beta * np.sqrt(inflate * norms[..., models:])


def choose_arms(
    blas_index: np.ndarray,
    weights: np.ndarray,
    design: np.ndarray,
    dimension: int,
    beta: np.ndarray,
    design_bound: float,
) -> np.ndarray:
    """The arm maximising the fixed-order index (:func:`fixed_order_scores`, :func:`ucb_index`; lowest
    arm index on exact ties, the first NaN if any, as ``np.argmax``) of every instance and model, found
    from an index computed with BLAS.

    Let E bound the distance between the two indices of an arm near the top (:func:`score_error_bound`,
    E_0, plus ``8u (|top| + 3 E_0)`` for the rounding of the index's three operations in each, an arm
    within 2E of the BLAS maximum ``top`` having ``|index| ≤ |top| + 2E``).  The fixed-order maximiser k*
    satisfies ``I_b(k*) ≥ I(k*) − E ≥ I(k) − E ≥ I_b(k) − 2E`` for every arm k, so it lies among the arms
    within 2E of the BLAS maximum.  A model with one such arm takes it; the others
    (near-ties, non-finite values) are scored again in the fixed order and take the maximiser there.

    ``blas_index`` (I, G, K) for I instances and G models; ``weights`` (I, 2G, p) (rows g, G + g: model
    g's mean and width weights); ``design`` (I, p, K); ``beta`` (I, G); ``design_bound ≥ max |design|``.
    Returns (I, G).
    """
    error = score_error_bound(weights, design_bound, beta)
    arms = np.argmax(blas_index, axis=2)
    top = blas_index.max(axis=2)
    threshold = top - 2.0 * (error * (1.0 + 24.0 * UNIT_ROUNDOFF) + 8.0 * UNIT_ROUNDOFF * np.abs(top))
    candidates = np.count_nonzero(blas_index >= threshold[..., None], axis=2)
    # a NaN top or threshold counts no candidate; an infinite top is scored again too
    unsure = (candidates != 1) | (top == np.inf)
    if unsure.any():
        instances, models = np.nonzero(unsure)
        count = weights.shape[1] // 2
        pairs = np.stack([weights[instances, models], weights[instances, count + models]], axis=1)
        means, widths = fixed_order_scores(pairs, design[instances], dimension)
        arms[instances, models] = np.argmax(ucb_index(means, widths, beta[instances, models, None]), axis=1)
    return arms


def repair_models(
    gram: np.ndarray, vector: np.ndarray, floor: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(V⁻¹, V⁻¹ u, clipped)`` for noisy models ``V`` (n, d, d) and ``u`` (n, d) whose elimination
    met a non-positive pivot: V's eigenvalues at or below 0 are raised to ``floor`` (n,) (post-processing
    of the published V, privacy-neutral) and ``clipped`` says for which rows that happened.  The
    eigen-decomposition and the products are computed in a fixed order (:mod:`dpcert._fixed_order`).
    """
    values, vectors = fixed_order.symmetric_eigh(gram)
    clipped = values.min(axis=1) <= 0.0
    values = np.where(clipped[:, None], np.maximum(values, floor[:, None]), values)
    inverse = fixed_order.from_eigen(vectors, 1.0 / values)
    return inverse, fixed_order.matvec(inverse, vector), clipped
