"""A finite local randomizer given by its matrix, and the clone probability it supports.

A local randomizer with finitely many inputs and outputs is a row-stochastic matrix ``R``: row ``x`` is
the law of the report of a user holding ``x``.  Amplification by shuffling bounds its shuffled output by
a *clone pair* (:mod:`dpcert.theory.amplification`): every other user's report is, with probability
``c``, a "clone" of the victim's (half the time from ``Q1``, half from ``Q0``) and otherwise from a
leftover law independent of the victim.  Write ``R1 = R(x1)`` and ``R1' = R(x1')`` for the victim's two
candidate inputs and ``e^{ε0}`` for the largest ratio ``R(x, y)/R(x', y)`` over the matrix.  With

    Q1 = (e^{ε0} R1 − R1')/(e^{ε0} − 1),    Q0 = (e^{ε0} R1' − R1)/(e^{ε0} − 1)

(both non-negative, ``Q1 + Q0 = R1 + R1'``, ``R1 = a Q1 + (1 − a) Q0`` with ``a = e^{ε0}/(e^{ε0} + 1)``),
every user's law splits as ``R(x) = (c/2) Q1 + (c/2) Q0 + (1 − c) LO_x`` with ``LO_x`` a law exactly when

    R(x, y) >= (c/2) (R(x1, y) + R(x1', y))   for every input x, every pair x1 != x1' and every output y.

The largest such ``c`` is therefore

    c(R) = min over outputs y with mass of  2 min_x R(x, y) / (sum of the two largest R(·, y)),

and the shuffled output of ``n`` users is a post-processing of the clone pair with ``C ~ Bin(n − 1, c)``
(the argument of Feldman, McMillan & Talwar 2020, Thm 3.2, with the clone probability of the stated
matrix instead of their worst case).  Always ``e^{−ε0} <= c(R) <= 2/(e^{ε0} + 1)``: the lower end is
FMT 2020's generic value (every entry is at least ``e^{−ε0}`` times each entry of its column), the upper
end is met by binary and k-ary randomized response (the "stronger clone" of Feldman, McMillan & Talwar
2023 and Wang et al. 2024's general-mechanism row).  A randomizer whose columns have a small entry under
two large ones gets a ``c`` in between; no amplification result for it is assumed beyond this proof.

The matrix is taken as stated (rows normalised to sum to one); ``c`` is rounded down by a relative
``1e-12`` (far above the few ulps of its evaluation) and ``ε0`` rounded up likewise, so both errors only
enlarge the δ that is certified.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcert.errors import InvalidParameter

MAX_ENTRIES = 10_000_000
"""Largest matrix accepted (inputs × outputs)."""

_ROW_SUM_TOLERANCE = 1e-9
_ROUNDING = 1e-12


@dataclass(frozen=True)
class RandomizerMatrix:
    """A validated row-stochastic matrix (``rows``: inputs, columns: outputs) and what it supports.

    Attributes
    ----------
    rows
        The matrix as nested lists of floats, each row normalised to sum to one (what certificates store).
    epsilon0
        Its local privacy level ``max ln R(x, y)/R(x', y)``, rounded up.
    clone_probability
        ``c(R)`` of the module docstring, rounded down.
    """

    rows: tuple[tuple[float, ...], ...]
    epsilon0: float
    clone_probability: float

    def as_list(self) -> list[list[float]]:
        return [list(row) for row in self.rows]


def _as_matrix(matrix: object) -> np.ndarray:
    try:
        array = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameter(
            "matrix", "(not numeric)", "a list of rows of probabilities (inputs x outputs)"
        ) from None
    if array.ndim != 2 or array.shape[0] < 2 or array.shape[1] < 2:
        raise InvalidParameter(
            "matrix", f"shape {array.shape}", "a 2-d list: at least 2 inputs (rows) and 2 outputs (columns)"
        )
    if array.size > MAX_ENTRIES:
        raise InvalidParameter("matrix", f"{array.size} entries", f"at most {MAX_ENTRIES:,} entries")
    if not np.all(np.isfinite(array)) or np.any(array < 0.0):
        raise InvalidParameter("matrix", "(entries)", "finite probabilities >= 0")
    sums = array.sum(axis=1)
    if np.any(np.abs(sums - 1.0) > _ROW_SUM_TOLERANCE):
        worst = int(np.argmax(np.abs(sums - 1.0)))
        raise InvalidParameter(
            "matrix", f"row {worst} sums to {sums[worst]:.12g}", "rows summing to 1 (within 1e-9)"
        )
    return array / sums[:, None]


def randomizer_matrix(matrix: object, epsilon0: float | None = None) -> RandomizerMatrix:
    """Validate a finite randomizer's matrix and compute its ``ε0`` and clone probability.

    Parameters
    ----------
    matrix
        Row-stochastic matrix, rows = inputs, columns = outputs (array-like).
    epsilon0
        The local privacy level the caller declares; refused if the matrix is not ``ε0``-LDP.  ``None``:
        the matrix's own level is used.

    Raises
    ------
    InvalidParameter
        A malformed matrix, an output reachable from some inputs only (infinite privacy loss), or a matrix
        that is not ``epsilon0``-LDP.
    """
    array = _as_matrix(matrix)
    column_max = array.max(axis=0)
    column_min = array.min(axis=0)
    used = column_max > 0.0
    if np.any(column_min[used] == 0.0):
        column = int(np.flatnonzero(used & (column_min == 0.0))[0])
        raise InvalidParameter(
            "matrix", f"output {column}", "outputs of positive probability under every input (eps0 < inf)"
        )
    own = float(np.max(np.log(column_max[used]) - np.log(column_min[used])))
    own = own * (1.0 + _ROUNDING)
    if epsilon0 is None:
        level = own
    else:
        level = float(epsilon0)
        if not (math.isfinite(level) and level >= 0.0):
            raise InvalidParameter("epsilon0", epsilon0, "a finite number >= 0")
        if own > level * (1.0 + 1e-9):
            raise InvalidParameter(
                "matrix", f"eps0 = {own:.9g}", f"an epsilon0-LDP randomizer, declared epsilon0 = {level:g}"
            )
        level = max(level, own)
    top_two = np.sort(array[:, used], axis=0)[-2:].sum(axis=0)
    clone = float(np.min(2.0 * column_min[used] / top_two)) * (1.0 - _ROUNDING)
    rows = tuple(tuple(float(v) for v in row) for row in array)
    return RandomizerMatrix(rows, level, min(1.0, clone))


def randomized_response_matrix(epsilon0: float, categories: int) -> list[list[float]]:
    """k-ary randomized response: ``e^{ε0}/(e^{ε0} + k − 1)`` on the diagonal, ``1/(e^{ε0} + k − 1)`` off."""
    k = int(categories)
    z = math.exp(epsilon0) + k - 1
    return [[(math.exp(epsilon0) if i == j else 1.0) / z for j in range(k)] for i in range(k)]


def unary_encoding_matrix(keep: float, flip: float, categories: int) -> list[list[float]]:
    """Unary encoding (RAPPOR-style; Wang et al. 2017's OUE with ``keep = 1/2``, ``flip = 1/(e^{ε0} + 1)``).

    Input ``x`` is sent as the one-hot vector ``e_x`` with bit ``x`` kept w.p. ``keep`` and every other bit
    set w.p. ``flip``; the outputs are the ``2^k`` bit vectors (``k <= 12``).
    """
    k = int(categories)
    if not 2 <= k <= 12:
        raise InvalidParameter("categories", categories, "an integer in [2, 12] (2^k outputs)")
    vectors = (np.arange(2**k)[:, None] >> np.arange(k)) & 1
    rows: list[list[float]] = []
    for x in range(k):
        probability = np.where(np.arange(k) == x, keep, flip)
        laws = np.where(vectors == 1, probability, 1.0 - probability).prod(axis=1)
        rows.append(laws.tolist())
    return rows
