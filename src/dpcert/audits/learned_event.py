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
* :class:`LearnedEvent` — the event ``{u(o) > t} ∪ {u(o) = t and U < q}`` on the classifier's score,
  serialisable exactly (its threshold and tie are chosen by
  :func:`dpcert.audits.classifier_search.choose_event`).

A randomised event is an event of the mechanism M'(x) = (M(x), U) with U uniform on [0, 1) and
independent of M: if M is (ε, δ)-DP, then for every u the section S_u satisfies the DP inequality, and
integrating over u gives it for S, so a lower bound on ε found with S is a lower bound for M.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert.errors import InvalidParameter

MAX_ATOMS = 4  # frequent values per coordinate given an indicator feature
ATOM_SHARE = 0.01  # a value is an atom when at least this share of the fitting draws take it
RIDGE = 1.0  # ridge penalty on the weights (features are standardised)
NEWTON_STEPS = 25
GRAM_CHUNK = 4096  # rows per partial Gram matrix (bounded memory; fixed, so the sums' order is fixed)


def as_rows(outputs: np.ndarray) -> np.ndarray:
    """Outputs as a float (n, d) array; non-finite outputs are refused."""
    values = np.asarray(outputs)
    if values.dtype.kind not in "biuf":
        raise InvalidParameter("mechanism output", str(values.dtype), "numbers for a learned event")
    values = values.astype(float, copy=False)
    if values.ndim == 1:
        values = values[:, None]
    if not np.all(np.isfinite(values)):
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
    for _ in range(NEWTON_STEPS):
        probability = _sigmoid(fixed_order.dot(design, weights))
        gram = _gram(design, probability * (1.0 - probability)) + ridge * identity
        gradient = fixed_order.weighted_sum(design, labels - probability) - ridge * weights
        step = fixed_order.solve_spd(gram, gradient[:, None])[:, 0]
        weights = weights + step
        if float(np.max(np.abs(step))) <= 1e-10 * (1.0 + float(np.max(np.abs(weights)))):
            break
    return weights


@dataclass(frozen=True)
class LearnedEvent:
    """``S = {u(o) > t} ∪ {u(o) = t and U < q}`` with ``u = ±(w · features(o))`` (+ when ``numerator``
    is ``"a"``) and U an independent uniform draw per output."""

    features: OutputFeatures
    weights: tuple[float, ...]
    numerator: str
    threshold: float
    tie: float

    def scores(self, outputs: np.ndarray) -> np.ndarray:
        score = fixed_order.dot(self.features.transform(outputs), np.asarray(self.weights, float))
        return score if self.numerator == "a" else -score

    def contains(self, outputs: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        u = self.scores(outputs)
        return (u > self.threshold) | ((u == self.threshold) & (uniforms < self.tie))

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": self.features.to_dict(),
            "weights": list(self.weights),
            "numerator": self.numerator,
            "threshold": self.threshold,
            "tie": self.tie,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LearnedEvent:
        return cls(
            OutputFeatures.from_dict(data["features"]),
            tuple(float(w) for w in data["weights"]),
            str(data["numerator"]),
            float(data["threshold"]),
            float(data["tie"]),
        )

    def describe(self) -> str:
        sign = "" if self.numerator == "a" else "-"
        return (
            f"{sign}logit(o) > {self.threshold:.6g} (ties at the threshold with probability "
            f"{self.tie:.4g}; logistic regression on {self.features.width} features)"
        )
