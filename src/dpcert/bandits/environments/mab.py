"""Stochastic multi-armed bandits (Bernoulli, Beta or Gaussian rewards), vectorised over repetitions.

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

REWARD_MODELS = ("bernoulli", "beta", "gaussian")

#: The instance of dpcert's experiment for Tenenbaum et al. 2021, which reports none
#: (docs/PAPER_NOTES.md, PN-TKMS-7).
SPEC_001_MEANS: tuple[float, ...] = (0.9, 0.8, 0.8, 0.8, 0.6, 0.6, 0.6, 0.3, 0.3, 0.3)


@dataclass(frozen=True)
class MultiArmedBandit:
    """A k-armed stochastic bandit.

    Parameters
    ----------
    means
        Arm means μ_a, shape (k,), k >= 2.  Bernoulli arms need μ_a in [0, 1], Beta arms μ_a in (0, 1).
    reward_model
        ``"bernoulli"`` (rewards in {0, 1}, the setting of Tenenbaum et al. 2021), ``"beta"`` (rewards
        valued in [0, 1]: Beta(κ·μ_a, κ·(1 − μ_a)), the real-valued setting of their footnote 12) or
        ``"gaussian"`` (N(μ_a, σ²)).
    noise_std
        σ of Gaussian rewards (ignored otherwise).
    concentration
        κ of Beta rewards (ignored otherwise); the reward variance is μ_a(1 − μ_a)/(κ + 1).
    """

    means: np.ndarray
    reward_model: str = "bernoulli"
    noise_std: float = 1.0
    concentration: float = 2.0
    gaps: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.reward_model not in REWARD_MODELS:
            raise InvalidParameter("reward_model", self.reward_model, "one of " + ", ".join(REWARD_MODELS))
        means = check.finite_array("means", self.means)
        if means.ndim != 1 or means.size < 2:
            raise InvalidParameter("means", means.shape, "a 1-d array of at least 2 arm means")
        if self.reward_model == "bernoulli":
            means = check.bounded_array("means", means, 0.0, 1.0)
        if self.reward_model == "beta" and (np.any(means <= 0.0) or np.any(means >= 1.0)):
            raise InvalidParameter("means", means.tolist(), "means strictly inside (0, 1) for Beta rewards")
        means = means.copy()
        means.setflags(write=False)
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "noise_std", check.positive_finite("noise_std", self.noise_std))
        object.__setattr__(self, "concentration", check.positive_finite("concentration", self.concentration))
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

    @property
    def bounded(self) -> bool:
        """True if every reward lies in [0, 1] (Bernoulli or Beta arms)."""
        return self.reward_model in ("bernoulli", "beta")

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
        if self.reward_model == "beta":
            return _grouped_sums(
                self._beta_rewards(np.broadcast_to(mu, np.shape(counts)), counts, rng), counts
            )
        return rng.normal(counts * mu, np.sqrt(counts) * self.noise_std)

    def rounded_bit_sums(self, arms: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Sum of the randomized-rounding bits of ``counts`` fresh rewards of arm ``arms``, per entry.

        Each user with reward ``r`` in [0, 1] sends the bit ``b ~ Bernoulli(r)`` in place of ``r``, so
        ``E[b] = E[r] = μ_a``: the bit sum is an unbiased estimate of the reward sum and its bits are
        independent Bernoulli(μ_a), so Hoeffding's bound for [0, 1] rewards still holds.  Rounding is
        done on the user's side, before any release: a binary summation that is (ε, δ)-DP for every
        change of one bit stays (ε, δ)-DP for every change of one reward, since the output law given
        ``r`` is the mixture ``(1 − r)·P(· | b = 0) + r·P(· | b = 1)``.  Bernoulli rewards are their own
        rounding.  Beta rewards are drawn one by one and rounded one by one.
        """
        rng = check.generator(rng)
        if not self.bounded:
            raise InvalidParameter(
                "reward_model", self.reward_model, "bernoulli or beta (rewards in [0, 1]) for bit sums"
            )
        if self.reward_model == "bernoulli":
            return self.reward_sums(arms, counts, rng)
        counts = np.asarray(counts)
        if np.any(counts < 0):
            raise InvalidParameter("counts", "<negative entry>", "non-negative pull counts")
        mu = np.broadcast_to(self.means[np.asarray(arms)], np.shape(counts))
        rewards = self._beta_rewards(mu, counts, rng)
        bits = (rng.random(rewards.size) < rewards).astype(float)
        return _grouped_sums(bits, counts)

    def _beta_rewards(self, mu: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``counts[i]`` Beta rewards of mean ``mu[i]`` for every entry, flattened in entry order."""
        flat_counts = np.asarray(counts, dtype=np.int64).ravel()
        repeated = np.repeat(np.asarray(mu, dtype=float).ravel(), flat_counts)
        kappa = self.concentration
        return rng.beta(kappa * repeated, kappa * (1.0 - repeated))

    def rewards(self, arms: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One fresh reward for every entry of ``arms``."""
        return self.reward_sums(arms, np.ones(np.shape(arms), dtype=np.int64), rng)


def _grouped_sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sums of consecutive groups of ``values`` of sizes ``counts`` (any shape), shaped like ``counts``."""
    counts = np.asarray(counts, dtype=np.int64)
    ends = np.cumsum(counts.ravel())
    totals = np.concatenate(([0.0], np.cumsum(values)))
    return (totals[ends] - totals[ends - counts.ravel()]).reshape(counts.shape)
