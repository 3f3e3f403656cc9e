"""Choosing the rejection set on the selection draws only (never on the evaluation draws).

Candidates: thresholds on the output (scalars), on Fisher's linear discriminant, a distance to the pooled
centre or the Laplace log-likelihood ratio (vectors), on a user score, or superlevel sets of the estimated
likelihood ratio over cells (small supports: the Neyman–Pearson family).  Each candidate is scored by
a cautious forecast of the bound the evaluation draws will give (:func:`projected_bound`: the
selection counts are moved two standard deviations against the set before they are projected to the
evaluation sample size), and the best is returned.  The caution keeps thousands of candidates from
rewarding a small tail set whose selection counts are lucky: on correct Laplace(ε = 1) at 10⁶ draws,
without it 5 % of the bounds fall below 0.61 (minimum 0); with it the 5th percentile is 0.98
(benchmarks/audits.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert.audits.rejection_set import Feature, RejectionSet, Score, unique_rows
from dpcert.errors import InvalidParameter

INPUTS = ("a", "b")
DEFAULT_MAX_CELLS = 256
_CELL_PROBE = 20_000  # draws inspected to decide whether the outputs have a small support
_LINEAR_CANDIDATES = 2048
_TAIL_CANDIDATES = 512
Objective = Callable[..., np.ndarray]
SELECTION_CAUTION = 2.0  # standard deviations the selection counts are moved against each candidate set


def projected_bound(
    in_set_numerator: np.ndarray,
    selection_numerator: int,
    in_set_denominator: np.ndarray,
    selection_denominator: int,
    evaluation_numerator: int,
    evaluation_denominator: int,
    delta: float,
    alpha: float,
    caution: float | None = None,
) -> np.ndarray:
    """Vectorised selection score: a cautious forecast of the bound the evaluation draws will give.

    The selection counts are first moved ``caution`` standard deviations against the set (the
    numerator count down by ``caution·√k``, the denominator count up by ``caution·√(k + 1)``), then
    scaled to the evaluation sample sizes, where the Clopper–Pearson quantiles are evaluated at those
    real-valued counts with :func:`scipy.special.betaincinv`.  Without the caution, the largest
    forecast over thousands of candidate sets favours small tail sets whose selection counts are high
    by luck, and they then evaluate badly; with it, a set wins only if its advantage survives its own
    sampling noise.  Used only to *choose* the rejection set (its value is never reported).
    """
    lower, upper = projected_ends(
        in_set_numerator,
        selection_numerator,
        in_set_denominator,
        selection_denominator,
        evaluation_numerator,
        evaluation_denominator,
        alpha,
        caution,
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.log((lower - delta) / upper)
    return np.where(lower > delta, value, -np.inf)


def projected_ends(
    in_set_numerator: np.ndarray,
    selection_numerator: int,
    in_set_denominator: np.ndarray,
    selection_denominator: int,
    evaluation_numerator: int,
    evaluation_denominator: int,
    alpha: float,
    caution: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The cautious forecast of :func:`projected_bound`: the lower Clopper–Pearson end of the numerator
    probability and the upper end of the denominator one, at the evaluation sizes (α/2 each)."""
    from scipy.special import betaincinv  # heavy: imported on first use (keeps the pytest plugin light)

    caution = SELECTION_CAUTION if caution is None else caution
    numerator = np.asarray(in_set_numerator, float)
    denominator = np.asarray(in_set_denominator, float)
    numerator = np.maximum(numerator - caution * np.sqrt(numerator), 0.0)
    denominator = np.minimum(denominator + caution * np.sqrt(denominator + 1.0), selection_denominator)
    expected_num = numerator * (evaluation_numerator / selection_numerator)
    expected_den = denominator * (evaluation_denominator / selection_denominator)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(
            expected_num > 0,
            betaincinv(expected_num, evaluation_numerator - expected_num + 1.0, alpha / 2.0),
            0.0,
        )
        upper = np.where(
            expected_den < evaluation_denominator,
            betaincinv(expected_den + 1.0, evaluation_denominator - expected_den, 1.0 - alpha / 2.0),
            1.0,
        )
    return lower, upper


@dataclass(frozen=True)
class Selection:
    """A rejection set, which input is the numerator, and its projected bound on the selection half."""

    rejection_set: RejectionSet
    numerator: str
    projected: float


def _oriented(numerator: str, on_a: Any, on_b: Any) -> tuple[Any, Any]:
    """``(numerator's value, denominator's value)`` from the values for inputs a and b."""
    return (on_a, on_b) if numerator == "a" else (on_b, on_a)


def _threshold_candidates(pooled_sorted: np.ndarray) -> np.ndarray:
    size = pooled_sorted.shape[0]
    tail = np.geomspace(1.0, max(1.0, size / 50.0), _TAIL_CANDIDATES)
    index = np.concatenate([np.linspace(0.0, size - 1.0, _LINEAR_CANDIDATES), tail - 1.0, size - tail])
    index = np.unique(np.clip(np.round(index).astype(np.int64), 0, size - 1))
    return np.unique(pooled_sorted[index])


def _select_threshold(
    feature: Feature,
    selection_a: np.ndarray,
    selection_b: np.ndarray,
    evaluation_sizes: tuple[int, int],
    objective: Objective,
) -> Selection:
    values_a = np.sort(feature.apply(selection_a))
    values_b = np.sort(feature.apply(selection_b))
    thresholds = _threshold_candidates(np.sort(np.concatenate([values_a, values_b])))
    below_a = np.searchsorted(values_a, thresholds, side="right")
    below_b = np.searchsorted(values_b, thresholds, side="right")
    n_a, n_b = values_a.shape[0], values_b.shape[0]
    counts = {"<=": (below_a, below_b), ">": (n_a - below_a, n_b - below_b)}
    best = Selection(RejectionSet("threshold", feature, "<=", float(thresholds[0])), "a", -math.inf)
    for side, (in_a, in_b) in counts.items():
        for numerator in INPUTS:
            (in_num, in_den), (n_num, n_den) = (
                _oriented(numerator, in_a, in_b),
                _oriented(numerator, n_a, n_b),
            )
            eval_num, eval_den = _oriented(numerator, *evaluation_sizes)
            projected = objective(in_num, n_num, in_den, n_den, eval_num, eval_den)
            index = int(np.argmax(projected))
            if projected[index] > best.projected:
                best = Selection(
                    RejectionSet("threshold", feature, side, float(thresholds[index])),
                    numerator,
                    float(projected[index]),
                )
    return best


def _halves(cell_ids: np.ndarray, cells: int) -> tuple[tuple[np.ndarray, int], tuple[np.ndarray, int]]:
    """Cell counts and sizes of the first and second half of the draws (the same twice for one draw)."""
    half = cell_ids.shape[0] // 2
    if half == 0:
        counts = np.bincount(cell_ids, minlength=cells)
        return (counts, cell_ids.shape[0]), (counts, cell_ids.shape[0])
    first = np.bincount(cell_ids[:half], minlength=cells)
    second = np.bincount(cell_ids[half:], minlength=cells)
    return (first, half), (second, cell_ids.shape[0] - half)


def _select_cells(
    selection_a: np.ndarray,
    selection_b: np.ndarray,
    evaluation_sizes: tuple[int, int],
    objective: Objective,
) -> Selection:
    """Superlevel sets of the estimated likelihood ratio (the Neyman–Pearson family), best by projection.

    The ratio that orders the cells is estimated on the first half of the selection draws and the
    projected bound of each superlevel set on the second half, so that cells whose ratio looks large
    by chance are not rewarded twice (with many sparse cells that overfitting would otherwise choose a
    set that fails on the evaluation draws).
    """
    n_a = selection_a.shape[0]
    cells, inverse = unique_rows(np.concatenate([selection_a, selection_b]))
    rank_a, score_a = _halves(inverse[:n_a], len(cells))
    rank_b, score_b = _halves(inverse[n_a:], len(cells))
    best = Selection(RejectionSet("cells", cells=()), "a", -math.inf)
    for numerator in INPUTS:
        (rank_num, n_rank_num), (rank_den, n_rank_den) = _oriented(numerator, rank_a, rank_b)
        (num, n_num), (den, n_den) = _oriented(numerator, score_a, score_b)
        eval_num, eval_den = _oriented(numerator, *evaluation_sizes)
        ratio = ((rank_num + 0.5) / n_rank_num) / ((rank_den + 0.5) / n_rank_den)
        order = np.argsort(-ratio, kind="stable")
        projected = objective(np.cumsum(num[order]), n_num, np.cumsum(den[order]), n_den, eval_num, eval_den)
        index = int(np.argmax(projected))
        if projected[index] > best.projected:
            chosen = cells[np.sort(order[: index + 1])]
            cell_values = (
                tuple(tuple(row.tolist()) for row in chosen) if chosen.ndim > 1 else tuple(chosen.tolist())
            )
            best = Selection(RejectionSet("cells", cells=cell_values), numerator, float(projected[index]))
    return best


def _as_cells(selection: Selection, pooled: np.ndarray) -> Selection:
    """A threshold on a small support, stated as the cells (values seen on the selection draws) it holds."""
    values = np.unique(pooled)
    inside = values[selection.rejection_set.contains(values)]
    return replace(selection, rejection_set=RejectionSet("cells", cells=tuple(inside.tolist())))


def _small_support(selection_a: np.ndarray, selection_b: np.ndarray, max_cells: int) -> bool:
    if selection_a.dtype.kind not in "biuf":  # strings and other categorical outputs
        return True
    probe = np.concatenate([selection_a[:_CELL_PROBE], selection_b[:_CELL_PROBE]])
    if len(unique_rows(probe)[0]) > max_cells:
        return False
    return len(unique_rows(np.concatenate([selection_a, selection_b]))[0]) <= max_cells


def _with_resolution(feature: Feature, pooled: np.ndarray) -> Feature:
    spread = float(np.std(feature.apply(pooled)))
    return replace(feature, resolution=1e-9 * spread) if spread > 0 else feature


def _continuous_features(selection_a: np.ndarray, selection_b: np.ndarray) -> list[Feature]:
    features = _fitted_features(selection_a, selection_b)
    pooled = np.concatenate([selection_a, selection_b])
    return [f if f.name == "value" else _with_resolution(f, pooled) for f in features]


def _covariance(values: np.ndarray) -> np.ndarray:
    """``np.cov(values, rowvar=False)`` for draws (n, d), n >= 2, without BLAS: entry (i, j) is numpy's
    ``add.reduce`` of the products of the centred columns i and j (the same on every CPU), times
    ``1/(n − 1)``; O(n·d) memory, one reduction per row of the upper triangle."""
    columns = np.ascontiguousarray((values - values.mean(axis=0)).T)
    size = columns.shape[0]
    covariance = np.empty((size, size))
    for i in range(size):
        covariance[i, i:] = np.add.reduce(columns[i] * columns[i:], axis=1)
        covariance[i:, i] = covariance[i, i:]
    return covariance * (1.0 / (values.shape[0] - 1))


def _fitted_features(selection_a: np.ndarray, selection_b: np.ndarray) -> list[Feature]:
    values_a = selection_a.astype(float, copy=False)
    values_b = selection_b.astype(float, copy=False)
    pooled = np.concatenate([values_a, values_b])
    if values_a.ndim == 1:
        return [Feature("value"), Feature("distance", center=(float(np.median(pooled)),))]
    # Noiseless coordinates (constant on each input's draws) carry no noise to weigh: one that differs
    # between the inputs separates them by itself (its own threshold feature); one that does not is
    # left out of the learned features (weight 0), whose weights would otherwise be 1/0.
    constant = np.all(values_a == values_a[0], axis=0) & np.all(values_b == values_b[0], axis=0)
    noisy = ~constant
    features = [
        Feature("projection", weights=tuple(float(w) for w in _unit(values_a.shape[1], int(index))))
        for index in np.flatnonzero(constant & (values_a[0] != values_b[0]))
    ]
    features.append(Feature("distance", center=tuple(float(c) for c in pooled.mean(0))))
    if not np.any(noisy):
        return features
    weights = np.zeros(values_a.shape[1])
    # Fisher's linear discriminant on the noisy coordinates: w = Σ⁻¹ (μ_b − μ_a) with a small ridge for
    # stability, in fixed order (no BLAS or LAPACK: the weights, hence the thresholds, are the same on
    # every CPU).
    noisy_a, noisy_b = values_a[:, noisy], values_b[:, noisy]
    covariance = 0.5 * (_covariance(noisy_a) + _covariance(noisy_b))
    ridge = 1e-9 * max(float(np.trace(covariance)), 1e-300) / covariance.shape[0]
    difference = noisy_b.mean(0) - noisy_a.mean(0)
    # Σ + ridge·I is symmetric positive definite (a Gram matrix plus a positive multiple of I)
    system = covariance + ridge * np.eye(covariance.shape[0])
    weights[noisy] = fixed_order.solve_spd(system, difference[:, None])[:, 0]
    # Laplace-noise log-likelihood ratio around the two coordinate-wise medians, each coordinate
    # weighted by 1/b with b the mean absolute deviation (the Laplace maximum-likelihood scale);
    # coordinates without spread are left out (weight 0).
    median_a, median_b = np.median(values_a, axis=0), np.median(values_b, axis=0)
    spread = 0.5 * (
        np.mean(np.abs(values_a - median_a), axis=0) + np.mean(np.abs(values_b - median_b), axis=0)
    )
    inverse_scale = np.zeros_like(spread)
    np.divide(1.0, spread, out=inverse_scale, where=spread > 0)
    return [
        Feature("projection", weights=tuple(float(w) for w in weights)),
        *features,
        Feature(
            "l1-contrast",
            center=tuple(float(c) for c in median_a),
            weights=tuple(float(w) for w in inverse_scale),
            reference=tuple(float(r) for r in median_b),
        ),
    ]


def _unit(length: int, index: int) -> np.ndarray:
    vector = np.zeros(length)
    vector[index] = 1.0
    return vector


def select_rejection_set(
    selection_a: np.ndarray,
    selection_b: np.ndarray,
    evaluation_sizes: tuple[int, int],
    delta: float,
    confidence: float,
    *,
    score: Score | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
    objective: Objective | None = None,
) -> Selection:
    """Choose S and the numerator on the selection draws only.

    ``objective(in_num, n_num, in_den, n_den, eval_num, eval_den)`` scores candidate sets from their
    selection counts (vectorised); by default the cautious forecast of the ε bound at ``delta``
    (:func:`projected_bound`).

    * ``score`` given: thresholds on the user's scalar score.
    * Small support (at most ``max_cells`` distinct outputs, or non-numeric outputs): the superlevel
      sets of the estimated likelihood ratio over cells, and for scalar numbers thresholds as well.
    * Scalar outputs: thresholds on the value and on the squared distance to the pooled median.
    * Vector outputs: thresholds on Fisher's linear discriminant score and on the squared distance to
      the pooled mean.
    """
    alpha = 1.0 - confidence
    if objective is None:

        def objective(
            in_num: np.ndarray, n_num: int, in_den: np.ndarray, n_den: int, eval_num: int, eval_den: int
        ) -> np.ndarray:
            return projected_bound(in_num, n_num, in_den, n_den, eval_num, eval_den, delta, alpha)

    if score is not None:
        return _select_threshold(
            Feature("score", score=score), selection_a, selection_b, evaluation_sizes, objective
        )
    if _small_support(selection_a, selection_b, max_cells):
        candidates = [_select_cells(selection_a, selection_b, evaluation_sizes, objective)]
        if selection_a.ndim == 1 and selection_a.dtype.kind in "biuf":  # ordered values: thresholds too
            threshold = _select_threshold(
                Feature("value"), selection_a, selection_b, evaluation_sizes, objective
            )
            candidates.append(_as_cells(threshold, np.concatenate([selection_a, selection_b])))
        return max(candidates, key=lambda selection: selection.projected)
    if selection_a.dtype.kind not in "biuf":
        raise InvalidParameter(
            "mechanism output",
            f"{selection_a.dtype} with more than max_cells distinct values",
            "numbers, or at most max_cells distinct categorical values (or pass score=...)",
        )
    candidates = [
        _select_threshold(feature, selection_a, selection_b, evaluation_sizes, objective)
        for feature in _continuous_features(selection_a, selection_b)
    ]
    return max(candidates, key=lambda selection: selection.projected)
