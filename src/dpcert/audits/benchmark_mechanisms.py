"""The benchmark mechanisms of StatDP, DP-Sniper and CheckDP, ported from their papers, with their ε.

Each mechanism is vectorised: ``mechanism(value, rng, size)`` returns ``size`` outputs along axis 0
from a few numpy calls (no loop over draws), so an audit can draw 10⁶–10⁷ outputs per input in seconds.

Sources:

* Lyu, Su & Li 2017, "Understanding the sparse vector technique for differential privacy", PVLDB
  10(6), Figure 1, Algorithms 1–6 (sparse vector variants; Table 1 gives their privacy: Algs 1 and 2
  ε-DP, Alg. 4 ((1 + 6c)/4)·ε-DP, Algs 3, 5 and 6 not ε'-DP for any finite ε' over unbounded query
  sequences).  ``LyuSVT1``–``LyuSVT6`` take the defaults of DP-Sniper's port (Bichsel, Steffen,
  Bogunovic & Vechev 2021, "DP-Sniper: black-box discovery of differential privacy violations using
  classifiers", S&P): ε = 0.1, c = 2, T = 1, ten queries of sensitivity 1, ALL_DIFFER (linf) pairs.
  DP-Sniper's evaluation runs them with c = 1 (and T = 0.5 for Alg. 1): those are the entries
  ``DPSniper-SVT1``–``DPSniper-SVT6``, which carry DP-Sniper's published lower bounds (the
  logistic-regression run of the authors' reference results, eval_sp2021/reference-results,
  ``eps_lcb``: 2·10⁸ final draws per input, confidence 0.9).  With c = 1 each has the output
  distribution of a StatDP entry (Alg. 1 of StatDP-SVT, Alg. 3 of iSVT4, Alg. 4 of iSVT3, Algs 5 and 6
  of iSVT1 and iSVT2).
* Ding, Wang, Wang, Zhang & Kifer 2018, "Detecting violations of differential privacy", CCS, §6
  (StatDP): SVT with N = 1, its incorrect variants iSVT1–iSVT4 (Lyu et al.'s Algs 5, 6, 4 and 3 with
  StatDP's noise scales), report noisy max with Laplace or exponential noise (correct: the index;
  incorrect: the noisy maximum value), ε = 0.1, five queries, ALL_DIFFER; noisy histograms, ONE_DIFFER.
* The other mechanisms of DP-Sniper's default experiment (Bichsel et al. 2021, exp_default.py), with
  the class defaults and input patterns it uses and its published lower bounds, ``DPSniper-...``: the
  Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006) on one answer; Balcer & Vadhan 2018's
  GeoSample, the truncated geometric mechanism of Ghosh, Roughgarden & Sundararajan 2009 (with
  DP-Sniper's k = ⌈ln(2/ε)⌉ = 3 it is ln(9/8)-DP); StatDP's noisy histograms and report noisy max 1–4
  (the distributions of the StatDP entries); RAPPOR and one-time RAPPOR (Erlingsson, Pihur & Korolova
  2014: a 20-bit Bloom filter of the integer with four MurmurHash3 positions, ε₁ ≈ 0.400 and
  ε∞ ≈ 0.801); the Laplace mechanism repeated 20 times at ε = 0.005; Lyu et al.'s Algs 3 and 4
  side by side (c = 2); and the prefix sums and the numerical sparse vector of Wang, Ding, Wang, Kifer
  & Zhang 2019 (ShadowDP).  One-answer inputs use the one-differ pairs [1]/[0] and [1]/[2].
* Wang, Ding, Kifer & Zhang 2020, "CheckDP: an automated and integrated approach for proving
  differential privacy or finding precise counterexamples", CCS: BadGapSparseVector (the gap sparse
  vector releasing the noisy query q_i + η_i above the threshold), ε = 0.1, N = 1, ALL_DIFFER.

Outputs are float arrays of one row per draw, with DP-Sniper's codes for the symbolic answers: for
⊤/⊥ outputs 1 = ⊤, 0 = ⊥, −1 = aborted (after the c-th ⊤); for numeric outputs the released value,
−1000 for ⊥ and −2000 for aborted.  ``true_epsilon`` is the ε the sources state (``math.inf`` where the
mechanism admits no finite ε on the pairs used, derived in the entry's note), or None where they state
only that the claim fails.

The input pairs are the patterns StatDP and DP-Sniper use for the relation (StatDP §5.1: one above,
one below, one above rest below, one below rest above, half-half, all above, all below, X shape),
built by :mod:`dpcert.audits.neighbours` around the all-ones vector.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.audits.neighbours import Relation
from dpcert.errors import InvalidParameter

FALSE_VALUE = -1000.0  # ⊥ in numeric outputs (DP-Sniper's code)
ABORTED_VALUE = -2000.0  # aborted in numeric outputs
ABORTED = -1.0  # aborted in ⊤/⊥ outputs


def _queries(value: Any, length: int) -> np.ndarray:
    array = check.finite_array("value", value).astype(float).reshape(-1)
    if array.shape != (length,):
        raise InvalidParameter("value", f"length {array.shape[0]}", f"a vector of {length} query answers")
    return array


def _size(size: int) -> int:
    return check.positive_int("size", size)


def _cut_off(above: np.ndarray, cutoff: int | None) -> np.ndarray:
    """⊤/⊥ codes (1/0) with every answer after the ``cutoff``-th ⊤ of its row marked aborted."""
    codes = above.astype(float)
    if cutoff is None:
        return codes
    before = np.cumsum(above, axis=1) - above  # ⊤ answers strictly before each query
    codes[before >= cutoff] = ABORTED
    return codes


def _numeric_cut_off(above: np.ndarray, released: np.ndarray, cutoff: int | None) -> np.ndarray:
    out = np.where(above, released, FALSE_VALUE)
    if cutoff is not None:
        before = np.cumsum(above, axis=1) - above
        out[before >= cutoff] = ABORTED_VALUE
    return out


@dataclass(frozen=True)
class SparseVector:
    """Sparse vector variants: threshold noise Lap(``threshold_scale``), query noise
    Lap(``query_scale``) (0: none), ``>=`` or ``>`` comparison, at most ``cutoff`` ⊤ answers (None:
    no cutoff), ⊤ released as 1 or as the noisy query (``numeric``), and for Lyu et al.'s Alg. 2 a
    fresh threshold after every ⊤ (``resample``)."""

    length: int
    threshold: float
    threshold_scale: float
    query_scale: float
    cutoff: int | None
    strict: bool = False
    numeric: bool = False
    resample: bool = False

    def __call__(self, value: Any, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        queries = _queries(value, self.length)
        size = _size(size)
        rho = rng.laplace(scale=self.threshold_scale, size=(size, 1))
        if self.query_scale > 0:
            noisy = queries + rng.laplace(scale=self.query_scale, size=(size, self.length))
        else:
            noisy = np.broadcast_to(queries, (size, self.length))
        if self.resample:
            return self._resampled(noisy, rho[:, 0], rng)
        level = self.threshold + rho
        above = noisy > level if self.strict else noisy >= level
        if self.numeric:
            return _numeric_cut_off(above, noisy, self.cutoff)
        return _cut_off(above, self.cutoff)

    def _resampled(self, noisy: np.ndarray, rho: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        size = noisy.shape[0]
        above = np.zeros(noisy.shape, dtype=bool)
        for column in range(self.length):  # a loop over the ten queries, vectorised over the draws
            hit = noisy[:, column] >= self.threshold + rho
            above[:, column] = hit
            fresh = rng.laplace(scale=self.threshold_scale, size=size)
            rho = np.where(hit, fresh, rho)
        return _cut_off(above, self.cutoff)


@dataclass(frozen=True)
class NoisyMax:
    """Report noisy max: ``q + noise`` with Laplace or exponential noise of ``scale``; the index
    (``value=False``) or the noisy maximum itself (``value=True``)."""

    length: int
    scale: float
    noise: str = "laplace"
    value: bool = False

    def __call__(self, value: Any, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        queries = _queries(value, self.length)
        size = _size(size)
        if self.noise == "laplace":
            noise = rng.laplace(scale=self.scale, size=(size, self.length))
        else:
            noise = rng.exponential(scale=self.scale, size=(size, self.length))
        noisy = queries + noise
        return noisy.max(axis=1) if self.value else noisy.argmax(axis=1).astype(float)


@dataclass(frozen=True)
class NoisyHistogram:
    """Laplace(``scale``) noise on every bin."""

    length: int
    scale: float

    def __call__(self, value: Any, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        queries = _queries(value, self.length)
        return queries + rng.laplace(scale=self.scale, size=(_size(size), self.length))


def _integer(value: Any, low: float, high: float) -> int:
    answer = _queries(value, 1)[0]
    if answer != round(answer) or not low <= answer <= high:
        raise InvalidParameter("value", answer, f"an integer in [{low:g}, {high:g}]")
    return int(answer)


@dataclass(frozen=True)
class LaplaceCopies:
    """``copies`` independent releases of one answer plus Laplace(``scale``) noise, one column each (a
    1-D array when ``copies`` is 1): the Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006) and
    its parallel repetition."""

    scale: float
    copies: int = 1

    def __call__(self, value: Any, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        answer = _queries(value, 1)[0]
        shape = _size(size) if self.copies == 1 else (_size(size), self.copies)
        return answer + rng.laplace(scale=self.scale, size=shape)


@dataclass(frozen=True)
class TruncatedGeometric:
    """A count c in {0, ..., n} plus two-sided geometric noise P[k] ∝ ``ratio``^|k|, clamped to [0, n]
    (Ghosh, Roughgarden & Sundararajan 2009): P[z] ∝ α^|z−c| for 0 < z < n, the tails piled on 0 and n;
    ln(1/α)-DP for counts that move by one."""

    n: int
    ratio: float

    def __call__(self, value: Any, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        count = _integer(value, 0, self.n)
        size = _size(size)
        success = 1.0 - self.ratio  # G1 − G2 of two geometric counts of failures is two-sided geometric
        noise = rng.geometric(success, size) - rng.geometric(success, size)
        return np.clip(count + noise, 0, self.n).astype(float)


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 (x86, 32 bits; Appleby's reference definition) of ``data``, as an unsigned int."""
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    def mix(k: int) -> int:
        return (rotl((k * 0xCC9E2D51) & mask, 15) * 0x1B873593) & mask

    h = seed & mask
    whole = len(data) - len(data) % 4
    for start in range(0, whole, 4):
        h ^= mix(int.from_bytes(data[start : start + 4], "little"))
        h = (rotl(h, 13) * 5 + 0xE6546B64) & mask
    if len(data) > whole:
        h ^= mix(int.from_bytes(data[whole:], "little"))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    return h ^ (h >> 16)


def bloom_bits(value: int, hashes: int, filter_size: int) -> tuple[int, ...]:
    """The Bloom-filter positions of ``value`` as DP-Sniper's RAPPOR sets them: MurmurHash3 of its
    decimal string with seeds 0, ..., ``hashes`` − 1, read as a signed 32-bit int, modulo the size."""
    positions = set()
    for seed in range(hashes):
        unsigned = murmur3_32(str(value).encode(), seed)
        signed = unsigned - (1 << 32) if unsigned >= 1 << 31 else unsigned
        positions.add(signed % filter_size)
    return tuple(sorted(positions))


@dataclass(frozen=True)
class Rappor:
    """RAPPOR's report of one integer (Erlingsson, Pihur & Korolova 2014, steps 1–3): a Bloom filter of
    ``filter_size`` bits with ``hashes`` hash functions; the permanent randomized response sets each
    bit to 1 with probability f/2, to 0 with probability f/2 and keeps it otherwise; the instantaneous
    randomized response (``instantaneous``) reports 1 with probability q for a permanent 1 and p for a
    permanent 0.  Without it the permanent response is the output (steps 1–2, "one-time" RAPPOR)."""

    f: float
    p: float = 0.5
    q: float = 0.5
    instantaneous: bool = True
    hashes: int = 4
    filter_size: int = 20
    low: int = -10  # DP-Sniper's input domain
    high: int = 10

    def filter(self, value: Any) -> np.ndarray:
        bits = np.zeros(self.filter_size, dtype=bool)
        bits[list(bloom_bits(_integer(value, self.low, self.high), self.hashes, self.filter_size))] = True
        return bits

    def __call__(self, value: Any, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        bloom = self.filter(value)
        shape = (_size(size), self.filter_size)
        u = rng.random(shape)
        permanent = np.where(u < self.f / 2.0, True, np.where(u < self.f, False, bloom))
        if not self.instantaneous:
            return permanent.astype(float)
        return (rng.random(shape) < np.where(permanent, self.q, self.p)).astype(float)

    def bit_probabilities(self) -> tuple[float, float]:
        """P[reported bit = 1] for a Bloom bit 1 and for a Bloom bit 0 (q* and p* of the paper)."""
        one, zero = 1.0 - self.f / 2.0, self.f / 2.0  # after the permanent response
        if not self.instantaneous:
            return one, zero
        return one * self.q + (1.0 - one) * self.p, zero * self.q + (1.0 - zero) * self.p

    def epsilon(self) -> float:
        """The paper's ε of one report, h·ln(q*(1 − p*) / (p*(1 − q*))) (its ε₁); for the permanent
        response alone q* = 1 − f/2 and p* = f/2 give its ε∞ = 2h·ln((1 − f/2)/(f/2))."""
        q_star, p_star = self.bit_probabilities()
        return self.hashes * math.log(q_star * (1.0 - p_star) / (p_star * (1.0 - q_star)))


@dataclass(frozen=True)
class Parallel:
    """The outputs of ``parts`` run on the same input with independent noise, side by side."""

    parts: tuple[Any, ...]

    def __call__(self, value: Any, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        size = _size(size)
        return np.hstack(
            [np.asarray(part(value, rng, size), dtype=float).reshape(size, -1) for part in self.parts]
        )


@dataclass(frozen=True)
class PrefixSum:
    """The running sums of the answers plus Laplace(``scale``) noise on each (Wang, Ding, Wang, Kifer &
    Zhang 2019)."""

    length: int
    scale: float

    def __call__(self, value: Any, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        queries = _queries(value, self.length)
        return np.cumsum(queries + rng.laplace(scale=self.scale, size=(_size(size), self.length)), axis=1)


@dataclass(frozen=True)
class NumericalSparseVector:
    """The numerical sparse vector (as Wang, Ding, Wang, Kifer & Zhang 2019 verify it):
    threshold noise Lap(``threshold_scale``), comparison noise Lap(``query_scale``), and for a query at
    or above the threshold a fresh release q_i + Lap(``release_scale``); ⊥ and aborted (after the
    ``cutoff``-th ⊤) as −1000 and −2000."""

    length: int
    threshold: float
    threshold_scale: float
    query_scale: float
    release_scale: float
    cutoff: int

    def __call__(self, value: Any, rng: np.random.Generator, size: int = 1) -> np.ndarray:
        queries = _queries(value, self.length)
        size = _size(size)
        rho = rng.laplace(scale=self.threshold_scale, size=(size, 1))
        above = (
            queries + rng.laplace(scale=self.query_scale, size=(size, self.length)) >= self.threshold + rho
        )
        released = queries + rng.laplace(scale=self.release_scale, size=(size, self.length))
        return _numeric_cut_off(above, released, self.cutoff)


@dataclass(frozen=True)
class BenchmarkMechanism:
    """One benchmark entry: the sampler and what the sources say about it."""

    name: str
    source: str
    claimed_epsilon: float
    correct: bool
    relation: str  # "linf" (ALL_DIFFER) or "one-differ" (ONE_DIFFER)
    length: int
    mechanism: Any = field(repr=False)
    true_epsilon: float | None
    note: str = ""
    published_bound: float | None = None  # DP-Sniper's published lower bound on this entry's ε

    def pairs(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """The StatDP / DP-Sniper input pairs of the relation around the all-ones vector."""
        patterns = Relation(self.relation, 1.0).patterns(np.ones(self.length))
        return tuple((a, b) for _, a, b in patterns)

    def pattern_names(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in Relation(self.relation, 1.0).patterns(np.ones(self.length)))


def _lyu(eps: float = 0.1, c: int = 2, t: float = 1.0, length: int = 10) -> list[BenchmarkMechanism]:
    source = "Lyu, Su & Li 2017, Alg. {}"
    half = eps / 2.0
    return [
        BenchmarkMechanism(
            "LyuSVT1",
            source.format(1),
            eps,
            True,
            "linf",
            length,
            SparseVector(length, t, 1.0 / half, 2.0 * c / half, c),
            eps,
        ),
        BenchmarkMechanism(
            "LyuSVT2",
            source.format(2),
            eps,
            True,
            "linf",
            length,
            SparseVector(length, t, c / half, 2.0 * c / half, c, resample=True),
            eps,
        ),
        BenchmarkMechanism(
            "LyuSVT3",
            source.format(3),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, t, 1.0 / half, c / half, c, numeric=True),
            math.inf,
            "releases the noisy query above the threshold; Table 1: not finite-ε DP (unbounded query "
            "sequences); on the all-below pair an output of m answered queries whose released values "
            "are all at most 0 has likelihood ratio e^(m/40) exactly, so ε ≥ 10/40 = 0.25 on ten queries",
        ),
        BenchmarkMechanism(
            "LyuSVT4",
            source.format(4),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, t, 4.0 / eps, 1.0 / (eps - eps / 4.0), c),
            (1 + 6 * c) / 4.0 * eps,
            "query noise does not scale with c; Table 1: ((1 + 6c)/4)·ε-DP",
        ),
        BenchmarkMechanism(
            "LyuSVT5",
            source.format(5),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, t, 1.0 / half, 0.0, None),
            math.inf,
            "no query noise: an X-shape pair gives an output impossible on the other input",
        ),
        BenchmarkMechanism(
            "LyuSVT6",
            source.format(6),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, t, 1.0 / half, 1.0 / half, None),
            math.inf,
            "no cutoff; Table 1: not finite-ε DP over unbounded query sequences",
        ),
    ]


def _statdp(eps: float = 0.1, n: int = 1, t: float = 1.0, length: int = 10) -> list[BenchmarkMechanism]:
    source = "Ding et al. 2018, {}"
    lengths = 5
    return [
        BenchmarkMechanism(
            "StatDP-SVT",
            source.format("SVT (Lyu et al. Alg. 1)"),
            eps,
            True,
            "linf",
            length,
            SparseVector(length, 0.5, 2.0 / eps, 4.0 * n / eps, n),
            eps,
        ),
        BenchmarkMechanism(
            "iSVT1",
            source.format("iSVT1 (Lyu et al. Alg. 5)"),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, t, 2.0 / eps, 0.0, None),
            math.inf,
            "no query noise: an X-shape pair gives an output impossible on the other input",
        ),
        BenchmarkMechanism(
            "iSVT2",
            source.format("iSVT2 (Lyu et al. Alg. 6)"),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, t, 2.0 / eps, 2.0 / eps, None),
            None,
            "no cutoff",
        ),
        BenchmarkMechanism(
            "iSVT3",
            source.format("iSVT3 (Lyu et al. Alg. 4)"),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, t, 4.0 / eps, 4.0 / (3.0 * eps), n, strict=True),
            (1 + 6 * n) / 4.0 * eps,
            "query noise does not scale with N; Lyu et al. Table 1: ((1 + 6c)/4)·ε-DP",
        ),
        BenchmarkMechanism(
            "iSVT4",
            source.format("iSVT4 (Lyu et al. Alg. 3)"),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, t, 2.0 / eps, 2.0 * n / eps, n, strict=True, numeric=True),
            None,
            "releases the noisy query above the threshold",
        ),
        BenchmarkMechanism(
            "NoisyMax-Laplace",
            source.format("report noisy max, Laplace (Alg. 5)"),
            eps,
            True,
            "linf",
            lengths,
            NoisyMax(lengths, 2.0 / eps),
            eps,
        ),
        BenchmarkMechanism(
            "NoisyMax-Exponential",
            source.format("report noisy max, exponential (Alg. 6)"),
            eps,
            True,
            "linf",
            lengths,
            NoisyMax(lengths, 2.0 / eps, "exponential"),
            eps,
        ),
        BenchmarkMechanism(
            "NoisyMaxValue-Laplace",
            source.format("noisy max value, Laplace (Alg. 7)"),
            eps,
            False,
            "linf",
            lengths,
            NoisyMax(lengths, 2.0 / eps, value=True),
            lengths * eps / 2.0,
            "the max of L Laplace(2/ε) values shifted by 1: density ratio at most e^(Lε/2), reached in "
            "the lower tail of the all-above pair",
        ),
        BenchmarkMechanism(
            "NoisyMaxValue-Exponential",
            source.format("noisy max value, exponential (Alg. 8)"),
            eps,
            False,
            "linf",
            lengths,
            NoisyMax(lengths, 2.0 / eps, "exponential", value=True),
            math.inf,
            "outputs below max(q) + 0 are impossible: the all-above pair has disjoint lower supports",
        ),
        BenchmarkMechanism(
            "NoisyHist1",
            source.format("histogram, Laplace(1/ε)"),
            eps,
            True,
            "one-differ",
            lengths,
            NoisyHistogram(lengths, 1.0 / eps),
            eps,
        ),
        BenchmarkMechanism(
            "NoisyHist2",
            source.format("histogram, Laplace(ε)"),
            eps,
            False,
            "one-differ",
            lengths,
            NoisyHistogram(lengths, eps),
            1.0 / eps,
            "noise scale ε instead of 1/ε: the Laplace mechanism with ε' = 1/ε",
        ),
    ]


def _dpsniper(eps: float = 0.1, c: int = 1, length: int = 10) -> list[BenchmarkMechanism]:
    """Lyu et al. Algs 1–6 as DP-Sniper's evaluation runs them (c = 1; Alg. 1 with T = 0.5, the others
    with T = 1), with the lower bounds DP-Sniper published for them (logistic-regression classifier,
    2·10⁸ final draws per input, confidence 0.9)."""
    source = "Lyu, Su & Li 2017, Alg. {} (c = 1, as in Bichsel et al. 2021)"
    half = eps / 2.0
    same = "same output distribution as {} (same noise scales and threshold; > and >= differ on a null set)"
    return [
        BenchmarkMechanism(
            "DPSniper-SVT1",
            source.format(1),
            eps,
            True,
            "linf",
            length,
            SparseVector(length, 0.5, 1.0 / half, 2.0 * c / half, c),
            eps,
            same.format("StatDP-SVT"),
            0.0858,
        ),
        BenchmarkMechanism(
            "DPSniper-SVT2",
            source.format(2),
            eps,
            True,
            "linf",
            length,
            SparseVector(length, 1.0, c / half, 2.0 * c / half, c, resample=True),
            eps,
            "with c = 1 the run stops at the first ⊤, so the fresh threshold is never compared",
            0.0859,
        ),
        BenchmarkMechanism(
            "DPSniper-SVT3",
            source.format(3),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, 1.0, 1.0 / half, c / half, c, numeric=True),
            math.inf,
            same.format("iSVT4")
            + "; on the all-below pair an output of m answered queries whose released value is at most 0 "
            "has likelihood ratio e^(m/20) exactly, so ε ≥ 10/20 = 0.5 on ten queries",
            0.1716,
        ),
        BenchmarkMechanism(
            "DPSniper-SVT4",
            source.format(4),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, 1.0, 4.0 / eps, 1.0 / (eps - eps / 4.0), c),
            (1 + 6 * c) / 4.0 * eps,
            same.format("iSVT3") + "; Table 1: ((1 + 6c)/4)·ε-DP",
            0.1687,
        ),
        BenchmarkMechanism(
            "DPSniper-SVT5",
            source.format(5),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, 1.0, 1.0 / half, 0.0, None),
            math.inf,
            same.format("LyuSVT5 and iSVT1") + " (no cutoff: c is not used)",
            1.7612,
        ),
        BenchmarkMechanism(
            "DPSniper-SVT6",
            source.format(6),
            eps,
            False,
            "linf",
            length,
            SparseVector(length, 1.0, 1.0 / half, 1.0 / half, None),
            math.inf,
            same.format("LyuSVT6 and iSVT2") + " (no cutoff: c is not used)",
            0.2720,
        ),
    ]


def _dpsniper_others(eps: float = 0.1) -> list[BenchmarkMechanism]:
    """The other mechanisms of DP-Sniper's default experiment (Bichsel et al. 2021, exp_default.py), with
    their class defaults and input patterns, and the lower bounds DP-Sniper published for them
    (logistic regression; the MLP run's bound is in the note)."""
    same = "same output distribution as {} (same noise and pairs)"
    published = "DP-Sniper's MLP bound {}; StatDP's (two runs, DP-Sniper's logs) {}"
    alpha = 2**3 / (2**3 + 1)  # DP-Sniper's k = ⌈ln(2/ε)⌉ = 3 at ε = 0.1
    rappor = Rappor(0.75, 0.45, 0.55)
    one_time = Rappor(0.95, instantaneous=False)
    per_bit = math.log(rappor.bit_probabilities()[0] / rappor.bit_probabilities()[1])
    per_bit_once = math.log(one_time.bit_probabilities()[0] / one_time.bit_probabilities()[1])
    svt3 = SparseVector(10, 1.0, 2.0 / eps, 2 * 2.0 / eps, 2, numeric=True)  # LyuSVT3, c = 2
    svt4 = SparseVector(10, 1.0, 4.0 / eps, 1.0 / (eps - eps / 4.0), 2)  # LyuSVT4, c = 2
    statdp = "Ding et al. 2018, {} (as in Bichsel et al. 2021)"
    return [
        BenchmarkMechanism(
            "DPSniper-Laplace",
            "Dwork, McSherry, Nissim & Smith 2006, Laplace mechanism (as in Bichsel et al. 2021)",
            eps,
            True,
            "one-differ",
            1,
            LaplaceCopies(1.0 / eps),
            eps,
            "one answer plus Lap(1/ε); DP-Sniper's pairs [1] against [0] and [2]; "
            + published.format("0.0976", "0.0998, 0.0996"),
            0.0968,
        ),
        BenchmarkMechanism(
            "DPSniper-TruncatedGeometric",
            "Balcer & Vadhan 2018, Alg. 4.8 GeoSample (Ghosh, Roughgarden & Sundararajan 2009's truncated "
            "geometric), as in Bichsel et al. 2021",
            math.log(1.0 / alpha),
            True,
            "one-differ",
            1,
            TruncatedGeometric(5, alpha),
            math.log(1.0 / alpha),
            "n = 5; DP-Sniper's class takes ε = 0.1 but sets k = ⌈ln(2/ε)⌉ = 3 with the natural log, so "
            "P[z] ∝ (8/9)^|z − c| and the guarantee its docstring states, ln(1 + 2^−k) = ln(9/8) ≈ 0.1178, "
            "is the claim here (every output of the pairs [1], [0] and [1], [2] has likelihood ratio 9/8 "
            "exactly, so the true ε is ln(9/8)); against ε = 0.1 the class would be a violation; "
            + published.format("0.1155", "0.1159, 0.1169"),
            0.1156,
        ),
        BenchmarkMechanism(
            "DPSniper-NoisyHist1",
            statdp.format("histogram, Laplace(1/ε) (Alg. 9)"),
            eps,
            True,
            "one-differ",
            5,
            NoisyHistogram(5, 1.0 / eps),
            eps,
            same.format("NoisyHist1") + "; " + published.format("0.0977", "0.0828, 0.0994"),
            0.0978,
        ),
        BenchmarkMechanism(
            "DPSniper-NoisyHist2",
            statdp.format("histogram, Laplace(ε) (Alg. 10)"),
            eps,
            False,
            "one-differ",
            5,
            NoisyHistogram(5, eps),
            1.0 / eps,
            same.format("NoisyHist2")
            + "; the Laplace mechanism with ε' = 1/ε; DP-Sniper's bound is capped near ln(1/0.01) = 4.6 by "
            "its least estimated probability c = 0.01; " + published.format("4.6015", "9.717, 10.002"),
            4.6020,
        ),
        BenchmarkMechanism(
            "DPSniper-ReportNoisyMax1",
            statdp.format("report noisy max, Laplace (Alg. 5)"),
            eps,
            True,
            "linf",
            5,
            NoisyMax(5, 2.0 / eps),
            eps,
            same.format("NoisyMax-Laplace") + "; " + published.format("0.0925", "0.0920, 0.0921"),
            0.0923,
        ),
        BenchmarkMechanism(
            "DPSniper-ReportNoisyMax2",
            statdp.format("report noisy max, exponential (Alg. 6)"),
            eps,
            True,
            "linf",
            5,
            NoisyMax(5, 2.0 / eps, "exponential"),
            eps,
            same.format("NoisyMax-Exponential") + "; " + published.format("0.0979", "0.0996, 0.0997"),
            0.0975,
        ),
        BenchmarkMechanism(
            "DPSniper-ReportNoisyMax3",
            statdp.format("noisy max value, Laplace (Alg. 7)"),
            eps,
            False,
            "linf",
            5,
            NoisyMax(5, 2.0 / eps, value=True),
            5 * eps / 2.0,
            same.format("NoisyMaxValue-Laplace")
            + "; on the all-above pair the event {max < q} has likelihood ratio e^(5ε/2) exactly; "
            + published.format("0.2488", "0.1991, 0.1961"),
            0.2478,
        ),
        BenchmarkMechanism(
            "DPSniper-ReportNoisyMax4",
            statdp.format("noisy max value, exponential (Alg. 8)"),
            eps,
            False,
            "linf",
            5,
            NoisyMax(5, 2.0 / eps, "exponential", value=True),
            math.inf,
            same.format("NoisyMaxValue-Exponential")
            + "; outputs in [q, q + 1) are impossible on q + 1 (all-above pair), but have probability "
            "(1 − e^(−1/20))^5 ≈ 2.8·10⁻⁷ on q; " + published.format("0.3534", "0.1960, 0.1988"),
            0.3463,
        ),
        BenchmarkMechanism(
            "DPSniper-Rappor",
            "Erlingsson, Pihur & Korolova 2014, RAPPOR steps 1–3 (as in Bichsel et al. 2021)",
            rappor.epsilon(),
            True,
            "one-differ",
            1,
            rappor,
            rappor.epsilon(),
            "h = 4 hashes, 20 bits, f = 0.75, p = 0.45, q = 0.55; the claim is the paper's ε₁ = "
            "h·ln(q*(1 − p*)/(p*(1 − q*))) = 8·ln(0.5125/0.4875) ≈ 0.4001, reached on [3] against [4] "
            "(eight bits differ); on DP-Sniper's pairs [1], [0] and [1], [2] six and five Bloom bits "
            f"differ, so ε there is 6·{per_bit:.5f} ≈ {6 * per_bit:.4f}; "
            + published.format("0.3008 (above 0.3001)", "0.2416, 0.0243"),
            0.2930,
        ),
        BenchmarkMechanism(
            "DPSniper-OneTimeRappor",
            "Erlingsson, Pihur & Korolova 2014, RAPPOR steps 1–2 (as in Bichsel et al. 2021)",
            one_time.epsilon(),
            True,
            "one-differ",
            1,
            one_time,
            one_time.epsilon(),
            "h = 4 hashes, 20 bits, f = 0.95, the permanent response only; the claim is the paper's "
            "ε∞ = 2h·ln((1 − f/2)/(f/2)) = 8·ln(0.525/0.475) ≈ 0.8007, reached on [3] against [4]; on "
            f"DP-Sniper's pairs six bits differ: 6·{per_bit_once:.5f} ≈ {6 * per_bit_once:.4f}; "
            + published.format("0.5999", "0.4706, 0.0602"),
            0.5978,
        ),
        BenchmarkMechanism(
            "DPSniper-LaplaceParallel",
            "Laplace mechanism run 20 times (Bichsel et al. 2021, LaplaceParallel)",
            eps,
            True,
            "one-differ",
            1,
            LaplaceCopies(1.0 / 0.005, 20),
            eps,
            "20 independent releases of one answer with Lap(1/0.005): 20·0.005 = 0.1 by composition, "
            "reached when every release lies below both inputs; "
            + published.format("0.0299", "0.0126, 0.0135"),
            0.0350,
        ),
        BenchmarkMechanism(
            "DPSniper-SVT34Parallel",
            "Lyu, Su & Li 2017, Algs 3 and 4 run side by side (c = 2, Bichsel et al. 2021, SVT34Parallel)",
            eps,
            False,
            "linf",
            10,
            Parallel((svt3, svt4)),
            math.inf,
            "LyuSVT3's and LyuSVT4's outputs on the same input with independent noise (20 columns); "
            "Alg. 3 alone has ε ≥ 0.25 on ten queries and no finite ε over unbounded query sequences; "
            + published.format("0.2616", "0.137, 0.196"),
            0.2610,
        ),
        BenchmarkMechanism(
            "DPSniper-PrefixSum",
            "Wang, Ding, Wang, Kifer & Zhang 2019, PrefixSum (as in Bichsel et al. 2021)",
            eps,
            False,
            "linf",
            10,
            PrefixSum(10, 1.0 / eps),
            10 * eps,
            "the running sums of the ten answers plus Lap(1/ε) each, run by DP-Sniper on linf pairs: the "
            "sums determine the noisy answers, whose likelihood ratio on the all-above pair is e^(10ε) "
            "exactly when every noisy answer lies below the lower input, so ε = 10ε = 1 (ε-DP when one "
            "answer moves, one-differ); " + published.format("0.5774", "0.3516, 0.3446"),
            0.5040,
        ),
        BenchmarkMechanism(
            "DPSniper-NumericalSVT",
            "Wang, Ding, Wang, Kifer & Zhang 2019, numerical sparse vector (as in Bichsel et al. 2021)",
            eps,
            True,
            "linf",
            10,
            NumericalSparseVector(10, 1.0, 3.0 / eps, 6.0 * 2 / eps, 3.0 * 2 / eps, 2),
            eps,
            "c = 2, T = 1: threshold noise Lap(3/ε), comparison noise Lap(6c/ε), release Lap(3c/ε) "
            "(ε/3 each); DP-Sniper codes ⊥ as 0 and aborted as −1000, here −1000 and −2000 (a relabelling); "
            "the stated ε is an upper bound; DP-Sniper's MLP bound 0.0345 (no StatDP result in the logs)",
            0.0343,
        ),
    ]


def _checkdp(eps: float = 0.1, n: int = 1, t: float = 1.0, length: int = 10) -> list[BenchmarkMechanism]:
    return [
        BenchmarkMechanism(
            "BadGapSparseVector",
            "Wang et al. 2020 (CheckDP), BadGapSparseVector",
            eps,
            False,
            "linf",
            length,
            SparseVector(length, t, 2.0 / eps, 4.0 * n / eps, n, numeric=True),
            None,
            "releases q_i + η_i (not the gap) above the threshold; on the all-below pair an output of "
            "k ⊥ then a released value x ≤ 0 has likelihood ratio e^((k+1)/40) exactly, so ε ≥ 10/40 = "
            "0.25 on ten queries",
        ),
    ]


def benchmark_mechanisms() -> tuple[BenchmarkMechanism, ...]:
    """All benchmark entries: Lyu et al. Algs 1–6, StatDP's set, CheckDP's BadGapSparseVector, Lyu et
    al. Algs 1–6 with DP-Sniper's parameters, and the other mechanisms of DP-Sniper's evaluation."""
    return tuple(_lyu() + _statdp() + _checkdp() + _dpsniper() + _dpsniper_others())


def benchmark_mechanism(name: str) -> BenchmarkMechanism:
    """The entry called ``name``."""
    entries = {entry.name: entry for entry in benchmark_mechanisms()}
    if name not in entries:
        raise InvalidParameter("name", name, ", ".join(entries))
    return entries[name]
