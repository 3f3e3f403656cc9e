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
  denominator probability (the two ends of the level-α interval of
  :func:`~dpcert.audits.clopper_pearson.clopper_pearson`, each checked against the binomial tail it
  inverts).  By a union bound both hold together with probability >= 1 − α, and on that event
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
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.audits.clopper_pearson import clopper_pearson
from dpcert.audits.rejection_set import RejectionSet, Score
from dpcert.audits.sampling import SamplePair
from dpcert.audits.selection import DEFAULT_MAX_CELLS, INPUTS, select_rejection_set
from dpcert.errors import InvalidParameter

_NUMERICAL_MARGIN = 1e-9  # relative; the reported bound is lowered by this much (never overstated)
SELECTION_FRACTION = 0.5  # share of the draws (the first ones) that choose the rejection set
FEW_DRAWS_FACTOR = 10.0  # a δ claim audited with fewer than this many / δ evaluation draws is warned about


class FewDrawsWarning(UserWarning):
    """An audit of a δ > 0 claim with too few draws to see events of probability about δ."""


def few_draws_message(delta: float, evaluation: int) -> str | None:
    """The warning for a δ > 0 claim audited with fewer than ``FEW_DRAWS_FACTOR / δ`` evaluation draws."""
    if not (0.0 < delta and evaluation < FEW_DRAWS_FACTOR / delta):
        return None
    return (
        f"a delta={delta:g} claim was audited with {evaluation} evaluation draws per input, "
        f"fewer than {FEW_DRAWS_FACTOR:g}/delta = {FEW_DRAWS_FACTOR / delta:.3g}: events of "
        "probability about delta are barely seen, so the bound is weak (use more samples)"
    )


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
    lower = float(clopper_pearson(counts.in_set_numerator, counts.draws_numerator, alpha)[0])
    upper = float(clopper_pearson(counts.in_set_denominator, counts.draws_denominator, alpha)[1])
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


MAX_DRAWS_NEEDED = 10**15  # beyond this many evaluation draws the answer is reported as this bound


def draws_to_exceed(epsilon: float, delta: float, confidence: float) -> int:
    """The least number n of evaluation draws per input whose ceiling exceeds ``epsilon``.

    Below n no outcome of the draws could refute a claim of ``epsilon`` (the ceiling increases with n:
    ``(α/2)^(1/n)`` increases to 1); found by doubling and bisection on :func:`epsilon_ceiling`.
    """
    epsilon = check.nonnegative_finite("epsilon", epsilon)
    low, high = 0, 1
    while epsilon_ceiling(high, delta, confidence) <= epsilon:
        low, high = high, 2 * high
        if high >= MAX_DRAWS_NEEDED:
            return MAX_DRAWS_NEEDED
    while high - low > 1:  # ceiling(low) <= epsilon < ceiling(high) (ceiling(0) taken as 0)
        middle = (low + high) // 2
        if epsilon_ceiling(middle, delta, confidence) > epsilon:
            high = middle
        else:
            low = middle
    return high


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


def held_out_counts(
    rejection_set: Any, numerator: str, held_out_a: np.ndarray, held_out_b: np.ndarray
) -> EvaluationCounts:
    """How often the held-out draws on each input fall in ``rejection_set``, numerator side first."""
    in_a = int(np.count_nonzero(rejection_set.contains(held_out_a)))
    in_b = int(np.count_nonzero(rejection_set.contains(held_out_b)))
    if numerator == "a":
        return EvaluationCounts("a", in_a, held_out_a.shape[0], in_b, held_out_b.shape[0])
    return EvaluationCounts("b", in_b, held_out_b.shape[0], in_a, held_out_a.shape[0])


def epsilon_lower_bound(
    pair: SamplePair,
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    score: Score | None = None,
    selection_fraction: float | None = None,
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
    if selection_fraction is None:
        selection_fraction = SELECTION_FRACTION
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
    counts = held_out_counts(rejection_set, selection.numerator, pair.on_a[split:], pair.on_b[split:])
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
