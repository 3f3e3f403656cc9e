"""LDP-UCB and LDP-SE: bandits on locally privatized rewards (Ren, Zhou, Liu & Shroff 2020), local model.

Ren, Zhou, Liu & Shroff, "Multi-armed bandits with local differential privacy", arXiv:2007.03121 (2020).
Every user privatizes her own reward in [0, 1] before sending it, with one of two ε-LDP mechanisms:

* ``bernoulli`` (the paper's convert-to-Bernoulli response): she draws ``b ~ Bernoulli(r)`` and sends it
  through randomized response, keeping it w.p. ``e^ε/(1 + e^ε)``
  (:class:`~dpcert.bandits.algorithms.mab.LocalRandomizedResponse`); the server debiases it to
  ``y = (report − p)/(1 − 2p)``, ``E[y] = μ_a``, ``y`` in an interval of length ``D = coth(ε/2)``.
  The output law given ``r`` is a mixture of the laws given ``b = 0`` and ``b = 1``, so the report is
  ε-LDP for every change of ``r`` in [0, 1] (the randomized response's exact profile, Kairouz, Oh &
  Viswanath 2015, Thm 2.1).
* ``laplace``: she sends ``y = r + Lap(1/ε)`` (sensitivity 1 on [0, 1], :class:`LocalLaplace`).

Confidence radii (``n`` reports of an arm, failure ``ℓ``):  ``bernoulli``: ``D·sqrt(ℓ/(2n))`` (Hoeffding,
failure ``<= 2e^{−ℓ}``); ``laplace``: ``sqrt(ℓ/(2n)) + u/n`` with ``u`` =
:func:`~dpcert.bandits.algorithms.mab.laplace_sum_deviation` ``(1/ε, n, ℓ/4)`` (Hoeffding for the rewards
plus the sub-exponential tail of the noise, failure ``<= 4e^{−ℓ}``).

* **LDP-UCB** (the paper's LDP-UCB-B / LDP-UCB-L): after every arm once, round ``t + 1`` plays the first
  arm maximising ``ȳ_a + width_scale·radius(n_a, ℓ = 4 ln t)`` (for ``bernoulli`` this is UCB1, Auer,
  Cesa-Bianchi & Fischer 2002, on the debiased reports, scaled by their range ``D``).
* **LDP-SE** (the paper's LDP-SE): rounds pull every active arm once (ascending order); after round ``r``
  every arm with ``ȳ_a + w_r < max_{a'} (ȳ_{a'} − w_r)`` is removed, ``w_r = width_scale·radius(r,
  ℓ = ln(4k r²/β))``; once one arm is left the rest of the horizon is spent on it and nobody reports.

The widths are derived here from the tail bounds named above (the paper's constants were not checked
against code: its authors' repository is not available); ``width_scale`` scales them.

Privacy (ε-LDP per user, replace-one, local model).  A user sends one report, ε-LDP by the mechanism's
certificate; nothing else of hers leaves her device, and everything the server does is post-processing
of reports.  Each user's certificate is charged through the session, a block of users at a time, before
any of that block's rewards or noises are drawn; under LDP-SE users of a charged block who arrive after
the last elimination send nothing (charged, never drawn: the ledger may over-state, never under-state).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from dpcert import _validation as check
from dpcert.bandits.algorithms.mab import LocalRandomizedResponse, checked_run_inputs, laplace_sum_deviation
from dpcert.bandits.calibration.common import with_notes
from dpcert.bandits.environments.mab import MultiArmedBandit
from dpcert.bandits.privatizers import Contributions
from dpcert.bandits.results import RunResult
from dpcert.certificates import Certificate
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.laplace import calibrate_laplace
from dpcert.profiles import TrustModel
from dpcert.session import PrivacySession

CITATION = "Ren, Zhou, Liu & Shroff 2020 (arXiv:2007.03121), LDP-UCB / LDP-SE"
MECHANISMS = ("bernoulli", "laplace")
DEFAULT_BETA = 0.1
BLOCK = 4096  # users charged (then drawn) at a time
RUN_NOTE = (
    "whole run: each user sends one eps-LDP report of her reward (Ren, Zhou, Liu & Shroff 2020); the "
    "server's choices are post-processing of reports"
)


@dataclass(frozen=True)
class LocalLaplace:
    """Local model: each user sends ``r + Lap(1/ε)`` for her reward ``r`` in [0, 1] (sensitivity 1)."""

    epsilon: float
    certificate: Certificate = field(init=False)
    noise_scale: float = field(init=False)

    def __post_init__(self) -> None:
        epsilon = check.epsilon(self.epsilon)
        calibration = calibrate_laplace(epsilon, sensitivity=1.0, trust_model=TrustModel.LOCAL)
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "certificate", calibration.certificate)
        object.__setattr__(self, "noise_scale", calibration.scale)


@dataclass(frozen=True)
class LocalReports:
    """One of :data:`MECHANISMS` at ε: its certificate, its reports and its confidence radius."""

    mechanism: str
    epsilon: float
    response: LocalRandomizedResponse | None = field(init=False)
    laplace: LocalLaplace | None = field(init=False)
    certificate: Certificate = field(init=False)

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise InvalidParameter("mechanism", self.mechanism, "bernoulli or laplace")
        epsilon = check.epsilon(self.epsilon)
        bernoulli = self.mechanism == "bernoulli"
        response = LocalRandomizedResponse(epsilon) if bernoulli else None
        laplace = None if bernoulli else LocalLaplace(epsilon)
        if laplace is not None:
            certificate: Certificate | None = laplace.certificate
        else:
            assert response is not None
            certificate = response.certificate
        assert certificate is not None  # both mechanisms always carry one
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "response", response)
        object.__setattr__(self, "laplace", laplace)
        object.__setattr__(self, "certificate", certificate)

    def reports(self, bandit: MultiArmedBandit, arms: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The server's (debiased) value of one fresh report for every entry of ``arms``."""
        ones = np.ones(np.shape(arms), dtype=np.int64)
        if self.response is not None:
            bits = Contributions.of_sums(bandit.rounded_bit_sums(arms, ones, rng), ones)
            return self.response.release(bits, rng).estimate  # the users were charged by their block
        assert self.laplace is not None
        return bandit.reward_sums(arms, ones, rng) + rng.laplace(
            0.0, self.laplace.noise_scale, np.shape(arms)
        )

    def radius(self, reports: int, failure_log: float) -> float:
        """Half-width around the mean of ``reports`` reports, failing w.p. ``<= 4·e^{−failure_log}``."""
        hoeffding = math.sqrt(failure_log / (2.0 * reports))
        if self.response is not None:
            return self.response.debias_width * hoeffding
        assert self.laplace is not None
        return (
            hoeffding + laplace_sum_deviation(self.laplace.noise_scale, reports, failure_log / 4.0) / reports
        )


def _curve(checkpoints: np.ndarray, played: list[int], gaps: np.ndarray, tail: tuple[int, int]) -> np.ndarray:
    """Regret after ``checkpoints`` rounds for a run that played ``played`` then ``tail = (arm, rounds)``."""
    steps = np.concatenate((gaps[np.asarray(played, dtype=np.int64)], np.full(tail[1], gaps[tail[0]])))
    cumulative = np.concatenate(([0.0], np.cumsum(steps)))
    return np.interp(checkpoints, np.arange(cumulative.size, dtype=float), cumulative)


def _result(
    algorithm: str,
    bandit: MultiArmedBandit,
    horizon: int,
    curves: np.ndarray,
    checkpoints: np.ndarray,
    pulls: np.ndarray,
    users: np.ndarray,
    eliminated: np.ndarray,
    violated: np.ndarray,
    certificate: Certificate,
    started: float,
    parameters: dict[str, object],
) -> RunResult:
    return RunResult(
        algorithm=algorithm,
        horizon=horizon,
        final_regret=curves[:, -1].copy(),
        checkpoints=checkpoints,
        regret_curve=curves,
        pulls=pulls,
        users=users,
        best_arm_eliminated=eliminated,
        good_event_violated=violated,
        certificate=with_notes(certificate, RUN_NOTE),
        seconds=time.perf_counter() - started,
        parameters={"arms": bandit.arms, "means": bandit.means.tolist(), "citation": CITATION, **parameters},
    )


def ldp_ucb(
    bandit: MultiArmedBandit,
    horizon: int,
    rng: np.random.Generator,
    *,
    epsilon: float,
    mechanism: str = "bernoulli",
    width_scale: float = 1.0,
    runs: int = 1,
    session: PrivacySession | None = None,
    curve_points: int = 200,
) -> RunResult:
    """LDP-UCB (Ren, Zhou, Liu & Shroff 2020), ``runs`` repetitions; module docstring: the index and
    privacy.  Users of run ``r`` have local ids ``r·T + i``; every user reports, and is charged before
    her report is drawn (a block of :data:`BLOCK` users at a time).  Each user's report is drawn for
    every arm (one block at a time) and only the pulled arm's is sent."""
    local = LocalReports(mechanism, epsilon)
    width_scale = check.positive_finite("width_scale", width_scale)
    horizon, runs, rng, curve_points = checked_run_inputs(bandit, horizon, runs, rng, curve_points)
    certificate = local.certificate
    started = time.perf_counter()
    k = bandit.arms
    sums = np.zeros((runs, k))
    counts = np.zeros((runs, k), dtype=np.int64)
    played: list[list[int]] = [[] for _ in range(runs)]
    violated = np.zeros(runs, dtype=bool)
    arm_grid = np.broadcast_to(np.arange(k), (runs, BLOCK, k))
    for start in range(0, horizon, BLOCK):
        size = min(BLOCK, horizon - start)
        if session is not None:
            session.charge_ranges(np.arange(runs) * horizon + start, size, certificate)
        reports = local.reports(bandit, arm_grid[:, :size], rng)
        for r in range(runs):
            row_sums, row_counts = sums[r].tolist(), counts[r].tolist()
            for step, report in enumerate(reports[r].tolist()):
                t = start + step
                if t < k:
                    arm = t
                else:
                    failure_log = 4.0 * math.log(t)
                    arm, best = 0, -math.inf
                    for a in range(k):
                        n = row_counts[a]
                        value = row_sums[a] / n + width_scale * local.radius(n, failure_log)
                        if value > best:
                            arm, best = a, value
                row_sums[arm] += report[arm]
                row_counts[arm] += 1
                played[r].append(arm)
            sums[r], counts[r] = row_sums, row_counts
        if np.all(counts > 0):  # the good event at the block's end
            end_log = 4.0 * math.log(start + size)
            half = width_scale * np.array([[local.radius(int(n), end_log) for n in row] for row in counts])
            violated |= np.any(np.abs(sums / counts - bandit.means) > half, axis=1)
    checkpoints = np.linspace(0.0, horizon, curve_points)
    curves = np.stack([_curve(checkpoints, row, bandit.gaps, (0, 0)) for row in played])
    return _result(
        "ldp-ucb", bandit, horizon, curves, checkpoints, counts, np.full(runs, horizon, dtype=np.int64),
        np.zeros(runs, dtype=bool), violated, certificate, started,
        {"epsilon": local.epsilon, "mechanism": mechanism, "width_scale": width_scale},
    )  # fmt: skip


def ldp_se(
    bandit: MultiArmedBandit,
    horizon: int,
    rng: np.random.Generator,
    *,
    epsilon: float,
    mechanism: str = "bernoulli",
    beta: float = DEFAULT_BETA,
    width_scale: float = 1.0,
    runs: int = 1,
    session: PrivacySession | None = None,
    curve_points: int = 200,
) -> RunResult:
    """LDP-SE (Ren, Zhou, Liu & Shroff 2020), ``runs`` repetitions; module docstring: the rule and privacy.
    Users of run ``r`` have local ids ``r·T + i``; users are charged a block of :data:`BLOCK` at a time
    before their reports are drawn, until one arm is left."""
    local = LocalReports(mechanism, epsilon)
    beta = check.probability("beta", beta, open_low=True, open_high=True)
    width_scale = check.positive_finite("width_scale", width_scale)
    horizon, runs, rng, curve_points = checked_run_inputs(bandit, horizon, runs, rng, curve_points)
    certificate = local.certificate
    started = time.perf_counter()
    k = bandit.arms
    checkpoints = np.linspace(0.0, horizon, curve_points)
    curves = np.zeros((runs, curve_points))
    pulls = np.zeros((runs, k), dtype=np.int64)
    users = np.zeros(runs, dtype=np.int64)
    eliminated = np.zeros(runs, dtype=bool)
    violated = np.zeros(runs, dtype=bool)
    all_arms = np.arange(k)
    for r in range(runs):  # runs one after the other: their rounds differ in length
        active = list(range(k))
        sums = [0.0] * k
        played: list[int] = []
        used, charged, first, rounds = 0, 0, 0, 0
        reports: list[list[float]] = []
        while used < horizon and len(active) > 1:
            for arm in active:  # one round: every active arm once, ascending
                if used == horizon:
                    break
                if used == charged:  # charge the next block, then draw its users' reports
                    size = min(BLOCK, horizon - charged)
                    if session is not None:
                        session.charge_ranges(np.array([r * horizon + charged]), size, certificate)
                    reports = local.reports(bandit, np.broadcast_to(all_arms, (size, k)), rng).tolist()
                    first, charged = charged, charged + size
                sums[arm] += reports[used - first][arm]
                played.append(arm)
                used += 1
            else:
                rounds += 1
                width = width_scale * local.radius(rounds, math.log(4.0 * k * rounds * rounds / beta))
                means = {a: sums[a] / rounds for a in active}
                violated[r] |= any(abs(means[a] - bandit.means[a]) > width for a in active)
                best_lower = max(means[a] - width for a in active)
                active = [a for a in active if not means[a] + width < best_lower]  # strict removal
        tail = (active[0], horizon - used) if len(active) == 1 else (0, 0)
        curves[r] = _curve(checkpoints, played, bandit.gaps, tail)
        pulls[r] = np.bincount(np.asarray(played, dtype=np.int64), minlength=k)
        pulls[r, tail[0]] += tail[1]
        users[r] = used
        eliminated[r] = bandit.best_arm not in active
    return _result(
        "ldp-se", bandit, horizon, curves, checkpoints, pulls, users, eliminated, violated, certificate,
        started, {"epsilon": local.epsilon, "mechanism": mechanism, "beta": beta, "width_scale": width_scale},
    )  # fmt: skip
