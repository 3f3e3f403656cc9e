"""DP-SE: differentially private successive elimination (Sajed & Sheffet 2019), central model.

Sajed & Sheffet, "An Optimal Private Stochastic-MAB Algorithm Based on an Optimal Private Stopping Rule",
ICML 2019 (PMLR 97:5579–5588).  Epochs ``e = 1, 2, …`` with target gap ``Δ_e = c^{-e}`` (``c = 2``).  In
epoch ``e`` every arm of the active set ``S`` is pulled

    R_e = 1 + ⌊max(32·ln(8|S|e²/β)/Δ_e², 8·ln(4|S|e²/β)/(Δ_e·ε))⌋

times by fresh users, the server adds Laplace(1/ε) noise to each arm's epoch reward sum, ``μ̃_a`` is the
noisy sum over ``R_e``, and with the width

    w_e = sqrt(ln(8|S|e²/β)/(2R_e)) + ln(4|S|e²/β)/(R_e·ε)

every arm with ``μ̃_a + w_e < max_{a'∈S} (μ̃_{a'} − w_e)`` is removed.  Each epoch starts afresh: its
estimates use only its own ``R_e`` pulls per arm.  ``β`` is the confidence level of the elimination (not
a privacy δ).  The constants are those of the authors' reference implementation (class ``DPSE`` of
``MABPrivate.py`` in sayakrc/Differentially-Private-Bandits, run with ``delta = β = 0.1``, ``dc = 2``,
``crs = 1``): :func:`batch_size` and :func:`confidence_width` are its formulas, and ``width_scale``
plays the part of its ``crs``.  Unlike that implementation, which adds one Laplace draw to the whole
vector of epoch sums (the same noise on every arm, so the differences between arms are released
exactly), each arm's sum gets its own independent draw here, as the privacy argument below needs.

Privacy (the run is ε-DP, replace-one, central model).  A user is one round: her reward (in [0, 1])
enters exactly one arm's sum of exactly one epoch, whose release is the Laplace mechanism with
sensitivity 1 and scale 1/ε, ε-DP (Dwork, McSherry, Nissim & Smith 2006).  Every other release involves
disjoint users, and all choices (the arms pulled, the epochs' sizes, the eliminations) are
post-processing of earlier releases, so by parallel composition (McSherry 2009, Thm 4) over these
disjoint, adaptively chosen releases the whole run is as private as one release.  The run's
certificate is therefore the Laplace mechanism's own (:class:`~dpcert.bandits.algorithms.mab.
CentralLaplaceSum`, built by :func:`dpcert.mechanisms.laplace.calibrate_laplace`), charged through the
session for each epoch's users by the epoch's release, before its noise is drawn.  An epoch cut short by
the horizon is never released (its users are never charged), nor are the rounds spent on the last
arm once one arm is left (nothing is learnt from them).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert.bandits.algorithms.mab import CentralLaplaceSum, checked_run_inputs, spend_rest_on_last_arm
from dpcert.bandits.calibration.common import with_notes
from dpcert.bandits.environments.mab import MultiArmedBandit
from dpcert.bandits.privatizers import Contributions, UserRanges
from dpcert.bandits.results import RunResult
from dpcert.errors import InvalidParameter
from dpcert.session import PrivacySession

ALGORITHM = "dp-se"
CITATION = "Sajed & Sheffet 2019 (ICML), DP-SE"
DEFAULT_BETA = 0.1  # the authors' runs ("delta" in MABPrivate.py's parameters)
DEFAULT_DECAY = 2.0  # Δ_e = decay^{-e} ("dc")
RUN_NOTE = (
    "whole run: each reward enters exactly one Laplace release of sensitivity 1 (one arm's sum in one "
    "epoch of DP-SE, Sajed & Sheffet 2019); everything else is post-processing, so by parallel "
    "composition (McSherry 2009, Thm 4) the run is as private as one release"
)


@dataclass(frozen=True)
class DPSEParameters:
    """Validated parameters of DP-SE: privacy ε, confidence ``beta`` in (0, 1), gap decay ``decay`` > 1
    (``Δ_e = decay^{-e}``) and ``width_scale`` > 0 (multiplies the width; 1 is the analysed width)."""

    epsilon: float
    beta: float = DEFAULT_BETA
    decay: float = DEFAULT_DECAY
    width_scale: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.epsilon(self.epsilon))
        object.__setattr__(self, "beta", check.probability("beta", self.beta, open_low=True, open_high=True))
        decay = check.positive_finite("decay", self.decay)
        if decay <= 1.0:
            raise InvalidParameter("decay", self.decay, "a finite number > 1 (the gap halves for 2)")
        object.__setattr__(self, "decay", decay)
        object.__setattr__(self, "width_scale", check.positive_finite("width_scale", self.width_scale))


def _logs(active: np.ndarray | int, epoch: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """``ln(8|S|e²/β)`` and ``ln(4|S|e²/β)``, elementwise in ``active`` (= |S|)."""
    base = np.asarray(active, dtype=float) * (epoch**2) / beta
    return np.log(8.0 * base), np.log(4.0 * base)


def batch_size(active: np.ndarray | int, epoch: int, parameters: DPSEParameters) -> np.ndarray:
    """``R_e = 1 + ⌊max(32 ln(8|S|e²/β)/Δ_e², 8 ln(4|S|e²/β)/(Δ_e ε))⌋`` pulls per active arm in epoch ``e``
    (``Δ_e = decay^{-e}``), elementwise in ``active`` = |S| >= 1."""
    epoch = check.positive_int("epoch", epoch)
    active = np.asarray(active)
    if np.any(active < 1):
        raise InvalidParameter("active", "<entry < 1>", "at least one active arm")
    gap = 1.0 / parameters.decay**epoch
    hoeffding_log, laplace_log = _logs(active, epoch, parameters.beta)
    sizes = np.maximum(32.0 * hoeffding_log / gap**2, 8.0 * laplace_log / (gap * parameters.epsilon))
    return 1 + np.floor(sizes).astype(np.int64)


def confidence_width(
    active: np.ndarray | int, epoch: int, pulls: np.ndarray | int, parameters: DPSEParameters
) -> np.ndarray:
    """``width_scale·(sqrt(ln(8|S|e²/β)/(2R)) + ln(4|S|e²/β)/(R ε))``: the epoch's half-width around μ̃_a
    (Hoeffding's term at ``β/(4|S|e²)`` plus the Laplace tail at ``β/(4|S|e²)``), elementwise."""
    pulls = np.asarray(pulls, dtype=float)
    hoeffding_log, laplace_log = _logs(active, epoch, parameters.beta)
    width = np.sqrt(hoeffding_log / (2.0 * pulls)) + laplace_log / (pulls * parameters.epsilon)
    return parameters.width_scale * width


@dataclass(frozen=True)
class EpochRecord:
    """One epoch (recorded on request): its index, per-run active count, ``R_e``, width and released flag,
    the viable sets before and after and the estimates μ̃ (NaN where nothing was released)."""

    epoch: int
    active: np.ndarray  # (runs,)
    batch_size: np.ndarray  # (runs,)
    width: np.ndarray  # (runs,)
    released: np.ndarray  # (runs,) bool
    viable_before: np.ndarray  # (runs, k)
    viable_after: np.ndarray  # (runs, k)
    estimates: np.ndarray  # (runs, k)


def dp_se(
    bandit: MultiArmedBandit,
    horizon: int,
    rng: np.random.Generator,
    *,
    epsilon: float,
    beta: float = DEFAULT_BETA,
    decay: float = DEFAULT_DECAY,
    width_scale: float = 1.0,
    secure: bool = False,
    runs: int = 1,
    session: PrivacySession | None = None,
    record_epochs: bool = False,
    curve_points: int = 200,
) -> RunResult:
    """DP-SE (Sajed & Sheffet 2019), ``runs`` repetitions in lockstep (vectorised over runs and arms).

    ``bandit`` needs rewards in [0, 1] (Bernoulli or Beta arms: the sensitivity-1 claim needs them).
    ``secure=True`` draws integer-exact noise (:class:`~dpcert.bandits.algorithms.mab.CentralLaplaceSum`,
    "Secure noise"; its certificate then has a small δ for release times).  Users of run ``r`` have
    local ids ``r·T + i`` (``i`` the 0-based round); each epoch's release charges its users through
    ``session`` before its noise is drawn.  Module docstring: the algorithm and its
    privacy.
    """
    parameters = DPSEParameters(epsilon, beta, decay, width_scale)
    horizon, runs, rng, curve_points = checked_run_inputs(bandit, horizon, runs, rng, curve_points)
    summation = CentralLaplaceSum(parameters.epsilon, secure=secure, integer_sums=bool(bandit.binary))
    certificate = summation.certificate
    started = time.perf_counter()
    k = bandit.arms
    gaps = bandit.gaps
    arm_index = np.broadcast_to(np.arange(k), (runs, k))
    viable = np.ones((runs, k), dtype=bool)
    pulls = np.zeros((runs, k), dtype=np.int64)
    released_users = np.zeros(runs, dtype=np.int64)
    calls = np.zeros((runs, k), dtype=np.int64)
    used = np.zeros(runs, dtype=np.int64)
    regret = np.zeros(runs)
    done = np.zeros(runs, dtype=bool)
    best_lost = np.zeros(runs, dtype=bool)
    violated = np.zeros(runs, dtype=bool)
    times = [used.astype(float)]
    regrets = [regret.copy()]
    records: list[EpochRecord] = []
    epoch = 0
    while not np.all(done):
        epoch += 1
        live = ~done
        active_count = viable.sum(axis=1)
        sizes = batch_size(active_count, epoch, parameters)  # (runs,)
        width = confidence_width(active_count, epoch, sizes, parameters)
        active = viable & live[:, None]
        # arms are served in ascending order, R_e rounds each: arm a's block ends at used + R_e·#(active <= a)
        block_end = used[:, None] + np.cumsum(active * sizes[:, None], axis=1)
        block_start = block_end - sizes[:, None]
        epoch_pulls = np.where(active, np.clip(horizon - block_start, 0, sizes[:, None]), 0)
        # the epoch is released only when it ends before the horizon (then every active arm has R_e pulls)
        released = live & (used + active_count * sizes < horizon)
        release_mask = active & released[:, None]
        estimates = np.full((runs, k), np.nan)
        viable_before = viable.copy()
        if np.any(release_mask):
            counts = np.where(release_mask, sizes[:, None], 0)
            first_ids = np.arange(runs)[:, None] * horizon + block_start
            users = UserRanges(first_ids[release_mask], counts[release_mask]) if session is not None else None
            sums = bandit.reward_sums(arm_index, counts, rng)
            epoch_sums = Contributions.of_sums(sums[release_mask], counts[release_mask], users)
            noisy = summation.release(epoch_sums, rng, session=session).estimate  # charged before its noise
            estimates[release_mask] = noisy / np.broadcast_to(sizes[:, None], (runs, k))[release_mask]
            calls += release_mask
            released_users += counts.sum(axis=1)
            rows = released
            upper = np.where(viable[rows], estimates[rows] + width[rows, None], -np.inf)
            lower = np.where(viable[rows], estimates[rows] - width[rows, None], -np.inf)
            best_lower = lower.max(axis=1, keepdims=True)
            deviation = np.abs(estimates[rows] - bandit.means)
            violated[rows] |= np.any(viable[rows] & (deviation > width[rows, None]), axis=1)
            viable[rows] &= ~(upper < best_lower)  # strict removal, simultaneous
            best_lost |= ~viable[:, bandit.best_arm]
        pulls += epoch_pulls
        used += epoch_pulls.sum(axis=1)
        regret += fixed_order.matvec(epoch_pulls.astype(float), gaps)
        done |= used >= horizon
        # one arm left: the rest of the horizon is spent on it (its pseudo-regret, nothing released)
        spend_rest_on_last_arm(
            ~done & (viable.sum(axis=1) == 1), viable, horizon, used, pulls, regret, gaps, done
        )
        times.append(used.astype(float))
        regrets.append(regret.copy())
        if record_epochs:
            records.append(
                EpochRecord(
                    epoch, active_count, sizes, width, released, viable_before, viable.copy(), estimates
                )
            )

    checkpoints = np.linspace(0.0, horizon, curve_points)
    time_table = np.stack(times, axis=1)
    regret_table = np.stack(regrets, axis=1)
    curves = np.stack([np.interp(checkpoints, t, g) for t, g in zip(time_table, regret_table, strict=True)])
    return RunResult(
        algorithm=ALGORITHM,
        horizon=horizon,
        final_regret=regret,
        checkpoints=checkpoints,
        regret_curve=curves,
        pulls=pulls,
        users=released_users,
        summation_calls=calls,
        phases=epoch,
        best_arm_eliminated=best_lost,
        good_event_violated=violated,
        certificate=with_notes(certificate, RUN_NOTE),
        seconds=time.perf_counter() - started,
        parameters={
            "arms": k,
            "means": bandit.means.tolist(),
            "summation": summation.name,
            "epsilon": parameters.epsilon,
            "beta": parameters.beta,
            "decay": parameters.decay,
            "width_scale": parameters.width_scale,
            "secure": bool(secure),
            "citation": CITATION,
        },
        phase_records=tuple(records),
    )


def expected_failure_bound(beta: float) -> float:
    """The probability bound of the bad event (some active arm's μ̃ off by more than its width in some
    epoch) under which DP-SE may eliminate the best arm: ``Σ_e Σ_{a∈S} 2·β/(4|S|e²) <= β·π²/12 < β``
    (Hoeffding plus the Laplace tail, union over arms and epochs)."""
    beta = check.probability("beta", beta, open_low=True, open_high=True)
    return beta * math.pi**2 / 12.0
