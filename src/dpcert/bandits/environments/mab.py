"""Stochastic multi-armed bandits (Bernoulli or Gaussian rewards), vectorised over repetitions.

Every sampler takes arrays of arm indices and pull counts with any leading shape (typically
``(runs, arms)``) and returns the matching array, so an algorithm draws a whole phase of all its
repetitions in one call.  Sums of ``m`` rewards are drawn exactly in distribution (a Binomial count for
Bernoulli arms, a Normal with variance ``m·σ²`` for Gaussian arms), never one reward at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpcert import _validation as check
from dpcert.errors import InvalidParameter

REWARD_MODELS = ("bernoulli", "gaussian")

#: The instance of spec 001 §7 (seed 001 has no experiments; this is the spec's proposed one).
SPEC_001_MEANS: tuple[float, ...] = (0.9, 0.8, 0.8, 0.8, 0.6, 0.6, 0.6, 0.3, 0.3, 0.3)


@dataclass(frozen=True)
class MultiArmedBandit:
    """A k-armed stochastic bandit.

    Parameters
    ----------
    means
        Arm means μ_a, shape (k,), k >= 2.  Bernoulli arms need μ_a in [0, 1].
    reward_model
        ``"bernoulli"`` (rewards in {0, 1}, the setting of seed 001) or ``"gaussian"`` (N(μ_a, σ²)).
    noise_std
        σ of Gaussian rewards (ignored for Bernoulli arms).
    """

    means: np.ndarray
    reward_model: str = "bernoulli"
    noise_std: float = 1.0
    gaps: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.reward_model not in REWARD_MODELS:
            raise InvalidParameter("reward_model", self.reward_model, "one of " + ", ".join(REWARD_MODELS))
        means = check.finite_array("means", self.means)
        if means.ndim != 1 or means.size < 2:
            raise InvalidParameter("means", means.shape, "a 1-d array of at least 2 arm means")
        if self.reward_model == "bernoulli":
            means = check.bounded_array("means", means, 0.0, 1.0)
        means = means.copy()
        means.setflags(write=False)
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "noise_std", check.positive_finite("noise_std", self.noise_std))
        gaps = means.max() - means
        gaps.setflags(write=False)
        object.__setattr__(self, "gaps", gaps)

    @property
    def arms(self) -> int:
        return int(self.means.size)

    @property
    def best_arm(self) -> int:
        return int(np.argmax(self.means))

    @property
    def binary(self) -> bool:
        """True if rewards are bits (what the shuffle binary summation and randomized response need)."""
        return self.reward_model == "bernoulli"

    def reward_sums(self, arms: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Sum of ``counts`` fresh rewards of arm ``arms`` for every entry (exact in distribution).

        ``arms`` and ``counts`` broadcast against each other; ``counts`` are non-negative integers.
        """
        rng = check.generator(rng)
        arms = np.asarray(arms)
        counts = np.asarray(counts)
        if np.any(counts < 0):
            raise InvalidParameter("counts", "<negative entry>", "non-negative pull counts")
        mu = self.means[arms]
        if self.reward_model == "bernoulli":
            return rng.binomial(counts, mu).astype(float)
        return rng.normal(counts * mu, np.sqrt(counts) * self.noise_std)

    def rewards(self, arms: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One fresh reward for every entry of ``arms``."""
        return self.reward_sums(arms, np.ones(np.shape(arms), dtype=np.int64), rng)
