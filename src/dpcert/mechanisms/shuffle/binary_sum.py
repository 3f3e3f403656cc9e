"""The private binary summation ``M_sum`` of Tenenbaum et al. 2021, with its exact δ_N(ε).

API for bandit algorithms
-------------------------
``calibrate_binary_sum(epsilon, delta)`` returns a :class:`BinarySumCalibration` with the least number
``noise_bits = N`` of fair noise bits meeting (ε, δ) for *every* batch size ``m``, ``sigma = √N/2``
(the sub-Gaussian proxy and standard deviation of the error) and the certificate;
``.mechanism()`` is a :class:`BinarySum` whose ``simulate(bits, rng)`` takes reward bits of shape
``(..., m)`` (any leading repetition axes) and returns the debiased sums ``(...)``, drawn exactly as
``Σx + Bin(N, 1/2) − N/2``; ``materialize(bits, rng)`` emits the shuffled one-bit messages.
:func:`binary_sum_delta` is the exact δ_N(ε).

Protocol (reconstructed: the paper's Appendix C is missing; docs/PAPER_NOTES.md, PN-TKMS-1).  The
server announces ``ℓ_i = ⌊N/m⌋ + [i <= N mod m]`` (so ``Σ ℓ_i = N``); user ``i`` sends its reward bit and
``ℓ_i`` fair coin bits; the shuffler permutes all ``m + N`` bits; the analyzer returns
``Σ bits − N/2``.  The error ``Bin(N, 1/2) − N/2`` does not depend on the data nor on ``m``
(the paper's interface properties I1–I4, PN-TKMS-1).

Exact privacy (docs/PAPER_NOTES.md, PN-TKMS-2).  The view is determined by the count of ones, so the
protocol's profile is that of ``s ↦ s + Bin(N, 1/2)`` with sensitivity 1:
``δ_N(ε) = Σ_{k <= k*} p(k)(1 − e^ε k/(N − k + 1))``, ``p(k) = C(N, k)/2^N``, ``k*`` the largest
integer below ``(N + 1)/(1 + e^ε)`` — exact, not a bound, and equal in both directions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert._numerics import least_valid_integer, smallest_valid
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.errors import InvalidParameter
from dpcert.profiles import EVENT_LEVEL, SHUFFLE_OR_CENTRAL, ParameterSpec, register_profile
from dpcert.theory.binomial import dominating_loss_pmf, log_binomial_pmf

BASIS = (
    "Tenenbaum et al. 2021, M_sum as reconstructed in docs/PAPER_NOTES.md, PN-TKMS-1 (binomial shuffle sum); "
    "exact delta_N, PN-TKMS-2"
)
MAX_NOISE_BITS = 10**9
_RELATIVE_SLACK = 5e-13  # times P(count <= k*): log-PMF error (<= 2e-13) and summation rounding
_SMALLEST_DELTA = math.ulp(0.0)  # a float >= 2^-N for every N > 1074 (δ_N never vanishes)


def binary_sum_delta(epsilon: float, noise_bits: int) -> float:
    """Exact δ_N(ε) of the binary summation protocol with ``N = noise_bits`` fair noise bits.

    Rounded upward: the log-PMF is Loader's saddle-point form (relative error near 1e-13 for any
    ``N``; differences of ``gammaln(N + 1)`` lose about 2e-10 at ``N = 1e5``), an allowance of
    5e-13 times the mass ``P(count <= k*)`` (itself >= δ) covers the remaining rounding, and the
    result is never below the smallest positive float: δ_N(ε) >= 2^-N > 0 at every ε (the shifted
    count is never 0), so the profile never claims pure DP even where 2^-N underflows.
    """
    epsilon = check.nonnegative_finite("epsilon", epsilon)
    n = check.positive_int("noise_bits", noise_bits)
    limit = (n + 1) / (1.0 + math.exp(epsilon)) if epsilon < 700 else 0.0
    top = math.ceil(limit) - 1  # largest integer k < limit
    ks = np.arange(0, max(top, 0) + 1)
    log_p = log_binomial_pmf(ks, n, 0.5)
    growth = math.exp(epsilon) if epsilon < 700 else math.inf
    factor = np.ones(ks.shape)
    factor[1:] = 1.0 - growth * ks[1:] / (n - ks[1:] + 1.0)  # p(k−1)/p(k) = k/(N − k + 1)
    positive = factor > 0
    value = float(np.exp(fixed_order.log_sum_exp(log_p[positive] + np.log(factor[positive]))))
    mass = float(np.exp(fixed_order.log_sum_exp(log_p)))
    return min(1.0, max(value + _RELATIVE_SLACK * mass, _SMALLEST_DELTA))


def binary_sum_epsilon(delta: float, noise_bits: int) -> float:
    """Least ε (rounded up) with δ_N(ε) <= delta; ``inf`` if ``delta < 2^-N`` (never reached)."""
    delta = check.delta(delta)
    n = check.positive_int("noise_bits", noise_bits)
    if binary_sum_delta(0.0, n) <= delta:
        return 0.0
    ceiling = math.log(n) + 1.0
    if binary_sum_delta(ceiling, n) > delta:
        return math.inf
    return smallest_valid(lambda e: binary_sum_delta(e, n) - delta, 0.0, ceiling, grow=False)


def least_noise_bits(epsilon: float, delta: float) -> int:
    """Least N with δ_N(ε) <= δ (doubling from 1, then bisection; δ_N is non-increasing in N)."""
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    bits = least_valid_integer(
        lambda n: binary_sum_delta(epsilon, n) <= delta, 1, below=0, step=1, ceiling=MAX_NOISE_BITS
    )
    if bits is None:
        raise InvalidParameter("delta", delta, f"a target reachable with at most {MAX_NOISE_BITS} noise bits")
    return bits


def hoeffding_noise_bits(epsilon: float, delta: float) -> int:
    """Closed form ``N_H = ⌈((√(2L) + √(2L + 4α))/(2α))²⌉`` with ``L = ln(1/δ)``, ``α = tanh(ε/2)``.

    Hoeffding's bound on δ_N (docs/PAPER_NOTES.md, PN-TKMS-3): valid for any ε > 0, larger than the exact N.
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    log_term = math.log(1.0 / delta)
    alpha = math.tanh(epsilon / 2.0)
    return math.ceil(((math.sqrt(2 * log_term) + math.sqrt(2 * log_term + 4 * alpha)) / (2 * alpha)) ** 2)


@register_profile(
    "binary-sum",
    parameters={"noise_bits": ParameterSpec("integer")},
    trust_models=SHUFFLE_OR_CENTRAL,
    neighbourings=EVENT_LEVEL,
)
class BinarySumProfile:
    """Exact profile of the binary summation protocol.  Parameters: ``noise_bits`` (N)."""

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.noise_bits = check.positive_int("noise_bits", parameters.get("noise_bits"))

    def delta_for(self, epsilon: float) -> float:
        return binary_sum_delta(epsilon, self.noise_bits)

    def epsilon_for(self, delta: float) -> float:
        return binary_sum_epsilon(delta, self.noise_bits)

    def dp_event(self) -> Any:
        return None

    def privacy_loss_parts(self, interval: float) -> list[tuple[Any, int]]:
        """The exact loss law of ``(N, N + 1)``, ``N ~ Bin(noise_bits, 1/2)`` (symmetric), rounded up to
        the grid ``interval``: the PLD protocol of :class:`dpcert.profiles.PrivacyLossParts`."""
        return [(dominating_loss_pmf(self.noise_bits, 1, interval), 1)]


def binary_sum_certificate(
    noise_bits: int, *, epsilon: float | None = None, delta: float | None = None
) -> Certificate:
    """Certificate at ``delta`` (least ε), at ``epsilon`` (least δ), or of both (verified)."""
    profile = BinarySumProfile({"noise_bits": noise_bits})
    guarantee = point_on_profile(
        profile, epsilon, delta, reachable_delta=f">= 2^-{noise_bits} (the protocol's floor)"
    )
    return Certificate(
        "binary-sum",
        guarantee,
        TrustModel.SHUFFLE,
        Neighbouring.REPLACE_ONE,
        {"noise_bits": int(noise_bits)},
        BASIS,
        (
            "valid for every batch size m (the error law does not depend on m)",
            "shuffle model, replace-one neighbours with the batch size fixed and public; assumes every "
            "user sends its noise bits honestly and no one else sees them (dropouts or colluding users "
            "weaken the guarantee)",
        ),
    ).verify()


@dataclass(frozen=True)
class BinarySum:
    """The protocol with ``noise_bits`` fair noise bits per batch, any batch size.

    ``certificate`` is the protocol's (ε, δ) certificate; ``None`` only for a protocol whose ``N`` was
    chosen by hand, outside any calibration (its releases are then not charged anywhere).
    """

    noise_bits: int
    certificate: Certificate | None = None

    @property
    def sigma(self) -> float:
        """Standard deviation (and sub-Gaussian proxy) of the error, ``√N/2``."""
        return math.sqrt(self.noise_bits) / 2.0

    def allocation(self, users: int) -> np.ndarray:
        """Noise bits per user, ``ℓ_i = ⌊N/m⌋ + [i <= N mod m]`` (data-independent)."""
        users = check.positive_int("users", users)
        share, extra = divmod(self.noise_bits, users)
        return share + (np.arange(users) < extra).astype(np.int64)

    def _bits(self, bits: Any) -> np.ndarray:
        array = check.finite_array("bits", bits)
        if array.ndim == 0 or array.shape[-1] < 1 or not np.all((array == 0) | (array == 1)):
            raise InvalidParameter(
                "bits", "<array>", "an array of 0/1 rewards with a last axis of m >= 1 users"
            )
        return array

    def __call__(self, bits: Any, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """``mechanism(value, rng)`` form: :meth:`simulate`; with ``size``, that many independent runs."""
        if size is not None:
            array = np.asarray(bits, dtype=float)
            bits = np.broadcast_to(array, (check.positive_int("size", size),) + array.shape)
        return self.simulate(bits, rng)

    def simulate(self, bits: Any, rng: np.random.Generator) -> np.ndarray:
        """Debiased sums ``Σx + Bin(N, 1/2) − N/2`` over the last axis, exact in distribution."""
        return self.release_sums(self._bits(bits).sum(axis=-1), rng)

    def release_sums(self, sums: Any, rng: np.random.Generator) -> np.ndarray:
        """The analyzer's output for batches whose reward bits sum to ``sums``: ``sums + Bin(N, 1/2) − N/2``.

        The view depends on the bits only through their count (module docstring), so this is the
        protocol's exact law given each batch's sum; one independent run per entry of ``sums``.
        """
        rng = check.generator(rng)
        sums = np.asarray(sums, dtype=float)
        return sums + rng.binomial(self.noise_bits, 0.5, size=sums.shape) - self.noise_bits / 2

    def materialize(self, bits: Any, rng: np.random.Generator) -> np.ndarray:
        """Shuffled messages ``(..., m + N)``: each user's bit plus its ``ℓ_i`` coin bits, permuted."""
        array = self._bits(bits).astype(np.uint8)
        rng = check.generator(rng)
        if array.size // array.shape[-1] * (array.shape[-1] + self.noise_bits) > 20_000_000:
            raise InvalidParameter("bits", "<too many messages>", "at most 2e7 messages in total")
        coins = (rng.random(array.shape[:-1] + (self.noise_bits,)) < 0.5).astype(np.uint8)
        return rng.permuted(np.concatenate([array, coins], axis=-1), axis=-1)

    def analyze(self, messages: Any) -> np.ndarray:
        """The analyzer: ``Σ messages − N/2``."""
        return np.asarray(messages).sum(axis=-1) - self.noise_bits / 2


@dataclass(frozen=True)
class BinarySumCalibration:
    """Result of :func:`calibrate_binary_sum`."""

    noise_bits: int
    certificate: Certificate

    @property
    def sigma(self) -> float:
        return math.sqrt(self.noise_bits) / 2.0

    def mechanism(self) -> BinarySum:
        return BinarySum(self.noise_bits, self.certificate)


def calibrate_binary_sum(epsilon: float, delta: float) -> BinarySumCalibration:
    """Least N with δ_N(ε) <= δ and its certificate (claims exactly (ε, δ))."""
    noise_bits = least_noise_bits(epsilon, delta)
    return BinarySumCalibration(noise_bits, binary_sum_certificate(noise_bits, epsilon=epsilon, delta=delta))
