"""Phased elimination with private, distributed feedback: DPE, DP-DPE, DPE-FixedU and DP-PE.

Li, Zhou & Ji 2022, "Differentially Private Linear Bandits with Partial Distributed Feedback"
(arXiv 2207.05827), spec ``000_dp_dpe.md``:

* **DP-DPE** (Alg. 1): phase l plays a near-G-optimal design π_l on the active arms D_l,
  T_l(x) = ⌈h_l π_l(x)⌉ times each arm (h_l = 2^l), samples |U_l| = ⌈2^{αl}⌉ fresh users who each
  report their per-arm average rewards ȳ_u ∈ [−B, B]^{s_l} through a privatizer, estimates
  θ̂_l = V_l⁻¹ Σ_x T_l(x) x ŷ_l(x) and eliminates every x with max_b ⟨θ̂_l, b − x⟩ > 2 W_l.
  DPE is the non-private privatizer; CDP/LDP/SDP-DPE the central, local and shuffle ones.
* **DPE-FixedU** (§7): DPE with a constant number U of users per phase, U chosen "such that the
  communication cost is the same under DPE and DPE-FixedU" — by integer bisection on the mean C(T)
  over runs (docs/PAPER_NOTES.md, PN-LZJ-8), :func:`match_fixed_users`.
* **DP-PE** (App. C, Alg. 3): standard linear bandit (θ_u = θ*), h_1 = S = ⌈4d ln ln d + 16⌉,
  h_l = S·2^{l−1}; every play is made by a fresh user whose single reward enters a private per-arm
  sum; θ̂_l = V_l⁻¹ Σ_x x ŷ_l(x) (eq. 53).

Confidence widths (β = 1/(kT) by default):

* DP-DPE, eq. 3: W_l = (sqrt(2d/(h_l|U_l|)) + σ/sqrt(|U_l|) + σ_n)·sqrt(2 ln(1/β)).
* DP-PE, eq. 54: W_l = (sqrt(2d/h_l) + σ_n)·sqrt(2 ln(1/β)).

σ_n bounds the standard deviation of the privacy error of ⟨θ̂_l, x'⟩.  ``width="paper"`` uses the
paper's worst-case constants (Thms 5.3–5.5: 2σ_nc√(Sd), 2σ_nl√(Sd/|U_l|), 2σ_ns√(Sd); Thms C.2,
C.4, C.7: 2dσ√s_l/h_l, 2dσ_nl√(2s_l/h_l)).  ``width="exact"`` uses the exact standard deviation
of that error, max_{x'∈D_l} sqrt(Σ_x w_x² ⟨x', V_l⁻¹x⟩² Var γ(x)) with w_x = T_l(x) (DP-DPE) or 1
(DP-PE) — the quantity the paper bounds in the proof of Thm B.2 (PN-LZJ-5), so the concentration
argument holds unchanged; it is the default with the ``tight`` calibration.  ``width`` chooses the
confidence width, not the noise: it is not a :class:`~dpcert.bandits.privatizers.Calibration` and
changes no certificate (either width may go with either calibration).

Communication (eq. 2): C(T) = Σ_l |U_l|·N_l with N_l = s_l reals per user (DP-DPE) or 1 (DP-PE);
the final phase, truncated at T, releases nothing and sends nothing (spec S4, S8).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert._numerics import least_valid_integer
from dpcert.bandits.design import near_g_optimal_design, support_bound
from dpcert.bandits.environments.linear import LinearBandit, UserPool
from dpcert.bandits.privatizers import Contributions, RowPrivatizer
from dpcert.bandits.results import RunResult
from dpcert.certificates import Certificate
from dpcert.errors import InvalidParameter
from dpcert.session import PrivacySession

WIDTHS = ("paper", "exact")
VARIANTS = ("dpe", "pe")


def users_per_phase(phase: int, alpha: float) -> int:
    """|U_l| = ⌈2^{αl}⌉ (Alg. 1 line 7); exact powers of two are not rounded up by float error."""
    value = 2.0 ** (alpha * phase)
    nearest = round(value)
    if abs(value - nearest) <= 1e-9 * max(1.0, value):
        return int(nearest)
    return int(math.ceil(value))


def plays_per_arm(weights: np.ndarray, scale: float) -> np.ndarray:
    """T_l(x) = ⌈h_l π_l(x)⌉ for the support (Alg. 1 line 5); float error never rounds up a product
    that is an integer to within 1e-9 (that would add a play, never remove one)."""
    product = scale * weights
    nearest = np.round(product)
    exact = np.abs(product - nearest) <= 1e-9 * np.maximum(1.0, product)
    return np.where(exact, nearest, np.ceil(product)).astype(np.int64)


@dataclass(frozen=True)
class EliminationSettings:
    """Parameters of one phased-elimination algorithm (everything but the bandit and the privatizer).

    Parameters
    ----------
    horizon
        T ≥ 1.
    variant
        ``"dpe"`` (Alg. 1, distributed feedback) or ``"pe"`` (Alg. 3, one reward per user).
    alpha
        α ∈ (0, 1): |U_l| = ⌈2^{αl}⌉ (DP-DPE).
    beta
        Confidence β ∈ (0, 1); default 1/(kT) as in the theorems.
    width
        ``"paper"`` or ``"exact"`` privacy term of W_l (module docstring).
    fixed_users
        U for DPE-FixedU (|U_l| = U in every phase and in W_l); ``None`` for ⌈2^{αl}⌉.
    user_mode
        ``"unique"`` (the paper) or ``"returning"`` (finite population, users may come back).
    population
        Population size for returning users.
    """

    horizon: int
    variant: str = "dpe"
    alpha: float = 0.8
    beta: float | None = None
    width: str = "exact"
    fixed_users: int | None = None
    user_mode: str = "unique"
    population: int | None = None

    def __post_init__(self) -> None:
        check.positive_int("horizon", self.horizon)
        if self.variant not in VARIANTS:
            raise InvalidParameter("variant", self.variant, "one of " + ", ".join(VARIANTS))
        check.probability("alpha", self.alpha, open_low=True, open_high=True)
        if self.beta is not None:
            check.probability("beta", self.beta, open_low=True, open_high=True)
        if self.width not in WIDTHS:
            raise InvalidParameter("width", self.width, "one of " + ", ".join(WIDTHS))
        if self.fixed_users is not None:
            check.positive_int("fixed_users", self.fixed_users)
        if self.variant == "pe" and self.user_mode != "unique":
            raise InvalidParameter("user_mode", self.user_mode, "'unique' for DP-PE (one reward per user)")


@dataclass(frozen=True)
class PhaseRecord:
    """Bookkeeping of one phase (Li, Zhou & Ji 2022, Appendix C), enough to check each phase's invariants."""

    phase: int
    start: int
    scale: int
    plays: int
    support: int
    users: int
    width: float
    sigma_n: float
    active_before: int
    active_after: int
    best_active: bool
    regret: float
    communication: int
    released: bool
    g_value: float
    deviation: float = math.nan  # max_{x∈D_l} |⟨θ̂_l − θ*, x⟩| (Thms B.1/B.2 bound it by W_l w.h.p.)


def _width(
    settings: EliminationSettings,
    bandit: LinearBandit,
    scale: float,
    users: int,
    sigma_n: float,
    log_term: float,
) -> float:
    d = bandit.dimension
    if settings.variant == "pe":
        return (math.sqrt(2.0 * d / scale) + sigma_n) * log_term  # eq. 54
    return (  # eq. 3
        math.sqrt(2.0 * d / (scale * users)) + bandit.heterogeneity / math.sqrt(users) + sigma_n
    ) * log_term


def _sigma_n(
    settings: EliminationSettings,
    privatizer: RowPrivatizer,
    noise_variance: np.ndarray,
    influence: np.ndarray,
    weights: np.ndarray,
    plays: np.ndarray,
    scale: float,
    users: int,
    dimension: int,
) -> float:
    """Privacy term σ_n of W_l (module docstring); ``influence`` = Z_active V⁻¹ Z_suppᵀ."""
    if privatizer.model == "none" or not np.any(noise_variance > 0):
        return 0.0
    if settings.width == "exact":
        terms = fixed_order.matvec((influence * weights[None, :]) ** 2, noise_variance)
        return float(math.sqrt(terms.max()))
    support_size = plays.size
    big_s = support_bound(dimension)
    if settings.variant == "dpe":
        # Thms 5.3–5.5: σ_n² = 4 S d Var(γ_p), Var(γ_p) = σ_nc², σ_nl²/|U_l| or σ_ns²
        return 2.0 * math.sqrt(big_s * dimension * float(noise_variance.max()))
    if privatizer.model == "local":
        per_user = float(np.max(noise_variance / plays))  # σ_nl²
        return 2.0 * dimension * math.sqrt(2.0 * support_size * per_user / scale)  # Thm C.4
    return 2.0 * dimension * math.sqrt(support_size * float(noise_variance.max())) / scale  # C.2, C.7


def run_elimination(
    bandit: LinearBandit,
    privatizer: RowPrivatizer,
    settings: EliminationSettings,
    rng: np.random.Generator,
    *,
    session: PrivacySession | None = None,
) -> RunResult:
    """Run DP-DPE (``variant="dpe"``) or DP-PE (``variant="pe"``) once for ``settings.horizon`` rounds.

    Returns a :class:`~dpcert.bandits.results.RunResult` of one run: regret after every round, pulls per
    arm, the released users, the phases' records, the realised regret and the units sent; its
    ``certificate`` is the worst user's composition in ``session`` at the releases' δ (users may return
    across phases with ``user_mode="returning"``); ``good_event_violated`` is whether a released
    phase's deviation max_x |⟨θ̂_l − θ*, x⟩| exceeded its width W_l (Thms B.1/B.2).

    Parameters
    ----------
    session
        The run's :class:`~dpcert.session.PrivacySession`: every release charges exactly
        its users through it, before its noise is drawn (default: a fresh in-memory session).
    """
    started = time.perf_counter()
    rng = check.generator(rng)
    if privatizer.reward_bound != bandit.reward_bound:
        raise InvalidParameter(
            "reward_bound", privatizer.reward_bound, f"the bandit's reward bound B = {bandit.reward_bound}"
        )
    horizon = settings.horizon
    dimension = bandit.dimension
    beta = settings.beta if settings.beta is not None else 1.0 / (bandit.arm_count * horizon)
    log_term = math.sqrt(2.0 * math.log(1.0 / beta))
    session = PrivacySession("elimination") if session is None else session
    pool = UserPool(bandit, settings.user_mode, rng, settings.population)
    big_s = support_bound(dimension)
    active = np.arange(bandit.arm_count)
    best = bandit.best_arm
    played_arms: list[np.ndarray] = []
    played_counts: list[np.ndarray] = []
    realised_block: list[np.ndarray] = []
    phases: list[PhaseRecord] = []
    certificates: list[Certificate] = []
    start = 0
    phase = 1
    communication = 0
    users_total = 0  # users whose data entered a release
    participants = 0  # users who observed rewards (the truncated final phase releases nothing)
    unit = "bits" if privatizer.model == "shuffle" else "reals"
    while start < horizon:
        scale = 2**phase if settings.variant == "dpe" else big_s * 2 ** (phase - 1)
        design = near_g_optimal_design(bandit.arms[active])
        local_support = design.support
        support = active[local_support]
        plays = plays_per_arm(design.weights[local_support], scale)
        remaining = horizon - start
        released = int(plays.sum()) <= remaining
        if not released:  # final phase: play in index order until round T, release nothing
            cumulative = np.cumsum(plays)
            plays = np.minimum(plays, np.maximum(0, remaining - (cumulative - plays)))
            keep = plays > 0
            support, plays, local_support = support[keep], plays[keep], local_support[keep]
        played_arms.append(support)
        played_counts.append(plays)
        best_mean = fixed_order.dot(bandit.arms[best], bandit.theta)
        if settings.variant == "dpe":
            users = settings.fixed_users or users_per_phase(phase, settings.alpha)
            ids, deviations = pool.draw(users, rng)
            averages = bandit.client_averages(support, plays, deviations, rng)
            realised_block.append(best_mean - averages.mean(axis=0))
        else:
            users = int(plays.sum())
            ids = np.arange(participants, participants + users, dtype=np.int64)
            groups = np.repeat(np.arange(support.size), plays)
            rewards = bandit.single_rewards(support[groups], rng)
            block_sums = np.bincount(groups, weights=rewards, minlength=support.size)
            realised_block.append(best_mean - block_sums / plays)
        phase_regret = float(fixed_order.dot(plays.astype(float), bandit.gaps[support]))
        record: dict[str, Any] = dict(
            phase=phase,
            start=start,
            scale=int(scale),
            plays=int(plays.sum()),
            support=int(support.size),
            users=int(users),
            width=math.nan,
            sigma_n=math.nan,
            active_before=int(active.size),
            active_after=int(active.size),
            best_active=bool(np.any(active == best)),
            regret=phase_regret,
            communication=0,
            released=released,
            g_value=float(design.g_value),
        )
        participants += users
        if released:
            users_total += users
            if settings.variant == "dpe":
                contributions = Contributions.mean_of_rows(averages, ids)
                weights = plays.astype(float)
            else:
                contributions = Contributions.of_rows(rewards, groups, support.size, ids)
                weights = np.ones(support.size)
            release = privatizer.release(contributions, rng, session=session)
            if release.certificate is not None:
                certificates.append(release.certificate)
            basis = design.basis
            support_coords = fixed_order.matmul(bandit.arms[support], basis)
            active_coords = fixed_order.matmul(bandit.arms[active], basis)
            gram = fixed_order.weighted_gram(support_coords, plays.astype(float))  # V_l
            moment = fixed_order.weighted_sum(support_coords, weights * release.estimate)  # G_l
            theta_hat = fixed_order.solve_spd(gram, moment[:, None])[:, 0]
            influence = fixed_order.matmul(active_coords, fixed_order.solve_spd(gram, support_coords.T))
            sigma_n = _sigma_n(
                settings,
                privatizer,
                release.noise_variance,
                influence,
                weights,
                plays,
                scale,
                users,
                dimension,
            )
            width = _width(settings, bandit, scale, users, sigma_n, log_term)
            predictions = fixed_order.matvec(active_coords, theta_hat)
            truth = fixed_order.matvec(bandit.arms[active], bandit.theta)
            deviation = float(np.max(np.abs(predictions - truth)))
            survivors = active[predictions.max() - predictions <= 2.0 * width]
            communication_phase = users * release.units_per_user  # eq. 2: |U_l|·N_l
            if release.units_total is not None:
                communication_phase = release.units_total
            unit = release.unit
            record.update(
                width=width,
                sigma_n=sigma_n,
                active_after=int(survivors.size),
                communication=int(communication_phase),
                deviation=deviation,
            )
            communication += int(communication_phase)
            active = survivors
        phases.append(PhaseRecord(**record))
        start += int(plays.sum())
        phase += 1
    arms_sequence = np.concatenate(played_arms)
    counts = np.concatenate(played_counts)
    gaps = np.repeat(bandit.gaps[arms_sequence], counts)
    realised = np.repeat(np.concatenate(realised_block), counts)
    cumulative = np.cumsum(gaps)
    pulls = np.bincount(arms_sequence, weights=counts, minlength=bandit.arm_count).astype(np.int64)
    released_phases = [p for p in phases if p.released]
    certificate = None
    if certificates:
        certificate = session.worst_user_certificate(max(c.guarantee.delta for c in certificates))
    return RunResult(
        algorithm="dp-pe" if settings.variant == "pe" else "dp-dpe",
        horizon=horizon,
        final_regret=cumulative[-1:].copy(),
        checkpoints=np.arange(1, horizon + 1),
        regret_curve=cumulative[None, :],
        users=np.array([users_total], dtype=np.int64),
        certificate=certificate,
        seconds=time.perf_counter() - started,
        parameters={
            "arms": bandit.arm_count,
            "dimension": dimension,
            "privacy": privatizer.model,
            "participants": participants,
            "unit": unit,
            "settings": asdict(settings),
        },
        pulls=pulls[None, :],
        best_arm_eliminated=np.array([not bool(np.any(active == best))]),
        good_event_violated=np.array([any(p.deviation > p.width for p in released_phases)]),
        phases=len(phases),
        phase_records=tuple(phases),
        realised_curve=np.cumsum(realised)[None, :],
        communication=np.array([communication], dtype=np.int64),
    )


@dataclass(frozen=True)
class FixedUsersMatch:
    """Result of :func:`match_fixed_users`.

    Attributes
    ----------
    users
        The chosen U.
    communication
        Mean C(T) of DPE-FixedU with ``users`` per phase.
    target
        The communication to match (DPE's mean C(T)).
    bracket
        Adjacent integers ``(lo, lo + 1)`` with C̄(lo) <= target < C̄(lo + 1); ``lo = 0`` (C̄(0) = 0, no
        user sends anything) when even one user per phase communicates more than the target.
    evaluations
        Every U evaluated and its mean C(T), in evaluation order.
    """

    users: int
    communication: float
    target: float
    bracket: tuple[int, int]
    evaluations: dict[int, float]

    @property
    def relative_difference(self) -> float:
        """(C̄(U) − target)/target."""
        return (self.communication - self.target) / self.target


def match_fixed_users(
    target: float,
    communication: Callable[[int], float],
    *,
    guess: int = 1,
    max_users: int = 10**9,
) -> FixedUsersMatch:
    """The number U of users per phase for which DPE-FixedU's mean C(T) matches ``target`` (PN-LZJ-8).

    Li, Zhou & Ji 2022 §7 choose U "such that the communication cost is the same under DPE and
    DPE-FixedU"; C(T) = U·Σ_l s_l (eq. 2) depends on the realised supports s_l, so U is found by
    integer bisection on C̄(U) = ``communication(U)`` (the mean over runs, common random numbers).

    C̄ grows with U (about Σ_l s_l per extra user) but is not exactly monotone: more users eliminate
    faster, which changes the supports.  The bisection therefore relies only on its bracket invariant
    C̄(lo) <= target < C̄(hi) (with C̄(0) = 0): it always ends with adjacent integers straddling the
    target (a crossing, by the discrete intermediate value property; the only one when C̄ is
    monotone), so the match is within half the step C̄(lo + 1) − C̄(lo), the granularity of an integer
    U.  **Tie rule:** U is whichever of lo, lo + 1 has C̄ closer to the target; on equal distance the
    smaller, lo, so DPE-FixedU never gets more communication than DPE when the two are equally close
    (U >= 1 always).

    The bracket is found from ``guess`` corrected once proportionally (C̄(U) ≈ U·Σ_l s_l), then
    widened by doubling steps and bisected (:func:`dpcert._numerics.least_valid_integer`, whose
    bracket invariant is the one above); ``communication`` is called once per distinct U.

    Parameters
    ----------
    target
        The communication to match, > 0.
    communication
        U ↦ mean C(T) of DPE-FixedU with U users per phase.
    guess
        Starting U (e.g. DPE's C(T) divided by its Σ_l s_l).
    max_users
        Largest U tried before giving up with :class:`InvalidParameter`.
    """
    target = check.positive_finite("target", target)
    guess = check.positive_int("guess", guess)
    max_users = check.positive_int("max_users", max_users)
    evaluations: dict[int, float] = {}

    def cost(users: int) -> float:
        if users == 0:
            return 0.0
        if users not in evaluations:
            evaluations[users] = float(communication(users))
        return evaluations[users]

    start = min(guess, max_users)
    value = cost(start)
    if value > 0:
        start = int(min(max_users, max(1, round(start * target / value))))  # C̄ ≈ U·Σ_l s_l
    # the least U whose mean communication exceeds the target; U − 1 is then at or below it (C̄(0) = 0)
    high = least_valid_integer(
        lambda users: cost(users) > target, start, below=0, step=max(1, start // 32), ceiling=max_users
    )
    if high is None:
        raise InvalidParameter(
            "target", target, f"a communication reached with at most {max_users} users per phase"
        )
    low = high - 1  # invariant: cost(low) <= target < cost(high)
    chosen = low if low >= 1 and target - cost(low) <= cost(high) - target else high
    return FixedUsersMatch(chosen, cost(chosen), target, (low, high), dict(evaluations))
