"""Contextual linear bandits with K arms per round, vectorised over repetitions.

Every repetition ``r`` has its own parameter ``θ*_r`` and, per round, a set of K feature vectors
``x_{r,t,1..K}``; the mean reward of arm ``a`` is ``⟨θ*_r, x_{r,t,a}⟩``.  Arms are either fixed for the
whole run (the experiments of Chowdhury & Zhou 2022, §5, and of Improved-rate LDP linear bandits, §4: a
stochastic linear bandit with a fixed action set) or redrawn each round from the same distribution
(time-varying contexts).  Rewards are Bernoulli (means must lie in [0, 1]) or Gaussian.

The instance generator follows Chowdhury & Zhou 2022, §5 ("similar to Vaswani et al. 2020"): θ* and
every arm are a (d − 1)-dimensional vector of norm 1/√2, uniform on that sphere, with the entry 1/√2
appended; so ``‖θ*‖ = ‖x‖ = 1`` and the means ``(1 + ⟨u, v⟩)/2`` lie in [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert.errors import InvalidParameter

REWARD_MODELS = ("bernoulli", "gaussian")


def half_sphere_features(rng: np.random.Generator, shape: tuple[int, ...], dimension: int) -> np.ndarray:
    """Vectors ``[u/√2, 1/√2]`` with ``u`` uniform on the unit sphere of R^{d−1}; shape ``shape + (d,)``."""
    if dimension < 2:
        raise InvalidParameter("dimension", dimension, "an integer >= 2")
    u = rng.standard_normal(shape + (dimension - 1,))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    last = np.full(shape + (1,), 1.0 / math.sqrt(2.0))
    return np.concatenate([u / math.sqrt(2.0), last], axis=-1)


def _inner(features: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``⟨θ_r, x⟩`` for features (runs, ..., d) and θ (runs, d), coordinates summed in order."""
    return fixed_order.dot(features, theta.reshape((theta.shape[0],) + (1,) * (features.ndim - 2) + (-1,)))


@dataclass(frozen=True)
class ContextualLinearBandit:
    """R independent linear bandit instances with K arms per round.

    Attributes
    ----------
    theta
        Unknown parameters, shape (runs, d), each of norm <= 1.
    arms
        Fixed arm features, shape (runs, K, d) (``fixed_arms=True``), else the first round's arms.
    fixed_arms
        Whether the arm set stays the same for the whole run.
    reward
        ``"bernoulli"`` (means in [0, 1]) or ``"gaussian"`` (mean plus N(0, noise_std²)).
    noise_std
        Standard deviation of Gaussian rewards (ignored for Bernoulli rewards).
    """

    theta: np.ndarray
    arms: np.ndarray
    fixed_arms: bool = True
    reward: str = "bernoulli"
    noise_std: float = 0.1

    def __post_init__(self) -> None:
        theta = check.finite_array("theta", self.theta)
        arms = check.finite_array("arms", self.arms)
        if (
            theta.ndim != 2
            or arms.ndim != 3
            or arms.shape[0] != theta.shape[0]
            or arms.shape[2] != theta.shape[1]
        ):
            raise InvalidParameter(
                "arms", arms.shape, "theta of shape (runs, d) and arms of shape (runs, K, d)"
            )
        if np.any(np.linalg.norm(theta, axis=1) > 1.0 + 1e-12):
            raise InvalidParameter("theta", "<norm > 1>", "parameters with Euclidean norm <= 1")
        if np.any(np.linalg.norm(arms, axis=2) > 1.0 + 1e-12):
            raise InvalidParameter("arms", "<norm > 1>", "features with Euclidean norm <= 1")
        if self.reward not in REWARD_MODELS:
            raise InvalidParameter("reward", self.reward, "one of " + ", ".join(REWARD_MODELS))
        check.positive_finite("noise_std", self.noise_std)
        if self.reward == "bernoulli":
            means = _inner(arms, theta)
            if means.min() < -1e-12 or means.max() > 1 + 1e-12:
                raise InvalidParameter(
                    "arms", "<means outside [0, 1]>", "Bernoulli means <theta, x> in [0, 1]"
                )
        object.__setattr__(self, "theta", theta)
        object.__setattr__(self, "arms", arms)

    @property
    def runs(self) -> int:
        return int(self.theta.shape[0])

    @property
    def n_arms(self) -> int:
        return int(self.arms.shape[1])

    @property
    def dimension(self) -> int:
        return int(self.theta.shape[1])

    def contexts(self, rng: np.random.Generator) -> np.ndarray:
        """The arm features of the next round, shape (runs, K, d)."""
        if self.fixed_arms:
            return self.arms
        return half_sphere_features(rng, (self.runs, self.n_arms), self.dimension)

    def means(self, features: np.ndarray) -> np.ndarray:
        """Mean rewards ``⟨θ*_r, x⟩`` for features of shape (runs, ..., d), summed over the coordinates in
        order (the same bits on every CPU and BLAS kernel)."""
        return _inner(features, self.theta)

    def sample_rewards(self, means: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One reward per entry of ``means`` (shape (runs, ...))."""
        if self.reward == "bernoulli":
            return (rng.random(means.shape) < means).astype(float)
        return means + self.noise_std * rng.standard_normal(means.shape)


def vaswani_instance(
    runs: int,
    dimension: int,
    n_arms: int,
    rng: np.random.Generator,
    *,
    fixed_arms: bool = True,
    reward: str = "bernoulli",
    noise_std: float = 0.1,
) -> ContextualLinearBandit:
    """The random instances of Chowdhury & Zhou 2022, §5 (one per repetition)."""
    runs = check.positive_int("runs", runs)
    dimension = check.positive_int("dimension", dimension, minimum=2)
    n_arms = check.positive_int("n_arms", n_arms)
    rng = check.generator(rng)
    theta = half_sphere_features(rng, (runs,), dimension)
    arms = half_sphere_features(rng, (runs, n_arms), dimension)
    return ContextualLinearBandit(theta, arms, fixed_arms=fixed_arms, reward=reward, noise_std=noise_std)
