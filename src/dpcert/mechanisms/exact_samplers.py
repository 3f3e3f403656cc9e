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

The samplers are vectorised: a batch runs each algorithm's loops over the still-unfinished draws with
numpy ``int64``/``uint64`` arithmetic.  Every product is checked to stay below 2^62 first; the rare draws
(or parameters) that would not fit are finished by the same algorithm on Python integers, which have
no size limit, so exactness never depends on the magnitude of the numbers.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from fractions import Fraction
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


def _geometric_exp_neg_one(source: RandomSource, size: int) -> np.ndarray:
    """Number of Bernoulli(exp(−1)) successes before the first failure, elementwise."""
    count = np.zeros(size, dtype=np.int64)
    alive = np.arange(size)
    while alive.size:
        ones = np.ones(alive.size, dtype=np.int64)
        alive = alive[_unit(source, ones, ones)]
        count[alive] += 1
    return count


def _discrete_laplace_batch(source: RandomSource, s: int, t: int, size: int) -> np.ndarray:
    """``size`` draws of Lap_Z(t/s) with ``1 <= s, t < 2^62`` (Algorithm 2, vectorised)."""
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        u = uniform_below(source, np.full(pending.size, t, dtype=np.int64))
        keep = np.flatnonzero(bernoulli_exp_neg(source, u, np.full(pending.size, t, dtype=np.int64)))
        v = _geometric_exp_neg_one(source, keep.size)
        done = np.zeros(pending.size, dtype=bool)
        fits = v < (_LIMIT - t) // t  # u + t·v < 2^62
        for position, v_big in zip(keep[~fits], v[~fits], strict=True):
            y_big = (int(u[position]) + t * int(v_big)) // s  # on Python integers (never in practice)
            negative = uniform_below_int(source, 2) == 1
            if not (negative and y_big == 0):
                out[pending[position]] = -y_big if negative else y_big
                done[position] = True
        keep, v = keep[fits], v[fits]
        y = (u[keep] + t * v) // s
        negative = uniform_below(source, np.full(keep.size, 2, dtype=np.int64)) == 1
        accepted = ~(negative & (y == 0))
        out[pending[keep[accepted]]] = np.where(negative, -y, y)[accepted]
        done[keep[accepted]] = True
        pending = pending[~done]
    return out


def sample_discrete_laplace(scale: object, size: int, source: RandomSource) -> np.ndarray:
    """``size`` exact draws of the discrete Laplace Lap_Z(scale): mass ∝ exp(−|x|/scale) on the integers.

    ``scale`` is rational (an int, Fraction, or float taken exactly); ``noise_parameter`` a = 1/scale in
    dp_accounting's convention.  CKS 2020, Algorithm 2 with t/s = scale.
    """
    scale = as_rational("scale", scale)
    size = _size(size)
    t, s = scale.numerator, scale.denominator
    if s < _LIMIT and t < _LIMIT // 4:
        return _discrete_laplace_batch(source, s, t, size)
    stream = WordStream(source)
    return _as_int64_if_fits([discrete_laplace_int(stream, s, t) for _ in range(size)])


def sample_discrete_gaussian(sigma_squared: object, size: int, source: RandomSource) -> np.ndarray:
    """``size`` exact draws of N_Z(0, σ²): mass ∝ exp(−x²/(2σ²)) on the integers.

    ``sigma_squared`` is rational (int, Fraction, or float taken exactly).  CKS 2020, Algorithm 3:
    Y ~ Lap_Z(t) with t = ⌊σ⌋ + 1 is accepted with probability exp(−(|Y| − σ²/t)²/(2σ²)), whose
    exponent is the rational (|Y|qt − p)² / (2pqt²) for σ² = p/q.
    """
    variance = as_rational("sigma_squared", sigma_squared)
    size = _size(size)
    p, q = variance.numerator, variance.denominator
    t = math.isqrt(p // q) + 1
    denominator = 2 * p * q * t * t
    if t >= _LIMIT // 4:
        stream = WordStream(source)
        return _as_int64_if_fits([discrete_gaussian_int(stream, p, q) for _ in range(size)])
    if denominator >= _LIMIT:  # proposals vectorised, acceptance exponents on Python integers
        return _discrete_gaussian_wide(source, p, q, t, size)
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    root_limit = math.isqrt(_LIMIT - 1)  # (|Y|qt − p)² < 2^62 needs | |Y|qt − p | <= root_limit
    while pending.size:
        y = _discrete_laplace_batch(source, 1, t, pending.size)
        magnitude = np.abs(y)
        fits = magnitude <= (root_limit - p) // (q * t)
        accept = np.zeros(pending.size, dtype=bool)
        for index in np.flatnonzero(~fits):  # far tail: the exponent is evaluated on Python integers
            numerator = (int(magnitude[index]) * q * t - p) ** 2
            accept[index] = bernoulli_exp_neg_int(source, numerator, denominator)
        inside = np.flatnonzero(fits)
        gap = magnitude[inside] * (q * t) - p
        accept[inside] = bernoulli_exp_neg(
            source, gap * gap, np.full(inside.size, denominator, dtype=np.int64)
        )
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out


def _discrete_gaussian_wide(source: RandomSource, p: int, q: int, t: int, size: int) -> np.ndarray:
    """Algorithm 3 for σ² = p/q whose acceptance exponent (|Y|qt − p)²/(2pqt²) leaves int64."""
    stream = WordStream(source)
    denominator = 2 * p * q * t * t
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        y = _discrete_laplace_batch(source, 1, t, pending.size)
        accept = np.array(
            [bernoulli_exp_neg_int(stream, (abs(v) * q * t - p) ** 2, denominator) for v in y.tolist()],
            dtype=bool,
        )
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out


def _as_int64_if_fits(values: list[int]) -> np.ndarray:
    """An int64 array when every value fits (|x| < 2^62), else an object array of Python integers."""
    if all(-_LIMIT < value < _LIMIT for value in values):
        return np.array(values, dtype=np.int64)
    return np.array(values, dtype=object)


def _size(size: object) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise InvalidParameter("size", size, "an integer >= 0")
    if size > 1 << 31:
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
