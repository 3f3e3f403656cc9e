"""Splitting a total budget over M participations of returning users.

Chowdhury & Zhou 2022 ("Shuffle Private Linear Contextual Bandits", §4 and Appendix E) let a user
take part in all M batches (Assumption 4.1 = E.1) and split the user's total (ε, δ) with advanced
composition (their Thm E.2 = Dwork & Roth 2014, Cor. 3.21, with k = M and δ' = δ/2):

    ε_m = ε / (2 sqrt(2 M ln(2/δ))),        δ_m = δ / (2M).

Cor. 3.21 needs ε < 1; here the paper's split is *checked* with the exact Thm 3.20 expression
(``composition.advanced_epsilon``) rather than assumed, and ``meets_target`` says whether it holds.

:func:`split_budget` reports that split together with a tight one found by inverting
``compose(..., method="best")``: for black-box (ε_m, δ_m) mechanisms the largest ε_m whose M-fold
composition (same δ_m) is at most the total (a monotone search landing on the valid side); for
Gaussian mechanisms the exact least σ whose M-fold composition is (ε, δ)-DP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpcert import _validation as check
from dpcert._numerics import largest_valid
from dpcert.accounting.composition import MAX_OPTIMAL_COUNT, compose_counts
from dpcert.certificates import Certificate, Guarantee, approximate_dp_certificate
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.gaussian import calibrate_gaussian, gaussian_certificate

MECHANISMS = ("generic", "gaussian")
PAPER_BASIS = "Chowdhury & Zhou 2022, Thm E.2 (Dwork & Roth 2014, Cor. 3.21) per-batch budget"


@dataclass(frozen=True)
class BatchBudget:
    """What each participation may spend, and what the M participations then cost in total.

    Attributes
    ----------
    epsilon, delta
        Per-participation (ε_m, δ_m).
    batch_certificate
        Certificate of one participation.
    total_certificate
        Certificate of the M-fold composition at the total δ.
    sigma
        Gaussian noise per participation (``None`` for black-box mechanisms).
    """

    epsilon: float
    delta: float
    batch_certificate: Certificate
    total_certificate: Certificate
    sigma: float | None = None

    def meets(self, total: Guarantee) -> bool:
        return self.total_certificate.guarantee.covers(total)

    def to_dict(self) -> dict[str, object]:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sigma": self.sigma,
            "total_epsilon": self.total_certificate.epsilon,
            "total_delta": self.total_certificate.delta,
            "batch_certificate": self.batch_certificate.to_dict(),
            "total_certificate": self.total_certificate.to_dict(),
        }


@dataclass(frozen=True)
class BudgetSplit:
    """The paper's split and the tight split of ``total`` over ``participations``."""

    total: Guarantee
    participations: int
    mechanism: str
    paper: BatchBudget
    tight: BatchBudget

    @property
    def paper_meets_target(self) -> bool:
        return self.paper.meets(self.total)

    def to_dict(self) -> dict[str, object]:
        return {
            "total": self.total.to_dict(),
            "participations": self.participations,
            "mechanism": self.mechanism,
            "paper": self.paper.to_dict() | {"meets_target": self.paper_meets_target},
            "tight": self.tight.to_dict(),
        }


def paper_split(total: Guarantee, participations: int) -> tuple[float, float]:
    """(ε_m, δ_m) = (ε / (2 sqrt(2M ln(2/δ))), δ/(2M)) of Chowdhury & Zhou 2022, proofs of Thm E.3/E.5."""
    m = check.positive_int("participations", participations)
    epsilon_m = total.epsilon / (2.0 * math.sqrt(2.0 * m * math.log(2.0 / total.delta)))
    return epsilon_m, total.delta / (2.0 * m)


def _largest_valid_batch_epsilon(total: Guarantee, m: int, delta_m: float, start: float) -> float:
    """Largest ε_m (to a relative 1e-9) with compose(M × (ε_m, δ_m), "best", δ).ε <= ε, valid side.

    For M identical black-box (ε_m, δ_m) components ``"best"`` is attained by ``"optimal"``: KOV
    Thm 3.3 is the exact privacy region of their composition, so no valid method gives a smaller ε.
    The search therefore evaluates ``"optimal"`` only (fast); the caller composes the result with
    ``"best"`` to produce the final certificate.
    """

    def composed(epsilon_m: float) -> float:
        batch = approximate_dp_certificate(epsilon_m, delta_m)
        try:
            return compose_counts([(batch, m)], method="optimal", delta=total.delta).epsilon
        except InvalidParameter:
            return math.inf

    def excess(epsilon_m: float) -> float:
        return composed(epsilon_m) - total.epsilon

    low = start if excess(start) <= 0.0 else 0.0  # ε_m = 0 composes to ε = 0: valid
    return largest_valid(excess, low, max(2.0 * low, total.epsilon), xtol_relative=1e-9, first_step=1e-9)


def split_budget(
    total: Guarantee,
    participations: int,
    mechanism: str = "generic",
    *,
    sensitivity: float = 1.0,
) -> BudgetSplit:
    """Split a user's total budget over ``participations`` (M) batches, as the paper does and tightly.

    Parameters
    ----------
    total
        The user-level (ε, δ) for the joint output of all batches (0 < δ < 1).
    participations
        M, the number of batches a user may take part in (at most once each).
    mechanism
        ``"generic"``: each batch is a black-box (ε_m, δ_m)-DP mechanism; the tight split keeps the
        paper's δ_m = δ/(2M) and finds the largest ε_m with ``compose(..., "best")`` (exact KOV for
        identical components).  ``"gaussian"``: each batch adds Gaussian noise to a query of
        ℓ2-sensitivity ``sensitivity``; the paper's split is calibrated per batch (analytic Gaussian),
        the tight split is the exact M-fold calibration; ``epsilon`` is then each batch's ε at δ_m.
    """
    if not isinstance(total, Guarantee):
        raise InvalidParameter("total", total, "a dpcert.Guarantee(epsilon, delta)")
    check.epsilon(total.epsilon, "total.epsilon")
    check.positive_delta(total.delta, "total.delta")
    m = check.positive_int("participations", participations)
    if not isinstance(mechanism, str) or mechanism not in MECHANISMS:
        raise InvalidParameter("mechanism", mechanism, "one of " + ", ".join(MECHANISMS))
    if mechanism == "generic" and m > MAX_OPTIMAL_COUNT:
        raise InvalidParameter(
            "participations",
            m,
            f"at most {MAX_OPTIMAL_COUNT} for the generic split (its exact composition sums M + 1 terms); "
            "mechanism='gaussian' takes any M",
        )
    epsilon_m, delta_m = paper_split(total, m)

    if mechanism == "generic":
        paper_batch = approximate_dp_certificate(epsilon_m, delta_m, basis=PAPER_BASIS)
        paper_total = compose_counts([(paper_batch, m)], method="advanced", delta=total.delta)
        paper = BatchBudget(epsilon_m, delta_m, paper_batch, paper_total)
        tight_epsilon = _largest_valid_batch_epsilon(total, m, delta_m, epsilon_m)
        tight_batch = approximate_dp_certificate(
            tight_epsilon, delta_m, basis="largest epsilon whose M-fold composition meets the total"
        )
        tight_total = compose_counts([(tight_batch, m)], method="best", delta=total.delta)
        tight = BatchBudget(tight_epsilon, delta_m, tight_batch, tight_total)
    else:
        sensitivity = check.positive_finite("sensitivity", sensitivity)
        paper_calibration = calibrate_gaussian(epsilon_m, delta_m, sensitivity=sensitivity)
        paper_batch = paper_calibration.certificate
        paper_total = compose_counts([(paper_batch, m)], method="best", delta=total.delta)
        paper = BatchBudget(epsilon_m, delta_m, paper_batch, paper_total, paper_calibration.sigma)
        tight_calibration = calibrate_gaussian(
            total.epsilon, total.delta, sensitivity=sensitivity, compositions=m
        )
        sigma = tight_calibration.sigma
        tight_batch = gaussian_certificate(sigma, delta=delta_m, sensitivity=sensitivity)
        tight = BatchBudget(tight_batch.epsilon, delta_m, tight_batch, tight_calibration.certificate, sigma)
    return BudgetSplit(total, m, mechanism, paper, tight)
