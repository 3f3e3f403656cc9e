"""Small dense linear algebra whose floating-point operations happen in an order the code fixes.

numpy's ``@``, ``dot``, ``einsum(optimize=...)`` and ``numpy.linalg`` call BLAS and LAPACK, whose order
of additions depends on the CPU kernel the library picks at start-up (OpenBLAS's ``OPENBLAS_CORETYPE``,
MKL's code paths): the same inputs can give results that differ in the last bits, and a bandit that
takes an argmax or a threshold on them can then take another branch.  Everything here is built from
elementwise numpy operations (each correctly rounded, the same bits on every CPU) and sums along one
axis, either term by term in index order (products, solves, eigen-decompositions) or, for the long sums
over rows of :func:`weighted_gram` and :func:`weighted_sum`, numpy's own ``add.reduce`` over the leading
axis (correctly rounded additions in an order set by numpy's source, never by a BLAS kernel).

Guarantee: for the same numpy inputs and numpy version, every function returns the same bits on every
CPU and under every BLAS/LAPACK build or kernel (``OPENBLAS_CORETYPE``, MKL code paths).

The functions are meant for the small systems of the bandit engines (dimension d ≤ a few dozen);
they are vectorised over leading batch axes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpcert.errors import InvalidParameter

JACOBI_SWEEPS = 60
"""Upper bound on cyclic Jacobi sweeps (convergence is quadratic; a handful suffice in practice)."""


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``Σ_j a[..., j] b[..., j]``: one rounded product and one rounded sum per j, j in increasing order
    (leading axes broadcast)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape[-1] != b.shape[-1]:
        raise InvalidParameter("b", f"<last axis {b.shape[-1]}>", f"a last axis of length {a.shape[-1]}")
    if a.shape[-1] == 0:
        return np.zeros(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]))
    total = a[..., 0] * b[..., 0] + 0.0  # 0 + first product (−0 becomes +0, as in a sum from zero)
    for j in range(1, a.shape[-1]):
        total += a[..., j] * b[..., j]
    return np.asarray(total)


def sum_of_products(a: np.ndarray, b: np.ndarray) -> float:
    """``Σ_j a_j b_j`` for long 1-D vectors: the rounded products summed by numpy's pairwise summation,
    whose order depends only on the length (not on the CPU or the BLAS kernel, unlike ``np.dot``)."""
    return float(np.add.reduce(np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)))


def log_sum_exp(values: np.ndarray) -> float:
    """``ln Σ_j e^{values_j}`` of a 1-D vector, without overflow.

    The operations of SciPy's ``logsumexp`` (since SciPy 1.15; Blanchard, Higham & Higham 2021): the
    largest entries are taken out of the sum, ``s = Σ_{j: v_j < m} e^{v_j − m} / c`` with ``m`` the
    maximum and ``c`` its multiplicity, then ``log1p(s) + ln c + m``, every step a numpy ufunc on
    arrays and the sum numpy's pairwise ``add.reduce``.  So the result is the same float on every
    CPU and for every SciPy version, equal to ``scipy.special.logsumexp(values)`` of SciPy 1.15–1.17.
    ``-inf`` for an empty vector or one of only ``-inf``; an infinite or NaN maximum gives
    ``ln Σ e^{v_j}`` directly, as SciPy does.
    """
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    if a.size == 0:
        return -math.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        peak = np.max(a, keepdims=True)
        if not np.isfinite(peak[0]):
            return float(np.log(np.add.reduce(np.exp(a), keepdims=True))[0])
        at_peak = a == peak
        count = np.add.reduce(at_peak.astype(np.float64), keepdims=True)
        rest = np.where(at_peak, -np.inf, a)
        total = np.add.reduce(np.exp(rest - peak), keepdims=True)
        total = np.where(total == 0, total, total / count)
        out = np.log1p(total) + np.log(count) + peak
    return float(out[0])


def convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The full discrete convolution over the last axis (as ``np.convolve`` for 1-D vectors; leading axes
    broadcast), each output entry summed over the shorter factor's entries in increasing order."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    short, long = (a, b) if a.shape[-1] <= b.shape[-1] else (b, a)
    lead = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    if not (a.shape[-1] and b.shape[-1]):
        return np.zeros(lead + (0,))
    out = np.zeros(lead + (a.shape[-1] + b.shape[-1] - 1,))
    width = long.shape[-1]
    for j in range(short.shape[-1]):
        out[..., j : j + width] += short[..., j, None] * long
    return out


def matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` for (..., n, k) and (..., k): :func:`dot` of every row with the vector."""
    return dot(matrix, np.asarray(vector, dtype=np.float64)[..., None, :])


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for (..., n, k) and (..., k, m), summing over k in increasing order."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape[-1] != b.shape[-2]:
        raise InvalidParameter("b", f"<shape {b.shape}>", f"{a.shape[-1]} rows to match a's columns")
    total = np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]))
    for j in range(a.shape[-1]):
        total += a[..., :, j, None] * b[..., None, j, :]
    return total


def weighted_gram(rows: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``Σ_i w_i z_i z_iᵀ`` over the rows z_i of ``rows`` (m, d), each term ``(z_i z_iᵀ)·w_i`` rounded
    elementwise, then summed by numpy's ``add.reduce`` over the leading axis (with two or more columns,
    row after row from the first); unit weights when ``weights`` is None."""
    rows = np.asarray(rows, dtype=np.float64)
    outer = np.einsum("ij,ik->ijk", rows, rows)  # z_ij·z_ik, one rounded product each (no sum: no BLAS)
    if weights is not None:
        outer *= np.asarray(weights, dtype=np.float64)[:, None, None]
    return np.add.reduce(outer, axis=0) if rows.shape[0] else np.zeros((rows.shape[1],) * 2)


def weighted_sum(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``Σ_i w_i z_i`` (``rowsᵀ w``) for rows (m, d): rounded products summed by ``add.reduce`` over rows."""
    rows = np.asarray(rows, dtype=np.float64)
    terms = rows * np.asarray(weights, dtype=np.float64)[:, None]
    return np.add.reduce(terms, axis=0) if rows.shape[0] else np.zeros(rows.shape[1])


def norm(vectors: np.ndarray) -> np.ndarray:
    """Euclidean norm over the last axis, ``sqrt(dot(v, v))``."""
    return np.sqrt(dot(vectors, vectors))


def cholesky(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower-triangular L with ``L Lᵀ = A`` for symmetric (..., n, n) matrices, column by column
    (Higham 2002, Alg. 10.2), and whether each matrix was numerically positive definite (every pivot
    positive and finite); where it was not, L is not meaningful."""
    a = np.asarray(matrix, dtype=np.float64)
    n = a.shape[-1]
    lower = np.zeros_like(a)
    ok = np.ones(a.shape[:-2], dtype=bool)
    for j in range(n):
        # column j from the diagonal down, every row at once (each row's sum over k < j in order)
        column = a[..., j:, j] - dot(lower[..., j:, :j], lower[..., j, None, :j])
        pivot = column[..., 0]
        ok &= (pivot > 0.0) & np.isfinite(pivot)
        root = np.sqrt(np.where(pivot > 0.0, pivot, 1.0))
        lower[..., j, j] = root
        lower[..., j + 1 :, j] = column[..., 1:] / root[..., None]
    return lower, ok


def forward_substitution(lower: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``L⁻¹ B`` for lower-triangular L (..., n, n) with a non-zero diagonal and B (..., n, k), row by row."""
    b = np.asarray(right, dtype=np.float64)
    n = lower.shape[-1]
    out = np.zeros(np.broadcast_shapes(lower.shape[:-2], b.shape[:-2]) + b.shape[-2:])
    for i in range(n):
        done = dot(lower[..., i, None, :i], _t(out[..., :i, :]))
        out[..., i, :] = (b[..., i, :] - done) / lower[..., i, i, None]
    return out


def solve_spd(matrix: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``A⁻¹ B`` for symmetric positive definite A (..., n, n) and B (..., n, k) by :func:`cholesky` and
    two triangular substitutions in fixed order; raises ``InvalidParameter`` if some A is not positive
    definite."""
    lower, ok = cholesky(matrix)
    if not np.all(ok):
        raise InvalidParameter("matrix", "<not positive definite>", "symmetric positive definite matrices")
    forward = forward_substitution(lower, right)
    n = lower.shape[-1]
    solution = np.zeros_like(forward)
    for i in reversed(range(n)):
        later = lower[..., i + 1 :, i]  # column i below the diagonal: row i of Lᵀ
        solution[..., i, :] = (
            forward[..., i, :] - dot(later[..., None, :], _t(solution[..., i + 1 :, :]))
        ) / lower[..., i, i, None]
    return solution


def _t(a: np.ndarray) -> np.ndarray:
    """Swap the last two axes."""
    return np.swapaxes(a, -1, -2)


def symmetric_eigh(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric (..., n, n) matrices by the cyclic
    Jacobi method (Golub & Van Loan 2013, Alg. 8.5.3), pairs (p, q) in row order, at most
    :data:`JACOBI_SWEEPS` sweeps, stopping after the first sweep that rotates nothing.

    A pair is rotated while ``|a_pq| > 2^-60 √(|a_pp a_qq|)`` and ``|a_pq| > 1e-300``; the rotation
    comes from ``t = sign(θ)/(|θ| + √(θ² + 1))``, ``c = 1/√(t² + 1)``, ``s = t c`` with
    ``θ = (a_qq − a_pp)/(2 a_pq)`` (only + − × ÷ and √, each correctly rounded).  Equal eigenvalues keep
    Jacobi's order.
    """
    a = np.array(matrix, dtype=np.float64)  # a copy, rotated in place
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise InvalidParameter("matrix", f"<shape {a.shape}>", "square matrices (..., n, n)")
    n = a.shape[-1]
    vectors = np.broadcast_to(np.eye(n), a.shape).copy()
    if a.ndim == 2:
        _jacobi_single(a, vectors)
    else:
        _jacobi_batch(a, vectors)
    values = np.diagonal(a, axis1=-2, axis2=-1).copy()
    order = np.argsort(values, axis=-1, kind="stable")
    values = np.take_along_axis(values, order, axis=-1)
    vectors = np.take_along_axis(vectors, order[..., None, :], axis=-1)
    return values, vectors


def _rotate(a: np.ndarray, vectors: np.ndarray, p: int, q: int, c: Any, s: Any) -> None:
    """``A ← Jᵀ A J`` and ``Q ← Q J`` for the rotation (c, s) in the plane (p, q) (scalars or arrays)."""
    row_p, row_q = a[..., p, :].copy(), a[..., q, :].copy()
    a[..., p, :] = c * row_p - s * row_q
    a[..., q, :] = s * row_p + c * row_q
    col_p, col_q = a[..., :, p].copy(), a[..., :, q].copy()
    a[..., :, p] = c * col_p - s * col_q
    a[..., :, q] = s * col_p + c * col_q
    vec_p, vec_q = vectors[..., :, p].copy(), vectors[..., :, q].copy()
    vectors[..., :, p] = c * vec_p - s * vec_q
    vectors[..., :, q] = s * vec_p + c * vec_q


def _jacobi_single(a: np.ndarray, vectors: np.ndarray) -> None:
    """:func:`symmetric_eigh`'s sweeps on one matrix, the rotation's scalars as Python floats (the same
    IEEE operations as the batched form)."""
    n = a.shape[-1]
    for _ in range(JACOBI_SWEEPS):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq, app, aqq = float(a[p, q]), float(a[p, p]), float(a[q, q])
                if not (abs(apq) > 2.0**-60 * math.sqrt(abs(app * aqq)) and abs(apq) > 1e-300):
                    continue
                rotated = True
                theta = (aqq - app) / (2.0 * apq)
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                t = t if math.isfinite(theta) else 0.0
                c = 1.0 / math.sqrt(t * t + 1.0)
                _rotate(a, vectors, p, q, c, t * c)
                a[p, q] = a[q, p] = 0.0
        if not rotated:
            return


def _jacobi_batch(a: np.ndarray, vectors: np.ndarray) -> None:
    """:func:`symmetric_eigh`'s sweeps on a batch of matrices, each rotated only where it needs it."""
    n = a.shape[-1]
    for _ in range(JACOBI_SWEEPS):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = a[..., p, q]
                app, aqq = a[..., p, p], a[..., q, q]
                active = (np.abs(apq) > 2.0**-60 * np.sqrt(np.abs(app * aqq))) & (np.abs(apq) > 1e-300)
                if not active.any():
                    continue
                rotated = True
                safe = np.where(active, apq, 1.0)
                theta = (aqq - app) / (2.0 * safe)
                t = np.where(theta >= 0.0, 1.0, -1.0) / (np.abs(theta) + np.sqrt(theta * theta + 1.0))
                t = np.where(np.isfinite(theta), t, 0.0)
                c = np.where(active, 1.0 / np.sqrt(t * t + 1.0), 1.0)
                s = np.where(active, t * c, 0.0)
                _rotate(a, vectors, p, q, c[..., None], s[..., None])
                a[..., p, q] = np.where(active, 0.0, a[..., p, q])
                a[..., q, p] = np.where(active, 0.0, a[..., q, p])
        if not rotated:
            return


def pseudo_inverse_psd(matrix: np.ndarray, relative_floor: float) -> np.ndarray:
    """Moore–Penrose inverse of symmetric positive semi-definite (..., n, n) matrices from
    :func:`symmetric_eigh`: ``Σ_i v_i v_iᵀ / λ_i`` over the eigenvalues ``λ_i > relative_floor·λ_max``
    (the others, round-off of a zero eigenvalue, are dropped), composed by :func:`from_eigen`."""
    values, vectors = symmetric_eigh(matrix)
    keep = values > relative_floor * np.maximum(values[..., -1:], 0.0)
    inverted = np.where(keep, 1.0 / np.where(keep, values, 1.0), 0.0)
    return from_eigen(vectors, inverted)


def from_eigen(vectors: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``Q diag(λ) Qᵀ`` for eigenvectors Q (..., n, n) (columns) and values λ (..., n), in fixed order."""
    return matmul(vectors * np.asarray(values, dtype=np.float64)[..., None, :], _t(vectors))
