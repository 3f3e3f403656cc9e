"""Robust, locally private batched arm elimination for linear bandits
(Charisopoulos, Esfandiari & Mirrokni 2023).

The paper is Charisopoulos, Esfandiari & Mirrokni 2023, "Robust and differentially private stochastic linear
bandits" (arXiv 2304.11741; docs/REFERENCES.md); dpcert's completions are docs/PAPER_NOTES.md,
PN-CEM-1 to PN-CEM-8.

The learner plays ``B`` batches of geometrically growing size ``q^i`` (``q = T^{1/B}``, ``B = ⌈ln T⌉``);
each batch is a coreset of a near-G-optimal design on the surviving arms (Def. 1.5–1.6).  Rewards reach
the server only through client-side Laplace reports (two client models):

* **M1** (the paper's eq. 15): every reward comes from a different client, who reports
  ``clip(r, −c_r, c_r) + Lap(2c_r/ε)``: pure ε-LDP for one reward.
* **M2** (the paper's eq. 20, Lemma 3.5): one client per support action averages its ``n_a`` clipped rewards
  and reports ``mean + Lap(2c_r/(n_a ε))``: ε-DP for any one reward (event level).  A client reporting in
  several batches composes to ``(#batches reported)·ε`` at client level (docs/PAPER_NOTES.md, PN-CEM-5; not
  claimed by the paper); the result states that number.

With ``secure=True`` (:class:`LaplaceClients`, ``--secure`` in the CLI) each client's clipped reward (M1) or
clipped sum (M2, divided by ``n_a`` after the release) goes through the grid-rounded secure Laplace of
:mod:`dpcert.mechanisms.secure.noise` (integer-exact discrete Laplace, certificate with
``"sampler": "integer-exact"`` and the grid); Ȳ and the widths use that noise's scale and rounding.

**Clipping is mandatory** (docs/PAPER_NOTES.md, PN-CEM-1): the paper's rewards are sub-Gaussian, hence
unbounded, and Laplace(2/ε) on an unclipped reward is not ε-DP.  With the default rewards
``2·Bernoulli((1+⟨a,θ*⟩)/2) − 1`` (mean ⟨a,θ*⟩, in {−1, 1}) clipping at ``c_r = 1`` is exact.

An adversary then replaces each received value independently with probability α (the paper's eq. 3; by default
after privatization, the stronger reading, PN-CEM-6), with ``random`` (±magnitude), ``targeted`` (−magnitude
on the best arm's rows, +magnitude elsewhere) or ``sign-flip`` (−magnitude × the value) strategies, or any
adversary with the same ``corrupt`` call, such as the in-range adversaries of
:mod:`dpcert.bandits.algorithms.corruption`.  θ is estimated by
:func:`dpcert.bandits.algorithms.spectral_filter.robust_estimate`: the spectral-filter robust least squares
with a clean-side variance proxy (never the corrupted sample as printed in eq. 13), clipping only, or plain
least squares, and arms more than ``2γ_i`` below the best are eliminated (Alg. 1 line 10), with the widths
``γ_i`` reconstructed from the regret proofs (docs/PAPER_NOTES.md, PN-CEM-4) scaled by a documented
``width_scale``.

The near-G-optimal design (Def. 1.6: ``max_a ‖a‖²_{M(π)^{-1}} <= 2·rank`` with a small support) is
:func:`dpcert.bandits.design.near_g_optimal_design`, computed in the span of the active arms.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert._numerics import ratio_rounded_up
from dpcert.bandits.algorithms.corruption import InRangeAdversary, clean_value_bound, corruption_fraction
from dpcert.bandits.algorithms.spectral_filter import robust_estimate
from dpcert.bandits.calibration.common import with_notes
from dpcert.bandits.design import near_g_optimal_design
from dpcert.bandits.privatizers import Contributions, Release, UserRanges
from dpcert.bandits.results import RunResult
from dpcert.certificates import Certificate, TrustModel
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.laplace import laplace_certificate
from dpcert.mechanisms.secure.noise import SecureLaplaceMechanism, secure_laplace
from dpcert.session import ChargeSink, PrivacySession

CLIENT_MODELS = ("M1", "M2")
STRATEGIES = ("random", "constant", "targeted", "sign-flip")
ESTIMATORS = ("filter", "clip-only", "least-squares")
ESTIMATOR_ALIASES = {"robust": "filter"}  # the earlier name of the filter estimator
VARIANCE_SOURCES = ("arm-moment", "trimmed", "bound")
REWARD_MODELS = ("signed-bernoulli", "gaussian")

SEED003_SETTING = {"arms": 50, "dimension": 5, "failure_probability": 0.05, "width_scale": 0.05}
"""The experiment setting of docs/PAPER_NOTES.md, PN-CEM-7: d, K, the failure probability δ' and the width
scale c_γ."""


# =========================================================================== instance
@dataclass(frozen=True)
class LinearArms:
    """A finite-arm linear bandit: arms (K, d) with ‖a‖ <= 1 and θ* with ‖θ*‖ <= 1 (the paper's §1.1).

    ``reward_model``: ``"signed-bernoulli"`` gives ``2·Bernoulli((1+⟨a,θ*⟩)/2) − 1`` (bounded, 1-sub-Gaussian,
    the PN-CEM-7 default); ``"gaussian"`` gives ``⟨a,θ*⟩ + N(0, 1)`` (unbounded: clipping biases it).
    """

    arms: np.ndarray
    theta: np.ndarray
    reward_model: str = "signed-bernoulli"
    means: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        arms = check.finite_array("arms", self.arms)
        theta = check.finite_array("theta", self.theta)
        if arms.ndim != 2 or arms.shape[0] < 2 or theta.shape != (arms.shape[1],):
            raise InvalidParameter("arms", arms.shape, "shape (K, d) with K >= 2 and theta of shape (d,)")
        if np.any(np.linalg.norm(arms, axis=1) > 1.0 + 1e-9) or fixed_order.norm(theta) > 1.0 + 1e-9:
            raise InvalidParameter("arms", "<norms>", "every ‖a‖ <= 1 and ‖theta‖ <= 1 (the paper's §1.1)")
        if self.reward_model not in REWARD_MODELS:
            raise InvalidParameter("reward_model", self.reward_model, "one of " + ", ".join(REWARD_MODELS))
        object.__setattr__(self, "arms", arms)
        object.__setattr__(self, "theta", theta)
        object.__setattr__(self, "means", fixed_order.matvec(arms, theta))

    @classmethod
    def random_sphere(
        cls, arms: int, dimension: int, rng: np.random.Generator, reward_model: str = "signed-bernoulli"
    ) -> LinearArms:
        """Arms and θ* i.i.d. uniform on the unit sphere (PN-CEM-7 defaults)."""
        points = rng.standard_normal((arms + 1, dimension))
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        return cls(points[:arms], points[arms], reward_model)

    @property
    def best_arm(self) -> int:
        return int(np.argmax(self.means))

    @property
    def gaps(self) -> np.ndarray:
        return self.means.max() - self.means

    def rewards(self, arm_indices: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One reward per entry of ``arm_indices``."""
        mean = self.means[arm_indices]
        if self.reward_model == "signed-bernoulli":
            return 2.0 * rng.binomial(1, (1.0 + mean) / 2.0) - 1.0
        return mean + rng.standard_normal(mean.shape)


# =========================================================================== widths
def elimination_width(
    model: str,
    *,
    dimension: int,
    phase_size: float,
    delta: float,
    alpha: float,
    epsilon: float | None,
    support: int = 1,
    truncation: float = 1.0,
) -> float:
    """γ_i of the paper's Alg. 1 line 9, as reconstructed in docs/PAPER_NOTES.md, PN-CEM-4 (the printed line
    is garbled).

    M1: ``sqrt(d L/q^i)(1 + sqrt(L)/ε) + √d(√α + α√d)(sqrt(L_i) + L_i/ε) + α``;
    M2: ``sqrt(d L/(ν q^i))(1 + sqrt(L)/(ε sqrt(ν q^i))) + 2d(1 + sqrt(L_k/(ν q^i)) + L_k/(ε ν q^i))
    (sqrt(kα) + sqrt(αL)) + α``, with ``L = log 1/δ``, ``L_i = log(q^i/δ)``, ``L_k = log(k/δ)``, ``k`` the
    support size, ``ν`` the truncation and ``1/ε = 0`` when ``epsilon`` is ``None`` (non-private).
    ``alpha`` here is the caller's α_eff (PN-CEM-4: ``max(α, log(1/δ)/n)`` when the filter is used).
    """
    inverse_epsilon = 0.0 if epsilon is None else 1.0 / epsilon
    big_l = math.log(1.0 / delta)
    if model == "M1":
        l_i = math.log(phase_size / delta)
        return (
            math.sqrt(dimension * big_l / phase_size) * (1.0 + math.sqrt(big_l) * inverse_epsilon)
            + math.sqrt(dimension)
            * (math.sqrt(alpha) + alpha * math.sqrt(dimension))
            * (math.sqrt(l_i) + l_i * inverse_epsilon)
            + alpha
        )
    scaled = truncation * phase_size
    l_k = math.log(support / delta)
    return (
        math.sqrt(dimension * big_l / scaled) * (1.0 + math.sqrt(big_l) * inverse_epsilon / math.sqrt(scaled))
        + 2.0
        * dimension
        * (1.0 + math.sqrt(l_k / scaled) + l_k * inverse_epsilon / scaled)
        * (math.sqrt(support * alpha) + math.sqrt(alpha * big_l))
        + alpha
    )


# =========================================================================== clients and adversary
@dataclass(frozen=True)
class LaplaceClients:
    """Client-side Laplace privatization (the paper's eqs. 15 and 20), clipping at ``clip`` (c_r) first.

    ``epsilon=None`` means no privacy (reports are the clipped rewards / means).

    Secure noise (``secure=True``)
        Float Laplace noise leaks through its low-order bits (Mironov 2012).  With ``secure=True`` each
        client releases its clipped reward (M1) or the sum of its ``n_a`` clipped rewards (M2) through
        :func:`dpcert.mechanisms.secure.noise.secure_laplace` at ℓ1 sensitivity 2c_r: the value is
        rounded to the grid g ℤ (g = 2^(⌊log2 2c_r⌋ − 20)), integer discrete Laplace noise DLap(a) is
        added by the integer-exact sampler (Canonne, Kamath & Steinke 2020, Alg. 2) with bits from the
        run's seeded Generator (reproducible, not cryptographic), and the release is an exact multiple
        of g.  The certificate is that mechanism's: ε = a·(⌊2c_r/g⌋ + 1) <= ε (the rounding costs one
        grid step of sensitivity).  An M2 client's report is its released sum divided by ``n_a``
        (post-processing), so one certificate serves every client whatever its reward count, and the
        report's noise scale is ``b/n_a`` with ``b = g/a`` (:meth:`scale`).

        Confidence widths: the discrete Laplace's moment generating function is at most that of
        Laplace(1/a) (:class:`dpcert.bandits.algorithms.mab.CentralLaplaceSum`, "Secure noise"), its
        variance ``2e^{−a}/(1 − e^{−a})² = 1/(2 sinh²(a/2))`` (grid units) is at most the Laplace's
        ``2/a²``, and its tail ``P(|Z| > y) = 2q^{⌊y⌋+1}/(1 + q) <= (2/(1 + q))·q^y`` (q = e^{−a}) is at
        most 2/(1 + q) times the Laplace's.  The widths and Ȳ therefore use the continuous scale ``b``
        (:attr:`noise_epsilon` = 2c_r/b, slightly below ε); Ȳ's union bound, δ/2 for Laplace noise,
        becomes δ/(1 + q) <= δ, still the δ it states.  The rounding error, at most ``g/(2 n_a)`` per report
        (:meth:`rounding_error`), enters Ȳ through :meth:`report_clip` and the widths through
        :func:`rounding_bias`.
    """

    model: str = "M1"
    epsilon: float | None = 1.0
    clip: float = 1.0
    secure: bool = False
    mechanism: SecureLaplaceMechanism | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.model not in CLIENT_MODELS:
            raise InvalidParameter("model", self.model, "one of " + ", ".join(CLIENT_MODELS))
        if self.epsilon is not None:
            object.__setattr__(self, "epsilon", check.epsilon(self.epsilon))
        object.__setattr__(self, "clip", check.positive_finite("clip", self.clip))
        if not isinstance(self.secure, (bool, np.bool_)):
            raise InvalidParameter("secure", self.secure, "true or false")
        if self.secure and self.epsilon is None:
            raise InvalidParameter("secure", True, "false without privacy (epsilon=None: no noise)")
        mechanism = None
        if self.secure:
            mechanism = secure_laplace(
                self.epsilon, sensitivity=2.0 * self.clip, bits="rng", trust_model=TrustModel.LOCAL
            )
        object.__setattr__(self, "mechanism", mechanism)

    def scale(self, reward_count: int = 1) -> float:
        """Laplace scale: ``2c_r/ε`` (M1) or ``2c_r/(n_a ε)`` (M2, report of a mean of ``n_a`` rewards);
        secure: ``b/n_a`` with ``b = g/a`` of the secure mechanism."""
        if self.epsilon is None:
            return 0.0
        if self.mechanism is not None:
            return self.mechanism.scale / reward_count
        # the least float b >= (2c_r/n_a)/ε exactly, so that the certificate's ε is at most ε
        return ratio_rounded_up(2.0 * self.clip / reward_count, self.epsilon)

    @property
    def noise_epsilon(self) -> float | None:
        """The ε of float Laplace noise as large as the reports' noise: ``2c_r/(n_a·scale(n_a))``.

        ε itself for float noise; for secure noise ``2c_r/b``, a little below ε (the widths use it).
        """
        if self.epsilon is None:
            return None
        return 2.0 * self.clip / self.scale(1)

    def rounding_error(self, reward_count: Any = 1) -> Any:
        """The largest |report before noise − mean of the clipped rewards|: ``g/(2 n_a)`` secure, else 0."""
        if self.mechanism is None:
            return 0.0 * np.asarray(reward_count, dtype=float)
        return self.mechanism.grid.granularity / (2.0 * np.asarray(reward_count, dtype=float))

    def report_clip(self, reward_count: Any = 1) -> Any:
        """The largest |report before noise|: ``c_r``, or secure ``g·round(n_a c_r/g)/n_a`` (the grid
        rounding of the largest clipped sum, divided by ``n_a``; rounding is monotone)."""
        counts = np.asarray(reward_count, dtype=float)
        if self.mechanism is None:
            return self.clip + 0.0 * counts
        grid = self.mechanism.grid
        return grid.from_units(grid.to_units(counts * self.clip)) / counts

    def certificate(self, reward_count: int = 1) -> Certificate | None:
        """Certificate of one report: Laplace with ℓ1 sensitivity ``2c_r/n_a`` to one reward (local model);
        secure: the secure mechanism's (the clipped sum's, sensitivity 2c_r, whatever ``n_a``)."""
        if self.epsilon is None:
            return None
        if self.mechanism is not None:
            return self.mechanism.certificate
        return laplace_certificate(
            self.scale(reward_count), sensitivity=2.0 * self.clip / reward_count, trust_model=TrustModel.LOCAL
        )

    @property
    def name(self) -> str:
        return f"{self.model} Laplace clients"

    def release(
        self, contributions: Contributions, rng: np.random.Generator, *, session: ChargeSink | None = None
    ) -> Release:
        """The clients' reports: M1 one per row (:meth:`Contributions.of_rows`, each row its own group),
        M2 one per client of the mean of its rows (:meth:`Contributions.of_user_rows`); the clients
        are charged one report's certificate first (:meth:`certificate`, the same for every ``n_a``)."""
        rows = contributions.require_rows(self.name)
        if (self.model == "M2") != contributions.grouped_by_user or contributions.groups is None:
            shape = "of_user_rows (a client's rows)" if self.model == "M2" else "of_rows (a row per report)"
            raise InvalidParameter("contributions", "<contributions>", f"{self.model} reports from {shape}")
        certificate = self.certificate(1)
        contributions.charge(session, certificate)
        if self.model == "M1":
            reports = self.report_rewards(rows, rng)
            variance = np.full(reports.shape, 2.0 * self.scale() ** 2)
        else:
            counts = np.bincount(contributions.groups, minlength=contributions.sums.size)
            reports = self.report_means(rows, counts, rng)
            variance = 2.0 * np.array([self.scale(int(n)) for n in counts]) ** 2
        return Release(reports, variance, certificate, 1)

    def report_rewards(self, rewards: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """M1: one report per reward, ``clip(r) + Lap(2c_r/ε)`` (the paper's eq. 15 with clipping)."""
        clipped = np.clip(rewards, -self.clip, self.clip)
        if self.epsilon is None:
            return clipped
        if self.mechanism is not None:
            return self.mechanism.release_each(clipped, rng)
        return clipped + rng.laplace(0.0, self.scale(), size=clipped.shape)

    def report_means(self, rewards: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """M2: one report per client, ``mean(clip(r)) + Lap(scale(n_a))`` with ``scale(n_a)`` = 2c_r/(n_a ε)
        rounded up (the paper's eq. 20, Lemma 3.5);
        secure: the client's secure release of its clipped sum, divided by ``n_a``.

        ``rewards`` holds the clients' rewards consecutively, ``counts`` how many each client has.
        """
        clipped = np.clip(rewards, -self.clip, self.clip)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        sums = np.add.reduceat(clipped, starts)
        if self.mechanism is not None:
            return self.mechanism.release_each(sums, rng) / counts
        means = sums / counts
        if self.epsilon is None:
            return means
        distinct, where = np.unique(counts, return_inverse=True)
        scales = np.array([self.scale(int(count)) for count in distinct])[where]
        return means + rng.laplace(0.0, 1.0, size=means.shape) * scales


def rounding_bias(clients: LaplaceClients, counts: np.ndarray, rank: int, phase_size: float) -> float:
    """A bound on ``|⟨a, θ̂⟩ − ⟨a, θ̂_unrounded⟩|`` for every active arm a, from secure reports' rounding.

    Least squares on rows ``x_j`` moves ``⟨a, θ̂⟩`` by ``aᵀM⁺Σ_j x_j e_j`` when every value moves by
    ``|e_j| <= η``: at most ``η·sqrt(n)·‖a‖_{M⁺}`` (Cauchy–Schwarz, ``M = Σ_j x_j x_jᵀ``).  M1: ``n = Σ n_a``
    rows with ``n_a >= q^i π_a``, so ``M >= q^i M(π)`` and ``‖a‖² <= 2·rank/q^i`` (the near-G-optimal design,
    Def. 1.6); M2: one row per support action, ``M >= M(π)`` (weights <= 1), ``‖a‖² <= 2·rank``, and η is
    ``g/(2 min n_a)``.  Clipping (clip-only) is 1-Lipschitz, so the bound carries over; for the filter it
    is the bound of least squares on the received rows, and its size (about 2^-20 c_r√(2·rank)) is a
    factor ``a·sqrt(n)/(2√2)`` of the noise's own standard deviation in the same direction.  0 for float
    noise.
    """
    if clients.mechanism is None:
        return 0.0
    support = counts[counts > 0]
    if clients.model == "M1":
        return float(clients.rounding_error(1)) * math.sqrt(2.0 * rank * support.sum() / phase_size)
    return float(np.max(clients.rounding_error(support))) * math.sqrt(2.0 * rank * support.size)


@dataclass(frozen=True)
class Adversary:
    """Replaces each received value independently with probability α (the paper's eq. 3).

    Strategies: ``random`` (±magnitude with random sign), ``constant`` (+magnitude, PN-CEM-7, E2),
    ``targeted`` (−magnitude on rows of the best arm, +magnitude on every other row: pushes the learner to
    eliminate a*), ``sign-flip`` (−magnitude × value).
    """

    alpha: float = 0.0
    strategy: str = "random"
    magnitude: float = 1e6

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", corruption_fraction(self.alpha))
        if self.strategy not in STRATEGIES:
            raise InvalidParameter("strategy", self.strategy, "one of " + ", ".join(STRATEGIES))
        object.__setattr__(self, "magnitude", check.positive_finite("magnitude", self.magnitude))

    def corrupt(
        self, values: np.ndarray, arm_indices: np.ndarray, best_arm: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return (observed values, corruption mask)."""
        mask = rng.random(values.shape) < self.alpha
        if self.strategy == "random":
            replacement = self.magnitude * rng.choice(np.array([-1.0, 1.0]), size=values.shape)
        elif self.strategy == "constant":
            replacement = np.full(values.shape, self.magnitude)
        elif self.strategy == "targeted":
            replacement = np.where(arm_indices == best_arm, -self.magnitude, self.magnitude)
        else:
            replacement = -self.magnitude * values
        return np.where(mask, replacement, values), mask


# =========================================================================== the algorithm
@dataclass(frozen=True)
class PhaseLog:
    """One elimination phase of one run."""

    phase: int
    active_before: np.ndarray
    active_after: np.ndarray
    counts: np.ndarray  # pulls per arm (K,)
    width: float
    estimates: np.ndarray  # ⟨a, θ̂⟩ for every arm
    removed_points: int
    corrupted: int


def _value_bound(clients: LaplaceClients, counts: np.ndarray, delta: float) -> float:
    """Ȳ: a bound on every clean received |value| holding w.p. >= 1 − δ (docs/PAPER_NOTES.md, PN-CEM-2 (a)).

    A clipped report is at most ``report_clip + |noise|`` (``report_clip`` = c_r, or its grid rounding)
    and ``P(max of n |noise of scale b| > b·log(2n/δ)) <= δ/2`` for Laplace noise, ``<= δ/(1 + e^{−a}) <= δ``
    for the secure discrete Laplace, whose tail is at most ``2/(1 + e^{−a})`` times the Laplace's
    (:class:`LaplaceClients`).  M1 is
    :func:`~dpcert.bandits.algorithms.corruption.clean_value_bound`, the in-range adversaries' range.
    """
    if clients.epsilon is None:
        return clients.clip
    if clients.model == "M1":
        return clean_value_bound(float(clients.report_clip(1)), clients.scale(), int(counts.sum()), delta)
    support = counts[counts > 0]
    log_term = math.log(2.0 * support.size / delta)
    return float(np.max(clients.report_clip(support) + clients.scale(1) / support * log_term))


def robust_elimination(
    instance: LinearArms,
    horizon: int,
    rng: np.random.Generator,
    *,
    clients: LaplaceClients | None = None,
    adversary: Adversary | InRangeAdversary | None = None,
    estimator: str = "filter",
    variance: str | None = None,
    batches: int | None = None,
    failure_probability: float = 0.05,
    width_scale: float = 1.0,
    truncation: float | None = None,
    corrupt_before_privatization: bool = False,
    removals_per_step: int | None = None,
    runs: int = 1,
    keep_logs: bool = False,
    curve_points: int = 200,
    session: PrivacySession | None = None,
) -> RunResult:
    """Robust (private) batched arm elimination (the paper's Alg. 1), ``runs`` repetitions.

    Parameters
    ----------
    instance
        The linear bandit.
    horizon
        T, total pulls per run.
    clients
        Client model and privacy (default M1 at ε = 1, c_r = 1).
    adversary
        Corruption model (default none): an :class:`Adversary` or an
        :class:`~dpcert.bandits.algorithms.corruption.InRangeAdversary` (corruptions inside the clean range
        ``[−Ȳ, Ȳ]``, where clipping cannot help; M1 only, whose Ȳ it shares).
    estimator
        The phase estimate (:func:`~dpcert.bandits.algorithms.spectral_filter.robust_estimate`):
        ``"filter"`` (default;
        received values clipped to ±Ȳ, then the spectral filter, Alg. 2), ``"clip-only"`` (clipped to ±Ȳ,
        then plain least squares) or ``"least-squares"`` (plain least squares on the received values, no
        clipping).  All three use the same widths, so they differ only in the estimator.  ``"robust"`` is
        accepted as the earlier name of ``"filter"``.  In M2 with α = 0 the filter is replaced by plain
        least squares and the widths lose their corruption term (PN-CEM-8).  Ȳ is a bound on every clean
        received value holding w.p. >= 1 − δ (PN-CEM-2).  Clipping alone neutralises
        corruptions outside ±Ȳ (the ``random``/``targeted`` attacks of magnitude > Ȳ); only the filter acts
        on corruptions inside the range, and only on those above its stopping threshold (benchmarks/
        RESULTS.md, "Charisopoulos, Esfandiari & Mirrokni 2023: filter vs clipping
        under in-range attacks").
    variance
        Source of the filter's λ.  Default (None): chosen by client model, as that study found:
        ``"arm-moment"`` for M1 (the per-arm trimmed second moment, d times tighter than the pooled one,
        the proxy that keeps a* under in-range attacks at ε = 1), ``"trimmed"`` for M2 (one report per
        support arm, so a per-arm trim is void).  Explicitly: ``"arm-moment"`` (M1 only), ``"trimmed"``
        (the pooled Chernoff-trimmed estimate, PN-CEM-2 (b)) or ``"bound"`` (``λ = μ·Ȳ²``, option (a)).
        Never the untrimmed corrupted sample (PN-CEM-2).
    batches
        B (default ``⌈ln T⌉``, so ``q = T^{1/B} <= e``, the paper's Thm 3.4).
    failure_probability
        δ' of the whole run; the per-event δ is ``δ'/(K T²)`` (the paper's proof of Thm 3.4).
    width_scale
        c_γ multiplying γ_i (1 = theory widths; the theory widths eliminate nothing at moderate T, PN-CEM-4).
    truncation
        ν for M2 (default ``1/|supp π|``).
    corrupt_before_privatization
        Corrupt raw rewards instead of received reports (default False: the stronger adversary).
    removals_per_step
        Filter points removed per eigendecomposition (default ``max(1, n // 500)``, a documented speed-up
        over the paper's one point per step).
    session
        The run's :class:`~dpcert.session.PrivacySession`, charged before each batch's reports
        are drawn: M1 once per report (local ids ``run·T + i``, one user per reward), M2 once per client
        and batch (local ids ``run·k + a`` for the owner of support action a), so a client's spend over
        the batches composes.  Charges state the normalised Laplace mechanism (scale / sensitivity =
        1/ε): the same privacy profile for every report, whatever the client's reward count.
    """
    horizon = check.positive_int("horizon", horizon, minimum=10)
    runs = check.positive_int("runs", runs)
    rng = check.generator(rng)
    clients = LaplaceClients() if clients is None else clients
    adversary = Adversary() if adversary is None else adversary
    estimator = ESTIMATOR_ALIASES.get(estimator, estimator)
    if estimator not in ESTIMATORS:
        raise InvalidParameter("estimator", estimator, "one of " + ", ".join(ESTIMATORS))
    if variance is None:
        variance = "arm-moment" if clients.model == "M1" else "trimmed"
    if variance not in VARIANCE_SOURCES:
        raise InvalidParameter("variance", variance, "one of " + ", ".join(VARIANCE_SOURCES))
    if variance == "arm-moment" and clients.model == "M2":
        raise InvalidParameter(
            "variance",
            variance,
            "'trimmed' or 'bound' for client model M2 (one report per arm: no per-arm trim)",
        )
    if isinstance(adversary, InRangeAdversary) and clients.model != "M1":
        raise InvalidParameter(
            "adversary", adversary.strategy, "an in-range adversary with client model M1 only"
        )
    batches = math.ceil(math.log(horizon)) if batches is None else check.positive_int("batches", batches, 2)
    failure_probability = check.probability(
        "failure_probability", failure_probability, open_low=True, open_high=True
    )
    width_scale = check.positive_finite("width_scale", width_scale)
    if truncation is not None:
        truncation = check.probability("truncation", truncation, open_low=True)
    started = time.perf_counter()
    k, d = instance.arms.shape
    delta = failure_probability / (k * horizon**2)
    q = horizon ** (1.0 / batches)
    gaps = instance.gaps
    best = instance.best_arm

    finals, curves, used_batches, all_pulls, lost, violated, final_arms, logs = [], [], [], [], [], [], [], []
    max_client_reports = 0
    reporting_users: list[int] = []
    checkpoints = np.linspace(0.0, horizon, curve_points)
    for run in range(runs):
        active = np.ones(k, dtype=bool)
        pulls = np.zeros(k, dtype=np.int64)
        theta_hat = np.zeros(d)
        used, regret = 0, 0.0
        times, regrets = [0.0], [0.0]
        run_lost = run_violated = False
        run_logs: list[PhaseLog] = []
        client_reports = np.zeros(k, dtype=np.int64)
        batch_count = 0
        for phase in range(1, batches):
            active_index = np.flatnonzero(active)
            if active_index.size == 1:
                break
            design = near_g_optimal_design(instance.arms[active_index])
            support = active_index[design.support]
            weights = design.weights[design.support]
            size = q**phase
            if clients.model == "M1":
                counts = np.ceil(size * weights).astype(np.int64)
            else:
                nu = 1.0 / support.size if truncation is None else truncation
                counts = np.ceil(size * np.maximum(weights, nu)).astype(np.int64)
            if used + counts.sum() > horizon:
                break  # budget guard: go to the final phase
            batch_count += 1
            arm_rows = np.repeat(support, counts)
            rewards = instance.rewards(arm_rows, rng)
            if corrupt_before_privatization:
                rewards, mask = adversary.corrupt(rewards, arm_rows, best, rng)
            reporting = int(counts.sum())
            if clients.model == "M1":
                rows, received_index = instance.arms[arm_rows], arm_rows
                users: UserRanges | np.ndarray = UserRanges(
                    np.array([run * horizon + used]), np.asarray(reporting)
                )
                reports = Contributions.of_rows(rewards, np.arange(reporting), reporting, users)
            else:
                rows, received_index = instance.arms[support], support
                owners = np.repeat(np.arange(support.size), counts)
                reports = Contributions.of_user_rows(rewards, owners, support.size, run * k + support)
                client_reports[support] += 1
            # charged by the release before the reports are drawn
            values = clients.release(reports, rng, session=session).estimate
            if not corrupt_before_privatization:
                values, mask = adversary.corrupt(values, received_index, best, rng)
            pulls[support] += counts
            used += int(counts.sum())
            regret += float(fixed_order.dot(counts.astype(float), gaps[support]))
            times.append(float(used))
            regrets.append(regret)

            n_points = rows.shape[0]
            # α_eff = max(α, log(1/δ)/n) inside γ_i: the filter's own log(1/δ)/n error is otherwise not
            # covered when α is below it (PN-CEM-4).  M2 with α = 0 uses plain least squares and no
            # corruption term instead (PN-CEM-8: its k = |supp π| points are far fewer than log(1/δ), so the
            # filter's guarantee is void there).  The plain-LS comparison variant uses the same widths as
            # the robust variant, so the two differ only in the estimator.
            m2_clean = clients.model == "M2" and adversary.alpha == 0.0
            alpha_eff = 0.0 if m2_clean else max(adversary.alpha, math.log(1.0 / delta) / n_points)
            step = max(1, n_points // 500) if removals_per_step is None else removals_per_step
            fit = robust_estimate(
                rows,
                values,
                rng,
                estimator="least-squares" if (m2_clean and estimator == "filter") else estimator,
                alpha=min(adversary.alpha, 0.2499),
                value_bound=_value_bound(clients, counts, delta),
                variance=variance,
                failure_probability=delta,
                reference_arms=instance.arms[active_index],
                removals_per_step=step,
            )
            theta_hat, removed = fit.theta, fit.removed
            gamma = elimination_width(
                clients.model,
                dimension=design.rank,
                phase_size=size,
                delta=delta,
                alpha=alpha_eff,
                epsilon=clients.noise_epsilon,
                support=support.size,
                truncation=(1.0 / support.size if truncation is None else truncation),
            )
            bias = rounding_bias(clients, counts, design.rank, size)  # secure reports' grid rounding
            width = width_scale * gamma + bias
            estimates = fixed_order.matvec(instance.arms, theta_hat)
            error = np.abs(estimates - instance.means)[active]
            run_violated |= bool(np.any(error > gamma + bias))
            before = active.copy()
            top = np.max(estimates[active])
            active &= estimates >= top - 2.0 * width  # Alg. 1 line 10 (ties kept)
            run_lost |= not active[best]
            if keep_logs:
                run_logs.append(
                    PhaseLog(
                        phase,
                        before,
                        active.copy(),
                        np.bincount(arm_rows, minlength=k),
                        width,
                        estimates,
                        removed,
                        int(mask.sum()),
                    )
                )
        # final batch: the best surviving arm under the last estimate for the rest of the horizon
        survivors = np.flatnonzero(active)
        final_arm = int(survivors[np.argmax(fixed_order.matvec(instance.arms, theta_hat)[survivors])])
        remaining = horizon - used
        pulls[final_arm] += remaining
        regret += remaining * gaps[final_arm]
        times.append(float(horizon))
        regrets.append(regret)
        finals.append(regret)
        curves.append(np.interp(checkpoints, times, regrets))
        used_batches.append(batch_count + 1)
        all_pulls.append(pulls)
        lost.append(run_lost)
        violated.append(run_violated)
        final_arms.append(final_arm)
        logs.append(tuple(run_logs))
        max_client_reports = max(max_client_reports, int(client_reports.max()))
        reporting_users.append(int(np.count_nonzero(client_reports)) if clients.model == "M2" else used)

    certificate = clients.certificate(1)
    if certificate is not None:
        notes = [
            f"rewards clipped to [-{clients.clip:g}, {clients.clip:g}] before Laplace noise, so one reward "
            "moves a report by at most 2c_r (M1) or 2c_r/n_a (M2); the paper omits the clipping "
            "(docs/PAPER_NOTES.md, PN-CEM-1)",
            "event level (one reward): each reward enters exactly one report; adversarial corruption, "
            "filtering and elimination are post-processing of the reports",
        ]
        if clients.mechanism is not None:
            notes.append(
                f"integer-exact discrete Laplace on the grid {clients.mechanism.grid.granularity:g} "
                "(rounding accounted in the sensitivity); M2 clients release their clipped sum and divide "
                "by their reward count (post-processing)"
            )
        if clients.model == "M2" and clients.epsilon is not None:
            notes.append(
                f"client level (one action owner): composes over the batches it reports in, at most "
                f"{max_client_reports * clients.epsilon:g} in this run"
            )
        certificate = with_notes(certificate, *notes)
    client_level = None
    if clients.model == "M2" and clients.epsilon is not None:
        client_level = max_client_reports * clients.epsilon
    return RunResult(
        algorithm=f"robust-elimination-{clients.model.lower()}",
        horizon=horizon,
        final_regret=np.asarray(finals),
        checkpoints=checkpoints,
        regret_curve=np.stack(curves),
        batches=np.asarray(used_batches),
        pulls=np.stack(all_pulls),
        best_arm_eliminated=np.asarray(lost),
        good_event_violated=np.asarray(violated),
        final_arm=np.asarray(final_arms),
        users=np.asarray(reporting_users),
        certificate=certificate,
        client_level_epsilon=client_level,
        seconds=time.perf_counter() - started,
        parameters={
            "arms": k,
            "dimension": d,
            "batches": batches,
            "q": q,
            "delta_per_event": delta,
            "client_model": clients.model,
            "epsilon": clients.epsilon,
            "clip": clients.clip,
            "secure": clients.secure,
            "alpha": adversary.alpha,
            "strategy": ("in-range-" if isinstance(adversary, InRangeAdversary) else "") + adversary.strategy,
            "magnitude": adversary.magnitude,
            "estimator": estimator,
            "variance": variance,
            "width_scale": width_scale,
        },
        logs=tuple(logs) if keep_logs else (),
    )
