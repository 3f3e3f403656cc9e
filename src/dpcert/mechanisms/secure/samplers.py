"""Integer-exact samplers: Bernoulli(exp(−γ)), the discrete Laplace and the discrete Gaussian.

Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential Privacy", NeurIPS, §5:
Algorithm 1 draws Bernoulli(exp(−γ)) for a rational γ >= 0, Algorithm 2 the discrete Laplace
Lap_Z(t/s) (mass ∝ exp(−|x| s/t)) for integers s, t >= 1, Algorithm 3 the discrete Gaussian N_Z(0, σ²)
for a rational σ² by rejection from Lap_Z(⌊σ⌋ + 1).  Every step is integer arithmetic on uniform
integers drawn by rejection from uniform 64-bit words, so the output distribution is exactly the
stated one given uniform words: no floating-point number is ever computed.

Randomness comes from a :data:`RandomSource`: :class:`SecureRandom` (the operating system's
cryptographic generator through :func:`secrets.token_bytes`, for deployments) or a seeded
``numpy.random.Generator`` (reproducible mode, for tests and research).

:func:`sample_discrete_laplace` and :func:`sample_discrete_gaussian` do a fixed amount of work per
draw, so that the time a release takes does not reveal the noise (the timing attack of Jin, McMurtry,
Rubinstein & Ohrimenko 2022 on loops whose trip count is the output).  Every probability they need
depends on the noise parameter only, so it is bracketed once, exactly, in rational arithmetic; a draw
is a fixed set of *coins*, each a 128-bit uniform compared with its threshold (:class:`CoinSet`),
combined by numpy ``int64``/``uint64`` arithmetic with no data-dependent branch or loop:

* the discrete Laplace (:class:`LaplacePlan`) as zero-or-not, a sign, and the binary digits of a
  geometric magnitude, which are independent Bernoulli variables;
* the discrete Gaussian (:class:`GaussianPlan`) by rejection from the discrete Laplace (CKS 2020,
  Alg. 3), with the acceptance probability a product of coins over the binary digits of an integer
  exponent, and a number of rounds fixed by the number of draws.

The output is exact in distribution in every case.  A draw leaves the fixed-work path only when a
coin's uniform falls within 2^-127 of its threshold or the magnitude needs more than its binary
digits (probability <= e^{-89}); it is then finished exactly with more work, whose duration can
depend on the value.  :func:`timing_failure` bounds the probability of that event per release; an
observer of release times learns nothing beyond the output except on that event, which costs at
most (1 + e^ε) times its probability in δ (the release is that close in total variation to one of
constant duration).

Algorithm 1 (Bernoulli(exp(−γ))) is also kept with variable-time loops, on Python integers
(:func:`bernoulli_exp_neg_int`, used on the rare path above and by the CKS reference samplers
:func:`discrete_laplace_int` and :func:`discrete_gaussian_int`) and vectorised
(:func:`bernoulli_exp_neg`).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from numbers import Rational, Real

import numpy as np

from dpcert.errors import InvalidParameter

_LIMIT = 1 << 62  # the vectorised path keeps every intermediate integer below this
_WORD_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass(frozen=True)
class SecureRandom:
    """Uniform 64-bit words from the operating system's cryptographic generator (``secrets``)."""

    def words(self, count: int) -> np.ndarray:
        return np.frombuffer(secrets.token_bytes(8 * count), dtype=np.uint64)


RandomSource = np.random.Generator | SecureRandom


def _check_source(source: object) -> None:
    if not isinstance(source, (np.random.Generator, SecureRandom)):
        raise InvalidParameter(
            "source", type(source).__name__, "a numpy.random.Generator or dpcert SecureRandom()"
        )


def random_words(source: RandomSource, count: int) -> np.ndarray:
    """``count`` independent uniform 64-bit words (``uint64``) from ``source``."""
    if isinstance(source, SecureRandom):
        return source.words(count)
    if isinstance(source, np.random.Generator):
        return source.integers(0, 1 << 64, size=count, dtype=np.uint64, endpoint=False)
    raise InvalidParameter(
        "source", type(source).__name__, "a numpy.random.Generator or dpcert SecureRandom()"
    )


def as_rational(name: str, value: object, *, positive: bool = True) -> Fraction:
    """``value`` (an int, a Fraction or a finite float, converted exactly) as a Fraction."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidParameter(name, value, "a rational number (int, Fraction or finite float)")
    if not isinstance(value, Rational):
        if not math.isfinite(float(value)):
            raise InvalidParameter(name, value, f"0 < {name} < inf")
        value = Fraction(float(value))
    result = Fraction(value)
    if (result <= 0) if positive else (result < 0):
        raise InvalidParameter(name, value, f"0 < {name} < inf" if positive else f"0 <= {name} < inf")
    return result


# --------------------------------------------------------------------------- scalar (Python int) path
class WordStream:
    """Uniform 64-bit words of a :data:`RandomSource` as Python integers, fetched in blocks."""

    def __init__(self, source: RandomSource, block: int = 512) -> None:
        self.source = source
        self.block = block
        self.buffer: list[int] = []

    def take(self, count: int) -> list[int]:
        while len(self.buffer) < count:
            self.buffer.extend(random_words(self.source, self.block).tolist())
        taken, self.buffer = self.buffer[-count:], self.buffer[:-count]
        return taken


def _stream(source: RandomSource | WordStream) -> WordStream:
    return source if isinstance(source, WordStream) else WordStream(source, block=8)


def uniform_below_int(source: RandomSource | WordStream, bound: int) -> int:
    """One uniform integer in ``[0, bound)`` for any ``bound >= 1`` (rejection from whole words)."""
    stream = _stream(source)
    count = -(-bound.bit_length() // 64)
    span = 1 << (64 * count)
    accept_below = span - span % bound
    while True:
        value = 0
        for word in stream.take(count):
            value = (value << 64) | word
        if value < accept_below:
            return value % bound


def bernoulli_exp_neg_int(source: RandomSource | WordStream, numerator: int, denominator: int) -> bool:
    """Bernoulli(exp(−numerator/denominator)) on Python integers (CKS 2020, Algorithm 1)."""
    source = _stream(source)
    whole, fraction = divmod(numerator, denominator)
    for _ in range(whole):
        if not _unit_int(source, 1, 1):
            return False
    return _unit_int(source, fraction, denominator)


def _unit_int(source: RandomSource | WordStream, numerator: int, denominator: int, k: int = 1) -> bool:
    """Bernoulli(exp(−γ)) for γ = numerator/denominator in [0, 1], from step ``k`` of Algorithm 1."""
    source = _stream(source)
    while uniform_below_int(source, denominator * k) < numerator:  # A ~ Bernoulli(γ/k)
        k += 1
    return k % 2 == 1


def discrete_laplace_int(source: RandomSource | WordStream, s: int, t: int) -> int:
    """One draw of Lap_Z(t/s), mass ∝ exp(−|x| s/t), on Python integers (CKS 2020, Algorithm 2)."""
    source = _stream(source)
    while True:
        u = uniform_below_int(source, t)
        if not bernoulli_exp_neg_int(source, u, t):
            continue
        v = 0
        while _unit_int(source, 1, 1):
            v += 1
        y = (u + t * v) // s
        negative = uniform_below_int(source, 2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian_int(source: RandomSource | WordStream, p: int, q: int) -> int:
    """One draw of N_Z(0, σ²) with σ² = p/q, on Python integers (CKS 2020, Algorithm 3)."""
    source = _stream(source)
    t = math.isqrt(p // q) + 1
    while True:
        y = discrete_laplace_int(source, 1, t)
        if bernoulli_exp_neg_int(source, (abs(y) * q * t - p) ** 2, 2 * p * q * t * t):
            return y


# --------------------------------------------------------------------------- vectorised path
def uniform_below(source: RandomSource, bound: np.ndarray) -> np.ndarray:
    """Uniform integers in ``[0, bound)`` elementwise, exactly, for ``1 <= bound < 2^62`` (int64).

    A word w is accepted when ``w < 2^64 − (2^64 mod bound)`` (a multiple of ``bound`` values) and
    mapped to ``w mod bound``; each word is rejected with probability below ``bound/2^64``.
    """
    bound_u = np.asarray(bound, dtype=np.int64).astype(np.uint64)
    remainder = (np.zeros_like(bound_u) - bound_u) % bound_u  # 2^64 mod bound
    highest = _WORD_MAX - remainder
    out = np.empty(bound_u.shape, dtype=np.int64)
    words = random_words(source, bound_u.size)
    accepted = words <= highest
    out[accepted] = (words[accepted] % bound_u[accepted]).astype(np.int64)
    pending = np.flatnonzero(~accepted)
    while pending.size:
        words = random_words(source, pending.size)
        ok = words <= highest[pending]
        chosen = pending[ok]
        out[chosen] = (words[ok] % bound_u[chosen]).astype(np.int64)
        pending = pending[~ok]
    return out


def bernoulli_rational(source: RandomSource, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Bernoulli(numerator/denominator) elementwise (``0 <= numerator <= denominator < 2^62``)."""
    return uniform_below(source, denominator) < numerator


def _unit(source: RandomSource, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Bernoulli(exp(−γ)) for γ = numerator/denominator in [0, 1] elementwise (Algorithm 1)."""
    size = numerator.size
    k = np.ones(size, dtype=np.int64)
    result = np.empty(size, dtype=bool)
    active = np.arange(size)
    while active.size:
        den = denominator[active]
        fits = den < _LIMIT // (k[active] + 1)
        for index in active[~fits]:  # den·k would leave int64: finish on Python integers
            result[index] = _unit_int(source, int(numerator[index]), int(denominator[index]), int(k[index]))
        active = active[fits]
        success = uniform_below(source, denominator[active] * k[active]) < numerator[active]
        done = active[~success]
        result[done] = k[done] % 2 == 1
        active = active[success]
        k[active] += 1
    return result


def bernoulli_exp_neg(source: RandomSource, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Bernoulli(exp(−numerator/denominator)) elementwise (CKS 2020, Algorithm 1).

    ``numerator >= 0`` and ``1 <= denominator < 2^62`` (int64 arrays of the same shape).  exp(−⌊γ⌋) is
    the chance that ⌊γ⌋ independent Bernoulli(exp(−1)) draws all succeed; the fractional part uses the
    series of Algorithm 1 (return 1 iff the first failing k of Bernoulli(γ/k) is odd).
    """
    numerator = np.asarray(numerator, dtype=np.int64).ravel()
    denominator = np.asarray(denominator, dtype=np.int64).ravel()
    whole, fraction = np.divmod(numerator, denominator)
    result = np.ones(numerator.size, dtype=bool)
    step = 0
    alive = np.flatnonzero(whole > 0)
    while alive.size:
        ones = np.ones(alive.size, dtype=np.int64)
        result[alive[~_unit(source, ones, ones)]] = False
        step += 1
        alive = alive[result[alive] & (whole[alive] > step)]
    rest = np.flatnonzero(result & (fraction > 0))
    if rest.size:
        result[rest] = _unit(source, fraction[rest], denominator[rest])
    return result


# --------------------------------------------------------------------------- constant-work path
# Every probability the samplers need is fixed by the (public) noise parameter, so it is computed once,
# exactly, as a rational bracket, and each random choice is a *coin*: a 128-bit uniform word pair U
# compared with a threshold θ.  U < ⌊θ 2^128⌋ means 1, U >= ⌈θ 2^128⌉ means 0, and in between (at
# most two values of U) the comparison goes on with further words of the same uniform real against a
# finer bracket of θ: each coin is exactly Bernoulli(θ).
COIN_BITS = 128
WORDS_PER_COIN = COIN_BITS // 64
TAIL_EXPONENT = 89  # overflow coins: probability <= e^-89 < 2^-128
EXACT_ROUNDS_UP_TO = 32  # batches this small get their round count from the exact binomial tail
ROUNDS_HOEFFDING = 14  # extra rounds are needed with probability <= exp(-2 · 14) per batch (< 2^-40)
_CHUNK_WORDS = 1 << 21
_TOP = 1 << COIN_BITS


def _exp_neg_unit(y: Fraction, scale: int) -> tuple[int, int]:
    """``(lo, hi)``, ``lo <= exp(−y) 2^scale <= hi``, for rational 0 <= y <= 1 (alternating series).

    The terms y^k/k! decrease, so exp(−y) lies between consecutive partial sums.
    """
    term = total = Fraction(1)
    previous = total
    k = 0
    while term > Fraction(1, 1 << (scale + 2)):
        k += 1
        term = term * y / k
        previous, total = total, (total - term if k % 2 else total + term)
    low, high = min(previous, total), max(previous, total)
    return (low.numerator << scale) // low.denominator, -((-high.numerator << scale) // high.denominator)


def exp_neg_bracket(x: Fraction, bits: int) -> tuple[int, int]:
    """``(lo, hi)`` with ``lo <= exp(−x) 2^bits <= hi`` and ``hi − lo <= 2``, for rational x >= 0."""
    whole = math.floor(x)
    guard = 16 + 2 * max(whole, 1).bit_length()
    while True:
        scale = bits + guard
        low, high = _exp_neg_unit(x - whole, scale)
        if whole:
            one_low, one_high = _exp_neg_unit(Fraction(1), scale)
            power_low, power_high = 1 << scale, 1 << scale
            base_low, base_high, exponent = one_low, one_high, whole
            while exponent:  # square and multiply, each product rounded outward
                if exponent & 1:
                    power_low = (power_low * base_low) >> scale
                    power_high = -((-power_high * base_high) >> scale)
                base_low = (base_low * base_low) >> scale
                base_high = -((-base_high * base_high) >> scale)
                exponent >>= 1
            low = (low * power_low) >> scale
            high = -((-high * power_high) >> scale)
        low, high = low >> guard, -((-high) >> guard)
        if high - low <= 2:
            return low, high
        guard += 64


@dataclass(frozen=True)
class Coin:
    """A Bernoulli(θ) coin with θ = e^{−x} (``"exp"``), e^{−x}/(1 + e^{−x}) (``"logistic"``) or
    (1 − e^{−x})/(1 + e^{−x}) (``"zero"``), for a rational x >= 0."""

    kind: str
    x: Fraction

    def bracket(self, bits: int) -> tuple[int, int]:
        """``(lo, hi)`` with ``lo <= θ 2^bits <= hi`` and ``hi − lo <= 2``."""
        return _coin_bracket(self.kind, self.x, bits)


@lru_cache(maxsize=4096)
def _coin_bracket(kind: str, x: Fraction, bits: int) -> tuple[int, int]:
    extra = bits + 4  # r = e^{−x} to 2^-(bits+3): θ moves by at most twice as much (slopes <= 2)
    low, high = exp_neg_bracket(x, extra)
    one = 1 << extra
    if kind == "exp":
        return low >> 4, -((-high) >> 4)
    if kind == "logistic":  # r/(1 + r), increasing in r
        return (low << bits) // (one + low), -((-high << bits) // (one + high))
    if kind == "zero":  # (1 − r)/(1 + r), decreasing in r
        return ((one - high) << bits) // (one + high), -((-(one - low) << bits) // (one + low))
    raise InvalidParameter("kind", kind, "'exp', 'logistic' or 'zero'")


@dataclass(frozen=True)
class CoinSet:
    """Coins flipped together: each draw takes ``WORDS_PER_COIN`` words per coin, whatever comes out."""

    coins: tuple[Coin, ...]
    low: tuple[np.ndarray, np.ndarray]  # ⌊θ 2^128⌋ as (high word, low word) per coin
    high: tuple[np.ndarray, np.ndarray]  # ⌈θ 2^128⌉, with ``top`` marking 2^128
    top: np.ndarray
    gap: int  # largest ⌈θ 2^128⌉ − ⌊θ 2^128⌋: a coin is undecided with probability <= gap / 2^128

    @classmethod
    def of(cls, coins: tuple[Coin, ...]) -> CoinSet:
        brackets = [coin.bracket(COIN_BITS) for coin in coins]
        lows = [low for low, _ in brackets]
        highs = [min(high, _TOP - 1) for _, high in brackets]
        return cls(
            coins,
            _split(lows),
            _split(highs),
            np.array([high >= _TOP for _, high in brackets], dtype=bool),
            max(high - low for low, high in brackets),
        )

    @property
    def words(self) -> int:
        return WORDS_PER_COIN * len(self.coins)

    def flip(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(heads, undecided)`` of shape (draws, coins) from ``words`` of shape (draws, coins, 2)."""
        upper, lower = words[..., 0], words[..., 1]
        below_low = (upper < self.low[0]) | ((upper == self.low[0]) & (lower < self.low[1]))
        below_high = (upper < self.high[0]) | ((upper == self.high[0]) & (lower < self.high[1])) | self.top
        return below_low, below_high & ~below_low

    def resolve(self, index: int, words: np.ndarray, stream: WordStream) -> bool:
        """The exact outcome of an undecided coin: its uniform real continued word by word."""
        coin = self.coins[index]
        value, bits = (int(words[0]) << 64) | int(words[1]), COIN_BITS
        while True:
            value, bits = (value << 64) | stream.take(1)[0], bits + 64
            low, high = coin.bracket(bits)
            if value < low:
                return True
            if value >= high:
                return False


def _split(values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([value >> 64 for value in values], dtype=np.uint64),
        np.array([value & 0xFFFFFFFFFFFFFFFF for value in values], dtype=np.uint64),
    )


def _heads(
    coins: CoinSet, heads: np.ndarray, undecided: np.ndarray, words: np.ndarray, stream: WordStream
) -> list[bool]:
    """Every coin of one draw, undecided ones resolved exactly (the rare path)."""
    return [
        coins.resolve(j, words[j], stream) if undecided[j] else bool(heads[j])
        for j in range(len(coins.coins))
    ]


@dataclass(frozen=True)
class LaplacePlan:
    """Lap_Z(t/s) as sign × magnitude from ``levels + 2`` coins and one sign word (fixed work per draw).

    With q = e^{−s/t}: Y = 0 with probability (1 − q)/(1 + q) (the ``"zero"`` coin), else ±(1 + G),
    G geometric (P(G >= n) = q^n).  G's binary digits are independent, digit j being 1 with
    probability q^{2^j}/(1 + q^{2^j}), and G's part beyond the ``levels`` digits, G >> levels, is
    geometric with ratio q^{2^levels} and independent of them, since for n = Σ b_j 2^j + 2^L m

        (1 − q) q^n = Π_{j<L} (q^{2^j})^{b_j}/(1 + q^{2^j}) · (1 − q^{2^L}) (q^{2^L})^m,

    by Π_{j<L} (1 + q^{2^j}) = (1 − q^{2^L})/(1 − q).  The last coin is m >= 1, of probability
    q^{2^L} <= e^{−89} by the choice of L; only then (or when a coin is undecided) does a draw take more
    work, finishing m exactly by CKS 2020's loop.
    """

    s: int
    t: int
    levels: int
    coins: CoinSet

    @property
    def words(self) -> int:
        """Random words per draw on the fixed-work path."""
        return self.coins.words + 1

    @property
    def wide(self) -> bool:
        return self.levels > 61

    @property
    def failure(self) -> float:
        """Probability, per draw, that the draw leaves the fixed-work path (an upper bound); 1 for
        scales beyond 2^61/89, whose magnitudes are summed on Python integers of varying size."""
        return 1.0 if self.wide else _failure(len(self.coins.coins), self.coins.gap)


@lru_cache(maxsize=256)
def laplace_plan(s: int, t: int) -> LaplacePlan:
    """The coins of Lap_Z(t/s) (mass ∝ exp(−|x| s/t)) for integers s, t >= 1."""
    levels = 1
    while s << levels < TAIL_EXPONENT * t:
        levels += 1
    ratio = Fraction(s, t)
    coins = (
        (Coin("zero", ratio),)
        + tuple(Coin("logistic", ratio * (1 << j)) for j in range(levels))
        + (Coin("exp", ratio * (1 << levels)),)
    )
    return LaplacePlan(s, t, levels, CoinSet.of(coins))


def _failure(coins_per_draw: float, gap: int) -> float:
    """Union bound (rounded up) on an undecided coin among ``coins_per_draw``, plus the overflow coin."""
    return math.nextafter(coins_per_draw * gap * 2.0**-COIN_BITS + math.exp(-TAIL_EXPONENT), math.inf)


def _laplace_candidates(plan: LaplacePlan, block: np.ndarray, stream: WordStream) -> np.ndarray:
    """Draws of Lap_Z(t/s), one per row of ``block`` (``plan.words`` words each: the coins' words, then
    the sign's); rare draws finish exactly with words from ``stream``."""
    coins = plan.coins
    count = block.shape[0]
    words = block[:, : coins.words].reshape(count, len(coins.coins), WORDS_PER_COIN)
    signs = (block[:, coins.words] & np.uint64(1)).astype(bool)
    heads, undecided = coins.flip(words)
    digits = heads[:, 1 : plan.levels + 1]
    if plan.wide:
        low = np.zeros(count, dtype=object)
        for j in range(plan.levels):
            low = low + digits[:, j].astype(object) * (1 << j)
    else:
        low = np.sum(digits * (np.int64(1) << np.arange(plan.levels, dtype=np.int64)), axis=1)
    magnitude = low + 1
    values = np.where(heads[:, 0], 0, np.where(signs, -magnitude, magnitude))
    rare = np.flatnonzero(undecided.any(axis=1) | heads[:, -1])
    if rare.size:
        values = values.astype(object)
        for index in rare:
            values[index] = _finish_laplace(
                plan, heads[index], undecided[index], words[index], signs[index], stream
            )
    return values


def _finish_laplace(
    plan: LaplacePlan,
    heads: np.ndarray,
    undecided: np.ndarray,
    words: np.ndarray,
    negative: bool,
    stream: WordStream,
) -> int:
    flips = _heads(plan.coins, heads, undecided, words, stream)
    if flips[0]:
        return 0
    magnitude = 1 + sum(1 << j for j in range(plan.levels) if flips[j + 1])
    if flips[-1]:  # G >> levels = m >= 1: m − 1 is geometric with ratio exp(−s 2^L / t)
        high = 1
        while bernoulli_exp_neg_int(stream, plan.s << plan.levels, plan.t):
            high += 1
        magnitude += high << plan.levels
    return -magnitude if negative else magnitude


@dataclass(frozen=True)
class GaussianPlan:
    """N_Z(0, p/q) by rejection from Lap_Z(τ) with τ = σ²/c, c = a/b ≈ σ (CKS 2020, Alg. 3, any τ > 0).

    A candidate Y is accepted with probability exp(−(|Y| − c)²/(2σ²)) = exp(−N κ), N = (b|Y| − a)² an
    integer and κ = q/(2pb²): the product over the binary digits i of N of independent coins
    exp(−2^i κ), i < ``levels``, and for N >= 2^levels one more coin exp(−2^levels κ) <= e^{−89}
    (the rest of the exponent is then decided exactly, on the rare path).  Every round (candidate)
    takes the same words; a batch of n draws runs a number of rounds that depends on n only, and
    the accepted candidates, in order, are the draws.  The acceptance pattern is independent of the
    accepted values, so the rounds a short batch adds (probability < 2^-40) reveal nothing about them.
    """

    p: int
    q: int
    a: int
    b: int
    proposal: LaplacePlan
    levels: int
    coins: CoinSet
    acceptance: Fraction  # a lower bound on the probability that a round is accepted

    @property
    def round_words(self) -> int:
        return self.proposal.words + self.coins.words

    @property
    def vectorised(self) -> bool:
        reach = self.b * ((1 << self.proposal.levels) + 1) + self.a
        return not self.proposal.wide and self.levels <= 63 and reach < 1 << 63

    def rounds(self, draws: int) -> int:
        """Rounds run for ``draws`` = n draws, so that fewer than n of them are accepted with probability
        below 2^-40 (each round is accepted with probability at least P, the acceptance bound).

        For n <= ``EXACT_ROUNDS_UP_TO``: the least B with P(Bin(B, P) < n) <= 2^-40, the binomial tail
        summed exactly.  Beyond: B = ⌈(2nP + 14 + √(56nP + 196)) / (2P²)⌉ with the square root rounded
        up, the larger root of P²B² − (2nP + 14)B + n², so that BP >= n and (BP − n)² >= 14B: by
        Hoeffding's inequality fewer than n of B rounds are accepted with probability at most
        exp(−2(BP − n)²/B) <= e^{−28} < 2^-40.  Rational and integer arithmetic only (the same B on
        every machine).
        """
        return _rounds(self.acceptance, draws)

    def failure(self, draws: int) -> float:
        """Bound on the probability that a batch of ``draws`` draws leaves the fixed-work path: the
        union bound over the coins of the rounds run (those fixed by ``draws`` and, on average, the
        rounds a short batch adds); 1 when the plan is not vectorised (σ beyond about 2^27), whose
        acceptance runs on Python integers of varying size."""
        if not self.vectorised:
            return 1.0
        expected_rounds = self.rounds(draws) + draws / float(self.acceptance)
        coins = len(self.coins.coins) + len(self.proposal.coins.coins)
        return math.nextafter(
            expected_rounds * _failure(coins, max(self.coins.gap, self.proposal.coins.gap)), math.inf
        )


@lru_cache(maxsize=1024)
def _rounds(p: Fraction, draws: int) -> int:
    """:meth:`GaussianPlan.rounds` for the acceptance bound ``p``."""
    if draws == 0:
        return 0
    if draws <= EXACT_ROUNDS_UP_TO:
        rounds = draws
        while _binomial_below(rounds, p, draws) > Fraction(1, 1 << 40):
            rounds += 1
        return rounds
    discriminant = 56 * draws * p + 196
    root = Fraction(math.isqrt(math.floor(discriminant * (1 << 40))) + 1, 1 << 20)
    return math.ceil((2 * draws * p + ROUNDS_HOEFFDING + root) / (2 * p * p))


def _binomial_below(rounds: int, p: Fraction, draws: int) -> Fraction:
    """P(Bin(rounds, p) < draws), exactly."""
    return sum(
        (math.comb(rounds, k) * p**k * (1 - p) ** (rounds - k) for k in range(draws)), start=Fraction(0)
    )


@lru_cache(maxsize=256)
def gaussian_plan(p: int, q: int) -> GaussianPlan:
    """The proposal, coins and acceptance bound of N_Z(0, σ²) for σ² = p/q."""
    if p >= q:
        a, b = math.isqrt(p // q), 1  # c = ⌊σ⌋
    else:
        b = 1
        while b * b * p < 4 * q:
            b *= 2
        a = math.isqrt(b * b * p // q)  # c = ⌊bσ⌋/b >= 2/b: within a factor 2 of σ
    tau = Fraction(p * b, q * a)
    proposal = laplace_plan(tau.denominator, tau.numerator)
    kappa = Fraction(q, 2 * p * b * b)
    levels = 1
    while kappa * (1 << levels) < TAIL_EXPONENT:
        levels += 1
    coins = CoinSet.of(tuple(Coin("exp", kappa * (1 << i)) for i in range(levels + 1)))
    return GaussianPlan(p, q, a, b, proposal, levels, coins, _acceptance_bound(p, q, a, b, tau))


def _acceptance_bound(p: int, q: int, a: int, b: int, tau: Fraction) -> Fraction:
    """A rational lower bound on P(accept) = Z_G e^{−c²/(2σ²)} / Z_L.

    Z_G = Σ_y e^{−y²/(2σ²)} >= max(1, 2.5σ) (Poisson summation: Z_G >= σ√(2π)); Z_L = Σ_y e^{−|y|/τ}
    = (1 + e^{−1/τ})/(1 − e^{−1/τ}); both exponentials are taken from exact brackets.
    """
    root = math.isqrt(p * (1 << 40) // q)  # σ >= root / 2^20
    z_gauss = max(Fraction(1), Fraction(5 * root, 2 << 20))
    low, _ = exp_neg_bracket(Fraction(a * a * q, 2 * b * b * p), 64)
    _, high = exp_neg_bracket(1 / tau, 64)
    one = 1 << 64
    bound = z_gauss * Fraction(low, one) * Fraction(one - high, one + high)
    return Fraction(math.floor(bound * 4096) - 1, 4096) if bound > Fraction(1, 2048) else bound / 2


def _gaussian_round(
    plan: GaussianPlan, source: RandomSource, rounds: int, stream: WordStream
) -> tuple[np.ndarray, np.ndarray]:
    """``rounds`` candidates and whether each is accepted (``plan.round_words`` words per round)."""
    block = random_words(source, rounds * plan.round_words).reshape(rounds, plan.round_words)
    candidates = _laplace_candidates(plan.proposal, block[:, : plan.proposal.words], stream)
    coins = plan.coins
    words = block[:, plan.proposal.words :].reshape(rounds, len(coins.coins), WORDS_PER_COIN)
    heads, undecided = coins.flip(words)
    levels = plan.levels
    exact = candidates.dtype == object or not plan.vectorised
    if exact:
        accept = np.zeros(rounds, dtype=bool)
        rare = np.arange(rounds)
    else:
        magnitude = np.abs(candidates).astype(np.uint64)
        scaled = magnitude * np.uint64(plan.b)
        offset = np.where(scaled >= plan.a, scaled - np.uint64(plan.a), np.uint64(plan.a) - scaled)
        square = offset * offset  # modulo 2^64: its low ``levels`` digits are N's
        digits = (square[:, None] >> np.arange(levels, dtype=np.uint64)) & np.uint64(1)
        beyond = offset >= np.uint64(math.isqrt((1 << levels) - 1) + 1)  # N >= 2^levels
        passed = np.all(heads[:, :levels] | (digits == 0), axis=1) & (heads[:, levels] | ~beyond)
        accept = passed
        rare = np.flatnonzero(undecided.any(axis=1) | (beyond & heads[:, levels]))
    for index in rare:
        accept[index] = _finish_acceptance(
            plan, int(candidates[index]), heads[index], undecided[index], words[index], stream
        )
    return candidates, accept


def _finish_acceptance(
    plan: GaussianPlan,
    candidate: int,
    heads: np.ndarray,
    undecided: np.ndarray,
    words: np.ndarray,
    stream: WordStream,
) -> bool:
    """Acceptance of one candidate decided exactly on Python integers (the rare path)."""
    flips = _heads(plan.coins, heads, undecided, words, stream)
    n = (plan.b * abs(candidate) - plan.a) ** 2
    levels = plan.levels
    if not all(flips[i] for i in range(levels) if (n >> i) & 1):
        return False
    high = n >> levels
    if high == 0:
        return True
    if not flips[levels]:
        return False
    # exp(−(high − 1) 2^L κ) with κ = q/(2pb²)
    return bernoulli_exp_neg_int(stream, ((high - 1) << levels) * plan.q, 2 * plan.p * plan.b * plan.b)


def _gaussian_draws(plan: GaussianPlan, source: RandomSource, count: int) -> np.ndarray:
    stream = WordStream(source)
    pieces: list[np.ndarray] = []
    needed = count
    while needed:
        rounds = plan.rounds(needed)
        chunk = max(1, _CHUNK_WORDS // plan.round_words)
        accepted: list[np.ndarray] = []
        for start in range(0, rounds, chunk):
            candidates, accept = _gaussian_round(plan, source, min(chunk, rounds - start), stream)
            accepted.append(candidates[accept])
        found = np.concatenate(accepted)[:needed]
        pieces.append(found)
        needed -= found.size
    if not pieces:
        return np.empty(0, dtype=np.int64)
    values = np.concatenate(pieces)  # int64 unless a rare draw came out as a Python integer
    return values if values.dtype == np.int64 else _as_int64_if_fits(values.tolist())


def _laplace_draws(plan: LaplacePlan, source: RandomSource, count: int) -> np.ndarray:
    stream = WordStream(source)
    chunk = max(1, _CHUNK_WORDS // plan.words)
    pieces = [
        _laplace_candidates(
            plan, random_words(source, min(chunk, count - start) * plan.words).reshape(-1, plan.words), stream
        )
        for start in range(0, count, chunk)
    ]
    if not pieces:
        return np.empty(0, dtype=np.int64)
    values = np.concatenate(pieces)
    return values if values.dtype == np.int64 else _as_int64_if_fits(values.tolist())


def sample_discrete_laplace(scale: object, size: int, source: RandomSource) -> np.ndarray:
    """``size`` exact draws of the discrete Laplace Lap_Z(scale): mass ∝ exp(−|x|/scale) on the integers.

    ``scale`` is rational (an int, Fraction, or float taken exactly); ``noise_parameter`` a = 1/scale in
    dp_accounting's convention.  Fixed work per draw (:class:`LaplacePlan`): the same number of random
    words and the same operations whatever the value drawn, except with probability at most
    :attr:`LaplacePlan.failure` per draw (then the draw is finished exactly, with more work).
    """
    scale = as_rational("scale", scale)
    size = _size(size)
    _check_source(source)
    return _laplace_draws(laplace_plan(scale.denominator, scale.numerator), source, size)


def sample_discrete_gaussian(sigma_squared: object, size: int, source: RandomSource) -> np.ndarray:
    """``size`` exact draws of N_Z(0, σ²): mass ∝ exp(−x²/(2σ²)) on the integers.

    ``sigma_squared`` is rational (int, Fraction, or float taken exactly).  Rejection from a discrete
    Laplace (CKS 2020, Alg. 3) with fixed work per round and a number of rounds fixed by ``size``
    (:class:`GaussianPlan`); the work depends on the values drawn only with probability at most
    :meth:`GaussianPlan.failure`.
    """
    variance = as_rational("sigma_squared", sigma_squared)
    size = _size(size)
    _check_source(source)
    return _gaussian_draws(gaussian_plan(variance.numerator, variance.denominator), source, size)


def timing_failure(mechanism: str, parameter: object, draws: int) -> float:
    """Probability bound that a release of ``draws`` draws leaves the fixed-work path.

    ``mechanism`` is ``"discrete-laplace"`` (``parameter`` the scale) or ``"discrete-gaussian"``
    (``parameter`` σ²).
    """
    if mechanism == "discrete-laplace":
        scale = as_rational("scale", parameter)
        return math.nextafter(
            _size(draws) * laplace_plan(scale.denominator, scale.numerator).failure, math.inf
        )
    if mechanism == "discrete-gaussian":
        variance = as_rational("sigma_squared", parameter)
        return gaussian_plan(variance.numerator, variance.denominator).failure(_size(draws))
    raise InvalidParameter("mechanism", mechanism, "'discrete-laplace' or 'discrete-gaussian'")


def _as_int64_if_fits(values: list[int]) -> np.ndarray:
    """An int64 array when every value fits (|x| < 2^62), else an object array of Python integers."""
    if all(-_LIMIT < value < _LIMIT for value in values):
        return np.array(values, dtype=np.int64)
    return np.array(values, dtype=object)


# The most draws one sampler call makes: timing_failure(..., MAX_DRAWS_PER_CALL) bounds any call.
MAX_DRAWS_PER_CALL = 1 << 31


def _size(size: object) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise InvalidParameter("size", size, "an integer >= 0")
    if size > MAX_DRAWS_PER_CALL:
        raise InvalidParameter("size", size, "at most 2^31 draws per call")
    return int(size)


class IntegerPool:
    """Draws of N_Z(0, σ²) (σ an integer) from one generator in blocks, handed out in order.

    The integer-exact sampler has a fixed cost per call; drawing blocks ahead of use keeps it off the
    per-batch path.  The generator must be private to the pool (values past the last request are
    drawn and discarded); its bits feed the sampler directly (``bits="rng"``: reproducible, not a
    cryptographic source).
    """

    def __init__(self, sigma: int, rng: np.random.Generator, block: int = 1 << 16) -> None:
        self.variance = Fraction(int(sigma)) ** 2
        self.rng, self.block = rng, block
        self.buffer = np.empty(0, dtype=np.int64)
        self.position = 0

    def take(self, shape: tuple[int, ...]) -> np.ndarray:
        need = math.prod(shape)
        if self.position + need > self.buffer.size:
            rest = self.buffer[self.position :]
            fresh = sample_discrete_gaussian(self.variance, max(self.block, need - rest.size), self.rng)
            self.buffer, self.position = np.concatenate([rest, fresh]), 0
        values = self.buffer[self.position : self.position + need]
        self.position += need
        return values.reshape(shape)
