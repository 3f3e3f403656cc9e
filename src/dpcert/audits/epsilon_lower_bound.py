"""Black-box lower confidence bounds on ε from samples of a mechanism on two neighbouring inputs.

If a mechanism M is (ε, δ)-DP then for *every* measurable set S of outputs (Dwork & Roth 2014, Def 2.4)

    P[M(a) ∈ S] <= e^ε P[M(b) ∈ S] + δ,   i.e.   ε >= ln((P[M(a) ∈ S] − δ) / P[M(b) ∈ S]),

and the same with a and b exchanged.  An audit estimates both probabilities for one well-chosen S (the
*rejection set*) and turns Clopper–Pearson bounds into a lower confidence bound on ε, as in the
statistical auditing literature (Ding, Wang, Wang, Zhang & Kifer 2018, "Detecting violations of
differential privacy", CCS; Jagielski, Ullman & Oprea 2020, "Auditing differentially private machine
learning: how private is private SGD?", NeurIPS).

Validity (what makes the reported number a (1 − α) lower confidence bound):

* The samples on each input are split into a *selection* part and an *evaluation* part.  Every search
  (which feature, which threshold, which cells, which input goes in the numerator) looks at the selection
  part only, so S is independent of the evaluation counts.
* On the evaluation part, with S fixed, ``p_lower`` is the one-sided (1 − α/2) Clopper–Pearson lower
  bound of the numerator probability and ``p_upper`` the one-sided (1 − α/2) upper bound of the
  denominator probability (statsmodels ``proportion_confint(method="beta")`` at level α gives exactly
  these two ends).  By a union bound both hold together with probability >= 1 − α, and on that event
  ``ln((p_lower − δ)/p_upper) <= ln((P_a(S) − δ)/P_b(S)) <= ε_true(δ)``.
* The bound is reported as ``max(0, ·)`` (ε >= 0 always holds), so it is finite and JSON-safe, and it
  is lowered by a relative 1e-9 (plus 1e-12) to cover the numerical error of the beta quantiles and the
  logarithm: rounding never overstates the evidence against a claim.

With n evaluation draws per input the bound can never exceed the *ceiling*
``ln(((α/2)^(1/n) − δ) / (1 − (α/2)^(1/n))) ≈ ln(n / ln(2/α))`` (all draws of one input in S, none of
the other); claims at or above it cannot be refuted with that many samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.special import betaincinv
from statsmodels.stats.proportion import proportion_confint

from dpcert import _validation as check
from dpcert.audits.sampling import SamplePair
from dpcert.errors import InvalidParameter

Score = Callable[[np.ndarray], Any]

SIDES = ("<=", ">")
INPUTS = ("a", "b")
DEFAULT_MAX_CELLS = 256
_CELL_PROBE = 20_000  # draws inspected to decide whether the outputs have a small support
_LINEAR_CANDIDATES = 2048
_TAIL_CANDIDATES = 512
_NUMERICAL_MARGIN = 1e-9  # relative; the reported bound is lowered by this much (never overstated)


# --------------------------------------------------------------------------- confidence bounds
@dataclass(frozen=True)
class EvaluationCounts:
    """Counts of the evaluation draws that fell in the rejection set.

    ``numerator`` names the input (``"a"`` or ``"b"``) whose probability of the set is the numerator
    of the likelihood ratio; the other input is the denominator.
    """

    numerator: str
    in_set_numerator: int
    draws_numerator: int
    in_set_denominator: int
    draws_denominator: int

    def __post_init__(self) -> None:
        if self.numerator not in INPUTS:
            raise InvalidParameter("numerator", self.numerator, "'a' or 'b'")
        for name in ("draws_numerator", "draws_denominator"):
            object.__setattr__(self, name, check.positive_int(name, getattr(self, name)))
        for name, total in (
            ("in_set_numerator", self.draws_numerator),
            ("in_set_denominator", self.draws_denominator),
        ):
            value = check.positive_int(name, getattr(self, name), minimum=0)
            if value > total:
                raise InvalidParameter(name, value, f"an integer in [0, {total}]")
            object.__setattr__(self, name, value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "numerator": self.numerator,
            "in_set_numerator": self.in_set_numerator,
            "draws_numerator": self.draws_numerator,
            "in_set_denominator": self.in_set_denominator,
            "draws_denominator": self.draws_denominator,
        }


@dataclass(frozen=True)
class CountBound:
    """ε lower bound from evaluation counts, with the two Clopper–Pearson ends it uses."""

    epsilon_lower_bound: float
    numerator_lower: float
    denominator_upper: float


def bound_from_counts(counts: EvaluationCounts, delta: float, confidence: float) -> CountBound:
    """The (``confidence``) lower confidence bound on ε(δ) from fixed-set counts (union bound, α/2 each).

    Parameters
    ----------
    counts
        Evaluation counts of a rejection set chosen without looking at them.
    delta
        The δ of the claim (0 <= δ < 1).
    confidence
        1 − α, in (0, 1).
    """
    delta = check.delta(delta)
    alpha = 1.0 - check.probability("confidence", confidence, open_low=True, open_high=True)
    lower, _ = proportion_confint(counts.in_set_numerator, counts.draws_numerator, alpha=alpha, method="beta")
    _, upper = proportion_confint(
        counts.in_set_denominator, counts.draws_denominator, alpha=alpha, method="beta"
    )
    lower, upper = float(lower), float(upper)
    if lower <= delta:
        return CountBound(0.0, lower, upper)
    value = math.log((lower - delta) / upper)
    return CountBound(max(0.0, value - _NUMERICAL_MARGIN * abs(value) - 1e-12), lower, upper)


def epsilon_ceiling(draws: int, delta: float, confidence: float) -> float:
    """Largest ε lower bound any rejection set can give from ``draws`` evaluation draws per input."""
    draws = check.positive_int("draws", draws)
    return bound_from_counts(
        EvaluationCounts("a", draws, draws, 0, draws), delta, confidence
    ).epsilon_lower_bound


def projected_bound(
    in_set_numerator: np.ndarray,
    selection_numerator: int,
    in_set_denominator: np.ndarray,
    selection_denominator: int,
    evaluation_numerator: int,
    evaluation_denominator: int,
    delta: float,
    alpha: float,
) -> np.ndarray:
    """Vectorised selection score: the bound the evaluation half would give at the selection proportions.

    Used only to *choose* the rejection set (its value is never reported).  Clopper–Pearson quantiles
    are evaluated at real-valued expected counts with :func:`scipy.special.betaincinv`.
    """
    expected_num = np.asarray(in_set_numerator, float) * (evaluation_numerator / selection_numerator)
    expected_den = np.asarray(in_set_denominator, float) * (evaluation_denominator / selection_denominator)
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
        value = np.log((lower - delta) / upper)
    return np.where(lower > delta, value, -np.inf)


# --------------------------------------------------------------------------- features and sets
@dataclass(frozen=True)
class Feature:
    """A scalar statistic of one output, fitted on the selection half only.

    ``name`` is ``"value"`` (a scalar output itself), ``"distance"`` (squared distance to ``center``),
    ``"projection"`` (inner product with ``weights``), ``"l1-contrast"``
    (``Σ_i weights_i (|x_i − center_i| − |x_i − reference_i|)``, the log-likelihood ratio of product
    Laplace noise around two centres) or ``"score"`` (a user-supplied callable, which cannot be
    serialised).

    Learned features are floored to a grid of ``resolution`` (a billionth of their spread on the
    selection half), so that a threshold never splits an atom of the ideal output distribution by the
    rounding noise of the feature's own arithmetic (which can differ between the two inputs).
    """

    name: str
    center: tuple[float, ...] | None = None
    weights: tuple[float, ...] | None = None
    reference: tuple[float, ...] | None = None
    resolution: float | None = None
    score: Score | None = field(default=None, compare=False, repr=False)

    def apply(self, outputs: np.ndarray) -> np.ndarray:
        values = self._raw(outputs)
        if self.resolution:
            return np.floor(values / self.resolution) * self.resolution
        return values

    def _raw(self, outputs: np.ndarray) -> np.ndarray:
        if self.name == "score":
            if self.score is None:
                raise InvalidParameter("score", None, "the callable used when the audit was run")
            values = check.finite_array("score(outputs)", self.score(outputs))
            if values.shape != (outputs.shape[0],):
                raise InvalidParameter(
                    "score(outputs)",
                    f"shape {values.shape}",
                    f"one number per draw, shape ({outputs.shape[0]},)",
                )
            return values
        values = outputs.astype(float, copy=False)
        if self.name == "value":
            return values
        if self.name == "distance":
            center = np.asarray(self.center, float)
            difference = values - (center if values.ndim > 1 else center[0])
            return difference**2 if values.ndim == 1 else np.einsum("ij,ij->i", difference, difference)
        if self.name == "projection":
            return values @ np.asarray(self.weights, float)
        if self.name == "l1-contrast":
            contrast = np.abs(values - np.asarray(self.center, float)) - np.abs(
                values - np.asarray(self.reference, float)
            )
            return contrast @ np.asarray(self.weights, float)
        raise InvalidParameter("feature", self.name, "value, distance, projection, l1-contrast or score")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name}
        if self.center is not None:
            data["center"] = list(self.center)
        if self.weights is not None:
            data["weights"] = list(self.weights)
        if self.reference is not None:
            data["reference"] = list(self.reference)
        if self.resolution is not None:
            data["resolution"] = self.resolution
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Feature:
        def floats(key: str) -> tuple[float, ...] | None:
            values = data.get(key)
            return None if values is None else tuple(float(v) for v in values)

        resolution = data.get("resolution")
        return cls(
            data["name"],
            floats("center"),
            floats("weights"),
            floats("reference"),
            None if resolution is None else float(resolution),
        )


@dataclass(frozen=True)
class RejectionSet:
    """The set S of outputs whose probabilities are compared.

    Either ``{feature(x) <= threshold}`` / ``{feature(x) > threshold}`` (``kind="threshold"``) or a
    finite set of output values (``kind="cells"``).
    """

    kind: str
    feature: Feature | None = None
    side: str | None = None
    threshold: float | None = None
    cells: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind == "threshold":
            if self.side not in SIDES:
                raise InvalidParameter("side", self.side, "'<=' or '>'")
            if not isinstance(self.feature, Feature):
                raise InvalidParameter("feature", self.feature, "a Feature for a threshold set")
        elif self.kind == "cells":
            if self.cells is None:
                raise InvalidParameter("cells", None, "a tuple of output values for a cells set")
        else:
            raise InvalidParameter("kind", self.kind, "'threshold' or 'cells'")

    def contains(self, outputs: np.ndarray) -> np.ndarray:
        """Boolean membership of each output (leading axis) in the set."""
        if self.kind == "threshold":
            values = self.feature.apply(outputs)
            return values <= self.threshold if self.side == "<=" else values > self.threshold
        if not self.cells:
            return np.zeros(outputs.shape[0], dtype=bool)
        cells = np.asarray(self.cells)
        if cells.ndim == 1 and outputs.ndim == 1:
            return np.isin(outputs, cells)
        _, inverse = np.unique(np.concatenate([cells, outputs]), axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        return np.isin(inverse[len(cells) :], inverse[: len(cells)])

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "threshold":
            return {
                "kind": "threshold",
                "feature": self.feature.to_dict(),
                "side": self.side,
                "threshold": self.threshold,
            }
        return {"kind": "cells", "cells": [_json_cell(c) for c in self.cells]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RejectionSet:
        if data["kind"] == "threshold":
            return cls(
                "threshold", Feature.from_dict(data["feature"]), data["side"], float(data["threshold"])
            )
        return cls("cells", cells=tuple(_tuple_cell(c) for c in data["cells"]))

    def describe(self) -> str:
        if self.kind == "cells":
            shown = ", ".join(str(_json_cell(c)) for c in self.cells[:6])
            more = f", … ({len(self.cells)} cells)" if len(self.cells) > 6 else ""
            return "{" + shown + more + "}"
        return f"{self.feature.name}(x) {self.side} {self.threshold:.6g}"


def _json_cell(cell: Any) -> Any:
    if isinstance(cell, np.ndarray):
        return cell.tolist()
    if isinstance(cell, tuple):
        return [_json_cell(c) for c in cell]
    if isinstance(cell, np.generic):
        return cell.item()
    return cell


def _tuple_cell(cell: Any) -> Any:
    return tuple(cell) if isinstance(cell, list) else cell


# --------------------------------------------------------------------------- selection
@dataclass(frozen=True)
class Selection:
    """A rejection set, which input is the numerator, and its projected bound on the selection half."""

    rejection_set: RejectionSet
    numerator: str
    projected: float


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
    delta: float,
    alpha: float,
) -> Selection:
    values_a = np.sort(feature.apply(selection_a))
    values_b = np.sort(feature.apply(selection_b))
    thresholds = _threshold_candidates(np.sort(np.concatenate([values_a, values_b])))
    below_a = np.searchsorted(values_a, thresholds, side="right")
    below_b = np.searchsorted(values_b, thresholds, side="right")
    n_a, n_b = values_a.shape[0], values_b.shape[0]
    eval_a, eval_b = evaluation_sizes
    counts = {"<=": (below_a, below_b), ">": (n_a - below_a, n_b - below_b)}
    best = Selection(RejectionSet("threshold", feature, "<=", float(thresholds[0])), "a", -math.inf)
    for side, (in_a, in_b) in counts.items():
        for numerator in INPUTS:
            if numerator == "a":
                projected = projected_bound(in_a, n_a, in_b, n_b, eval_a, eval_b, delta, alpha)
            else:
                projected = projected_bound(in_b, n_b, in_a, n_a, eval_b, eval_a, delta, alpha)
            index = int(np.argmax(projected))
            if projected[index] > best.projected:
                best = Selection(
                    RejectionSet("threshold", feature, side, float(thresholds[index])),
                    numerator,
                    float(projected[index]),
                )
    return best


def _select_cells(
    selection_a: np.ndarray,
    selection_b: np.ndarray,
    evaluation_sizes: tuple[int, int],
    delta: float,
    alpha: float,
) -> Selection:
    """Superlevel sets of the estimated likelihood ratio (the Neyman–Pearson family), best by projection."""
    n_a, n_b = selection_a.shape[0], selection_b.shape[0]
    cells, inverse = np.unique(
        np.concatenate([selection_a, selection_b]),
        axis=0 if selection_a.ndim > 1 else None,
        return_inverse=True,
    )
    inverse = inverse.reshape(-1)
    count_a = np.bincount(inverse[:n_a], minlength=len(cells))
    count_b = np.bincount(inverse[n_a:], minlength=len(cells))
    eval_a, eval_b = evaluation_sizes
    best = Selection(RejectionSet("cells", cells=()), "a", -math.inf)
    for numerator in INPUTS:
        num, den, n_num, n_den = (
            (count_a, count_b, n_a, n_b) if numerator == "a" else (count_b, count_a, n_b, n_a)
        )
        ratio = ((num + 0.5) / n_num) / ((den + 0.5) / n_den)
        order = np.argsort(-ratio, kind="stable")
        cumulative_num = np.cumsum(num[order])
        cumulative_den = np.cumsum(den[order])
        if numerator == "a":
            projected = projected_bound(
                cumulative_num, n_num, cumulative_den, n_den, eval_a, eval_b, delta, alpha
            )
        else:
            projected = projected_bound(
                cumulative_num, n_num, cumulative_den, n_den, eval_b, eval_a, delta, alpha
            )
        index = int(np.argmax(projected))
        if projected[index] > best.projected:
            chosen = cells[np.sort(order[: index + 1])]
            cell_values = (
                tuple(tuple(row.tolist()) for row in chosen) if chosen.ndim > 1 else tuple(chosen.tolist())
            )
            best = Selection(RejectionSet("cells", cells=cell_values), numerator, float(projected[index]))
    return best


def _small_support(selection_a: np.ndarray, selection_b: np.ndarray, max_cells: int) -> bool:
    if selection_a.dtype.kind not in "biuf":  # strings and other categorical outputs
        return True
    axis = 0 if selection_a.ndim > 1 else None
    probe = np.concatenate([selection_a[:_CELL_PROBE], selection_b[:_CELL_PROBE]])
    if len(np.unique(probe, axis=axis)) > max_cells:
        return False
    return len(np.unique(np.concatenate([selection_a, selection_b]), axis=axis)) <= max_cells


def _with_resolution(feature: Feature, pooled: np.ndarray) -> Feature:
    spread = float(np.std(feature.apply(pooled)))
    return replace(feature, resolution=1e-9 * spread) if spread > 0 else feature


def _continuous_features(selection_a: np.ndarray, selection_b: np.ndarray) -> list[Feature]:
    features = _fitted_features(selection_a, selection_b)
    pooled = np.concatenate([selection_a, selection_b])
    return [f if f.name == "value" else _with_resolution(f, pooled) for f in features]


def _fitted_features(selection_a: np.ndarray, selection_b: np.ndarray) -> list[Feature]:
    values_a = selection_a.astype(float, copy=False)
    values_b = selection_b.astype(float, copy=False)
    pooled = np.concatenate([values_a, values_b])
    if values_a.ndim == 1:
        return [Feature("value"), Feature("distance", center=(float(np.median(pooled)),))]
    # Fisher's linear discriminant: w = Σ⁻¹ (μ_b − μ_a) with a small ridge for stability.
    covariance = 0.5 * (np.cov(values_a, rowvar=False) + np.cov(values_b, rowvar=False))
    covariance = np.atleast_2d(covariance)
    ridge = 1e-9 * max(float(np.trace(covariance)), 1e-300) / covariance.shape[0]
    weights = np.linalg.solve(
        covariance + ridge * np.eye(covariance.shape[0]), values_b.mean(0) - values_a.mean(0)
    )
    # Laplace-noise log-likelihood ratio around the two coordinate-wise medians, each coordinate
    # weighted by 1/b with b the mean absolute deviation (the Laplace maximum-likelihood scale).
    median_a, median_b = np.median(values_a, axis=0), np.median(values_b, axis=0)
    spread = 0.5 * (
        np.mean(np.abs(values_a - median_a), axis=0) + np.mean(np.abs(values_b - median_b), axis=0)
    )
    inverse_scale = 1.0 / np.maximum(spread, 1e-300)
    return [
        Feature("projection", weights=tuple(float(w) for w in weights)),
        Feature("distance", center=tuple(float(c) for c in pooled.mean(0))),
        Feature(
            "l1-contrast",
            center=tuple(float(c) for c in median_a),
            weights=tuple(float(w) for w in inverse_scale),
            reference=tuple(float(r) for r in median_b),
        ),
    ]


def select_rejection_set(
    selection_a: np.ndarray,
    selection_b: np.ndarray,
    evaluation_sizes: tuple[int, int],
    delta: float,
    confidence: float,
    *,
    score: Score | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
) -> Selection:
    """Choose S and the numerator on the selection draws only.

    * ``score`` given: thresholds on the user's scalar score.
    * Small support (at most ``max_cells`` distinct outputs, or non-numeric outputs): the superlevel
      sets of the estimated likelihood ratio over cells.
    * Scalar outputs: thresholds on the value and on the squared distance to the pooled median.
    * Vector outputs: thresholds on Fisher's linear discriminant score and on the squared distance to
      the pooled mean.
    """
    alpha = 1.0 - confidence
    if score is not None:
        return _select_threshold(
            Feature("score", score=score), selection_a, selection_b, evaluation_sizes, delta, alpha
        )
    if _small_support(selection_a, selection_b, max_cells):
        return _select_cells(selection_a, selection_b, evaluation_sizes, delta, alpha)
    if selection_a.dtype.kind not in "biuf":
        raise InvalidParameter(
            "mechanism output",
            f"{selection_a.dtype} with more than max_cells distinct values",
            "numbers, or at most max_cells distinct categorical values (or pass score=...)",
        )
    candidates = [
        _select_threshold(feature, selection_a, selection_b, evaluation_sizes, delta, alpha)
        for feature in _continuous_features(selection_a, selection_b)
    ]
    return max(candidates, key=lambda selection: selection.projected)


# --------------------------------------------------------------------------- the estimator
@dataclass(frozen=True)
class EpsilonLowerBound:
    """Result of :func:`epsilon_lower_bound`."""

    epsilon_lower_bound: float
    rejection_set: RejectionSet
    counts: EvaluationCounts
    numerator_lower: float
    denominator_upper: float
    epsilon_ceiling: float
    selection_draws: int
    projected: float


def epsilon_lower_bound(
    pair: SamplePair,
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    score: Score | None = None,
    selection_fraction: float = 0.5,
    max_cells: int = DEFAULT_MAX_CELLS,
) -> EpsilonLowerBound:
    """A (``confidence``) lower confidence bound on the ε at which the mechanism is (ε, δ)-DP.

    Parameters
    ----------
    pair
        Independent draws on the two neighbouring inputs (see :func:`dpcert.audits.sampling.draw_pair`).
    delta
        The δ of the claim under test.
    confidence
        1 − α; the returned bound is below the true ε(δ) with probability at least this.
    score
        Optional scalar feature ``score(outputs) -> (n,)`` for outputs the built-in features do not suit.
    selection_fraction
        Fraction of the draws (the first ones; draws are i.i.d.) used to choose the rejection set.
    max_cells
        Outputs with at most this many distinct values are treated as discrete cells.
    """
    delta = check.delta(delta)
    confidence = check.probability("confidence", confidence, open_low=True, open_high=True)
    selection_fraction = check.probability(
        "selection_fraction", selection_fraction, open_low=True, open_high=True
    )
    max_cells = check.positive_int("max_cells", max_cells)
    samples = pair.samples
    split = int(round(samples * selection_fraction))
    if split < 1 or split >= samples:
        raise InvalidParameter(
            "samples", samples, "at least 2 draws per input (one to select, one to evaluate)"
        )
    evaluation = samples - split
    selection = select_rejection_set(
        pair.on_a[:split],
        pair.on_b[:split],
        (evaluation, evaluation),
        delta,
        confidence,
        score=score,
        max_cells=max_cells,
    )
    rejection_set = selection.rejection_set
    in_a = int(np.count_nonzero(rejection_set.contains(pair.on_a[split:])))
    in_b = int(np.count_nonzero(rejection_set.contains(pair.on_b[split:])))
    if selection.numerator == "a":
        counts = EvaluationCounts("a", in_a, evaluation, in_b, evaluation)
    else:
        counts = EvaluationCounts("b", in_b, evaluation, in_a, evaluation)
    bound = bound_from_counts(counts, delta, confidence)
    return EpsilonLowerBound(
        epsilon_lower_bound=bound.epsilon_lower_bound,
        rejection_set=rejection_set,
        counts=counts,
        numerator_lower=bound.numerator_lower,
        denominator_upper=bound.denominator_upper,
        epsilon_ceiling=epsilon_ceiling(evaluation, delta, confidence),
        selection_draws=split,
        projected=selection.projected,
    )
