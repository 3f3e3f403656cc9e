"""In-range adversaries for robust private elimination (Charisopoulos, Esfandiari & Mirrokni 2023).

The paper's corruption model (eq. 3) replaces each received value independently with probability α by an
*arbitrary* value.  Large values are neutralised by clipping the received values to the clean range
``[−Ȳ, Ȳ]`` before any estimation, so an experiment that credits the spectral filter (the paper's Alg. 2)
must use corruptions that stay **inside** that range, where clipping changes nothing.  This module's
adversaries never leave ``[−Ȳ, Ȳ]``:

* ``targeted``: ``−Ȳ`` on the rows of the best arm, ``+Ȳ`` on every other row.
* ``coordinated``: aimed at the estimated gap between the best arm ``a*`` and its closest rival ``a'``.
  Least squares on the batch gives ``⟨a* − a', θ̂⟩ = Σ_j ⟨a* − a', M⁺ a_j⟩ y_j`` (``M = Σ_j a_j a_jᵀ``), so
  the in-range value that lowers it most on row ``j`` is ``−Ȳ·sign⟨a* − a', M⁺ a_j⟩``: every corrupted
  row pushes the learner towards eliminating ``a*``.

Both accept a ``scale`` in (0, 1] (values ``±scale·Ȳ``): an adversary that knows the filter's stopping
threshold can stay below it with a smaller scale.  The call shape is the engine's
(:class:`dpcert.bandits.algorithms.robust_elimination.Adversary`): ``corrupt(values, arm_indices, best_arm,
rng)`` returns ``(observed values, corruption mask)``, with attributes ``alpha``, ``strategy`` and
``magnitude``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert.errors import InvalidParameter

IN_RANGE_STRATEGIES = ("targeted", "coordinated")
_PINV_FLOOR = 1e-12
"""Relative eigenvalue floor of M⁺ (the spectral filter's): smaller eigenvalues of the Gram matrix, which is
summed over up to thousands of rows, are round-off of zero eigenvalues, not directions of the design."""


def clean_value_bound(clip: float, laplace_scale: float, reports: int, delta: float) -> float:
    """Ȳ = ``c_r + b·log(2n/δ)``: every one of ``n`` clean reports ``clip(r) + Lap(b)`` is at most Ȳ in
    absolute value w.p. >= 1 − δ (``P(|Lap(b)| > b·t) = e^{−t}``, union over n;
    docs/PAPER_NOTES.md, PN-CEM-2, option (a)).

    ``laplace_scale = 0`` (no privacy) gives ``c_r``.  This is the range the engine clips received M1
    values to.
    """
    clip = check.positive_finite("clip", clip)
    laplace_scale = check.nonnegative_finite("laplace_scale", laplace_scale)
    reports = check.positive_int("reports", reports)
    delta = check.probability("delta", delta, open_low=True, open_high=True)
    if laplace_scale == 0.0:
        return clip
    return clip + laplace_scale * math.log(2.0 * reports / delta)


def corruption_fraction(alpha: float) -> float:
    """The fraction α of corrupted values, checked: ``0 <= α < 1/4`` (Charisopoulos, Esfandiari & Mirrokni
    2023, eq. 3)."""
    alpha = check.nonnegative_finite("alpha", alpha)
    if alpha >= 0.25:
        raise InvalidParameter(
            "alpha", alpha, "0 <= alpha < 0.25 (Charisopoulos, Esfandiari & Mirrokni 2023, eq. 3)"
        )
    return alpha


@dataclass(frozen=True)
class InRangeAdversary:
    """Corrupts each received value w.p. α with a value inside ``[−Ȳ, Ȳ]`` (the paper's eq. 3).

    Parameters
    ----------
    alpha
        Corruption probability, ``0 <= alpha < 1/4``.
    arms
        The instance's arms, shape (K, d) (the adversary knows the instance: the paper's corrupted
        values are arbitrary).
    means
        The arms' true mean rewards, shape (K,) (to find the best arm's closest rival).
    strategy
        ``"targeted"`` or ``"coordinated"`` (module docstring).
    clip, laplace_scale, delta
        Define Ȳ(n) = :func:`clean_value_bound` for a batch of ``n`` received values (M1).
    scale
        Fraction of Ȳ used, in (0, 1].
    """

    alpha: float
    arms: np.ndarray
    means: np.ndarray
    strategy: str = "coordinated"
    clip: float = 1.0
    laplace_scale: float = 0.0
    delta: float = 0.01
    scale: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", corruption_fraction(self.alpha))
        arms = check.finite_array("arms", self.arms)
        means = check.finite_array("means", self.means)
        if arms.ndim != 2 or arms.shape[0] < 2 or means.shape != (arms.shape[0],):
            raise InvalidParameter("arms", arms.shape, "shape (K, d) with K >= 2 and means of shape (K,)")
        object.__setattr__(self, "arms", arms)
        object.__setattr__(self, "means", means)
        if self.strategy not in IN_RANGE_STRATEGIES:
            raise InvalidParameter("strategy", self.strategy, "one of " + ", ".join(IN_RANGE_STRATEGIES))
        object.__setattr__(self, "clip", check.positive_finite("clip", self.clip))
        object.__setattr__(
            self, "laplace_scale", check.nonnegative_finite("laplace_scale", self.laplace_scale)
        )
        object.__setattr__(
            self, "delta", check.probability("delta", self.delta, open_low=True, open_high=True)
        )
        scale = check.positive_finite("scale", self.scale)
        if scale > 1.0:
            raise InvalidParameter("scale", scale, "0 < scale <= 1 (values stay inside [-Ȳ, Ȳ])")
        object.__setattr__(self, "scale", scale)

    @property
    def magnitude(self) -> float:
        """Ȳ for a single report (the smallest range); the engine records it as the attack's magnitude."""
        return self.range_bound(1)

    def range_bound(self, reports: int) -> float:
        """Ȳ(n) for a batch of ``reports`` received values."""
        return clean_value_bound(self.clip, self.laplace_scale, reports, self.delta)

    def rival(self, best_arm: int) -> int:
        """The arm with the largest true mean other than ``best_arm``."""
        others = np.where(np.arange(self.means.size) == best_arm, -np.inf, self.means)
        return int(np.argmax(others))

    def replacement(self, arm_indices: np.ndarray, best_arm: int) -> np.ndarray:
        """The in-range value the adversary sends on each row (before the Bernoulli mask)."""
        arm_indices = np.asarray(arm_indices)
        level = self.scale * self.range_bound(arm_indices.size)
        if self.strategy == "targeted":
            return np.where(arm_indices == best_arm, -level, level)
        rows = self.arms[arm_indices]
        direction = self.arms[best_arm] - self.arms[self.rival(best_arm)]
        gram_pinv = fixed_order.pseudo_inverse_psd(fixed_order.weighted_gram(rows), _PINV_FLOOR)
        influence = fixed_order.matvec(rows, fixed_order.matvec(gram_pinv, direction))  # ⟨a* − a', M⁺ a_j⟩
        sign = np.sign(influence)
        fallback = np.where(arm_indices == best_arm, 1.0, -1.0)
        sign = np.where(np.abs(influence) > 1e-12 * max(np.abs(influence).max(), 1e-300), sign, fallback)
        return -level * sign

    def corrupt(
        self, values: np.ndarray, arm_indices: np.ndarray, best_arm: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return (observed values, corruption mask); every corrupted value lies in ``[−Ȳ(n), Ȳ(n)]``."""
        values = np.asarray(values, dtype=float)
        mask = rng.random(values.shape) < self.alpha
        return np.where(mask, self.replacement(arm_indices, best_arm), values), mask
