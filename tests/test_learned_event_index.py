"""CellTable.index against a second method: a dictionary from each cell's tuple of values to its index
(Python's float equality: −0.0 equals 0.0, NaN equals nothing), on the kinds of rows the audits index —
integer codes of small range, half-integers, wide ranges, NaN and −0.0."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcert.audits.learned_event import CellTable, _largest_other


def _by_dictionary(table: CellTable, rows: np.ndarray) -> np.ndarray:
    where = {tuple(cell): i for i, cell in enumerate(table.cells)}
    return np.array([where.get(tuple(float(v) for v in row), -1) for row in rows], dtype=np.int64)


def _rows(rng: np.random.Generator, kind: str, size: int, width: int) -> np.ndarray:
    if kind == "codes":
        rows = rng.integers(-3, 12, size=(size, width)).astype(float)
    elif kind == "halves":
        rows = rng.integers(0, 5, size=(size, width)) * 0.5
    elif kind == "wide":
        rows = rng.integers(-3_000_000, 3_000_000, size=(size, width)).astype(float)
        rows[rng.random((size, width)) < 0.5] = 7.0
    else:  # signed zeros and NaN among small codes
        rows = rng.integers(-1, 2, size=(size, width)).astype(float)
        rows[rows == 0] = np.where(rng.random(int((rows == 0).sum())) < 0.5, -0.0, 0.0)
        rows[rng.random((size, width)) < 0.02] = np.nan
    return rows


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(["codes", "halves", "wide", "zeros-nan"]),
    st.integers(1, 6000),
    st.integers(1, 5),
    st.integers(0, 2**32 - 1),
)
def test_index_equals_the_dictionary_lookup(kind, size, width, seed):
    rng = np.random.default_rng(seed)
    rows = _rows(rng, kind, size, width)
    source = rows[: max(1, size // 3)]
    source = source[~np.isnan(source).any(axis=1)]
    if source.shape[0] == 0:
        return
    table = CellTable._radix_table(np.unique(source[:200], axis=0))
    if table is None:
        return
    got = table.index(rows)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, _by_dictionary(table, rows))


@pytest.mark.parametrize("atoms", [(), (-1000.0,), (-2000.0, -1000.0)])
def test_largest_other_ignores_atoms(atoms):
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(500, 6))
    rows[rng.random(rows.shape) < 0.4] = -1000.0
    rows[rng.random(rows.shape) < 0.2] = -2000.0
    rows[0] = -1000.0  # a row of atoms only
    expected = np.array([max([v for v in row if v not in atoms], default=-np.inf) for row in rows.tolist()])
    np.testing.assert_array_equal(_largest_other(rows, atoms), expected)
