"""Black-box lower confidence bounds on δ at a fixed ε, for continuous (or any) outputs.

If M is (ε, δ)-DP then for every set S of outputs (Dwork & Roth 2014, Def 2.4)

    δ >= P[M(a) ∈ S] − e^ε P[M(b) ∈ S]     (and the same with a and b exchanged),

the largest right-hand side over S being the hockey-stick divergence that DP-Auditorium's tester
estimates (Kong, Medina, Ribero, Syed et al. 2024, "DP-Auditorium: a large scale library for auditing
differential privacy", IEEE S&P, §4).  Here S is chosen on a selection part of the draws (thresholds
on the output or on learned features, or superlevel sets of the likelihood ratio over cells, as for
the ε bound) by a cautious forecast of the bound, and evaluated on the held-out part: with the
one-sided (1 − α/2) Clopper–Pearson lower bound p_lower of the numerator probability and the
one-sided (1 − α/2) upper bound p_upper of the denominator probability, both hold together with
probability >= 1 − α (union bound), and on that event

    p_lower − e^ε p_upper <= P_a(S) − e^ε P_b(S) <= δ_true(ε).

The bound is reported as ``max(0, ·)`` and lowered by 1e-12 to cover the rounding of the quantiles.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.audits.clopper_pearson import clopper_pearson
from dpcert.audits.epsilon_lower_bound import (
    SELECTION_FRACTION,
    EvaluationCounts,
    FewDrawsWarning,
    few_draws_message,
    held_out_counts,
)
from dpcert.audits.rejection_set import RejectionSet, Score
from dpcert.audits.sampling import DEFAULT_BATCH_SIZE, DEFAULT_SAMPLES, Mechanism, draw_pair, generator_from
from dpcert.audits.selection import DEFAULT_MAX_CELLS, projected_ends, select_rejection_set
from dpcert.errors import InvalidParameter


def delta_bound_from_counts(counts: EvaluationCounts, epsilon: float, confidence: float) -> float:
    """The (``confidence``) lower confidence bound on δ(ε) from fixed-set counts (union bound, α/2 each)."""
    epsilon = check.nonnegative_finite("epsilon", epsilon)
    alpha = 1.0 - check.probability("confidence", confidence, open_low=True, open_high=True)
    lower = float(clopper_pearson(counts.in_set_numerator, counts.draws_numerator, alpha)[0])
    upper = float(clopper_pearson(counts.in_set_denominator, counts.draws_denominator, alpha)[1])
    return max(0.0, float(lower) - math.exp(epsilon) * float(upper) - 1e-12)


def projected_delta(
    in_set_numerator: np.ndarray,
    selection_numerator: int,
    in_set_denominator: np.ndarray,
    selection_denominator: int,
    evaluation_numerator: int,
    evaluation_denominator: int,
    epsilon: float,
    alpha: float,
) -> np.ndarray:
    """Cautious forecast of the δ bound of each candidate set (the ε bound's forecast, for δ).

    The selection counts are moved ``SELECTION_CAUTION`` standard deviations against the set, scaled
    to the evaluation sizes, and the two Clopper–Pearson ends evaluated there.
    """
    lower, upper = projected_ends(
        in_set_numerator,
        selection_numerator,
        in_set_denominator,
        selection_denominator,
        evaluation_numerator,
        evaluation_denominator,
        alpha,
    )
    return lower - math.exp(epsilon) * upper


@dataclass(frozen=True)
class DeltaAuditReport:
    """A lower confidence bound on δ at the claimed ε, and the verdict against the claimed δ.

    ``verdict`` is ``"violated"`` iff ``delta_lower_bound`` exceeds the claimed δ: then, with the
    stated confidence, the mechanism is not (ε, δ)-DP.
    """

    verdict: str
    delta_lower_bound: float
    epsilon: float
    claimed_delta: float
    confidence: float
    samples: int
    counts: EvaluationCounts
    rejection_set: RejectionSet
    inputs: tuple[Any, Any]
    seconds: float
    notes: tuple[str, ...] = ()

    @property
    def violated(self) -> bool:
        return self.verdict == "violated"

    def recheck(self) -> DeltaAuditReport:
        """Recompute the bound from the counts; raise if it differs from the stated one."""
        bound = delta_bound_from_counts(self.counts, self.epsilon, self.confidence)
        if not math.isclose(bound, self.delta_lower_bound, rel_tol=1e-12, abs_tol=1e-15):
            raise InvalidParameter("delta_lower_bound", self.delta_lower_bound, f"{bound!r} from its counts")
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "delta_lower_bound": self.delta_lower_bound,
            "epsilon": self.epsilon,
            "claimed_delta": self.claimed_delta,
            "confidence": self.confidence,
            "samples": self.samples,
            "counts": self.counts.to_dict(),
            "rejection_set": self.rejection_set.to_dict(),
            "seconds": self.seconds,
            "notes": list(self.notes),
        }


def audit_delta(
    mechanism: Mechanism,
    a: Any,
    b: Any,
    epsilon: float,
    delta: float = 0.0,
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int | None = None,
    rng: np.random.Generator | None = None,
    confidence: float = 0.95,
    score: Score | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> DeltaAuditReport:
    """Bound δ(ε) from below for ``mechanism`` on the neighbours ``a``, ``b`` and test the claim δ.

    Parameters
    ----------
    epsilon
        The fixed ε (>= 0) at which δ is bounded.
    delta
        The claimed δ (0 <= δ < 1); the verdict is "violated" iff the lower bound exceeds it.
    samples
        Draws per input; the first half chooses the rejection set, the second half evaluates it.
        A claim δ > 0 audited with fewer than 10/δ evaluation draws is warned about
        (:class:`~dpcert.audits.epsilon_lower_bound.FewDrawsWarning`, also stated in ``notes``).

    Examples
    --------
    Laplace noise of scale 1/2 on neighbours 0 and 1 (true ε = 2) at ε = 1 has
    δ(1) = 1 − e^{(1 − 2)/2} = 0.3935 (the hockey-stick divergence of two Laplace laws).
    """
    epsilon = check.nonnegative_finite("epsilon", epsilon)
    delta = check.delta(delta)
    confidence = check.probability("confidence", confidence, open_low=True, open_high=True)
    samples = check.positive_int("samples", samples, minimum=2)
    rng = generator_from(seed, rng)
    start = time.perf_counter()
    pair = draw_pair(mechanism, a, b, samples, rng, batch_size=batch_size)
    split = int(round(samples * SELECTION_FRACTION))
    evaluation = samples - split
    alpha = 1.0 - confidence

    def objective(
        in_num: np.ndarray, n_num: int, in_den: np.ndarray, n_den: int, eval_num: int, eval_den: int
    ) -> np.ndarray:
        return projected_delta(in_num, n_num, in_den, n_den, eval_num, eval_den, epsilon, alpha)

    selection = select_rejection_set(
        pair.on_a[:split],
        pair.on_b[:split],
        (evaluation, evaluation),
        delta,
        confidence,
        score=score,
        max_cells=max_cells,
        objective=objective,
    )
    rejection_set = selection.rejection_set
    counts = held_out_counts(rejection_set, selection.numerator, pair.on_a[split:], pair.on_b[split:])
    bound = delta_bound_from_counts(counts, epsilon, confidence)
    message = few_draws_message(delta, counts.draws_numerator)
    if message is not None:
        warnings.warn(message, FewDrawsWarning, stacklevel=2)
    return DeltaAuditReport(
        verdict="violated" if bound > delta else "consistent",
        delta_lower_bound=bound,
        epsilon=epsilon,
        claimed_delta=delta,
        confidence=confidence,
        samples=samples,
        counts=counts,
        rejection_set=rejection_set,
        inputs=(a, b),
        seconds=time.perf_counter() - start,
        notes=() if message is None else (message,),
    )
