"""Rejection sets: the set S of outputs whose probabilities under the two inputs an audit compares.

A set is either a threshold on a scalar feature of the output, ``{feature(x) <= t}`` or
``{feature(x) > t}``, or a finite set of output values (cells).  Both serialise to JSON exactly (floats
with full precision), so a saved audit report names the very set its counts refer to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert.audits.learned_event import LearnedEvent
from dpcert.errors import InvalidParameter

Score = Callable[[np.ndarray], Any]
SIDES = ("<=", ">")


def unique_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, axis=0, return_inverse=True)`` for 1-D or 2-D arrays, fast for 2-D.

    Each row of a 2-D array is coded as one integer in mixed radix over the distinct values of each
    column (the first column most significant, so the rows come out in the same lexicographic order
    as ``np.unique(axis=0)``); sorting those integers is far faster than sorting rows.  Falls back to
    ``np.unique(axis=0)`` when the codes would not fit in 62 bits.
    """
    if values.ndim == 1 or values.dtype.kind not in "biuf":
        cells, inverse = np.unique(values, axis=0 if values.ndim > 1 else None, return_inverse=True)
        return cells, inverse.reshape(-1)
    columns = [np.unique(values[:, j], return_inverse=True) for j in range(values.shape[1])]
    radix = [len(c[0]) for c in columns]
    if float(np.prod([float(r) for r in radix])) >= 2.0**62:
        cells, inverse = np.unique(values, axis=0, return_inverse=True)
        return cells, inverse.reshape(-1)
    codes = np.zeros(values.shape[0], dtype=np.int64)
    for (_, column_inverse), size in zip(columns, radix, strict=True):
        codes = codes * size + column_inverse.reshape(-1)
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    return values[first], inverse.reshape(-1)


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
    Distances, projections and contrasts are summed over the coordinates in index order
    (:mod:`dpcert._fixed_order`, no BLAS), so a feature, and whether a draw lies in the set, are the same
    bits on every CPU and BLAS kernel.
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
            return difference**2 if values.ndim == 1 else fixed_order.dot(difference, difference)
        if self.name == "projection":
            return fixed_order.dot(values, np.asarray(self.weights, float))
        if self.name == "l1-contrast":
            contrast = np.abs(values - np.asarray(self.center, float)) - np.abs(
                values - np.asarray(self.reference, float)
            )
            return fixed_order.dot(contrast, np.asarray(self.weights, float))
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

    Either ``{feature(x) <= threshold}`` / ``{feature(x) > threshold}`` (``kind="threshold"``), a
    finite set of output values (``kind="cells"``) or an event learned by a classifier, randomised on
    ties (``kind="learned"``, :class:`dpcert.audits.learned_event.LearnedEvent`: membership needs one
    uniform draw per output).
    """

    kind: str
    feature: Feature | None = None
    side: str | None = None
    threshold: float | None = None
    cells: tuple[Any, ...] | None = None
    event: LearnedEvent | None = None

    def __post_init__(self) -> None:
        if self.kind == "threshold":
            if self.side not in SIDES:
                raise InvalidParameter("side", self.side, "'<=' or '>'")
            if not isinstance(self.feature, Feature):
                raise InvalidParameter("feature", self.feature, "a Feature for a threshold set")
        elif self.kind == "cells":
            if self.cells is None:
                raise InvalidParameter("cells", None, "a tuple of output values for a cells set")
        elif self.kind == "learned":
            if not isinstance(self.event, LearnedEvent):
                raise InvalidParameter("event", self.event, "a LearnedEvent for a learned set")
        else:
            raise InvalidParameter("kind", self.kind, "'threshold', 'cells' or 'learned'")

    def contains(self, outputs: np.ndarray, uniforms: np.ndarray | None = None) -> np.ndarray:
        """Boolean membership of each output (leading axis) in the set; a learned set also needs one
        uniform draw on [0, 1) per output (``uniforms``) for its randomised tie."""
        if self.kind == "learned":
            assert self.event is not None  # checked on construction
            if uniforms is None:
                raise InvalidParameter("uniforms", None, "one uniform draw per output for a learned set")
            return self.event.contains(outputs, uniforms)
        if self.kind == "threshold":
            values = self._threshold_feature().apply(outputs)
            return values <= self.threshold if self.side == "<=" else values > self.threshold
        if not self.cells:
            return np.zeros(outputs.shape[0], dtype=bool)
        cells = np.asarray(self.cells)
        if cells.ndim == 1 and outputs.ndim == 1:
            return np.isin(outputs, cells)
        _, inverse = unique_rows(np.concatenate([cells, outputs]))
        return np.isin(inverse[len(cells) :], inverse[: len(cells)])

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "learned":
            assert self.event is not None  # checked on construction
            return {"kind": "learned", "event": self.event.to_dict()}
        if self.kind == "threshold":
            return {
                "kind": "threshold",
                "feature": self._threshold_feature().to_dict(),
                "side": self.side,
                "threshold": self.threshold,
            }
        return {"kind": "cells", "cells": [_json_cell(c) for c in self._cell_values()]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RejectionSet:
        if data["kind"] == "learned":
            return cls("learned", event=LearnedEvent.from_dict(data["event"]))
        if data["kind"] == "threshold":
            return cls(
                "threshold", Feature.from_dict(data["feature"]), data["side"], float(data["threshold"])
            )
        return cls("cells", cells=tuple(_tuple_cell(c) for c in data["cells"]))

    def describe(self) -> str:
        if self.kind == "learned":
            assert self.event is not None  # checked on construction
            return self.event.describe()
        if self.kind == "cells":
            cells = self._cell_values()
            shown = ", ".join(str(_json_cell(c)) for c in cells[:6])
            more = f", … ({len(cells)} cells)" if len(cells) > 6 else ""
            return "{" + shown + more + "}"
        return f"{self._threshold_feature().name}(x) {self.side} {self.threshold:.6g}"

    def _threshold_feature(self) -> Feature:
        assert self.feature is not None  # a threshold set has one (checked on construction)
        return self.feature

    def _cell_values(self) -> tuple[Any, ...]:
        assert self.cells is not None  # a cells set has them (checked on construction)
        return self.cells


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
