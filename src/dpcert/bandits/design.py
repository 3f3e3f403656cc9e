"""Near-G-optimal experimental design on a finite set of arms (Frank–Wolfe / Fedorov–Wynn).

For a distribution π on arms X ⊂ R^d, V(π) = Σ_x π(x) x xᵀ and g(π) = max_x xᵀ V(π)⁻¹ x.  By the
Kiefer–Wolfowitz theorem min_π g(π) = d, attained by the D-optimal design; the phased-elimination
algorithms need only a *near*-optimal design with g(π) ≤ 2d and support ≤ 4d ln ln d + 16
(Li, Zhou & Ji 2022, "Differentially Private Linear Bandits with Partial Distributed Feedback",
Alg. 1 line 4; existence from Lattimore, Szepesvári & Weisz 2020, Prop. 3.7).

The algorithm is Frank–Wolfe on log det V(π) with exact line search (Lattimore & Szepesvári 2020,
"Bandit Algorithms", Note 21.2; Todd 2016, Alg. 3.1) from a Kumar–Yildirim start whose support has
at most 2d points.  When the arms do not span R^d the design is computed in span(X) (Remark 3.2 of
the paper): coordinates z = Qᵀx in an orthonormal basis Q of the span, and every identity holds with
d replaced by r = rank(X).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert.errors import InvalidParameter

RANK_TOLERANCE = 1e-5  # relative singular-value threshold defining span(X) (squared: 1e-10 on XᵀX)
_MAX_PRUNING_ROUNDS = 100


@dataclass(frozen=True)
class Design:
    """A design on the rows of an arm matrix.

    Attributes
    ----------
    weights
        Shape (m,): π(x) for every arm (zero off the support); sums to one.
    basis
        Shape (d, r): orthonormal basis Q of span(arms); the design lives in coordinates z = Qᵀx.
    g_value
        g(π) = max_x zᵀ V(π)⁻¹ z over the arms (≤ ``factor``·r on return).
    iterations
        Frank–Wolfe iterations performed.
    """

    weights: np.ndarray
    basis: np.ndarray
    g_value: float
    iterations: int

    @property
    def rank(self) -> int:
        """Dimension r of span(arms)."""
        return int(self.basis.shape[1])

    @property
    def support(self) -> np.ndarray:
        """Indices of the arms with positive weight, ascending."""
        return np.flatnonzero(self.weights > 0.0)


def support_bound(dimension: int) -> int:
    """S = ⌈4 d ln ln d + 16⌉ for d ≥ 3 and 16 for d ≤ 2 (natural logarithm; Li, Zhou & Ji 2022, Alg. 1).

    The paper writes 4d log log d + 16 without naming the base; ln ln d is negative or undefined for
    d ≤ 2, where 16 is used.  For d = 20 this gives 104.
    """
    dimension = check.positive_int("dimension", dimension)
    if dimension <= 2:
        return 16
    return math.ceil(4.0 * dimension * math.log(math.log(dimension)) + 16.0)


def span_basis(arms: np.ndarray) -> np.ndarray:
    """Orthonormal basis (d × r) of the span of the rows of ``arms``: the eigenvectors of ``XᵀX`` whose
    eigenvalue (a squared singular value) exceeds ``RANK_TOLERANCE²`` times the largest, largest first.

    Computed in fixed order (:mod:`dpcert._fixed_order`), so the basis is the same on every CPU.  The
    Gram matrix's round-off is about ``m u`` relative to its largest eigenvalue, far below the 1e-10
    threshold for any realistic number of arms m."""
    values, vectors = fixed_order.symmetric_eigh(fixed_order.weighted_gram(arms))
    values, vectors = values[::-1], vectors[:, ::-1]
    if values.size == 0 or not values[0] > 0.0:
        raise InvalidParameter("arms", "<all-zero arms>", "at least one non-zero arm")
    rank = int(np.sum(values > RANK_TOLERANCE**2 * values[0]))
    return np.ascontiguousarray(vectors[:, :rank])


def design_matrix(coordinates: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """V(π) = Σ_x π(x) z zᵀ, summed arm after arm."""
    return fixed_order.weighted_gram(coordinates, weights)


def leverages(coordinates: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """zᵀ V(π)⁻¹ z = ‖L⁻¹ z‖² (``V = L Lᵀ``) for every row z (the G-criterion's per-arm values)."""
    lower, positive = fixed_order.cholesky(design_matrix(coordinates, weights))
    if not positive:
        raise InvalidParameter("weights", "<singular design>", "a design whose support spans the arms")
    solved = fixed_order.forward_substitution(lower, coordinates.T)
    return fixed_order.dot(solved.T, solved.T)


def _project(basis: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``Bᵀ (B v)``: the projection of v on the span of the orthonormal rows of ``basis``."""
    if basis.shape[0] == 0:
        return np.zeros_like(vector)
    return fixed_order.matvec(basis.T, fixed_order.matvec(basis, vector))


def _orthogonal_direction(basis: np.ndarray) -> np.ndarray:
    """A unit vector orthogonal to the rows of ``basis`` (fewer rows than columns): the eigenvector of
    ``BᵀB`` with the smallest eigenvalue (0)."""
    return fixed_order.symmetric_eigh(fixed_order.weighted_gram(basis))[1][:, 0]


def _kumar_yildirim_start(coordinates: np.ndarray) -> np.ndarray:
    """Uniform weights on ≤ 2r arms spanning R^r (Kumar & Yildirim 2005), deterministic directions."""
    m, rank = coordinates.shape
    chosen: list[int] = []
    basis = np.zeros((0, rank))
    for axis in range(rank):
        direction = np.eye(rank)[axis] - _project(basis, np.eye(rank)[axis])
        if fixed_order.norm(direction) < 1e-8:  # canonical axis already spanned: use any orthogonal one
            direction = _orthogonal_direction(basis)
        scores = fixed_order.matvec(coordinates, direction)
        high, low = int(np.argmax(scores)), int(np.argmin(scores))
        chosen.extend((high, low))
        # the arm with the largest |score| has a component outside span(basis) (the arms span R^r)
        widest = high if abs(scores[high]) >= abs(scores[low]) else low
        component = coordinates[widest] - _project(basis, coordinates[widest])
        norm = fixed_order.norm(component)
        if norm <= 1e-12:
            raise InvalidParameter("arms", "<degenerate arms>", "arms spanning their own span")
        difference = component
        basis = np.vstack([basis, difference / norm])
    weights = np.zeros(m)
    weights[np.unique(chosen)] = 1.0
    return weights / weights.sum()


def near_g_optimal_design(
    arms: np.ndarray, *, factor: float = 2.0, max_support: int | None = None, max_iterations: int = 10_000
) -> Design:
    """A design π on the rows of ``arms`` with g(π) ≤ ``factor``·r, r = rank(arms).

    Parameters
    ----------
    arms
        Shape (m, d): the active arms (m ≥ 1, not all zero).
    factor
        Target g(π) ≤ factor·r; the paper's near-optimal design uses 2 (Alg. 1 line 4).  Must be > 1
        since g(π) ≥ r for every π (Kiefer–Wolfowitz).
    max_support
        Support bound to enforce (default :func:`support_bound` of d = arms.shape[1]).  If Frank–Wolfe
        ends with a larger support, the smallest weights are dropped and Frank–Wolfe is rerun from the
        pruned design; the pruning repeats until both bounds hold.
    max_iterations
        Safety bound on Frank–Wolfe iterations.

    Returns
    -------
    Design
        With ``g_value`` ≤ factor·r and at most ``max_support`` arms in the support.

    Notes
    -----
    Step: with j = argmax_x zᵀV⁻¹z and g its value, π ← (1−γ)π + γ e_j with
    γ = (g/r − 1)/(g − 1), the exact maximiser of log det along that segment.
    """
    arms = check.finite_array("arms", arms)
    if arms.ndim != 2 or arms.shape[0] < 1 or arms.shape[1] < 1:
        raise InvalidParameter("arms", f"<array of shape {arms.shape}>", "a 2-D array (m arms, d >= 1)")
    factor = check.positive_finite("factor", factor)
    if factor <= 1.0:
        raise InvalidParameter("factor", factor, "factor > 1 (g(pi) >= rank for every design)")
    max_support = support_bound(arms.shape[1]) if max_support is None else max_support
    max_support = check.positive_int("max_support", max_support)
    basis = span_basis(arms)
    coordinates = fixed_order.matmul(arms, basis)
    rank = coordinates.shape[1]
    if max_support < rank:
        raise InvalidParameter("max_support", max_support, f"max_support >= rank(arms) = {rank}")
    weights = _kumar_yildirim_start(coordinates)
    target = factor * rank * (1.0 + 1e-12)
    total_iterations = 0
    for _ in range(_MAX_PRUNING_ROUNDS):
        weights, g_value, iterations = _frank_wolfe(coordinates, weights, target, max_iterations)
        total_iterations += iterations
        support = np.flatnonzero(weights > 0.0)
        if support.size <= max_support:
            return Design(weights, basis, g_value, total_iterations)
        # prune the smallest weights (keeping a spanning set) and polish again
        order = support[np.argsort(weights[support])[::-1]]
        pruned = np.zeros_like(weights)
        keep = order[:max_support]
        pruned[keep] = weights[keep]
        if span_basis(coordinates[keep]).shape[1] < rank:
            pruned[keep] = 1.0
        weights = pruned / pruned.sum()
    raise InvalidParameter(
        "max_support",
        max_support,
        "a support bound Frank-Wolfe can meet (it is always met for the paper's 4d ln ln d + 16)",
    )


def _frank_wolfe(
    coordinates: np.ndarray, weights: np.ndarray, target: float, max_iterations: int
) -> tuple[np.ndarray, float, int]:
    rank = coordinates.shape[1]
    weights = weights.copy()
    for iteration in range(max_iterations + 1):
        values = leverages(coordinates, weights)
        best = int(np.argmax(values))
        g_value = float(values[best])
        if g_value <= target:
            return weights, g_value, iteration
        step = (g_value / rank - 1.0) / (g_value - 1.0)
        weights *= 1.0 - step
        weights[best] += step
    raise InvalidParameter(
        "max_iterations", max_iterations, "enough Frank-Wolfe iterations to reach the target g"
    )
