"""Exact hockey-stick divergence of discrete output distributions, and its estimation from samples.

For output distributions P = M(a) and Q = M(b) on a countable set, the mechanism is (ε, δ)-DP on this
pair if and only if both hockey-stick divergences are at most δ (the definition of (ε, δ)-DP restated
with S = {x : P(x) > e^ε Q(x)}; Barthe & Olmedo 2013; Balle, Barthe & Gaboardi 2018):

    δ(ε) = max( Σ_x max(0, P(x) − e^ε Q(x)),  Σ_x max(0, Q(x) − e^ε P(x)) ).

δ(ε) is convex and non-increasing; on each interval between consecutive log-ratios ln(P(x)/Q(x)) it is
``A − e^ε B`` with A, B partial sums over the cells of larger log-ratio, so ε(δ) is solved in closed
form per interval (no root finding).  Outcomes with Q(x) = 0 < P(x) contribute P(x) at every ε; if their
mass exceeds δ, no finite ε works.

Rounding: the divergence is computed in floating point and then raised by ``8 m u`` times the sum of the
magnitudes of the terms it adds (m cells, u the unit round-off), which bounds the summation error, so
:func:`delta_for` never returns less than the exact value of the given PMFs; :func:`epsilon_for` is the
smallest ε whose *raised* δ is within the target, so it is never optimistic.

When the support is small, :func:`estimate_profile` bounds the divergence of the unknown PMFs from
samples, with simultaneous Clopper–Pearson intervals on every cell probability (Bonferroni over the
2m intervals).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert._numerics import nudge_up_until_valid
from dpcert.audits.clopper_pearson import clopper_pearson
from dpcert.errors import InvalidParameter

_UNIT_ROUNDOFF = np.finfo(float).eps / 2.0
_PMF_TOLERANCE = 1e-9


def _one_direction_delta(p: np.ndarray, q: np.ndarray, epsilon: float) -> float:
    """Σ max(0, p − e^ε q), raised by a bound on its floating-point summation error."""
    scaled = math.exp(epsilon) * q if epsilon < 709.0 else np.where(q > 0, math.inf, 0.0)
    terms = p - scaled
    positive = terms > 0
    if not np.any(positive):
        return 0.0
    value = float(np.sum(terms[positive]))
    magnitude = float(np.sum(p[positive] + scaled[positive]))
    return min(1.0, value + 8.0 * p.shape[0] * _UNIT_ROUNDOFF * magnitude)


def _closed_form_epsilon(p: np.ndarray, q: np.ndarray, delta: float) -> float:
    """Root of Σ max(0, p − e^ε q) = δ on its active interval, in floating point (not yet rounded)."""
    infinite = (q <= 0) & (p > 0)
    mass_infinite = float(np.sum(p[infinite]))
    if mass_infinite > delta:
        return math.inf
    finite = (p > 0) & (q > 0)
    log_ratio = np.log(p[finite]) - np.log(q[finite])
    if log_ratio.size == 0:
        return 0.0
    order = np.argsort(-log_ratio, kind="stable")
    log_ratio, p_sorted, q_sorted = log_ratio[order], p[finite][order], q[finite][order]
    cumulative_p = np.concatenate([[0.0], np.cumsum(p_sorted)])
    cumulative_q = np.concatenate([[0.0], np.cumsum(q_sorted)])
    # δ at each breakpoint ε = L_k, where only the cells j < k (larger ratio) contribute; it grows with k.
    at_breakpoints = mass_infinite + cumulative_p[:-1] - np.exp(log_ratio) * cumulative_q[:-1]
    # at_breakpoints[0] is the mass at infinite ratio, <= δ here, so at least one cell is active.
    active = int(np.searchsorted(at_breakpoints > delta, True))  # cells 0..active-1 are active at the root
    numerator = mass_infinite + cumulative_p[active] - delta
    root = math.log(numerator / cumulative_q[active]) if numerator > 0 else 0.0
    low = float(log_ratio[active]) if active < log_ratio.size else 0.0
    return max(root, low, 0.0)


def _one_direction_epsilon(p: np.ndarray, q: np.ndarray, delta: float) -> float:
    """Smallest ε >= 0 with Σ max(0, p − e^ε q) <= δ as computed with the upward allowance."""
    if _one_direction_delta(p, q, 0.0) <= delta:
        return 0.0
    candidate = _closed_form_epsilon(p, q, delta)
    if not math.isfinite(candidate):
        return candidate
    finite = (p > 0) & (q > 0)
    largest = float(np.max(np.log(p[finite]) - np.log(q[finite]))) if np.any(finite) else 0.0
    ceiling = max(candidate, largest) * (1.0 + 1e-9) + 1e-12
    return nudge_up_until_valid(lambda e: _one_direction_delta(p, q, e) - delta, candidate, ceiling)


@dataclass(frozen=True)
class DiscretePair:
    """Two PMFs on a common list of outcomes (``p`` = M(a), ``q`` = M(b))."""

    outcomes: tuple[Any, ...]
    p: np.ndarray
    q: np.ndarray

    def delta_for(self, epsilon: float) -> float:
        """Exact (rounded-up) δ(ε), the larger hockey-stick divergence of the two directions."""
        epsilon = check.nonnegative_finite("epsilon", epsilon)
        return max(
            _one_direction_delta(self.p, self.q, epsilon), _one_direction_delta(self.q, self.p, epsilon)
        )

    def epsilon_for(self, delta: float) -> float:
        """Smallest ε (rounded up) with δ(ε) <= ``delta``; ``inf`` if no finite ε works."""
        delta = check.delta(delta)
        return max(
            _one_direction_epsilon(self.p, self.q, delta), _one_direction_epsilon(self.q, self.p, delta)
        )


def _pmf_vector(name: str, values: Any) -> np.ndarray:
    array = check.finite_array(name, values)
    if array.ndim != 1 or array.size == 0:
        raise InvalidParameter(name, f"shape {array.shape}", "a non-empty 1-D array of probabilities")
    if np.any(array < 0):
        raise InvalidParameter(name, "<array with negative entries>", "probabilities >= 0")
    if abs(float(np.sum(array)) - 1.0) > _PMF_TOLERANCE:
        raise InvalidParameter(
            name, f"<sum {float(np.sum(array))!r}>", f"probabilities summing to 1 (± {_PMF_TOLERANCE})"
        )
    return array


def pmf_pair(
    p: Mapping[Any, float] | Sequence[float], q: Mapping[Any, float] | Sequence[float]
) -> DiscretePair:
    """Align two PMFs given as ``{outcome: probability}`` mappings or as arrays on the same outcomes."""
    if isinstance(p, Mapping) != isinstance(q, Mapping):
        raise InvalidParameter("p, q", "one mapping and one array", "two mappings or two arrays")
    if isinstance(p, Mapping) and isinstance(q, Mapping):
        outcomes = tuple(dict.fromkeys([*p.keys(), *q.keys()]))
        p_vector = _pmf_vector("p", [p.get(o, 0.0) for o in outcomes])
        q_vector = _pmf_vector("q", [q.get(o, 0.0) for o in outcomes])
    else:
        p_vector, q_vector = _pmf_vector("p", p), _pmf_vector("q", q)
        if p_vector.shape != q_vector.shape:
            raise InvalidParameter("q", f"length {q_vector.shape[0]}", f"length {p_vector.shape[0]} (as p)")
        outcomes = tuple(range(p_vector.shape[0]))
    return DiscretePair(outcomes, p_vector, q_vector)


def delta_for(p: Any, q: Any, epsilon: float) -> float:
    """Exact δ(ε) of a mechanism whose outputs on two neighbouring inputs have PMFs ``p`` and ``q``."""
    return pmf_pair(p, q).delta_for(epsilon)


def epsilon_for(p: Any, q: Any, delta: float = 0.0) -> float:
    """Exact least ε at ``delta`` for the PMFs ``p`` and ``q`` (rounded up; ``inf`` if none)."""
    return pmf_pair(p, q).epsilon_for(delta)


# --------------------------------------------------------------------------- from samples
@dataclass(frozen=True)
class ProfileEstimate:
    """Simultaneous (``confidence``) bounds on the cell probabilities of M(a) and M(b).

    ``upper_*`` bounds are only valid when ``support`` lists every possible outcome (cells never
    observed can otherwise hold mass); they are ``None`` when it was not given.
    """

    outcomes: tuple[Any, ...]
    counts_a: np.ndarray
    counts_b: np.ndarray
    lower_a: np.ndarray
    upper_a: np.ndarray
    lower_b: np.ndarray
    upper_b: np.ndarray
    confidence: float
    support_given: bool

    @property
    def plug_in(self) -> DiscretePair:
        return DiscretePair(
            self.outcomes, self.counts_a / self.counts_a.sum(), self.counts_b / self.counts_b.sum()
        )

    def delta_lower(self, epsilon: float) -> float:
        """Lower confidence bound on δ(ε) (simultaneous over all ε)."""
        epsilon = check.nonnegative_finite("epsilon", epsilon)
        return max(
            _lower_direction(self.lower_a, self.upper_b, epsilon),
            _lower_direction(self.lower_b, self.upper_a, epsilon),
        )

    def delta_upper(self, epsilon: float) -> float | None:
        """Upper confidence bound on δ(ε), or ``None`` without a declared support."""
        epsilon = check.nonnegative_finite("epsilon", epsilon)
        if not self.support_given:
            return None
        return max(
            _one_direction_delta(self.upper_a, self.lower_b, epsilon),
            _one_direction_delta(self.upper_b, self.lower_a, epsilon),
        )

    def epsilon_lower(self, delta: float) -> float:
        """Lower confidence bound on ε(δ): every smaller ε has δ_lower(ε) > δ."""
        delta = check.delta(delta)
        return max(
            _epsilon_lower_direction(self.lower_a, self.upper_b, delta),
            _epsilon_lower_direction(self.lower_b, self.upper_a, delta),
        )

    def epsilon_upper(self, delta: float) -> float | None:
        """Upper confidence bound on ε(δ), or ``None`` without a declared support."""
        delta = check.delta(delta)
        if not self.support_given:
            return None
        return max(
            _one_direction_epsilon(self.upper_a, self.lower_b, delta),
            _one_direction_epsilon(self.upper_b, self.lower_a, delta),
        )


def _lower_direction(p_low: np.ndarray, q_high: np.ndarray, epsilon: float) -> float:
    """Σ max(0, p_low − e^ε q_high) rounded *down* (a lower bound must not be raised)."""
    terms = p_low - math.exp(min(epsilon, 709.0)) * q_high
    value = float(np.sum(terms[terms > 0]))
    magnitude = float(np.sum(np.abs(terms)))
    return max(0.0, value - 8.0 * p_low.shape[0] * _UNIT_ROUNDOFF * magnitude)


def _epsilon_lower_direction(p_low: np.ndarray, q_high: np.ndarray, delta: float) -> float:
    """A point x with Σ max(0, p_low − e^x q_high) > δ as computed rounded down (0 if there is none).

    Every ε < x then has a lower-bound divergence above δ too (it is non-increasing), so the true
    ε(δ) is at least x on the confidence event.
    """
    candidate = _closed_form_epsilon(p_low, q_high, delta)
    step = 1e-15
    while (
        math.isfinite(candidate) and candidate > 0.0 and _lower_direction(p_low, q_high, candidate) <= delta
    ):
        candidate = max(0.0, candidate * (1.0 - step) - 1e-300)
        step *= 4.0
    return candidate


def estimate_profile(
    on_a: Any,
    on_b: Any,
    *,
    confidence: float = 0.95,
    support: Sequence[Any] | None = None,
    max_cells: int = 1000,
) -> ProfileEstimate:
    """Bound the privacy profile of a small-support mechanism from draws on the two inputs.

    Parameters
    ----------
    on_a, on_b
        Draws (scalars, one per entry) of M(a) and M(b).
    confidence
        Joint coverage of all cell intervals: each of the 2m two-sided Clopper–Pearson intervals has
        level 1 − α/(2m) (Bonferroni).
    support
        Every possible outcome, if known; enables the upper bounds.
    max_cells
        Refuse more distinct outcomes than this (the Bonferroni intervals would be useless).
    """
    confidence = check.probability("confidence", confidence, open_low=True, open_high=True)
    max_cells = check.positive_int("max_cells", max_cells)
    draws_a, draws_b = np.asarray(on_a).reshape(-1), np.asarray(on_b).reshape(-1)
    if draws_a.size == 0 or draws_b.size == 0:
        raise InvalidParameter("on_a, on_b", "empty", "at least one draw on each input")
    observed = np.unique(np.concatenate([draws_a, draws_b]))
    if support is not None:
        outcomes = np.unique(np.asarray(list(support)))
        missing = np.setdiff1d(observed, outcomes)
        if missing.size:
            raise InvalidParameter("support", f"<misses {missing[:5].tolist()}>", "every observed outcome")
    else:
        outcomes = observed
    if outcomes.size > max_cells:
        raise InvalidParameter(
            "outcomes", f"{outcomes.size} distinct values", f"at most max_cells={max_cells}"
        )
    counts_a = np.bincount(np.searchsorted(outcomes, draws_a), minlength=outcomes.size)
    counts_b = np.bincount(np.searchsorted(outcomes, draws_b), minlength=outcomes.size)
    alpha_each = (1.0 - confidence) / (2 * outcomes.size)
    lower_a, upper_a = clopper_pearson(counts_a, draws_a.size, alpha_each)
    lower_b, upper_b = clopper_pearson(counts_b, draws_b.size, alpha_each)
    return ProfileEstimate(
        outcomes=tuple(outcomes.tolist()),
        counts_a=counts_a,
        counts_b=counts_b,
        lower_a=np.nan_to_num(np.asarray(lower_a, float)),
        upper_a=np.nan_to_num(np.asarray(upper_a, float), nan=1.0),
        lower_b=np.nan_to_num(np.asarray(lower_b, float)),
        upper_b=np.nan_to_num(np.asarray(upper_b, float), nan=1.0),
        confidence=confidence,
        support_given=support is not None,
    )
