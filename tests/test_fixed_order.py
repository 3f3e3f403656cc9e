"""dpcert._fixed_order against LAPACK/BLAS (to bounds derived from the methods' error analyses) and
bit-for-bit under other OpenBLAS kernels."""

from __future__ import annotations

import hashlib
import json
import math
import platform
import sys
from fractions import Fraction

import numpy as np
import pytest
import scipy
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from kernel_subprocess import KERNELS, environment, run_json
from scipy.special import logsumexp

from dpcert import _fixed_order as fo
from dpcert._numerics import UNIT_ROUNDOFF
from dpcert.errors import InvalidParameter

U = UNIT_ROUNDOFF


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 12)), elements=st.floats(-1e3, 1e3)))
def test_dot_is_within_gamma_n_of_the_exact_sum(rows):
    other = rows[::-1].copy()
    got = fo.dot(rows, other)
    exact = [
        float(sum(Fraction(a) * Fraction(b) for a, b in zip(r, o, strict=True)))
        for r, o in zip(rows, other, strict=True)
    ]
    n = rows.shape[1]
    bound = n * U / (1 - n * U) * np.abs(rows * other).sum(axis=1) * 1.01
    np.testing.assert_array_less(np.abs(got - np.array(exact)), bound + 1e-300)


def test_products_and_solves_match_lapack_within_their_error_bounds():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((9, 6, 6))
    spd = a @ a.transpose(0, 2, 1) + 0.5 * np.eye(6)
    right = rng.standard_normal((9, 6, 4))
    np.testing.assert_allclose(fo.matmul(a, right), a @ right, rtol=0, atol=1e-13)
    np.testing.assert_allclose(
        fo.matvec(a, right[..., 0]), np.einsum("rij,rj->ri", a, right[..., 0]), atol=1e-13
    )
    # a backward-stable solve errs by about cond(A)·n·u relative (Higham 2002, Thm 10.4)
    condition = np.linalg.cond(spd).max()
    solved = fo.solve_spd(spd, right)
    np.testing.assert_allclose(solved, np.linalg.solve(spd, right), rtol=0, atol=condition * 6 * 8 * U * 10)
    lower, ok = fo.cholesky(spd)
    assert ok.all()
    np.testing.assert_allclose(lower @ lower.transpose(0, 2, 1), spd, atol=1e-12)
    z = rng.standard_normal((40, 5))
    w = rng.random(40)
    np.testing.assert_allclose(fo.weighted_gram(z, w), (z * w[:, None]).T @ z, atol=1e-12)
    np.testing.assert_allclose(fo.weighted_sum(z, w), z.T @ w, atol=1e-12)
    with pytest.raises(InvalidParameter, match="matrix"):
        fo.solve_spd(-spd, right)


def test_jacobi_eigenpairs_reconstruct_the_matrix_and_match_lapack_eigenvalues():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((12, 7, 7))
    sym = a + a.transpose(0, 2, 1)
    sym[0] = np.diag([3.0, -1.0, 0.0, 2.0, 2.0, 5.0, -4.0])  # diagonal, repeated eigenvalue
    values, vectors = fo.symmetric_eigh(sym)
    scale = np.abs(sym).max()
    # Weyl: eigenvalues move by at most the norm of the perturbation; Jacobi's is a few n·u·‖A‖
    np.testing.assert_allclose(values, np.linalg.eigvalsh(sym), atol=200 * U * scale)
    np.testing.assert_allclose(fo.from_eigen(vectors, values), sym, atol=200 * U * scale)
    eye = np.broadcast_to(np.eye(7), sym.shape)
    np.testing.assert_allclose(vectors.transpose(0, 2, 1) @ vectors, eye, atol=200 * U)
    assert np.all(np.diff(values, axis=1) >= 0)


_SCRIPT = """
import hashlib, json, numpy as np
from dpcert import _fixed_order as fo
from dpcert._numerics import UNIT_ROUNDOFF
rng = np.random.default_rng(3)
a = rng.standard_normal((20, 6, 6)); s = a + np.swapaxes(a, 1, 2)
spd = fo.matmul(a, np.swapaxes(a, 1, 2)) + np.eye(6)
parts = [fo.matmul(a, a), fo.solve_spd(spd, a), *fo.symmetric_eigh(s), fo.weighted_gram(a[0], a[1, 0])]
digest = hashlib.sha256(b"".join(np.ascontiguousarray(p).tobytes() for p in parts)).hexdigest()
print(json.dumps({"digest": digest, "convolution": fo.convolve(a[0, 0], a[1].ravel()).tolist()}))
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS x86 kernels")
def test_same_bits_under_three_openblas_kernels():
    outputs = run_json([([sys.executable, "-c", _SCRIPT], environment(kernel)) for kernel in KERNELS])
    digests = {json.dumps(output, sort_keys=True) for output in outputs}
    assert len(digests) == 1, digests
    assert hashlib.sha256(b"").hexdigest() not in digests.pop()


def test_one_matrix_and_a_batch_give_the_same_bits():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((5, 6, 6))
    sym = a + a.transpose(0, 2, 1)
    values, vectors = fo.symmetric_eigh(sym)
    for i in range(sym.shape[0]):
        one_values, one_vectors = fo.symmetric_eigh(sym[i])
        assert one_values.tobytes() == values[i].tobytes()
        assert one_vectors.tobytes() == vectors[i].tobytes()


def test_convolution_and_long_sums_match_numpy_within_their_error_bounds():
    rng = np.random.default_rng(5)
    a, b = rng.random(37), rng.random(1000)
    # non-negative terms: every entry within γ_m relative of the exact one, m = 37 terms
    np.testing.assert_allclose(fo.convolve(a, b), np.convolve(a, b), rtol=2 * 37 * U, atol=0)
    np.testing.assert_array_equal(fo.convolve(b, a), fo.convolve(a, b))
    assert fo.convolve(np.ones(0), b).size == 0
    x, y = rng.standard_normal(100_003), rng.standard_normal(100_003)
    exact = float(sum(Fraction(u) * Fraction(v) for u, v in zip(x[:2000], y[:2000], strict=True)))
    bound = 2000 * U * float(np.abs(x[:2000] * y[:2000]).sum())
    assert abs(fo.sum_of_products(x[:2000], y[:2000]) - exact) <= bound
    assert fo.sum_of_products(x, y) == float(np.sum(x * y))


def test_batched_convolution_equals_each_row_convolved_alone():
    rng = np.random.default_rng(6)
    a, b = rng.random((4, 9)), rng.random((4, 23))
    together = fo.convolve(a, b)
    for row in range(4):
        assert together[row].tobytes() == fo.convolve(a[row], b[row]).tobytes()
    np.testing.assert_allclose(together[2], np.convolve(a[2], b[2]), rtol=2 * 9 * U, atol=0)


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 400), elements=st.floats(-800.0, 800.0)),
    st.integers(0, 3),
    st.booleans(),
)
def test_log_sum_exp_is_within_a_few_ulp_of_the_exact_value(values, ties, rounded):
    """Against the exact ln Σ e^v in rational arithmetic around the maximum (every term e^{v − m} is
    evaluated by math.exp and summed exactly): the result errs by at most a few ulp of its size."""
    values = np.round(values) if rounded else values.copy()
    values[: min(ties, values.size)] = values.max()
    peak = float(values.max())
    exact = sum((Fraction(math.exp(float(v) - peak)) for v in values), Fraction(0))
    expected = math.log(float(exact)) + peak
    got = fo.log_sum_exp(values)
    scale = abs(expected) + math.log(values.size) + 1.0
    assert abs(got - expected) <= 8 * U * scale + 1e-15 * values.size


@pytest.mark.skipif(
    tuple(int(x) for x in scipy.__version__.split(".")[:2]) < (1, 15),
    reason="SciPy's logsumexp takes the maximum out of the sum from SciPy 1.15 on",
)
def test_log_sum_exp_gives_scipys_bits_and_its_edge_cases():
    rng = np.random.default_rng(7)
    for trial in range(3000):
        size = int(rng.integers(1, 2000))
        values = rng.normal(size=size) * rng.choice([1.0, 30.0, 700.0]) + rng.normal() * 50.0
        if trial % 3 == 0:
            values[rng.integers(0, size, size=size // 3)] = -np.inf
        if trial % 5 == 0:
            values[rng.integers(0, size, size=3)] = values.max()
        assert fo.log_sum_exp(values) == float(logsumexp(values))
    for edge in ([-np.inf], [-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0], [1e308, 1e308], [0.0]):
        got, expected = fo.log_sum_exp(np.array(edge)), float(logsumexp(np.array(edge)))
        assert got == expected or (math.isnan(got) and math.isnan(expected))
    assert fo.log_sum_exp(np.array([])) == -math.inf
    assert fo.log_sum_exp(np.zeros(6)) == math.log(6.0)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 300),
    columns=st.integers(2, 7),
    weighted=st.booleans(),
)
def test_weighted_gram_is_the_row_by_row_sum_of_rounded_terms_to_the_bit(seed, rows, columns, weighted):
    """Reference: Python floats, each term ``(z_j·z_k)·w`` rounded, added row after row from the first."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((rows, columns)) * rng.choice([1e-3, 1.0, 1e3], size=columns)
    w = rng.random(rows) if weighted else None
    expected = [[0.0] * columns for _ in range(columns)]
    for i, row in enumerate(z.tolist()):
        for j in range(columns):
            for k in range(columns):
                term = row[j] * row[k] if w is None else (row[j] * row[k]) * float(w[i])
                expected[j][k] = term if i == 0 else expected[j][k] + term
    assert fo.weighted_gram(z, w).tolist() == expected
