"""Finite-arm linear bandits with a population of heterogeneous users.

Model (Li, Zhou & Ji 2022, §2 "DP-DLB"): a finite set D of k arms in the unit ball of R^d, a global
parameter θ* (‖θ*‖ ≤ 1), and users u with local parameters θ_u = θ* + ξ_u, ξ_u zero-mean and
σ-sub-Gaussian.  A user who observes arm x receives y = ⟨θ_u, x⟩ + η with η 1-sub-Gaussian; the DP
analysis requires |y| ≤ B, so every released reward (or per-arm average) is clipped to [−B, B]
before it reaches a privatizer.

Defaults follow dpcert's reproduction of Li, Zhou & Ji 2022, Fig. 2, whose paper leaves the instance
unspecified (docs/PAPER_NOTES.md, PN-LZJ-7): arms and θ* uniform on the unit sphere,
ξ_u = σ·r_u with r_u uniform on the sphere, Rademacher η, hence B = 2 + σ and clipping never binds.
Users are either *unique* (an unbounded population: every draw is a fresh user) or *returning* (a
finite population from which each phase samples without replacement, so a user may take part in
several phases and their privacy losses compose).

Instances are drawn for all repetitions at once (:func:`sample_instances`); simulation of a phase is
vectorised over its users and arms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert.errors import InvalidParameter

HETEROGENEITY_KINDS = ("sphere", "gaussian")
NOISE_KINDS = ("rademacher", "gaussian")
USER_MODES = ("unique", "returning")
_MAX_POPULATION_ENTRIES = 50_000_000  # users × dimension kept in memory for a returning population


def _uniform_sphere(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    draws = rng.standard_normal(shape)
    return draws / np.linalg.norm(draws, axis=-1, keepdims=True)


@dataclass(frozen=True)
class LinearBandit:
    """One finite-arm linear bandit instance with a user population model.

    Parameters
    ----------
    arms
        Shape (k, d), rows with ‖x‖ ≤ 1.
    theta
        Shape (d,), the global parameter θ*, ‖θ*‖ ≤ 1.
    heterogeneity
        σ ≥ 0, the scale of the users' deviations ξ_u.
    heterogeneity_kind
        ``"sphere"`` (ξ = σ·uniform unit vector, bounded by σ) or ``"gaussian"`` (ξ ~ N(0, σ² I)).
    noise_kind
        ``"rademacher"`` (η = ±1) or ``"gaussian"`` (η ~ N(0, 1)).
    reward_bound
        B > 0: every reward and per-arm average handed to a privatizer lies in [−B, B] (clipped).
    """

    arms: np.ndarray
    theta: np.ndarray
    heterogeneity: float = 0.0
    heterogeneity_kind: str = "sphere"
    noise_kind: str = "rademacher"
    reward_bound: float = 2.0
    gaps: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        arms = check.finite_array("arms", self.arms)
        theta = check.finite_array("theta", self.theta)
        if arms.ndim != 2 or arms.shape[0] < 1:
            raise InvalidParameter("arms", f"<array of shape {arms.shape}>", "a (k, d) array with k >= 1")
        if theta.shape != (arms.shape[1],):
            raise InvalidParameter("theta", f"<array of shape {theta.shape}>", f"shape ({arms.shape[1]},)")
        if np.max(np.linalg.norm(arms, axis=1)) > 1.0 + 1e-9:
            raise InvalidParameter("arms", "<arms outside the unit ball>", "rows with l2 norm <= 1")
        if fixed_order.norm(theta) > 1.0 + 1e-9:
            raise InvalidParameter("theta", "<theta outside the unit ball>", "l2 norm <= 1")
        check.nonnegative_finite("heterogeneity", self.heterogeneity)
        if self.heterogeneity_kind not in HETEROGENEITY_KINDS:
            raise InvalidParameter(
                "heterogeneity_kind", self.heterogeneity_kind, "one of " + ", ".join(HETEROGENEITY_KINDS)
            )
        if self.noise_kind not in NOISE_KINDS:
            raise InvalidParameter("noise_kind", self.noise_kind, "one of " + ", ".join(NOISE_KINDS))
        check.positive_finite("reward_bound", self.reward_bound)
        object.__setattr__(self, "arms", arms)
        object.__setattr__(self, "theta", theta)
        means = fixed_order.matvec(arms, theta)  # in fixed order: the same gaps on every CPU
        object.__setattr__(self, "gaps", means.max() - means)

    @property
    def dimension(self) -> int:
        return int(self.arms.shape[1])

    @property
    def arm_count(self) -> int:
        return int(self.arms.shape[0])

    @property
    def best_arm(self) -> int:
        return int(np.argmin(self.gaps))

    def deviations(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """ξ_u for ``count`` fresh users, shape (count, d)."""
        shape = (count, self.dimension)
        if self.heterogeneity == 0.0:
            return np.zeros(shape)
        if self.heterogeneity_kind == "sphere":
            return self.heterogeneity * _uniform_sphere(rng, shape)
        return self.heterogeneity * rng.standard_normal(shape)

    def mean_noise(self, plays: np.ndarray, users: int, rng: np.random.Generator) -> np.ndarray:
        """Average of ``plays[j]`` i.i.d. noise draws for each user and arm j, shape (users, len(plays)).

        Exact in distribution: (2·Bin(n, ½) − n)/n for Rademacher noise, N(0, 1/n) for Gaussian.
        """
        plays = np.asarray(plays, dtype=np.int64)
        if np.any(plays < 1):
            raise InvalidParameter("plays", "<array>", "every arm played at least once")
        if self.noise_kind == "rademacher":
            heads = rng.binomial(plays, 0.5, size=(users, plays.size))
            return (2.0 * heads - plays) / plays
        return rng.standard_normal((users, plays.size)) / np.sqrt(plays)

    def client_averages(
        self, arm_indices: np.ndarray, plays: np.ndarray, deviations: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """ȳ_u(x) = ⟨θ* + ξ_u, x⟩ + mean noise, clipped to [−B, B]; shape (users, len(arm_indices)).

        This is Alg. 1 line 10 of the paper for every participating user of a phase at once.
        """
        features = self.arms[np.asarray(arm_indices)]
        means = fixed_order.matmul(self.theta[None, :] + deviations, features.T)
        noisy = means + self.mean_noise(plays, deviations.shape[0], rng)
        return np.clip(noisy, -self.reward_bound, self.reward_bound)

    def single_rewards(self, arm_indices: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One reward ⟨θ*, x⟩ + η per user for the given arms (θ_u = θ*; paper App. C), clipped."""
        arm_indices = np.asarray(arm_indices)
        means = fixed_order.matvec(self.arms[arm_indices], self.theta)
        if self.noise_kind == "rademacher":
            noise = rng.choice(np.array([-1.0, 1.0]), size=arm_indices.shape)
        else:
            noise = rng.standard_normal(arm_indices.shape)
        return np.clip(means + noise, -self.reward_bound, self.reward_bound)


def default_reward_bound(heterogeneity: float, heterogeneity_kind: str, noise_kind: str) -> float | None:
    """B with |y| ≤ B surely (1 + σ + 1 for sphere deviations and Rademacher noise); ``None`` if unbounded."""
    if heterogeneity_kind == "sphere" and noise_kind == "rademacher":
        return 2.0 + heterogeneity
    return None


def sample_instances(
    dimension: int,
    arm_count: int,
    instances: int,
    rng: np.random.Generator,
    *,
    heterogeneity: float = 0.1,
    heterogeneity_kind: str = "sphere",
    noise_kind: str = "rademacher",
    reward_bound: float | None = None,
) -> list[LinearBandit]:
    """``instances`` independent bandits with arms and θ* uniform on the unit sphere (module docstring).

    Parameters
    ----------
    reward_bound
        B; by default the sure bound 2 + σ when it exists (sphere deviations, Rademacher noise).
        Gaussian deviations or noise need an explicit B; rewards are then clipped to it.
    """
    dimension = check.positive_int("dimension", dimension)
    arm_count = check.positive_int("arm_count", arm_count, minimum=2)
    instances = check.positive_int("instances", instances)
    rng = check.generator(rng)
    if reward_bound is None:
        reward_bound = default_reward_bound(heterogeneity, heterogeneity_kind, noise_kind)
        if reward_bound is None:
            raise InvalidParameter(
                "reward_bound",
                None,
                "a positive number",
                hint="Gaussian deviations or noise are unbounded: declare B and rewards are clipped to it",
            )
    arms = _uniform_sphere(rng, (instances, arm_count, dimension))
    thetas = _uniform_sphere(rng, (instances, dimension))
    return [
        LinearBandit(arms[i], thetas[i], heterogeneity, heterogeneity_kind, noise_kind, reward_bound)
        for i in range(instances)
    ]


class UserPool:
    """Draws the participants of each phase and their deviations ξ_u.

    ``unique``: every draw is a fresh user (ids 0, 1, 2, … in order), so each user takes part in
    exactly one privatizer call, the paper's assumption (§2 "uniqueness of client sampling").
    ``returning``: a finite population of ``population`` users with fixed ξ_u; each phase samples
    without replacement from it, so users may return in later phases.
    """

    def __init__(
        self, bandit: LinearBandit, mode: str, rng: np.random.Generator, population: int | None = None
    ) -> None:
        if mode not in USER_MODES:
            raise InvalidParameter("user_mode", mode, "one of " + ", ".join(USER_MODES))
        self.bandit = bandit
        self.mode = mode
        self.next_id = 0
        self.population_deviations: np.ndarray | None = None
        if mode == "returning":
            if population is None:
                raise InvalidParameter("population", None, "an integer >= 1 for returning users")
            population = check.positive_int("population", population)
            if population * bandit.dimension > _MAX_POPULATION_ENTRIES:
                raise InvalidParameter(
                    "population",
                    population,
                    f"population * dimension <= {_MAX_POPULATION_ENTRIES}",
                    hint="use unique users for larger populations",
                )
            self.population_deviations = bandit.deviations(population, rng)

    @property
    def population(self) -> int | None:
        return None if self.population_deviations is None else self.population_deviations.shape[0]

    def draw(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``count`` participants: their ids (int64) and deviations ξ_u, shape (count, d)."""
        count = check.positive_int("count", count)
        if self.population_deviations is None:
            ids = np.arange(self.next_id, self.next_id + count, dtype=np.int64)
            self.next_id += count
            return ids, self.bandit.deviations(count, rng)
        population = self.population_deviations.shape[0]
        if count > population:
            raise InvalidParameter(
                "population", population, f"at least {count} users (the largest phase's participants)"
            )
        ids = rng.choice(population, size=count, replace=False).astype(np.int64)
        return ids, self.population_deviations[ids]
