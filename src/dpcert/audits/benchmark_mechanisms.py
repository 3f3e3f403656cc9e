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
    """All benchmark entries: Lyu et al. Algs 1–6, StatDP's set, CheckDP's BadGapSparseVector, and Lyu
    et al. Algs 1–6 with DP-Sniper's parameters."""
    return tuple(_lyu() + _statdp() + _checkdp() + _dpsniper())


def benchmark_mechanism(name: str) -> BenchmarkMechanism:
    """The entry called ``name``."""
    entries = {entry.name: entry for entry in benchmark_mechanisms()}
    if name not in entries:
        raise InvalidParameter("name", name, ", ".join(entries))
    return entries[name]
