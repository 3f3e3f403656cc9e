"""A rejection event learned by a classifier (DP-Sniper's approach), in arithmetic that is the same
on every CPU.

Bichsel, Steffen, Bogunovic & Vechev 2021 ("DP-Sniper: black-box discovery of differential privacy
violations using classifiers", S&P, §IV–V) train a classifier p(a | o) that tells outputs o of M(a)
from outputs of M(b) and reject on its score: the *optimal threshold attack* for a target probability
c is ``S = {s(o) > t} ∪ {s(o) = t with probability q}`` with t and q chosen so that P[M(b) ∈ S] = c
(the randomised tie makes every c reachable when the score has atoms, as the ⊤/⊥ outputs of sparse
vector variants have).  Here:

* :class:`OutputFeatures` — features of one output: for every coordinate, indicators of its frequent
  values (atoms such as ⊤, ⊥, aborted; one atom per coordinate is the reference) and, where it also
  takes other values, the standardised value (and its square for outputs of at most two coordinates).
* :func:`fit_logistic` — ridge logistic regression by Newton's method (iteratively reweighted least
  squares).  Every sum runs in an order fixed by the code (:mod:`dpcert._fixed_order`: no ``@``, no
  BLAS or LAPACK), so the weights, the scores and hence the event are the same bits under every BLAS
  kernel (``OPENBLAS_CORETYPE``).
* :class:`Binning` — outputs whose values are continuous (a sparse vector releasing noisy query
  values or gaps) made into cells: every coordinate keeps its atoms and has its other values cut at
  quantiles of the fitting draws, so a cell is a joint condition on which positions were answered and
  where their released values lie (the events StatDP, Ding et al. 2018 §5, and DP-Sniper's histogram
  features, Bichsel et al. 2021 §VI, use on these outputs); the cells are scored like small supports.
* :class:`RowSummary` — a summary of one output that does not depend on which coordinates hold what:
  how many coordinates take each frequent value (atoms pooled over the coordinates: how many ⊥, how
  many aborted) and the quantile bin of the largest other value.  Cells of summaries separate a sparse
  vector that releases its noisy query values (Lyu, Su & Li 2017, Alg. 3; CheckDP's
  BadGapSparseVector, Wang, Ding, Kifer & Zhang 2020): on inputs b = a − 1 an output with m answered
  queries whose released values all lie below b's answers has likelihood ratio e^(m/s) under query
  noise Lap(s) (each ⊥ and each released value adds 1/s once the released values cap the noisy
  threshold), a ratio that per-coordinate cells spread over too many positions to estimate.
* :func:`marginal_log_ratios` — the product of the coordinates' binned marginals (naive Bayes): the
  score of an output is the sum over its coordinates of the estimated log likelihood ratio of the
  coordinate's atom or value bin.  When the coordinates are independent given the input (parallel
  Laplace releases, histograms, RAPPOR's bits) this is the Neyman–Pearson statistic up to binning, and
  each term is estimated from all the draws, where a joint cell table would split them over a number
  of cells exponential in the coordinates.
* :class:`LearnedEvent` — the event ``{u(o) > t} ∪ {u(o) = t and U < q}`` on the classifier's score,
  serialisable exactly (its threshold and tie are chosen by
  :func:`dpcert.audits.classifier_search.choose_event`).

A randomised event is an event of the mechanism M'(x) = (M(x), U) with U uniform on [0, 1) and
independent of M: if M is (ε, δ)-DP, then for every u the section S_u satisfies the DP inequality, and
integrating over u gives it for S, so a lower bound on ε found with S is a lower bound for M.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert.errors import InvalidParameter

MAX_ATOMS = 4  # frequent values per coordinate given an indicator feature
ATOM_SHARE = 0.01  # a value is an atom when at least this share of the fitting draws take it
RIDGE = 1.0  # ridge penalty on the weights (features are standardised)
NEWTON_STEPS = 25
NEWTON_FLOOR = 1e-12  # Newton decrement per draw below which a step that no longer halves ends the fit
BIN_COUNTS = (16, 8, 4, 2)  # value bins per coordinate tried for binned cells, finest first
PATTERN_BIN_COUNTS = (4, 2)  # value bins per coordinate of the value tables beside atom patterns
PATTERN_LEVEL = 0.01  # level of the tests that released values are independent of the pattern
BLOCK_LEVEL = 0.01  # level of the tests that neighbouring coordinates are independent (block boundaries)
BLOCK_BINS = 4  # value bins per coordinate in those tests
MAX_CELLS = 256  # outputs with at most this many distinct values (on the fitting draws) are scored by cell
CELL_PROBE = 20_000  # rows inspected before all rows are split into cells
DENSE_CODES = 1 << 16  # cell values and cell codes below this are looked up in a table
MARGINAL_FDR = 0.05  # false discovery rate of the coordinates kept in a marginal score
GRAM_CHUNK = 4096  # rows per partial Gram matrix (bounded memory; fixed, so the sums' order is fixed)
BLOCK_ROWS = 16_384  # rows per block of the elementwise passes (each value gets the same operations)


def _blocks(rows: int) -> range:
    """Starts of the blocks of :data:`BLOCK_ROWS` rows that elementwise passes walk through: a block's
    values stay in the CPU's cache across the passes, and every value gets the same operations as in
    one pass over all rows (so the results do not depend on the block size)."""
    return range(0, rows, BLOCK_ROWS)


def as_rows(outputs: np.ndarray) -> np.ndarray:
    """Outputs as a float (n, d) array; non-finite outputs are refused."""
    values = np.asarray(outputs)
    if values.dtype.kind not in "biuf":
        raise InvalidParameter("mechanism output", str(values.dtype), "numbers for a learned event")
    values = values.astype(float, copy=False)
    if values.ndim == 1:
        values = values[:, None]
    # min and max propagate NaN, so both are finite exactly when every value is (no boolean copy)
    if values.size and not (np.isfinite(np.min(values)) and np.isfinite(np.max(values))):
        raise InvalidParameter("mechanism output", "non-finite values", "finite numbers for a learned event")
    return values


@dataclass(frozen=True)
class OutputFeatures:
    """The feature map of one output, fitted on screening draws (see the module docstring)."""

    atoms: tuple[tuple[float, ...], ...]  # per coordinate: every atom (its values are not continuous)
    indicators: tuple[tuple[float, ...], ...]  # per coordinate: the atoms given an indicator feature
    centre: tuple[float | None, ...]  # per coordinate: centre of the continuous part, None if none
    scale: tuple[float, ...]
    squares: bool

    @classmethod
    def fit(cls, pooled: np.ndarray) -> OutputFeatures:
        rows = as_rows(pooled)
        size, width = rows.shape
        atoms: list[tuple[float, ...]] = []
        indicators: list[tuple[float, ...]] = []
        centres: list[float | None] = []
        scales: list[float] = []
        for column in rows.T:
            values, counts = np.unique(column, return_counts=True)
            order = np.argsort(-counts, kind="stable")[:MAX_ATOMS]
            frequent = order[counts[order] >= ATOM_SHARE * size]
            atom_values = values[np.sort(frequent)]
            continuous = column[~np.isin(column, atom_values)]
            atoms.append(tuple(float(v) for v in atom_values))
            if continuous.size >= 2 and float(np.ptp(continuous)) > 0:
                centre = float(np.median(continuous))
                scale = float(np.mean(np.abs(continuous - centre)))
                centres.append(centre)
                scales.append(scale if scale > 0 else 1.0)
                kept = atom_values
            else:
                centres.append(None)
                scales.append(1.0)
                reference = values[order[0]] if order.size else None  # the most frequent value
                kept = atom_values[atom_values != reference]
            indicators.append(tuple(float(v) for v in kept))
        return cls(tuple(atoms), tuple(indicators), tuple(centres), tuple(scales), width <= 2)

    @property
    def width(self) -> int:
        """Number of features, the intercept included."""
        total = 1
        for kept, centre in zip(self.indicators, self.centre, strict=True):
            total += len(kept) + (0 if centre is None else (2 if self.squares else 1))
        return total

    def transform(self, outputs: np.ndarray) -> np.ndarray:
        rows = as_rows(outputs)
        if rows.shape[1] != len(self.atoms):
            raise InvalidParameter(
                "mechanism output", f"{rows.shape[1]} coordinates", f"{len(self.atoms)} coordinates"
            )
        columns = [np.ones(rows.shape[0])]
        for index, column in enumerate(rows.T):
            for atom in self.indicators[index]:
                columns.append((column == atom).astype(float))
            centre = self.centre[index]
            if centre is None:
                continue
            is_atom = np.isin(column, np.asarray(self.atoms[index], float))
            z = np.where(is_atom, 0.0, (column - centre) / self.scale[index])
            columns.append(z)
            if self.squares:
                columns.append(z * z)
        return np.stack(columns, axis=1)

    def score(self, outputs: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``fixed_order.dot(self.transform(outputs), weights)`` to the bit, one feature column at a
        time (the design matrix is never built): a rounded product and a rounded sum per feature, in
        the features' order."""
        rows = as_rows(outputs)
        if rows.shape[1] != len(self.atoms):
            raise InvalidParameter(
                "mechanism output", f"{rows.shape[1]} coordinates", f"{len(self.atoms)} coordinates"
            )
        if weights.shape != (self.width,):
            raise InvalidParameter("weights", f"{weights.shape[0]} weights", f"{self.width} weights")
        scores = np.full(rows.shape[0], weights[0] * 1.0) + 0.0  # the intercept column is all ones
        for start in _blocks(rows.shape[0]):
            total = scores[start : start + BLOCK_ROWS]
            feature = 1
            for index, column in enumerate(rows[start : start + BLOCK_ROWS].T.copy()):
                for atom in self.indicators[index]:
                    total += (column == atom).astype(float) * weights[feature]
                    feature += 1
                centre = self.centre[index]
                if centre is None:
                    continue
                is_atom = np.isin(column, np.asarray(self.atoms[index], float))
                z = np.where(is_atom, 0.0, (column - centre) / self.scale[index])
                total += z * weights[feature]
                feature += 1
                if self.squares:
                    total += (z * z) * weights[feature]
                    feature += 1
        return scores

    def to_dict(self) -> dict[str, Any]:
        return {
            "atoms": [list(a) for a in self.atoms],
            "indicators": [list(a) for a in self.indicators],
            "centre": list(self.centre),
            "scale": list(self.scale),
            "squares": self.squares,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OutputFeatures:
        return cls(
            tuple(tuple(float(v) for v in a) for a in data["atoms"]),
            tuple(tuple(float(v) for v in a) for a in data["indicators"]),
            tuple(None if c is None else float(c) for c in data["centre"]),
            tuple(float(s) for s in data["scale"]),
            bool(data["squares"]),
        )


@dataclass(frozen=True)
class CellTable:
    """Distinct output rows (cells) and a lookup of each output's cell, by mixed-radix codes of the
    columns' positions among the cells' values (exact comparisons only)."""

    cells: tuple[tuple[float, ...], ...]

    @classmethod
    def of(cls, rows: np.ndarray) -> CellTable | None:
        """The cells of ``rows``, or None when there are more than :data:`MAX_CELLS` or their codes
        would not fit in 62 bits.  The first :data:`CELL_PROBE` rows are inspected first: when they
        alone have too many cells, so do all rows (the answer is the same, found sooner)."""
        if rows.shape[0] > CELL_PROBE:
            probed = np.unique(rows[:CELL_PROBE], axis=0)
            if probed.shape[0] > MAX_CELLS:
                return None
            known = cls._radix_table(probed)
            others = rows[known.index(rows) < 0] if known is not None else rows
            cells = np.unique(np.concatenate([probed, others]), axis=0)  # the same as over all rows
        else:
            cells = np.unique(rows, axis=0)
        return cls._radix_table(cells)

    @classmethod
    def _radix_table(cls, cells: np.ndarray) -> CellTable | None:
        if cells.shape[0] > MAX_CELLS:
            return None
        radix = [float(np.unique(column).shape[0]) for column in cells.T]
        if float(np.prod(radix)) >= 2.0**62:
            return None
        return cls(tuple(tuple(float(v) for v in row) for row in cells))

    def index(self, rows: np.ndarray) -> np.ndarray:
        """Each row's cell index, −1 for a row that is not a cell.

        A column whose cell values are small non-negative integers (codes of binned values, counts of
        row summaries) is looked up in a table indexed by the value, and so are the rows' mixed-radix
        codes when there are at most :data:`DENSE_CODES` of them; other columns and codes are found
        by binary search.  Both give the same indices."""
        cells = np.asarray(self.cells, float).reshape(len(self.cells), -1)
        codes = np.zeros(rows.shape[0], dtype=np.int64)
        cell_codes = np.zeros(cells.shape[0], dtype=np.int64)
        known = np.ones(rows.shape[0], dtype=bool)
        for j in range(cells.shape[1]):
            values = np.unique(cells[:, j])
            column = np.ascontiguousarray(rows[:, j])
            if values[0] >= 0.0 and values[-1] < DENSE_CODES and np.all(values == np.floor(values)):
                lookup = np.full(int(values[-1]) + 1, -1, dtype=np.int64)
                lookup[values.astype(np.int64)] = np.arange(values.shape[0])
                inside = (column >= 0.0) & (column <= values[-1])
                whole = np.where(inside, column, 0.0).astype(np.int64)
                position = lookup[whole]
                known &= inside & (whole == column) & (position >= 0)
                position = np.maximum(position, 0)
            else:
                position = np.minimum(np.searchsorted(values, column), values.shape[0] - 1)
                known &= values[position] == column
            codes = codes * values.shape[0] + position
            cell_codes = cell_codes * values.shape[0] + np.searchsorted(values, cells[:, j])
        space = int(np.prod([float(np.unique(cells[:, j]).shape[0]) for j in range(cells.shape[1])]))
        if space <= DENSE_CODES:  # every code in range (positions are in range): a table of cells
            lookup = np.full(space, -1, dtype=np.int64)
            lookup[cell_codes] = np.arange(cells.shape[0])
            return np.where(known, lookup[codes], -1)
        order = np.argsort(cell_codes, kind="stable")
        sorted_codes = cell_codes[order]
        where = np.minimum(np.searchsorted(sorted_codes, codes), sorted_codes.shape[0] - 1)
        known &= sorted_codes[where] == codes
        return np.where(known, order[where], -1)


@dataclass(frozen=True)
class Binning:
    """Per coordinate: its atoms (kept as they are) and the cut points of its other values; a row's
    image is, per coordinate, the atom's index or ``len(atoms) + bin``."""

    atoms: tuple[tuple[float, ...], ...]
    edges: tuple[tuple[float, ...], ...]

    @classmethod
    def fit(cls, pooled: np.ndarray, bins: int) -> Binning:
        """Atoms as in :class:`OutputFeatures` and ``bins`` equal-count bins of the other values."""
        return cls.fit_each(pooled, (bins,))[0]

    @classmethod
    def fit_each(cls, pooled: np.ndarray, bin_counts: tuple[int, ...]) -> list[Binning]:
        """:meth:`fit` for each of ``bin_counts``, each column's atoms and sorted values found once."""
        rows = as_rows(pooled)
        atoms: list[tuple[float, ...]] = []
        edges: list[list[tuple[float, ...]]] = [[] for _ in bin_counts]
        for column in rows.T:
            values, counts = np.unique(column, return_counts=True)
            order = np.argsort(-counts, kind="stable")[:MAX_ATOMS]
            frequent = values[np.sort(order[counts[order] >= ATOM_SHARE * rows.shape[0]])]
            continuous = np.sort(column[~np.isin(column, frequent)])
            for found, bins in zip(edges, bin_counts, strict=True):
                cuts: tuple[float, ...] = ()
                if continuous.size >= bins:
                    positions = (np.arange(1, bins) * continuous.size) // bins
                    cuts = tuple(float(v) for v in np.unique(continuous[positions]))
                found.append(cuts)
            atoms.append(tuple(float(v) for v in frequent))
        return [cls(tuple(atoms), tuple(found)) for found in edges]

    @classmethod
    def shared(cls, pooled: np.ndarray, bins: int) -> Binning:
        """One binning for every coordinate: atoms and cut points as :meth:`fit` finds them on all
        coordinates' values together (for coordinates that are copies of one release)."""
        return cls.shared_each(pooled, (bins,))[0]

    @classmethod
    def shared_each(cls, pooled: np.ndarray, bin_counts: tuple[int, ...]) -> list[Binning]:
        """:meth:`shared` for each of ``bin_counts``, the values' atoms and order found once."""
        rows = as_rows(pooled)
        return [
            cls(one.atoms * rows.shape[1], one.edges * rows.shape[1])
            for one in cls.fit_each(rows.reshape(-1, 1), bin_counts)
        ]

    def codes(self, outputs: np.ndarray) -> np.ndarray:
        """Per coordinate (rows of the result) and output (columns): the atom's index, or
        ``len(atoms)`` + the number of cut points at or below the value (``searchsorted(edges, value,
        side="right")``, counted by one comparison per cut point over the coordinate's contiguous
        values: no data-dependent branches, several times faster than a binary search per value)."""
        rows = as_rows(outputs)
        if rows.shape[1] != len(self.atoms):
            raise InvalidParameter(
                "mechanism output", f"{rows.shape[1]} coordinates", f"{len(self.atoms)} coordinates"
            )
        codes = np.empty((rows.shape[1], rows.shape[0]), dtype=np.int8)  # at most 4 atoms + 16 bins
        buffer = np.empty(min(rows.shape[0], BLOCK_ROWS), dtype=bool)
        for start in _blocks(rows.shape[0]):
            columns = rows[start : start + BLOCK_ROWS].T.copy()  # the block's coordinates, contiguous
            below = buffer[: columns.shape[1]]
            for index, (atoms, edges) in enumerate(zip(self.atoms, self.edges, strict=True)):
                column = columns[index]
                code = codes[index, start : start + columns.shape[1]]
                code.fill(len(atoms) + len(edges))
                # values are finite (as_rows), so value < edge is the complement of edge <= value
                for edge in edges:
                    np.less(column, edge, out=below)
                    code -= below
                for position, atom in enumerate(atoms):
                    np.equal(column, atom, out=below)
                    np.copyto(code, np.int8(position), where=below)
        return codes

    def transform(self, outputs: np.ndarray) -> np.ndarray:
        """:meth:`codes` as a float (n, d) array of rows (the cells of binned outputs)."""
        return self.codes(outputs).T.astype(float)

    def pattern_rows(self, codes: np.ndarray) -> np.ndarray:
        """The outputs' atom patterns from their :meth:`codes`: per coordinate the atom's index, or
        ``len(atoms)`` for any other value, as a float (n, d) array of rows."""
        values = np.array([len(atoms) for atoms in self.atoms], dtype=codes.dtype)[:, None]
        return np.minimum(codes, values).T.astype(float)

    def code_maps(self, finer: Binning) -> tuple[np.ndarray, ...] | None:
        """Per coordinate, the array that maps each of ``finer``'s codes to this binning's code of the
        same values: possible when both have the same atoms and every cut point of this binning is one
        of ``finer``'s (then a value's count of cut points at or below it is read off its finer bin);
        None otherwise."""
        if self.atoms != finer.atoms:
            return None
        maps = []
        for atoms, fine_edges, edges in zip(self.atoms, finer.edges, self.edges, strict=True):
            if not set(edges) <= set(fine_edges):
                return None
            # fine code len(atoms) + k: the value lies in [fine_edges[k-1], fine_edges[k])
            below = np.searchsorted(np.asarray(edges, float), np.asarray(fine_edges, float), side="right")
            maps.append(np.concatenate([np.arange(len(atoms)), len(atoms) + np.concatenate([[0], below])]))
        return tuple(maps)

    def to_dict(self) -> dict[str, Any]:
        return {"atoms": [list(a) for a in self.atoms], "edges": [list(e) for e in self.edges]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Binning:
        return cls(
            tuple(tuple(float(v) for v in a) for a in data["atoms"]),
            tuple(tuple(float(v) for v in e) for e in data["edges"]),
        )


def _largest_other(rows: np.ndarray, atoms: tuple[float, ...]) -> np.ndarray:
    """Per row, the largest value that is not an atom (−∞ for a row of atoms only)."""
    other = rows
    for atom in atoms:
        other = np.where(rows == atom, -np.inf, other)
    return np.max(other, axis=1)


@dataclass(frozen=True)
class RowSummary:
    """Per row: how many coordinates take each atom (atoms pooled over all coordinates) and the bin of
    the row's largest non-atom value (0 for a row of atoms only, else 1 + its bin among ``edges``)."""

    atoms: tuple[float, ...]
    edges: tuple[float, ...]

    @classmethod
    def fit(cls, pooled: np.ndarray, bins: int) -> RowSummary:
        """Atoms: up to :data:`MAX_ATOMS` values taken by at least :data:`ATOM_SHARE` of all entries;
        ``bins`` equal-count bins of the rows' largest non-atom values."""
        rows = as_rows(pooled)
        values, counts = np.unique(rows, return_counts=True)
        order = np.argsort(-counts, kind="stable")[:MAX_ATOMS]
        frequent = tuple(float(v) for v in values[np.sort(order[counts[order] >= ATOM_SHARE * rows.size])])
        largest = _largest_other(rows, frequent)
        continuous = np.sort(largest[np.isfinite(largest)])
        cuts: tuple[float, ...] = ()
        if continuous.size >= bins:
            positions = (np.arange(1, bins) * continuous.size) // bins
            cuts = tuple(float(v) for v in np.unique(continuous[positions]))
        return cls(frequent, cuts)

    def parts(self, outputs: np.ndarray) -> tuple[np.ndarray, ...]:
        """What the image of ``outputs`` is made of that depends on the atoms alone (summaries that
        differ only in their bins share it): per atom, how many coordinates of each row take it, and the
        row's largest other value."""
        rows = as_rows(outputs)
        counts = [np.count_nonzero(rows == atom, axis=1).astype(float) for atom in self.atoms]
        return (*counts, _largest_other(rows, self.atoms))

    def image(self, parts: tuple[np.ndarray, ...]) -> np.ndarray:
        """:meth:`transform` of the outputs whose :meth:`parts` (under these atoms) are ``parts``."""
        *counts, largest = parts
        bins = 1.0 + np.searchsorted(np.asarray(self.edges, float), largest, side="right")
        return np.stack([*counts, np.where(np.isfinite(largest), bins, 0.0)], axis=1)

    def transform(self, outputs: np.ndarray) -> np.ndarray:
        return self.image(self.parts(outputs))

    def to_dict(self) -> dict[str, Any]:
        return {"atoms": list(self.atoms), "edges": list(self.edges)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RowSummary:
        return cls(tuple(float(v) for v in data["atoms"]), tuple(float(v) for v in data["edges"]))


def summary_cells(
    fitting: np.ndarray,
    pooled: np.ndarray,
    parts: dict[tuple[float, ...], tuple[np.ndarray, ...]] | None = None,
) -> list[tuple[RowSummary, CellTable]]:
    """Every :class:`RowSummary` of :data:`BIN_COUNTS` (cut at quantiles of ``fitting``) whose images of
    ``pooled`` form at most :data:`MAX_CELLS` cells, with those cells, finest first (the finest
    resolves the likelihood ratio best, the coarsest estimates each cell's ratio best); none for outputs
    of one coordinate (the summary is then a binning of the value) or without atoms.

    ``parts``, if given, receives the :meth:`RowSummary.parts` of ``pooled`` under each summary's atoms
    (computed once for the summaries that share them)."""
    rows = as_rows(pooled)
    found: list[tuple[RowSummary, CellTable]] = []
    if rows.shape[1] < 2:
        return found
    known_parts = {} if parts is None else parts
    for bins in BIN_COUNTS:
        summary = RowSummary.fit(fitting, bins)
        if not summary.atoms:
            return found
        if CellTable.of(summary.transform(rows[:CELL_PROBE])) is None:
            continue  # too many cells among the probed rows, hence among all rows
        if summary.atoms not in known_parts:
            known_parts[summary.atoms] = summary.parts(rows)
        table = CellTable.of(summary.image(known_parts[summary.atoms]))
        if table is not None and not any(summary == known for known, _ in found):
            found.append((summary, table))
    return found


def binned_cells(fitting: np.ndarray, pooled: np.ndarray) -> tuple[Binning, CellTable] | None:
    """The finest :class:`Binning` of :data:`BIN_COUNTS` (cut at quantiles of ``fitting``) whose images
    of ``pooled`` form at most :data:`MAX_CELLS` cells, with those cells; None if even the coarsest
    has more, or if no coordinate has continuous values."""
    rows = as_rows(pooled)
    for binning in Binning.fit_each(fitting, BIN_COUNTS):
        if not any(binning.edges):
            return None
        if CellTable.of(binning.transform(rows[:CELL_PROBE])) is None:
            continue  # too many cells among the probed rows, hence among all rows
        table = CellTable.of(binning.transform(rows))
        if table is not None:
            return binning, table
    return None


def smoothed_log_ratios(
    count_a: np.ndarray, count_b: np.ndarray, total_a: float, total_b: float
) -> np.ndarray:
    """``log((count_a + 1/2) / total_a) − log((count_b + 1/2) / total_b)``: the log ratio of two
    estimated probabilities with half a draw added to every outcome (the totals include those halves)."""
    return np.log((count_a + 0.5) / total_a) - np.log((count_b + 0.5) / total_b)


def cell_log_ratios(table: CellTable, on_a: np.ndarray, on_b: np.ndarray) -> tuple[np.ndarray, float]:
    """``log P̂(cell | a) − log P̂(cell | b)`` with half a draw added to every cell (the maximum-
    likelihood logistic regression on one-hot cell features, smoothed), and the score of a row outside
    every cell (half a draw on each side)."""
    return cell_log_ratios_of_index(len(table.cells), table.index(on_a), table.index(on_b))


def cell_log_ratios_of_index(size: int, index_a: np.ndarray, index_b: np.ndarray) -> tuple[np.ndarray, float]:
    """:func:`cell_log_ratios` from the rows' cell indices (:meth:`CellTable.index`) in a table of
    ``size`` cells."""
    count_a = np.bincount(index_a[index_a >= 0], minlength=size)
    count_b = np.bincount(index_b[index_b >= 0], minlength=size)
    total_a = index_a.shape[0] + 0.5 * (size + 1)
    total_b = index_b.shape[0] + 0.5 * (size + 1)
    scores = smoothed_log_ratios(count_a, count_b, total_a, total_b)
    return scores, float(np.log(0.5 / total_a) - np.log(0.5 / total_b))


def marginal_binnings(fitting: np.ndarray, *, shared: bool = False) -> list[Binning]:
    """The distinct :class:`Binning` of :data:`BIN_COUNTS` (cut at quantiles of ``fitting``; with
    ``shared``, :meth:`Binning.shared`), finest first, for a product-of-marginals score.  None for
    outputs of one coordinate (binned cells already score those exactly as the marginal would), and
    none for outputs in which a coordinate is either an atom or a continuous value: that is the shape
    of a sparse vector's output (⊥, ⊤ or aborted, else a released noisy value), whose coordinates are
    coupled through the one noisy threshold, so their product of marginals is not the likelihood
    ratio; row summaries and atom patterns (:func:`pattern_cells`) model those outputs instead."""
    rows = as_rows(fitting)
    found: list[Binning] = []
    if rows.shape[1] < 2:
        return found
    each = Binning.fit_each(rows, BIN_COUNTS)
    if _sparse_vector_shaped(each):
        return []
    for binning in Binning.shared_each(rows, BIN_COUNTS) if shared else each:
        if not any(binning == known for known in found):
            found.append(binning)
    return found


def _sparse_vector_shaped(binnings: list[Binning]) -> bool:
    """Whether some coordinate has both atoms and cut points of other values in one of ``binnings``:
    an atom (⊥, ⊤, aborted) or a released value, as in a sparse vector's output."""
    return any(
        atoms and edges
        for binning in binnings
        for atoms, edges in zip(binning.atoms, binning.edges, strict=True)
    )


def pattern_cells(
    fitting: np.ndarray, pooled: np.ndarray
) -> tuple[CellTable, list[Binning], np.ndarray] | None:
    """For outputs shaped like a sparse vector's (:func:`_sparse_vector_shaped`) of several coordinates:
    the cells of their atom patterns (:meth:`Binning.pattern_rows`) if ``pooled`` has at most
    :data:`MAX_CELLS` of them, the distinct binnings of :data:`PATTERN_BIN_COUNTS` (cut at quantiles
    of ``fitting``, finest first; the same atoms, hence the same patterns) for the value tables beside
    them, and ``pooled``'s codes under the first (:meth:`Binning.codes`); None otherwise.

    A numerical sparse vector (Wang et al. 2019) releases fresh noise beside its comparisons, so its
    output's probability is its pattern's times each released value's density, and its log likelihood
    ratio is the pattern's plus the released values' (:func:`value_log_ratios_of_counts`).  Estimating
    a few dozen patterns and one small table per coordinate takes far fewer draws than cells of
    patterns and value bins together.  The coarsest binnings only: each table is estimated from the
    draws that release a value at its coordinate."""
    rows = as_rows(pooled)
    if rows.shape[1] < 2:
        return None
    each = Binning.fit_each(fitting, PATTERN_BIN_COUNTS)
    if not _sparse_vector_shaped(each):
        return None
    first = each[0]
    if CellTable.of(first.pattern_rows(first.codes(rows[:CELL_PROBE]))) is None:
        return None
    codes = first.codes(rows)
    table = CellTable.of(first.pattern_rows(codes))
    if table is None:
        return None
    distinct: list[Binning] = []
    for binning in each:
        if not any(binning == known for known in distinct):
            distinct.append(binning)
    return table, distinct, codes


def pattern_index(binning: Binning, cells: CellTable, codes: np.ndarray) -> np.ndarray:
    """The cell (:meth:`CellTable.index`) of the atom pattern of outputs whose codes are ``codes``; the
    same under every binning with these atoms."""
    return cells.index(binning.pattern_rows(codes))


def values_independent_of_patterns(
    binning: Binning,
    cells: CellTable,
    codes: tuple[np.ndarray, ...],
    indices: tuple[np.ndarray, ...],
    level: float = PATTERN_LEVEL,
) -> bool:
    """Whether the released values' bins look independent of the atom pattern, on each input's draws
    (``codes``: their :meth:`Binning.codes`, one array per input; ``indices``: their patterns' cells,
    :func:`pattern_index`): a G-test of independence of pattern
    and value bin at every coordinate that releases values, for every input, none rejected at
    ``level`` split evenly over the tests (Bonferroni).

    :func:`pattern_value_scores` is the log likelihood ratio (up to the bins) when, given the input
    and that a coordinate releases a value, the value does not depend on the rest of the pattern: a
    numerical sparse vector's fresh release noise, or any sparse vector that stops at its first ⊤ (its
    coordinate's values then come with one pattern only).  Where the released value is the compared
    noisy query itself and several ⊤ answers are released (Lyu et al.'s Algorithm 3 with c = 2), it
    depends on the threshold noise, hence on the pattern, and the test finds it (on every pair of
    Lyu et al.'s Algorithm 3 at 5·10⁴ draws per input)."""
    tests: list[float] = []
    for on_input, index in zip(codes, indices, strict=True):
        for coordinate, atoms in enumerate(binning.atoms):
            code = on_input[coordinate].astype(np.int64)
            released = (code >= len(atoms)) & (index >= 0)
            bins = len(binning.edges[coordinate]) + 1
            if bins < 2 or not released.any():
                continue
            joint = contingency(index[released], code[released] - len(atoms), len(cells.cells), bins)
            tests.append(independence_p_value(joint))
    return all(p > level / len(tests) for p in tests) if tests else True


def independence_p_value(joint: np.ndarray) -> float:
    """p-value of the G-test (likelihood-ratio test of independence, Wilks' χ² limit) of the rows and
    columns of the count table ``joint``, over its non-empty rows and columns; 1 when fewer than two of
    either remain."""
    from scipy.special import chdtrc  # heavy: imported on first use (keeps the pytest plugin light)

    table = joint[joint.sum(axis=1) > 0][:, joint.sum(axis=0) > 0]
    if min(table.shape) < 2:
        return 1.0
    pooled = table.sum(axis=0)
    statistic = 0.0
    for counts in table:
        expected = pooled * (counts.sum() / pooled.sum())
        seen = counts > 0
        statistic += float(np.sum(counts[seen] * np.log(counts[seen] / expected[seen])))
    freedom = (table.shape[0] - 1) * (table.shape[1] - 1)
    return float(chdtrc(freedom, max(2.0 * statistic, 0.0)))


def independent_blocks(
    binning: Binning, codes: tuple[np.ndarray, ...], level: float = BLOCK_LEVEL
) -> tuple[int, ...]:
    """The first coordinate of each run of coordinates (block) that looks independent of its
    neighbouring runs: the boundary between coordinates k − 1 and k is kept where a G-test of
    independence of their codes (:meth:`Binning.codes` under ``binning``; ``codes`` holds one array per
    input) rejects on no input at ``level`` split evenly over all the tests (Bonferroni).  Always
    starts with 0.

    Mechanisms run side by side on one input with independent noise (DP-Sniper's SVT34Parallel: Lyu
    et al.'s Algorithms 3 and 4) have a likelihood ratio that is the product of their parts'; the log
    ratios of the blocks, each estimated on its own columns, add up to the whole output's.  Only
    neighbouring coordinates are tested: a block boundary the tests miss (or a false one) costs power,
    never validity, since the event is fixed before the draws that bound it."""
    sizes = marginal_sizes(binning)
    tests = len(codes) * (len(sizes) - 1)
    starts = [0]
    for k in range(1, len(sizes)):
        p_values = [
            independence_p_value(
                contingency(
                    on_input[k - 1].astype(np.int64), on_input[k].astype(np.int64), sizes[k - 1], sizes[k]
                )
            )
            for on_input in codes
        ]
        if min(p_values) > level / tests:
            starts.append(k)
    return tuple(starts)


def contingency(rows: np.ndarray, columns: np.ndarray, row_count: int, column_count: int) -> np.ndarray:
    """The table of how many pairs ``(rows[i], columns[i])`` take each pair of codes (codes are
    non-negative integers below ``row_count`` and ``column_count``)."""
    return np.bincount(rows * column_count + columns, minlength=row_count * column_count).reshape(
        row_count, column_count
    )


def value_log_ratios_of_counts(
    binning: Binning,
    counts_a: list[np.ndarray],
    counts_b: list[np.ndarray],
    *,
    false_discovery: float | None = None,
) -> np.ndarray:
    """Per coordinate, from the draws' :func:`code_counts`: ``log P̂(bin | a value, a) − log P̂(bin | a
    value, b)`` over the bins of the values (not atoms) taken there, half a draw added to every bin, and
    0 at the atoms' codes; the tables one after the other (the layout of :func:`marginal_scores`).
    With ``false_discovery``, only the coordinates whose values' bins differ at that false discovery rate
    keep their table (:func:`_discoveries`)."""
    tables, p_values = [], []
    for atoms, count_a, count_b in zip(binning.atoms, counts_a, counts_b, strict=True):
        values_a, values_b = count_a[len(atoms) :], count_b[len(atoms) :]
        table = np.zeros(count_a.shape[0])
        size = values_a.shape[0]
        table[len(atoms) :] = smoothed_log_ratios(
            values_a, values_b, float(values_a.sum()) + 0.5 * size, float(values_b.sum()) + 0.5 * size
        )
        tables.append(table)
        if false_discovery is not None:
            p_values.append(g_test_p_value(values_a, values_b))
    return np.concatenate(_discoveries(tables, p_values, false_discovery))


def pattern_value_scores(
    binning: Binning,
    cells: CellTable,
    weights: np.ndarray,
    unseen: float,
    codes: np.ndarray,
    index: np.ndarray | None = None,
) -> np.ndarray:
    """The score of outputs whose :meth:`Binning.codes` are ``codes``: their pattern's cell score (the
    first ``len(cells.cells)`` weights; ``unseen`` outside every cell) plus the sum of the coordinates'
    value tables (the other weights, :func:`marginal_scores`).  ``index``: the patterns' cell indices
    where already at hand (:func:`pattern_index`)."""
    size = len(cells.cells)
    if index is None:
        index = pattern_index(binning, cells, codes)
    pattern = np.where(index >= 0, weights[np.maximum(index, 0)], unseen)
    return pattern + marginal_scores(binning, weights[size:], codes)


def marginal_sizes(binning: Binning) -> tuple[int, ...]:
    """Per coordinate, the number of codes of :meth:`Binning.transform`: its atoms and its bins."""
    return tuple(len(a) + len(e) + 1 for a, e in zip(binning.atoms, binning.edges, strict=True))


def g_test_p_value(count_a: np.ndarray, count_b: np.ndarray) -> float:
    """p-value of the G-test (likelihood-ratio test of independence, Wilks' χ² limit) that two count
    vectors over the same codes come from one distribution; 1 when fewer than two codes occur
    (:func:`independence_p_value` of the two rows)."""
    return independence_p_value(np.stack([count_a, count_b]))


def code_counts(binning: Binning, codes: np.ndarray) -> list[np.ndarray]:
    """Per coordinate, how many of the outputs whose codes (:meth:`Binning.codes`) are ``codes`` take
    each of its codes."""
    return [np.bincount(codes[index], minlength=size) for index, size in enumerate(marginal_sizes(binning))]


def coarse_counts(
    maps: tuple[np.ndarray, ...], counts: list[np.ndarray], binning: Binning
) -> list[np.ndarray]:
    """``binning``'s :func:`code_counts` from a finer binning's counts and the code maps between them
    (:meth:`Binning.code_maps`): each finer code's count added to the code it maps to."""
    coarse = []
    for lookup, fine, size in zip(maps, counts, marginal_sizes(binning), strict=True):
        total = np.zeros(size, dtype=np.int64)
        np.add.at(total, lookup, fine)
        coarse.append(total)
    return coarse


def fine_tables(maps: tuple[np.ndarray, ...], tables: np.ndarray, binning: Binning) -> np.ndarray:
    """``binning``'s tables (one after the other) read at every finer code through the code maps: the
    finer codes' scores are the same numbers as ``binning``'s scores of the same outputs."""
    pieces, offset = [], 0
    for lookup, size in zip(maps, marginal_sizes(binning), strict=True):
        pieces.append(tables[offset : offset + size][lookup])
        offset += size
    return np.concatenate(pieces)


def marginal_log_ratios(
    binning: Binning, codes_a: np.ndarray, codes_b: np.ndarray, *, false_discovery: float | None = None
) -> np.ndarray:
    """From the codes (:meth:`Binning.codes`) of draws on a and on b: per coordinate and code,
    ``log P̂(code | a) − log P̂(code | b)`` of that coordinate's marginal,
    with half a draw added to every code (as :func:`cell_log_ratios`); the coordinates' tables one
    after the other.

    With ``false_discovery``, only the coordinates whose marginals on a and b differ by the
    Benjamini–Hochberg procedure at that false discovery rate (on the p-values of
    :func:`g_test_p_value`) keep their tables; the others' are zero, since their estimated ratios are
    noise that would blur the informative ones.  When no coordinate is found, every one keeps its
    table.  (Benjamini & Hochberg 1995: the more coordinates carry a signal, the more lenient the
    cut, so many weak but real coordinates are kept together.)"""
    return marginal_log_ratios_of_counts(
        binning,
        code_counts(binning, codes_a),
        code_counts(binning, codes_b),
        codes_a.shape[1],
        codes_b.shape[1],
        false_discovery=false_discovery,
    )


def marginal_log_ratios_of_counts(
    binning: Binning,
    counts_a: list[np.ndarray],
    counts_b: list[np.ndarray],
    draws_a: int,
    draws_b: int,
    *,
    false_discovery: float | None = None,
) -> np.ndarray:
    """:func:`marginal_log_ratios` from the draws' :func:`code_counts` and their numbers."""
    tables, p_values = [], []
    for count_a, count_b, size in zip(counts_a, counts_b, marginal_sizes(binning), strict=True):
        total_a = draws_a + 0.5 * size
        total_b = draws_b + 0.5 * size
        tables.append(smoothed_log_ratios(count_a, count_b, total_a, total_b))
        if false_discovery is not None:
            p_values.append(g_test_p_value(count_a, count_b))
    return np.concatenate(_discoveries(tables, p_values, false_discovery))


def _discoveries(
    tables: list[np.ndarray], p_values: list[float], false_discovery: float | None
) -> list[np.ndarray]:
    """``tables`` with those of the coordinates not discovered at the false discovery rate
    ``false_discovery`` (Benjamini–Hochberg on their ``p_values``) set to 0; all kept when it is None,
    and all kept when none is discovered."""
    if false_discovery is None:
        return tables
    order = np.argsort(np.asarray(p_values), kind="stable")
    ranks = np.arange(1, len(p_values) + 1)
    passing = np.flatnonzero(np.asarray(p_values)[order] <= false_discovery * ranks / len(p_values))
    if not passing.size:
        return tables
    kept = set(order[: int(passing[-1]) + 1].tolist())
    return [t if i in kept else np.zeros_like(t) for i, t in enumerate(tables)]


def shared_log_ratios(binning: Binning, codes_a: np.ndarray, codes_b: np.ndarray) -> np.ndarray:
    """For a :meth:`Binning.shared` binning, from the codes of draws on a and on b: one table of
    ``log P̂(code | a) − log P̂(code | b)`` estimated from every coordinate's codes together (with
    half a draw added to every code), repeated for every coordinate.

    When the coordinates are exchangeable (independent copies of one release, as in DP-Sniper's
    LaplaceParallel), each coordinate's marginal ratio is the same, and pooling estimates it from d
    times as many draws: on twenty releases of Lap(200), the per-coordinate ratios of about ±0.005
    are smaller than the noise of twenty separate estimates from 10⁵ draws, but not of one."""
    return shared_log_ratios_of_counts(
        binning,
        code_counts(binning, codes_a),
        code_counts(binning, codes_b),
        codes_a.shape[1],
        codes_b.shape[1],
    )


def shared_log_ratios_of_counts(
    binning: Binning, counts_a: list[np.ndarray], counts_b: list[np.ndarray], draws_a: int, draws_b: int
) -> np.ndarray:
    """:func:`shared_log_ratios` from the draws' :func:`code_counts` and their numbers."""
    sizes = marginal_sizes(binning)
    if len(set(zip(binning.atoms, binning.edges, strict=True))) != 1:
        raise InvalidParameter("binning", "different coordinates' binnings", "one binning shared by all")
    size = sizes[0]
    count_a = np.add.reduce(np.stack(counts_a), axis=0)
    count_b = np.add.reduce(np.stack(counts_b), axis=0)
    total_a = len(sizes) * draws_a + 0.5 * size
    total_b = len(sizes) * draws_b + 0.5 * size
    return np.tile(smoothed_log_ratios(count_a, count_b, total_a, total_b), len(sizes))


def marginal_scores(binning: Binning, weights: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """For outputs whose codes (:meth:`Binning.codes`) are ``codes``: Σ_j (coordinate j's log ratio
    of the output's code), summed over the coordinates in their order (one rounded addition per
    coordinate: the same bits on every CPU)."""
    sizes = marginal_sizes(binning)
    if weights.shape != (sum(sizes),):
        raise InvalidParameter("weights", f"{weights.shape[0]} weights", f"{sum(sizes)} weights")
    offsets = np.cumsum([0, *sizes])
    tables = [weights[offsets[index] : offsets[index + 1]] for index in range(len(sizes))]
    total = np.zeros(codes.shape[1])
    length = min(codes.shape[1], BLOCK_ROWS)
    index_buffer, value_buffer = np.empty(length, dtype=np.intp), np.empty(length)
    for start in _blocks(codes.shape[1]):
        block = total[start : start + BLOCK_ROWS]
        positions, values = index_buffer[: block.shape[0]], value_buffer[: block.shape[0]]
        for index, table in enumerate(tables):
            np.copyto(positions, codes[index, start : start + block.shape[0]], casting="unsafe")
            np.take(table, positions, out=values)
            block += values
    return total


def _gram(design: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``Σ_i w_i x_i x_iᵀ`` in chunks of :data:`GRAM_CHUNK` rows summed in order (fixed order)."""
    total = np.zeros((design.shape[1], design.shape[1]))
    for start in range(0, design.shape[0], GRAM_CHUNK):
        stop = start + GRAM_CHUNK
        total += fixed_order.weighted_gram(design[start:stop], weights[start:stop])
    return total


def _sigmoid(scores: np.ndarray) -> np.ndarray:
    clipped = np.clip(scores, -500.0, 500.0)
    return 1.0 / (1.0 + np.exp(-clipped))


def fit_logistic(on_a: np.ndarray, on_b: np.ndarray, *, ridge: float = RIDGE) -> np.ndarray:
    """Weights w of ``logit P(a | o) = w · features(o)`` from feature rows of draws on a and on b.

    Newton's method on the ridge-penalised log-likelihood (the penalty ``ridge·|w|²/2`` keeps the
    weights finite when the inputs' outputs are separable); Gram matrices, gradients and scores are
    summed in fixed order and the Newton systems solved by a fixed-order Cholesky factorisation.
    """
    design = np.concatenate([on_a, on_b])
    labels = np.concatenate([np.ones(on_a.shape[0]), np.zeros(on_b.shape[0])])
    weights = np.zeros(design.shape[1])
    identity = np.eye(design.shape[1])
    previous = math.inf
    for _ in range(NEWTON_STEPS):
        probability = _sigmoid(fixed_order.dot(design, weights))
        gram = _gram(design, probability * (1.0 - probability)) + ridge * identity
        gradient = fixed_order.weighted_sum(design, labels - probability) - ridge * weights
        step = fixed_order.solve_spd(gram, gradient[:, None])[:, 0]
        weights = weights + step
        size = float(np.max(np.abs(step)))
        if size <= 1e-10 * (1.0 + float(np.max(np.abs(weights)))):
            break
        # At the rounding floor of the sums: the Newton decrement g·H⁻¹g (twice the predicted gain in
        # the log-likelihood) is below 10⁻¹² per draw and the step no longer halves, as it does many
        # times over while Newton's method converges (quadratically); further steps only redraw the
        # rounding noise of sums over many rows.
        decrement = float(fixed_order.dot(gradient, step))
        if decrement <= NEWTON_FLOOR * design.shape[0] and size > previous / 2.0:
            break
        previous = size
    return weights


@dataclass(frozen=True)
class LearnedEvent:
    """``S = {u(o) > t} ∪ {u(o) = t and U < q}`` with U an independent uniform draw per output and
    ``u = ±s(o)`` (+ when ``numerator`` is ``"a"``), where s is ``w · features(o)`` (logistic
    regression, ``features`` set) or, for outputs with few distinct values, the estimated log
    likelihood ratio of o's cell (``cells`` set; ``weights`` then holds one score per cell and
    ``unseen`` the score of any other output), or the sum of the coordinates' marginal log likelihood
    ratios (``marginals`` set; ``weights`` then holds the coordinates' tables one after the other), or
    the estimated log likelihood ratio of o's atom pattern plus its coordinates' value tables
    (``patterns`` and ``cells`` set: :func:`pattern_value_scores`; ``weights`` holds the patterns'
    scores, then the tables), or the sum of the scores of independent blocks of coordinates, each
    block's from an event of its own (``blocks`` set: :class:`Block`; ``weights`` empty)."""

    features: OutputFeatures | None
    weights: tuple[float, ...]
    numerator: str
    threshold: float
    tie: float
    cells: CellTable | None = None
    unseen: float = 0.0
    binning: Binning | None = None  # with ``cells``: the cells are of binned outputs
    summary: RowSummary | None = None  # with ``cells``: the cells are of row summaries
    marginals: Binning | None = None  # the sum of the coordinates' marginal log ratios (``weights``)
    patterns: Binning | None = None  # with ``cells``: atom patterns and value tables (``weights``)
    blocks: tuple[Block, ...] = ()  # the sum of the blocks' scores

    def scores(self, outputs: np.ndarray) -> np.ndarray:
        weights = np.asarray(self.weights, float)
        if self.blocks:
            rows = as_rows(outputs)
            if rows.shape[1] != self.blocks[-1].stop:
                raise InvalidParameter(
                    "mechanism output", f"{rows.shape[1]} coordinates", f"{self.blocks[-1].stop} coordinates"
                )
            score = self.blocks[0].scores(rows)
            for block in self.blocks[1:]:  # left to right: a fixed order of the sums
                score = score + block.scores(rows)
        elif self.marginals is not None:
            score = marginal_scores(self.marginals, weights, self.marginals.codes(outputs))
        elif self.patterns is not None:
            assert self.cells is not None  # the patterns' cells
            codes = self.patterns.codes(outputs)
            score = pattern_value_scores(self.patterns, self.cells, weights, self.unseen, codes)
        elif self.cells is not None:
            if self.summary is not None:
                rows = self.summary.transform(outputs)
            elif self.binning is not None:
                rows = self.binning.transform(outputs)
            else:
                rows = as_rows(outputs)
            return self.cell_scores(rows)
        else:
            assert self.features is not None  # one of the two scorers is set
            score = self.features.score(outputs, weights)
        return score if self.numerator == "a" else -score

    def cell_scores(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`scores` of the outputs whose rows in the cells' terms (the binning's or summary's
        image, or the outputs themselves) are ``rows``."""
        assert self.cells is not None  # a scorer on cells
        weights = np.asarray(self.weights, float)
        index = self.cells.index(rows)
        score = np.where(index >= 0, weights[np.maximum(index, 0)], self.unseen)
        return score if self.numerator == "a" else -score

    def contains(self, outputs: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        u = self.scores(outputs)
        return (u > self.threshold) | ((u == self.threshold) & (uniforms < self.tie))

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": None if self.features is None else self.features.to_dict(),
            "cells": None if self.cells is None else [list(c) for c in self.cells.cells],
            "weights": list(self.weights),
            "unseen": self.unseen,
            "numerator": self.numerator,
            "threshold": self.threshold,
            "tie": self.tie,
            "binning": None if self.binning is None else self.binning.to_dict(),
            "summary": None if self.summary is None else self.summary.to_dict(),
            "marginals": None if self.marginals is None else self.marginals.to_dict(),
            "patterns": None if self.patterns is None else self.patterns.to_dict(),
            "blocks": [block.to_dict() for block in self.blocks],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LearnedEvent:
        features = data.get("features")
        cells = data.get("cells")
        binning = data.get("binning")
        summary = data.get("summary")
        marginals = data.get("marginals")
        patterns = data.get("patterns")
        return cls(
            None if features is None else OutputFeatures.from_dict(features),
            tuple(float(w) for w in data["weights"]),
            str(data["numerator"]),
            float(data["threshold"]),
            float(data["tie"]),
            None if cells is None else CellTable(tuple(tuple(float(v) for v in c) for c in cells)),
            float(data.get("unseen", 0.0)),
            None if binning is None else Binning.from_dict(binning),
            None if summary is None else RowSummary.from_dict(summary),
            None if marginals is None else Binning.from_dict(marginals),
            None if patterns is None else Binning.from_dict(patterns),
            tuple(Block.from_dict(block) for block in data.get("blocks", [])),
        )

    def describe(self) -> str:
        sign = "" if self.numerator == "a" else "-"
        return (
            f"{sign}score(o) > {self.threshold:.6g} (ties at the threshold with probability "
            f"{self.tie:.4g}; {self.model()})"
        )

    def model(self) -> str:
        """What the score is, in words."""
        if self.blocks:
            parts = "; ".join(block.describe() for block in self.blocks)
            model = f"sum of {len(self.blocks)} independent blocks' estimated log likelihood ratios: {parts}"
        elif self.marginals is not None:
            model = (
                f"sum of {len(self.marginals.atoms)} coordinates' marginal log likelihood ratios "
                "(values binned at quantiles)"
            )
            tables = np.asarray(self.weights).reshape(len(self.marginals.atoms), -1)
            if len(set(zip(self.marginals.atoms, self.marginals.edges, strict=True))) == 1 and np.all(
                tables == tables[0]
            ):
                model += " (one table shared by all coordinates)"
        elif self.patterns is not None:
            assert self.cells is not None  # the patterns' cells
            model = (
                f"log likelihood ratio of {len(self.cells.cells)} atom patterns plus each coordinate's "
                "table of its released values' bins"
            )
        elif self.cells is not None:
            model = f"log likelihood ratio of {len(self.cells.cells)} output cells"
            if self.binning is not None:
                model += " (values binned at quantiles)"
            if self.summary is not None:
                model += " (row summaries: atom counts and the bin of the largest other value)"
        else:
            assert self.features is not None  # one of the two scorers is set
            model = f"logistic regression on {self.features.width} features"
        return model


@dataclass(frozen=True)
class Block:
    """Coordinates ``start`` to ``stop`` − 1 of an output, scored by ``event`` (oriented to a: its
    score estimates the block's log likelihood ratio; its threshold is not used)."""

    start: int
    stop: int
    event: LearnedEvent

    def scores(self, rows: np.ndarray) -> np.ndarray:
        return self.event.scores(rows[:, self.start : self.stop])

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "stop": self.stop, "event": self.event.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Block:
        return cls(int(data["start"]), int(data["stop"]), LearnedEvent.from_dict(data["event"]))

    def describe(self) -> str:
        return f"coordinates {self.start}–{self.stop - 1}: {self.event.model()}"
