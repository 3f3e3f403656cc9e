"""Batched arm elimination for multi-armed bandits: SDP-AE and VB-SDP-AE (Tenenbaum et al. 2021), baselines.

Tenenbaum, Kaplan, Mansour & Stemmer, "Differentially Private Multi-Armed Bandits in the Shuffle Model",
NeurIPS 2021 (docs/REFERENCES.md); where the paper leaves a detail open dpcert's choice is recorded in
docs/PAPER_NOTES.md, PN-TKMS-1 to PN-TKMS-7.

One vectorised engine, :func:`batched_arm_elimination`, runs all algorithms: in phase ``t`` every arm of
the viable set ``V`` (ascending index) gets one batch of ``m_t`` fresh users, each batch's reward sum goes
through a :class:`BatchSummation` once, and after the phase every arm with ``UCB_a < max_{a'∈V} LCB_{a'}``
is removed (Tenenbaum et al. 2021, Alg. 1 lines 13–16, read as in docs/PAPER_NOTES.md, PN-TKMS-5: the
max is over ``V``, not the undefined ``S``; removal is strict and simultaneous).  The radius after ``t``
batches and ``n`` aggregated users is

    I = (u_t + sqrt(2·n·log T)) / n,

where ``sqrt(2 n log T)`` is Hoeffding's deviation of ``n`` rewards in [0, 1] at probability
``2·T^{-4}`` and ``u_t`` is the summation's own deviation at the same probability
(:meth:`BatchSummation.noise_deviation`).  For the shuffle binary sum (sub-Gaussian proxy ``σ² = N/4``
per batch) ``u_t = 2·sqrt(t)·σ·sqrt(2 log T)``, which is exactly the radius of Tenenbaum et al. 2021,
``I_a^t = (2√t σ/N_a + 1/√N_a)·√(2 log T)`` (Alg. 1 line 14, natural log, PN-TKMS-5).

Algorithms
----------
* :func:`sdp_ae` — SDP-AE, fixed batches ``m = ⌈σ²⌉`` (Tenenbaum et al. 2021, Alg. 1, Cor. 3.2, which
  prints ``⌈σ⌉``: only ``m >= σ²`` keeps the privacy term ``2σ/(m√t)`` of the radius within a constant
  of the sampling term ``1/√(mt)``).
* :func:`vb_sdp_ae` — VB-SDP-AE, batches ``2^t`` (Tenenbaum et al. 2021, Alg. 2, Thm 3.3).
* :func:`successive_elimination` — the non-private baseline (same code, exact sums).
* :func:`central_dp_se` — dpcert's own central-model ε-DP elimination (not an algorithm of the paper):
  the server adds Laplace(1/ε) to each batch sum (sensitivity 1 for rewards in [0, 1], each user in one
  batch), doubling batches.  ``secure=True`` replaces the float Laplace by integer-exact noise: discrete
  Laplace on the integer sums of Bernoulli rewards, the grid-rounded secure Laplace for other rewards in
  [0, 1] (:class:`CentralLaplaceSum`); the certificate records ``"sampler": "integer-exact"``.
* :func:`local_dp_se` — dpcert's own local-model ε-DP elimination (not an algorithm of the paper): each
  user sends her bit through binary randomized response, the server debiases; doubling batches
  (batching does not change the local guarantee).

Every algorithm runs with the horizon known (``horizon_mode="known"``, the paper's setting, footnote 10)
or unknown (``"unknown"``: the doubling trick of the same footnote, :func:`unknown_horizon_elimination`).

Privacy of a whole run (reconstructed; docs/PAPER_NOTES.md, PN-TKMS-4): every user is in exactly one
batch and contributes one reward to one summation; everything else is post-processing or independent of
the user's data, so the whole run is exactly as private as one summation: the run's certificate *is* the
summation's certificate, with no composition over batches, phases, arms or doubling epochs.

The shuffle binary summation ``M_sum`` (PN-TKMS-1) is simulated exactly at the level of its sufficient
statistic by :meth:`dpcert.mechanisms.shuffle.binary_sum.BinarySum.release_sums`: the analyzer's output is
``s + Binomial(N, 1/2) − N/2`` for a batch with ``s`` ones (PN-TKMS-2).  Its least ``N`` for a
target (ε, δ) and its certificate come from :func:`dpcert.mechanisms.shuffle.binary_sum.calibrate_binary_sum`.
"""

from __future__ import annotations

import functools
import math
import operator
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Protocol

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert.bandits.calibration.common import with_notes
from dpcert.bandits.environments.mab import MultiArmedBandit
from dpcert.bandits.privatizers import Contributions, Privatizer, Release, UserRanges
from dpcert.bandits.results import RunResult
from dpcert.certificates import Certificate, TrustModel, approximate_dp_certificate
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.discrete_laplace import DiscreteLaplaceMechanism, discrete_laplace_certificate
from dpcert.mechanisms.laplace import calibrate_laplace
from dpcert.mechanisms.secure.noise import Grid, SecureLaplaceMechanism, secure_laplace
from dpcert.mechanisms.secure.samplers import MAX_DRAWS_PER_CALL, sample_discrete_laplace, timing_failure
from dpcert.mechanisms.secure.timing import covering_release_time
from dpcert.mechanisms.shuffle.binary_sum import BinarySum, calibrate_binary_sum
from dpcert.session import ChargeSink, PrivacySession

SCHEDULES = ("fixed", "doubling")
RUN_NOTE = (
    "whole run: every user's reward enters exactly one batch summation and everything else is "
    "post-processing or independent of it, so the run is as private as one summation (no composition "
    "over batches, phases or arms; Tenenbaum et al. 2021, §2.2; docs/PAPER_NOTES.md, PN-TKMS-4)"
)


def checked_run_inputs(
    bandit: MultiArmedBandit, horizon: int, runs: int, rng: np.random.Generator, curve_points: int
) -> tuple[int, int, np.random.Generator, int]:
    """The validated ``horizon`` (>= 2), ``runs``, generator and ``curve_points`` (>= 2) of a K-armed
    engine whose privacy needs rewards in [0, 1]; a bandit of another kind or with unbounded rewards is
    refused naming ``bandit``."""
    horizon = check.positive_int("horizon", horizon, minimum=2)
    runs = check.positive_int("runs", runs)
    rng = check.generator(rng)
    curve_points = check.positive_int("curve_points", curve_points, minimum=2)
    if not isinstance(bandit, MultiArmedBandit):
        raise InvalidParameter("bandit", type(bandit).__name__, "a MultiArmedBandit")
    if not bandit.bounded:
        raise InvalidParameter("bandit", bandit.reward_model, "rewards in [0, 1] (bernoulli or beta)")
    return horizon, runs, rng, curve_points


def spend_rest_on_last_arm(
    single: np.ndarray,
    viable: np.ndarray,
    limit: int,
    used: np.ndarray,
    pulls: np.ndarray,
    regret: np.ndarray,
    gaps: np.ndarray,
    done: np.ndarray,
) -> None:
    """For the runs in ``single`` (one viable arm left), pull that arm until ``limit`` rounds are used:
    its pulls and pseudo-regret are added in place and the runs are marked done (nothing is released)."""
    if not np.any(single):
        return
    remaining = limit - used[single]
    last_arm = np.argmax(viable[single], axis=1)
    pulls[single, last_arm] += remaining
    regret[single] += remaining * gaps[last_arm]
    used[single] = limit
    done[single] = True


# =========================================================================== batch summations
class BatchSummation(Privatizer, Protocol):
    """How the server learns the reward sum of one batch: a :class:`~dpcert.bandits.privatizers.Privatizer`
    of batch sums with one certificate for every release and a tail bound for the confidence radius.

    ``release(Contributions.of_sums(sums, sizes, users), rng, session=...)`` charges the users, then
    returns an unbiased estimate of each entry of ``sums`` (the true sums of ``sizes`` rewards);
    ``noise_deviation(batches, users, log_horizon)`` is a ``u`` with
    ``P(|accumulated error of `batches` releases| >= u) <= 2·exp(−4·log_horizon)``.
    """

    @property
    def certificate(self) -> Certificate | None: ...

    def noise_deviation(self, batches: int, users: int, log_horizon: float) -> float: ...


@dataclass(frozen=True)
class ExactSum:
    """No privacy: the server sees the exact sum."""

    name: str = "exact"
    certificate: Certificate | None = None

    def release(
        self, contributions: Contributions, rng: np.random.Generator, *, session: ChargeSink | None = None
    ) -> Release:
        sums = contributions.sums
        return Release(sums, np.zeros(sums.shape), None, 1)

    def noise_deviation(self, batches: int, users: int, log_horizon: float) -> float:
        return 0.0


@dataclass(frozen=True)
class ShuffleBinarySum:
    """The shuffle-model binary summation ``M_sum`` of Tenenbaum et al. 2021 with ``N`` noise bits
    (reconstructed; docs/PAPER_NOTES.md, PN-TKMS-1).

    The output for a batch with ``s`` ones is ``s + B − N/2``, ``B ~ Binomial(N, 1/2)``: unbiased, error
    independent of the input and of the batch size, sub-Gaussian with proxy ``σ² = N/4`` (PN-TKMS-1;
    interface properties I2–I4 of Tenenbaum et al. 2021, §3).  ``certificate`` is the (ε, δ)-SDP
    certificate of the protocol with this ``N`` (``None`` only when ``N`` is given without one).
    """

    noise_bits: int
    certificate: Certificate | None = None
    name: str = "shuffle binary sum"
    needs_bits: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_bits", check.positive_int("noise_bits", self.noise_bits, minimum=0))

    @property
    def mechanism(self) -> BinarySum:
        """The protocol itself (:class:`dpcert.mechanisms.shuffle.binary_sum.BinarySum`)."""
        return BinarySum(self.noise_bits, self.certificate)

    @property
    def sigma(self) -> float:
        """Sub-Gaussian scale of one release's error, ``sqrt(N/4)`` (PN-TKMS-1)."""
        return self.mechanism.sigma

    def release(
        self, contributions: Contributions, rng: np.random.Generator, *, session: ChargeSink | None = None
    ) -> Release:
        contributions.charge(session, self.certificate)
        mechanism = self.mechanism
        estimate = mechanism.release_sums(contributions.sums, rng)
        # user i of a batch of m sends her bit and ⌊N/m⌋ or ⌈N/m⌉ noise bits; the batch m + N in all
        sizes = contributions.counts[contributions.counts > 0]
        most = 1 + -(-self.noise_bits // int(sizes.min())) if sizes.size else 0
        total = int(sizes.sum()) + self.noise_bits * sizes.size
        variance = np.full(estimate.shape, mechanism.sigma**2)
        return Release(estimate, variance, self.certificate, most, "bits", total)

    def noise_deviation(self, batches: int, users: int, log_horizon: float) -> float:
        # Σ of `batches` independent SG(N/4) errors is SG(batches·N/4); the deviation
        # 2·sqrt(t)·σ·sqrt(2 log T) has probability <= 2 exp(-4 log T) (Tenenbaum et al. 2021, Thm 3.1 proof).
        return 2.0 * math.sqrt(batches) * self.sigma * math.sqrt(2.0 * log_horizon)


def laplace_sum_deviation(scale: float, batches: int, log_horizon: float) -> float:
    """A ``u`` with ``P(|S| >= u) <= 2·exp(−4·log_horizon)`` for a sum S of ``batches`` independent noises
    whose moment generating function is at most Laplace(``scale``)'s, ``1/(1 − λ²b²)`` for ``|λ| < 1/b``.

    ``1/(1 − x) <= exp(2x)`` on [0, 1/2] gives ``E e^{λL} <= exp(2λ²b²)`` for ``|λ| <= 1/(√2 b)``, so the sum
    is sub-exponential (ν² = 4tb², α = √2 b) and ``P(|S| >= x) <= 2 exp(−min(x²/(8tb²), x/(2√2 b)))``
    (the sub-exponential tail bound); the exponent is at least ``4 log T`` at the ``u`` returned.
    """
    return max(scale * math.sqrt(32.0 * batches * log_horizon), 8.0 * math.sqrt(2.0) * scale * log_horizon)


@dataclass(frozen=True)
class CentralLaplaceSum:
    """Central model: the trusted server adds Laplace(1/ε) to each batch sum of rewards (sensitivity 1).

    Each user is in one batch, so by parallel composition the run is ε-DP (replace-one, central).

    Secure noise (``secure=True``)
        Float Laplace noise leaks through its low-order bits (Mironov 2012).  With ``secure=True`` the
        noise is drawn by the integer-exact sampler (Canonne, Kamath & Steinke 2020, Alg. 2;
        :mod:`dpcert.mechanisms.secure.samplers`) from the run's seeded Generator (reproducible, not a
        cryptographic source), and the certificate records ``"sampler": "integer-exact"`` and the
        release-time term of a batch release (one sampler call of at most ``MAX_DRAWS_PER_CALL`` draws;
        :mod:`dpcert.mechanisms.secure.timing`), so the run's target needs δ > 0:

        * ``integer_sums=True`` (Bernoulli rewards: the batch sums are integers): the server adds
          discrete Laplace noise DLap(a), mass ∝ e^{−a|z|}, with a the largest float <= ε.  Sensitivity
          1 on the integers, so the release is exactly a·1 <= ε-DP with no grid (the certificate is the
          discrete Laplace's exact one); a non-integer sum is refused.
        * ``integer_sums=False`` (rewards in [0, 1], e.g. Beta arms: the sums are real): each sum is
          rounded to the grid g ℤ with g = 2^-20 and released by
          :func:`dpcert.mechanisms.secure.noise.secure_laplace` at sensitivity 1, which accounts for the
          rounding (integer sensitivity ⌊1/g⌋ + 1 = 2^20 + 1 grid steps; certificate ε <= the target).
          Rounding to the grid (rather than refusing Beta rewards, or sending randomized-rounding bits)
          keeps the estimate's law that of the float mechanism up to a noise scale larger by at most
          2^-19 relative.

        Confidence radius: with q = e^{−a}, the discrete Laplace's moment generating function is
        ``M(λ) = (1 − q)²/((1 − qe^λ)(1 − qe^{−λ})) = 1/(1 − sinh²(λ/2)/sinh²(a/2))`` for ``|λ| < a``, and as
        sinh(x)/x increases in |x|, ``sinh(|λ|/2)/sinh(a/2) <= |λ|/a``, so ``M(λ) <= 1/(1 − λ²/a²)``: the
        moment generating function of Laplace(1/a).  :func:`laplace_sum_deviation` uses nothing else,
        so its deviation holds for the discrete noise with scale 1/a (g/a on the grid, where g·Z has
        M(gλ)); on the grid each rounded sum is off by at most g/2, which the deviation adds per batch.
    """

    epsilon: float
    name: str = "central Laplace sum"
    secure: bool = False
    integer_sums: bool = True
    certificate: Certificate = field(init=False)
    noise_scale: float = field(init=False)
    mechanism: SecureLaplaceMechanism | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        epsilon = check.epsilon(self.epsilon)
        for flag in ("secure", "integer_sums"):
            if not isinstance(getattr(self, flag), (bool, np.bool_)):
                raise InvalidParameter(flag, getattr(self, flag), "true or false")
        object.__setattr__(self, "epsilon", epsilon)
        mechanism = None
        if not self.secure:
            calibration = calibrate_laplace(epsilon, sensitivity=1.0, trust_model=TrustModel.CENTRAL)
            scale, certificate = calibration.scale, calibration.certificate
        elif self.integer_sums:
            noise_parameter = DiscreteLaplaceMechanism.for_epsilon(epsilon).noise_parameter
            scale = 1.0 / noise_parameter
            certificate = discrete_laplace_certificate(
                noise_parameter, sensitivity=1, trust_model=TrustModel.CENTRAL, sampler="integer-exact"
            )
        else:
            mechanism = secure_laplace(epsilon, sensitivity=1.0, bits="rng", trust_model=TrustModel.CENTRAL)
            scale, certificate = mechanism.scale, mechanism.certificate
        if self.secure:  # one sampler call per batch release, of at most MAX_DRAWS_PER_CALL draws
            failure = timing_failure(
                "discrete-laplace",
                1 / Fraction(certificate.parameters["noise_parameter"]),
                MAX_DRAWS_PER_CALL,
            )
            certificate = covering_release_time(certificate, failure)
        if self.secure and self.name == "central Laplace sum":
            object.__setattr__(self, "name", "central discrete Laplace sum")
        object.__setattr__(self, "certificate", certificate)
        object.__setattr__(self, "noise_scale", scale)
        object.__setattr__(self, "mechanism", mechanism)

    @property
    def grid(self) -> Grid | None:
        """The grid of the secure release of real sums (``None``: float noise, or integer sums)."""
        return None if self.mechanism is None else self.mechanism.grid

    @property
    def needs_integer_sums(self) -> bool:
        """True when the batch sums must be integers (secure noise without a grid)."""
        return bool(self.secure and self.integer_sums)

    @property
    def noise_parameter(self) -> float | None:
        """The discrete Laplace parameter a in grid units (``None`` for float noise)."""
        if not self.secure:
            return None
        return self.certificate.parameters["noise_parameter"]

    @property
    def rounding_error(self) -> float:
        """The largest |rounded sum − sum|: g/2 on the grid, 0 otherwise."""
        return 0.0 if self.grid is None else self.grid.granularity / 2.0

    def release(
        self, contributions: Contributions, rng: np.random.Generator, *, session: ChargeSink | None = None
    ) -> Release:
        sums = contributions.sums
        if self.needs_integer_sums and not np.all(sums == np.round(sums)):
            raise InvalidParameter(
                "sums", "<non-integer batch sum>", "integer batch sums (Bernoulli rewards)"
            )
        contributions.charge(session, self.certificate)
        variance = np.full(sums.shape, 2.0 * self.noise_scale**2)  # Laplace's; the discrete one's is less
        if not self.secure:
            estimate = sums + rng.laplace(0.0, self.noise_scale, size=sums.shape)
        elif self.mechanism is not None:
            estimate = self.mechanism.release_each(sums, rng)  # plus a rounding bias of at most g/2
        else:
            noise = sample_discrete_laplace(
                1 / Fraction(self.certificate.parameters["noise_parameter"]), sums.size, rng
            )
            estimate = sums + noise.reshape(sums.shape)
        return Release(estimate, variance, self.certificate, 1)

    def noise_deviation(self, batches: int, users: int, log_horizon: float) -> float:
        # The secure noise's MGF is at most Laplace(noise_scale)'s (class docstring); rounding adds g/2
        # per batch, deterministically.
        return laplace_sum_deviation(self.noise_scale, batches, log_horizon) + batches * self.rounding_error


@dataclass(frozen=True)
class LocalRandomizedResponse:
    """Local model: each user reports its bit through randomized response, flipped w.p. ``1/(1+e^ε)``.

    The server's debiased estimate of a batch sum is ``(Σ reports − m·p)/(1 − 2p)``.  Binary randomized
    response is exactly the canonical ε-DP pair, so the generic ``approximate-dp`` profile at δ = 0 is its
    exact profile (Kairouz, Oh & Viswanath 2015, Thm 2.1).

    The flips are drawn with numpy's binomial sampler, a floating-point comparison with ``1/(1+e^ε)``:
    the output is a bit, so no low-order bits leak, but the flip probability is the float's, not exactly
    ``1/(1+e^ε)`` (an irrational number).  There is no secure variant of this summation.
    """

    epsilon: float
    name: str = "local randomized response"
    certificate: Certificate | None = field(init=False)
    needs_bits: ClassVar[bool] = True

    def __post_init__(self) -> None:
        epsilon = check.epsilon(self.epsilon)
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(
            self,
            "certificate",
            approximate_dp_certificate(
                epsilon,
                0.0,
                mechanism_name="binary randomized response",
                trust_model=TrustModel.LOCAL,
                basis="Warner 1965 randomized response; exact profile = canonical (epsilon, 0) pair "
                "(Kairouz, Oh & Viswanath 2015, Thm 2.1)",
            ),
        )

    @property
    def flip_probability(self) -> float:
        return 1.0 / (1.0 + math.exp(self.epsilon))

    @property
    def debias_width(self) -> float:
        """``1/(1 − 2p) = (e^ε + 1)/(e^ε − 1)``: the range of one user's debiased report."""
        return 1.0 / math.tanh(self.epsilon / 2.0)

    def release(
        self, contributions: Contributions, rng: np.random.Generator, *, session: ChargeSink | None = None
    ) -> Release:
        """Each of the ``counts`` users of a batch with ``sums`` ones reports her bit, flipped w.p. p."""
        ones = contributions.sums.astype(np.int64)
        batch = contributions.counts
        contributions.charge(session, self.certificate)
        p = self.flip_probability
        reported = rng.binomial(ones, 1.0 - p) + rng.binomial(batch - ones, p)
        estimate = (reported - batch * p) / (1.0 - 2.0 * p)
        variance = batch * p * (1.0 - p) / (1.0 - 2.0 * p) ** 2
        return Release(estimate, variance, self.certificate, 1, "bits")

    def noise_deviation(self, batches: int, users: int, log_horizon: float) -> float:
        # Conditional on the bits, each debiased report minus its bit is centred with range 1/(1−2p):
        # SG(width²/4) per user (Hoeffding), so the sum over n users deviates by width·sqrt(2 n log T)
        # with probability <= 2 exp(−4 log T).
        return self.debias_width * math.sqrt(2.0 * users * log_horizon)


def shuffle_binary_sum(epsilon: float, delta: float) -> ShuffleBinarySum:
    """The least-noise ``M_sum`` that is (ε, δ)-SDP: ``N = min{N : δ_N(ε) <= δ}`` (PN-TKMS-3), with its
    certificate (exact privacy curve, PN-TKMS-2)."""
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    calibration = calibrate_binary_sum(epsilon, delta)
    return ShuffleBinarySum(int(calibration.noise_bits), calibration.certificate)


# =========================================================================== schedule and radius
@dataclass(frozen=True)
class BatchSchedule:
    """Users per arm per phase: ``fixed`` (``m`` every phase, SDP-AE) or ``doubling`` (``2^t``, VB-SDP-AE)."""

    kind: str = "fixed"
    size: int = 1

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULES:
            raise InvalidParameter("schedule", self.kind, "one of " + ", ".join(SCHEDULES))
        object.__setattr__(self, "size", check.positive_int("batch_size", self.size))

    def batch_size(self, phase: int) -> int:
        return self.size if self.kind == "fixed" else 2**phase

    def users_after(self, phase: int) -> int:
        """Users aggregated per viable arm after ``phase`` phases: ``m·t`` or ``2^{t+1} − 2``."""
        return self.size * phase if self.kind == "fixed" else 2 ** (phase + 1) - 2


def confidence_radius(summation: BatchSummation, batches: int, users: int, horizon: int) -> float:
    """``I = (u_t + sqrt(2 n log T))/n`` (Tenenbaum et al. 2021, Alg. 1 line 14 / Alg. 2 line 15)."""
    log_horizon = math.log(horizon)
    deviation = summation.noise_deviation(batches, users, log_horizon)
    return (deviation + math.sqrt(2.0 * users * log_horizon)) / users


# =========================================================================== engine
@dataclass(frozen=True)
class PhaseRecord:
    """What happened in one phase (recorded on request, for tests and diagnostics)."""

    phase: int
    batch_size: int
    radius: float
    viable_before: np.ndarray  # (runs, k) bool
    viable_after: np.ndarray  # (runs, k) bool
    pulls: np.ndarray  # (runs, k) pulls made this phase (partial batches included)
    aggregated: np.ndarray  # (runs, k) users whose batch went through the summation this phase
    estimates: np.ndarray  # (runs, k) μ̂ after the phase (NaN for arms not viable)


def batched_arm_elimination(
    bandit: MultiArmedBandit,
    horizon: int,
    summation: BatchSummation,
    schedule: BatchSchedule,
    rng: np.random.Generator,
    *,
    runs: int = 1,
    algorithm: str = "batched arm elimination",
    session: PrivacySession | None = None,
    record_phases: bool = False,
    curve_points: int = 200,
    users: int | None = None,
    id_offset: int = 0,
    id_stride: int | None = None,
) -> RunResult:
    """Batched arm elimination (Tenenbaum et al. 2021, Alg. 1/2 skeleton), ``runs`` repetitions in lockstep.

    Parameters
    ----------
    bandit
        The environment.  Private summations need rewards in [0, 1] (Bernoulli or Beta arms); the
        summations of bits (shuffle, randomized response) receive each user's randomized-rounding bit
        (:meth:`~dpcert.bandits.environments.mab.MultiArmedBandit.rounded_bit_sums`; Tenenbaum et al.
        2021, footnote 12, extend their algorithms to [0, 1] rewards through a real-valued summation).
    horizon
        T, the horizon the algorithm knows in advance (Tenenbaum et al. 2021, footnote 10); it sets
        the confidence radius.
    summation
        How each batch's reward sum reaches the server (see :class:`BatchSummation`).
    schedule
        Batch sizes per phase.
    rng
        Source of all randomness (rewards and noise).
    runs
        Independent repetitions, simulated together (vectorised over runs and arms).
    session
        The run's :class:`~dpcert.session.PrivacySession`; each aggregated batch's users are
        charged through it by the summation's release, with its certificate, before the noise is
        drawn.  Local user ids are ``run·T + i`` with ``i`` the user's 0-based arrival index in that run.
    record_phases
        Keep a :class:`PhaseRecord` per phase (memory grows with the number of phases).
    curve_points
        Number of evenly spaced checkpoints of the stored regret curves.
    users
        Users that actually arrive (``<= horizon``; default ``horizon``): the run stops after them.
        :func:`unknown_horizon_elimination` runs epochs whose last one is cut short this way.
    id_offset, id_stride
        Local user ids are ``run·id_stride + id_offset + i`` (defaults ``T`` and 0), so that the
        epochs of one run charge disjoint ids in one session.

    Notes
    -----
    A run stops as soon as its T-th user has pulled: the batch in progress is never aggregated
    (Tenenbaum et al. 2021, Alg. 1 lines 6–8; PN-TKMS-5).  Once a single arm is viable the rest of the
    horizon is spent on it (a short cut that does not change the pseudo-regret).
    """
    horizon = check.positive_int("horizon", horizon, minimum=2)
    runs = check.positive_int("runs", runs)
    rng = check.generator(rng)
    curve_points = check.positive_int("curve_points", curve_points, minimum=2)
    limit = horizon if users is None else check.positive_int("users", users)
    if limit > horizon:
        raise InvalidParameter("users", limit, f"at most the horizon {horizon}")
    id_offset = check.positive_int("id_offset", id_offset, minimum=0)
    id_stride = horizon if id_stride is None else check.positive_int("id_stride", id_stride)
    if id_offset + limit > id_stride:
        raise InvalidParameter("id_stride", id_stride, f"at least id_offset + users = {id_offset + limit}")
    # environments without ``bounded`` (e.g. the audits' fixed user tables) are bounded iff binary
    bounded = bool(getattr(bandit, "bounded", bandit.binary))
    if not bounded and not isinstance(summation, ExactSum):
        raise InvalidParameter(
            "bandit",
            getattr(bandit, "reward_model", type(bandit).__name__),
            f"rewards in [0, 1] (bernoulli or beta) for the {summation.name} (its privacy needs them)",
        )
    if getattr(summation, "needs_integer_sums", False) and not bandit.binary:
        raise InvalidParameter(
            "bandit",
            getattr(bandit, "reward_model", type(bandit).__name__),
            f"Bernoulli rewards (integer batch sums) for the {summation.name} without a grid "
            "(build it with integer_sums=False for rewards in [0, 1])",
        )
    needs_bits = getattr(summation, "needs_bits", False) and not bandit.binary
    draw_sums = bandit.rounded_bit_sums if needs_bits else bandit.reward_sums
    started = time.perf_counter()
    k = bandit.arms
    gaps = bandit.gaps
    arm_index = np.broadcast_to(np.arange(k), (runs, k))
    viable = np.ones((runs, k), dtype=bool)
    estimated_sums = np.zeros((runs, k))
    aggregated_users = np.zeros((runs, k), dtype=np.int64)
    calls = np.zeros((runs, k), dtype=np.int64)
    pulls = np.zeros((runs, k), dtype=np.int64)
    used = np.zeros(runs, dtype=np.int64)
    regret = np.zeros(runs)
    done = np.zeros(runs, dtype=bool)
    best_lost = np.zeros(runs, dtype=bool)
    violated = np.zeros(runs, dtype=bool)
    times = [used.astype(float)]
    regrets = [regret.copy()]
    records: list[PhaseRecord] = []
    certificate = summation.certificate
    phase = 0
    while not np.all(done):
        phase += 1
        m = schedule.batch_size(phase)
        live = ~done
        active = viable & live[:, None]
        # arms are served in ascending order: the batch of arm a ends at used + m·#(viable arms <= a)
        batch_end = used[:, None] + np.cumsum(active * m, axis=1)
        batch_start = batch_end - m
        phase_pulls = np.where(active, np.clip(limit - batch_start, 0, m), 0)
        complete = active & (batch_end < limit)  # the last user's batch is never aggregated
        counts = np.where(complete, m, 0)
        batch_users = None
        if session is not None:  # the complete batches (disjoint), charged by the release
            first_ids = np.arange(runs)[:, None] * id_stride + id_offset + batch_start
            batch_users = UserRanges(first_ids[complete], np.asarray(m))
        sums = draw_sums(arm_index, counts, rng)
        # every (run, arm) slot is released as a batch of m and the incomplete ones are discarded, so
        # the random stream does not depend on which batches completed
        batches = Contributions.of_sums(sums, m, batch_users)
        released = summation.release(batches, rng, session=session).estimate
        estimated_sums += np.where(complete, released, 0.0)
        aggregated_users += counts
        calls += complete
        pulls += phase_pulls
        used += phase_pulls.sum(axis=1)
        regret += fixed_order.matvec(phase_pulls.astype(float), gaps)
        finished_phase = live & (used < limit)
        done |= used >= limit

        viable_before = viable.copy()
        radius = math.nan
        estimates = np.full((runs, k), np.nan)
        if np.any(finished_phase):
            per_arm = schedule.users_after(phase)
            radius = confidence_radius(summation, phase, per_arm, horizon)
            rows = finished_phase
            with np.errstate(invalid="ignore", divide="ignore"):
                estimates[rows] = np.where(viable[rows], estimated_sums[rows] / per_arm, np.nan)
            upper = np.where(viable[rows], estimates[rows] + radius, -np.inf)
            lower = np.where(viable[rows], estimates[rows] - radius, -np.inf)
            best_lower = lower.max(axis=1, keepdims=True)
            violated[rows] |= np.any(viable[rows] & (np.abs(estimates[rows] - bandit.means) > radius), axis=1)
            viable[rows] &= upper >= best_lower  # [P-fix] max over V; strict removal, simultaneous
            best_lost |= ~viable[:, bandit.best_arm]
            # short cut: a run with one viable arm spends the rest of its horizon on it
            spend_rest_on_last_arm(
                rows & (viable.sum(axis=1) == 1), viable, limit, used, pulls, regret, gaps, done
            )
        times.append(used.astype(float))
        regrets.append(regret.copy())
        if record_phases:
            records.append(
                PhaseRecord(phase, m, radius, viable_before, viable.copy(), phase_pulls, counts, estimates)
            )

    checkpoints = np.linspace(0.0, limit, curve_points)
    time_table = np.stack(times, axis=1)
    regret_table = np.stack(regrets, axis=1)
    curves = np.stack([np.interp(checkpoints, t, g) for t, g in zip(time_table, regret_table, strict=True)])
    return RunResult(
        algorithm=algorithm,
        horizon=limit,
        final_regret=regret,
        checkpoints=checkpoints,
        regret_curve=curves,
        pulls=pulls,
        users=aggregated_users.sum(axis=1),
        summation_calls=calls,
        phases=phase,
        best_arm_eliminated=best_lost,
        good_event_violated=violated,
        certificate=with_notes(certificate, RUN_NOTE),
        seconds=time.perf_counter() - started,
        parameters={
            "arms": k,
            "means": bandit.means.tolist(),
            "summation": summation.name,
            "schedule": schedule.kind,
            "batch_size": schedule.size if schedule.kind == "fixed" else None,
            "noise_bits": getattr(summation, "noise_bits", None),
        },
        phase_records=tuple(records),
    )


# =========================================================================== unknown horizon
HORIZON_MODES = ("known", "unknown")
FIRST_EPOCH = 2


def _total(arrays: list[np.ndarray]) -> np.ndarray:
    """Elementwise sum of the epochs' arrays, added in order."""
    total: np.ndarray = functools.reduce(operator.add, arrays)
    return total


def epoch_horizons(horizon: int, first_epoch: int = FIRST_EPOCH) -> list[int]:
    """Horizons ``T_j = first_epoch·2^j`` of the doubling trick's epochs until ``T`` users have come.

    The last epoch is cut short by the arrivals, not by the algorithm: it still runs with its ``T_j``.
    """
    horizon = check.positive_int("horizon", horizon, minimum=2)
    first_epoch = check.positive_int("first_epoch", first_epoch, minimum=2)
    epochs: list[int] = []
    arrived = 0
    while arrived < horizon:
        epochs.append(first_epoch * 2 ** len(epochs))
        arrived += epochs[-1]
    return epochs


def unknown_horizon_elimination(
    bandit: MultiArmedBandit,
    horizon: int,
    summation: BatchSummation,
    schedule: BatchSchedule,
    rng: np.random.Generator,
    *,
    runs: int = 1,
    algorithm: str = "batched arm elimination",
    session: PrivacySession | None = None,
    curve_points: int = 200,
    first_epoch: int = FIRST_EPOCH,
) -> RunResult:
    """Batched arm elimination without knowing T, by the doubling trick (Tenenbaum et al. 2021, footnote 10).

    Epoch ``j`` restarts the known-horizon algorithm with ``T_j = first_epoch·2^j`` and fresh users;
    ``horizon`` is only when the users stop coming (the last epoch is cut short).  Every user still
    joins exactly one batch of one epoch and is charged through ``session`` before her batch is
    released, so the run's certificate is the one summation's, as for a known horizon
    (docs/PAPER_NOTES.md, PN-TKMS-4).  Regret: the sum over the ``O(log T)`` epochs of the
    known-horizon bounds, ``O(Σ_a log² T/Δ_a + k·log T·log(1/δ)/ε²)`` for SDP-AE — the "roughly the same
    results" of the footnote, up to one factor log T.
    """
    horizon = check.positive_int("horizon", horizon, minimum=2)
    runs = check.positive_int("runs", runs)
    epochs = epoch_horizons(horizon, first_epoch)
    started = time.perf_counter()
    results: list[RunResult] = []
    arrived = 0
    for epoch_horizon in epochs:
        arriving = min(epoch_horizon, horizon - arrived)
        results.append(
            batched_arm_elimination(
                bandit, epoch_horizon, summation, schedule, rng, runs=runs, algorithm=algorithm,
                session=session, curve_points=curve_points, users=arriving, id_offset=arrived,
                id_stride=horizon,
            )
        )  # fmt: skip
        arrived += arriving
    offsets = np.cumsum([0] + [r.horizon for r in results[:-1]])
    carried = np.cumsum([np.zeros(runs)] + [r.final_regret for r in results[:-1]], axis=0)
    times = np.concatenate([offset + r.checkpoints for offset, r in zip(offsets, results, strict=True)])
    values = np.concatenate(
        [base[:, None] + r.regret_curve for base, r in zip(carried, results, strict=True)], axis=1
    )
    checkpoints = np.linspace(0.0, horizon, curve_points)
    curves = np.stack([np.interp(checkpoints, times, row) for row in values])
    last = results[-1]
    return RunResult(
        algorithm=algorithm,
        horizon=horizon,
        final_regret=_total([r.final_regret for r in results]),
        checkpoints=checkpoints,
        regret_curve=curves,
        pulls=_total([r.pulls for r in results]),
        users=_total([r.users for r in results]),
        summation_calls=_total([r.summation_calls for r in results if r.summation_calls is not None]),
        phases=sum(r.phases for r in results),
        best_arm_eliminated=np.any([r.best_arm_eliminated for r in results], axis=0),
        good_event_violated=np.any([r.good_event_violated for r in results], axis=0),
        certificate=last.certificate,
        seconds=time.perf_counter() - started,
        parameters={**last.parameters, "horizon": "unknown", "epochs": epochs},
    )


def run_engine(
    bandit: MultiArmedBandit,
    horizon: int,
    summation: BatchSummation,
    schedule: BatchSchedule,
    rng: np.random.Generator,
    horizon_mode: str,
    **engine: Any,
) -> RunResult:
    """The known-horizon engine or its doubling-trick wrapper, by ``horizon_mode``."""
    if horizon_mode not in HORIZON_MODES:
        raise InvalidParameter("horizon", horizon_mode, "known or unknown")
    if horizon_mode == "known":
        return batched_arm_elimination(bandit, horizon, summation, schedule, rng, **engine)
    return unknown_horizon_elimination(bandit, horizon, summation, schedule, rng, **engine)


# =========================================================================== algorithms
def _summation_for_shuffle(
    epsilon: float | None, delta: float | None, noise_bits: int | None
) -> ShuffleBinarySum:
    if noise_bits is not None:
        if epsilon is not None or delta is not None:
            raise InvalidParameter("noise_bits", noise_bits, "None when epsilon and delta are given")
        return ShuffleBinarySum(noise_bits)
    if epsilon is None or delta is None:
        raise InvalidParameter("epsilon", epsilon, "0 < epsilon < inf together with 0 < delta < 1")
    return shuffle_binary_sum(epsilon, delta)


def sdp_ae(
    bandit: MultiArmedBandit,
    horizon: int,
    rng: np.random.Generator,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    noise_bits: int | None = None,
    batch_size: int | None = None,
    runs: int = 1,
    horizon_mode: str = "known",
    **engine: Any,
) -> RunResult:
    """SDP-AE (Tenenbaum et al. 2021, Alg. 1; Thm 3.1): fixed batches through the shuffle binary sum.

    Either (``epsilon``, ``delta``) — the least ``N`` with ``δ_N(ε) <= δ`` and its certificate — or an
    explicit ``noise_bits`` (uncertified).  ``batch_size`` defaults to ``m = ⌈σ²⌉ = ⌈N/4⌉`` (Cor. 3.2 prints
    ``⌈σ⌉``; see the module docstring).  Regret ``O(Σ log T/Δ_a + k log(1/δ)/ε²)``.
    """
    summation = _summation_for_shuffle(epsilon, delta, noise_bits)
    size = max(1, math.ceil(summation.noise_bits / 4)) if batch_size is None else batch_size
    schedule = BatchSchedule("fixed", size)
    return run_engine(
        bandit, horizon, summation, schedule, rng, horizon_mode, runs=runs, algorithm="sdp-ae", **engine
    )


def vb_sdp_ae(
    bandit: MultiArmedBandit,
    horizon: int,
    rng: np.random.Generator,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    noise_bits: int | None = None,
    runs: int = 1,
    horizon_mode: str = "known",
    **engine: Any,
) -> RunResult:
    """VB-SDP-AE (Tenenbaum et al. 2021, Alg. 2; Thm 3.3): batches of ``2^t`` users per arm in phase ``t``,
    one ``N`` for every batch size.  Regret ``O(Σ log T/Δ_a + k·sqrt(log 1/δ)·log T/ε)`` (Thm 3.3; the
    √(log T) form printed in Cor. 3.4 does not follow from the theorem, which gives a factor log T)."""
    summation = _summation_for_shuffle(epsilon, delta, noise_bits)
    schedule = BatchSchedule("doubling")
    return run_engine(
        bandit, horizon, summation, schedule, rng, horizon_mode, runs=runs, algorithm="vb-sdp-ae", **engine
    )


def successive_elimination(
    bandit: MultiArmedBandit,
    horizon: int,
    rng: np.random.Generator,
    *,
    schedule: str = "fixed",
    batch_size: int = 1,
    runs: int = 1,
    horizon_mode: str = "known",
    **engine: Any,
) -> RunResult:
    """Non-private successive elimination: the same engine with exact sums (with ``m = 1`` the radius is
    ``sqrt(2 log T/N)``; PN-TKMS-5)."""
    return run_engine(
        bandit,
        horizon,
        ExactSum(),
        BatchSchedule(schedule, batch_size),
        rng,
        horizon_mode,
        runs=runs,
        algorithm="se",
        **engine,
    )


def central_dp_se(
    bandit: MultiArmedBandit,
    horizon: int,
    rng: np.random.Generator,
    *,
    epsilon: float,
    secure: bool = False,
    runs: int = 1,
    horizon_mode: str = "known",
    **engine: Any,
) -> RunResult:
    """dpcert's own central ε-DP successive elimination: Laplace(1/ε) on each batch sum, doubling batches.

    A comparator in the spirit of Sajed & Sheffet 2019 (reference [24] of Tenenbaum et al. 2021), not
    their algorithm nor any algorithm of the paper's Table 1.  ``secure=True`` draws integer-exact
    noise: discrete Laplace on the integer sums of Bernoulli rewards, :func:`secure_laplace` on a grid
    for other rewards in [0, 1] (:class:`CentralLaplaceSum`, "Secure noise")."""
    summation = CentralLaplaceSum(epsilon, secure=secure, integer_sums=bool(bandit.binary))
    return run_engine(
        bandit,
        horizon,
        summation,
        BatchSchedule("doubling"),
        rng,
        horizon_mode,
        runs=runs,
        algorithm="central-dp-se",
        **engine,
    )


def local_dp_se(
    bandit: MultiArmedBandit,
    horizon: int,
    rng: np.random.Generator,
    *,
    epsilon: float,
    runs: int = 1,
    horizon_mode: str = "known",
    **engine: Any,
) -> RunResult:
    """dpcert's own local ε-DP successive elimination: randomized response per user, doubling batches.

    A comparator with the local model's ``Θ((1/ε²) Σ log T/Δ_a)`` regret (Ren et al. 2020, reference [22]
    of Tenenbaum et al. 2021), not an algorithm of the paper's Table 1."""
    return run_engine(
        bandit,
        horizon,
        LocalRandomizedResponse(epsilon),
        BatchSchedule("doubling"),
        rng,
        horizon_mode,
        runs=runs,
        algorithm="local-dp-se",
        **engine,
    )
