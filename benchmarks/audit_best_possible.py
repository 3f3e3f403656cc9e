"""The best lower bound any event can give at a given number of evaluation draws, for three of
DP-Sniper's benchmark mechanisms whose likelihood ratio has a computable form: the numerical sparse
vector (Wang, Ding, Wang, Kifer & Zhang 2019; DP-Sniper's NumericalSVT), Lyu, Su & Li 2017's
Algorithms 3 and 4 run side by side (DP-Sniper's SVT34Parallel), and twenty Laplace releases of one
answer (DP-Sniper's LaplaceParallel).

Run as ``python benchmarks/audit_best_possible.py [--draws N] [--only NAME,...] [--seed S]
[--patterns-only] [--part K] [--rule-draws H [--rule-seeds R]]``; prints a markdown section for
``benchmarks/RESULTS.md``.  ``--part K``: for mechanisms side by side, the K-th part's outputs alone.
``--rule-draws H``: also, on the best pair, the bound of the event that the audits' threshold rule
(:func:`dpcert.audits.classifier_search.choose_event`) chooses on H held-out draws per input when its
score is the exact log ratio, for R seeds: what a search with a perfect scorer reaches at that many
held-out draws.

For each input pair (a, b) of the entry's relation, the log likelihood ratio ``L(o) = ln p_a(o)/p_b(o)``
of an output is computed from the mechanism's definition:

* a sparse vector's answers share one threshold noise ρ, so the probability of its pattern of ⊤, ⊥ and
  aborted answers is a one-dimensional integral over ρ of the answers' comparison probabilities
  (computed once per pattern by the trapezoid rule on a grid of ρ);
* a value released by the numerical sparse vector is the query plus fresh Laplace noise, whose density
  ratio multiplies the pattern's;
* a value released by Lyu et al.'s Algorithm 3 is the compared noisy query itself, so the pattern's
  integral runs over ρ ≤ (the least released value − T), tabulated as a function of that bound;
* the two algorithms side by side draw independent noise: their log ratios add;
* DP-Sniper's LaplaceParallel releases one answer 20 times with independent Laplace noise: the
  releases' density ratios multiply.

Among all events, those of the form ``{L ≥ t}`` (and ``{L ≤ t}`` with b as numerator) give the most
probability under the numerator for a given probability under the denominator (Neyman & Pearson
1933), so the best bound at n evaluation draws is the largest, over t, of the Clopper–Pearson bound
(union bound, α/2 on each side, as ``dpcert.audits`` computes it) at the expected counts n·P_a and n·P_b.
P_a and P_b are estimated from N draws on the numerator's input, the denominator's probability as
``E[1{o ∈ S} e^{−L(o)}]`` on the same draws, so that the ratio's sampling error is small.
``E_a[e^{−L}]`` and ``E_b[e^{L}]`` (both 1 when L is right) are printed as a check, and for outputs of
patterns only, the patterns' probabilities must add up to 1.
Events are whole sets of draws above a threshold (no randomised tie at the threshold, which could only
add a little). The probabilities are estimates from N draws and the best threshold is chosen on them,
so the best value carries their sampling error, slightly optimistic; compare two values of N.
"""

from __future__ import annotations

import argparse
import itertools
import math
import subprocess
import sys
import time

import numpy as np
from scipy import stats

from dpcert.audits.benchmark_mechanisms import (
    ABORTED_VALUE,
    FALSE_VALUE,
    LaplaceCopies,
    NumericalSparseVector,
    Parallel,
    SparseVector,
    benchmark_mechanism,
)
from dpcert.audits.classifier_search import choose_event

NAMES = ("DPSniper-NumericalSVT", "DPSniper-SVT34Parallel", "DPSniper-LaplaceParallel")
STEP = 0.01  # grid step of the threshold noise ρ
SETTINGS = ((6_000_000, 0.95), (10_000_000, 0.9))  # (evaluation draws, confidence) compared
CHUNK = 1_000_000


def _log_laplace_cdf(x: np.ndarray, scale: float) -> np.ndarray:
    """ln P(Lap(scale) < x)."""
    return np.where(x < 0, math.log(0.5) + x / scale, np.log1p(-0.5 * np.exp(-np.abs(x) / scale)))


def _log_laplace_sf(x: np.ndarray, scale: float) -> np.ndarray:
    """ln P(Lap(scale) ≥ x)."""
    return _log_laplace_cdf(-x, scale)


def _released(outputs: np.ndarray) -> np.ndarray:
    """Which answers of numeric outputs are released values (neither ⊥ nor aborted)."""
    return (outputs != FALSE_VALUE) & (outputs != ABORTED_VALUE)


def patterns(length: int, cutoff: int) -> list[tuple[int, ...]]:
    """The positions of the ⊤ answers of every output pattern (at most ``cutoff``; after the
    ``cutoff``-th ⊤ every answer is aborted)."""
    out: list[tuple[int, ...]] = []
    for count in range(cutoff + 1):
        out.extend(itertools.combinations(range(length), count))
    return out


def _evaluated(top: tuple[int, ...], length: int, cutoff: int) -> range:
    return range(top[-1] + 1) if len(top) == cutoff else range(length)


class PatternPart:
    """A sparse vector's answers compared with one noisy threshold: ``T + Lap(threshold_scale)`` against
    ``q_i + Lap(query_scale)``.  With ``released`` (Lyu et al.'s Algorithm 3) a ⊤ answer releases the
    compared noisy query, otherwise (numerical sparse vector, Algorithm 4) only the pattern counts
    here."""

    def __init__(self, svt: SparseVector | NumericalSparseVector, queries: np.ndarray) -> None:
        self.length, self.threshold, self.cutoff = svt.length, svt.threshold, svt.cutoff
        self.released = isinstance(svt, SparseVector) and svt.numeric
        self.numeric_output = isinstance(svt, NumericalSparseVector) or self.released
        scale_t, scale_q = svt.threshold_scale, svt.query_scale
        reach = 45.0 * scale_t  # the integrand is at most the threshold noise's density
        rho = np.arange(-reach, reach + STEP / 2, STEP)
        self.rho = rho
        log_density = -np.abs(rho) / scale_t - math.log(2.0 * scale_t)
        self.patterns = patterns(self.length, self.cutoff)
        self.index = {top: k for k, top in enumerate(self.patterns)}
        below = [_log_laplace_cdf(self.threshold + rho - q, scale_q) for q in queries]
        above = [_log_laplace_sf(self.threshold + rho - q, scale_q) for q in queries]
        self.log_probability = np.empty(len(self.patterns))  # patterns only
        self.log_cumulative: list[np.ndarray] = []  # released: ln ∫_{-∞}^{ρ_j} ... at every grid point
        for k, top in enumerate(self.patterns):
            log_integrand = log_density.copy()
            for i in _evaluated(top, self.length, self.cutoff):
                if i in top:
                    if not self.released:
                        log_integrand += above[i]
                else:
                    log_integrand += below[i]
            peak = float(log_integrand.max())
            values = np.exp(log_integrand - peak)
            if self.released:
                cumulative = np.concatenate([[0.0], np.cumsum((values[1:] + values[:-1]) * (STEP / 2))])
                with np.errstate(divide="ignore"):
                    self.log_cumulative.append(np.log(cumulative) + peak)
            else:
                total = float(np.sum((values[1:] + values[:-1]) * (STEP / 2)))
                self.log_probability[k] = math.log(total) + peak

    def pattern_ids(self, outputs: np.ndarray) -> np.ndarray:
        """Each output's pattern (index into :attr:`patterns`)."""
        if self.numeric_output:
            top = _released(outputs)
        else:
            top = outputs == 1.0
        ids = np.empty(outputs.shape[0], dtype=np.int64)
        counts = top.sum(axis=1)
        if counts.max() > self.cutoff:
            raise RuntimeError("more ⊤ answers than the cutoff allows")
        first = np.argmax(top, axis=1)
        masked = top.copy()
        masked[np.arange(outputs.shape[0]), first] = False
        second = np.argmax(masked, axis=1)
        for k, top_set in enumerate(self.patterns):
            if len(top_set) == 0:
                chosen = counts == 0
            elif len(top_set) == 1:
                chosen = (counts == 1) & (first == top_set[0])
            else:
                chosen = (counts == 2) & (first == top_set[0]) & (second == top_set[1])
            ids[chosen] = k
        return ids

    def log_probability_of(self, outputs: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """ln of the pattern's probability (patterns only), or of the ρ-integral up to the least released
        value − T (released values; their densities are added by the caller)."""
        if not self.released:
            return self.log_probability[ids]
        top = _released(outputs)
        least = np.where(top, outputs, np.inf).min(axis=1)
        bound = np.clip(least - self.threshold, self.rho[1], self.rho[-1])  # ρ below −45 scales: never drawn
        out = np.empty(outputs.shape[0])
        for k in np.unique(ids):
            rows = ids == k
            out[rows] = np.interp(bound[rows], self.rho, self.log_cumulative[k])
        return out


def _released_log_density(outputs: np.ndarray, queries: np.ndarray, scale: float) -> np.ndarray:
    """Σ over released answers of ln Lap(scale) density of (value − query), up to the constant."""
    top = _released(outputs)
    return np.where(top, -np.abs(outputs - queries) / scale, 0.0).sum(axis=1)


class LogRatio:
    """``L(o) = ln p_a(o) − ln p_b(o)`` for one of the mechanisms of :data:`NAMES` (or one part of
    mechanisms side by side) on one pair."""

    def __init__(self, mechanism: object, a: np.ndarray, b: np.ndarray, values: bool = True) -> None:
        self.a, self.b, self.values = a, b, values
        self.laplace = mechanism if isinstance(mechanism, LaplaceCopies) else None
        if self.laplace is not None:  # independent Laplace releases: their density ratios multiply
            self.parts, self.tables = [], []
            return
        self.parts = list(mechanism.parts) if isinstance(mechanism, Parallel) else [mechanism]
        self.tables = [(PatternPart(part, a), PatternPart(part, b)) for part in self.parts]

    def check_total(self) -> float:
        """Largest |Σ_patterns P(pattern) − 1| over the pattern-only parts and both inputs."""
        worst = 0.0
        for table_a, table_b in self.tables:
            for table in (table_a, table_b):
                if not table.released:
                    worst = max(worst, abs(float(np.exp(table.log_probability).sum()) - 1.0))
        return worst

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        if self.laplace is not None:
            values = outputs.reshape(outputs.shape[0], -1)
            a, b = float(np.ravel(self.a)[0]), float(np.ravel(self.b)[0])
            return ((np.abs(values - b) - np.abs(values - a)) / self.laplace.scale).sum(axis=1)
        total = np.zeros(outputs.shape[0])
        column = 0
        for part, (table_a, table_b) in zip(self.parts, self.tables, strict=True):
            block = outputs[:, column : column + part.length]
            column += part.length
            ids = table_a.pattern_ids(block)
            total += table_a.log_probability_of(block, ids) - table_b.log_probability_of(block, ids)
            if not self.values:  # the pattern's ratio alone (the released values' term left out)
                continue
            if isinstance(part, NumericalSparseVector):
                scale = part.release_scale
            elif table_a.released:
                scale = part.query_scale
            else:
                continue
            total += _released_log_density(block, self.a, scale) - _released_log_density(block, self.b, scale)
        return total


def _draw_log_ratios(
    mechanism: object, value: np.ndarray, ratio: LogRatio, draws: int, seed: int
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty(draws)
    for start in range(0, draws, CHUNK):
        size = min(CHUNK, draws - start)
        outputs = np.asarray(mechanism(value, rng, size=size), dtype=float)
        out[start : start + size] = ratio(outputs)
    return out


def expected_bound(p_num: np.ndarray, p_den: np.ndarray, draws: int, confidence: float) -> np.ndarray:
    """The Clopper–Pearson bound (union bound, α/2 each side) of events of probabilities ``p_num`` and
    ``p_den`` at the expected counts of ``draws`` evaluation draws per input."""
    alpha = 1.0 - confidence
    k_num = np.round(p_num * draws)
    k_den = np.round(p_den * draws)
    lower = stats.beta.ppf(alpha / 2.0, k_num, draws - k_num + 1.0)
    upper = np.where(k_den >= draws, 1.0, stats.beta.ppf(1.0 - alpha / 2.0, k_den + 1.0, draws - k_den))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(k_num > 0, np.log(lower / upper), -np.inf)


def best_bound(
    numerator_ratios: np.ndarray, draws: int, confidence: float
) -> tuple[float, float, float, float]:
    """(bound, t, P_numerator, P_denominator) of the best event {L ≥ t}, from log ratios L of draws on
    the numerator's input (the denominator's probability estimated as the mean of 1{L ≥ t} e^{−L})."""
    order = np.sort(numerator_ratios)[::-1]
    count = order.shape[0]
    p_num = np.arange(1, count + 1) / count
    p_den = np.cumsum(np.exp(-order)) / count
    # the last draw of each run of equal values: whole sets of outputs above a threshold
    last = np.flatnonzero(np.append(order[1:] != order[:-1], True))
    keep = last[:: max(1, last.shape[0] // 200_000)]
    bound = expected_bound(p_num[keep], p_den[keep], draws, confidence)
    best = int(np.nanargmax(bound))
    index = keep[best]
    return float(bound[best]), float(order[index]), float(p_num[index]), float(p_den[index])


def rule_bounds(
    numerator_ratios: np.ndarray,
    denominator_ratios: np.ndarray,
    held: tuple[np.ndarray, np.ndarray],
    draws: int,
    confidence: float,
) -> float:
    """The bound at the expected counts of the event the audits' threshold rule
    (:func:`dpcert.audits.classifier_search.choose_event`) chooses when its score is the exact log ratio
    L, from ``held`` (L of held-out draws on a and on b); the event's probabilities estimated on the N
    draws (``numerator_ratios``: L on a's draws, ``denominator_ratios``: L on b's)."""
    choice = choose_event(*held, draws, 0.0, confidence)
    if choice.numerator == "a":
        scores, weights = numerator_ratios, np.exp(-numerator_ratios)
    else:  # the score is −L; b's draws estimate P_b directly and P_a with the weights e^L
        scores, weights = -denominator_ratios, np.exp(denominator_ratios)
    inside = (scores > choice.threshold) + choice.tie * (scores == choice.threshold)
    p_num, p_den = float(np.mean(inside)), float(np.mean(inside * weights))
    return float(expected_bound(np.array([p_num]), np.array([p_den]), draws, confidence)[0])


def analyse(
    name: str,
    draws: int,
    seed: int,
    values: bool = True,
    part: int | None = None,
    rule: tuple[int, int] = (0, 0),
) -> list[str]:
    """The markdown lines for one mechanism (its ``part``-th part alone, for mechanisms side by side);
    ``rule``: (held-out draws per input, seeds) of :func:`rule_bounds` on the best pair, (0, 0) for
    none."""
    entry = benchmark_mechanism(name)
    mechanism = entry.mechanism
    if part is not None:  # checked by main before any work
        assert isinstance(mechanism, Parallel)
        mechanism = mechanism.parts[part]
    lines = []
    results = []
    ratios = {}
    for pattern, (a, b) in zip(entry.pattern_names(), entry.pairs(), strict=True):
        start = time.process_time()
        forward = LogRatio(mechanism, a, b, values)
        on_a = _draw_log_ratios(mechanism, a, forward, draws, seed)
        on_b = _draw_log_ratios(mechanism, b, forward, draws, seed + 1)
        ratios[pattern] = (forward, a, b, on_a, on_b)
        check_a = float(np.mean(np.exp(-on_a)))
        check_b = float(np.mean(np.exp(on_b)))
        cells = []
        for evaluation, confidence in SETTINGS:
            bound_a = best_bound(on_a, evaluation, confidence)
            bound_b = best_bound(-on_b, evaluation, confidence)
            best = max(bound_a, bound_b)
            cells.append(f"{best[0]:.4f} ({'a' if best is bound_a else 'b'}, P {best[2]:.3g})")
            results.append((best[0], evaluation, confidence, pattern))
        seconds = time.process_time() - start
        lines.append(
            f"| {pattern} | {' | '.join(cells)} | {float(np.max(np.abs(on_a))):.4f} | "
            f"{check_a:.5f}, {check_b:.5f} | {forward.check_total():.1e} | {seconds:.0f} s |"
        )
    settings = [f"best at {draws:.0e} draws, {confidence}" for draws, confidence in SETTINGS]
    what = "" if part is None else f", part {part} alone ({type(mechanism).__name__})"
    head = [
        f"### {name}{what}{'' if values else ', patterns alone'} "
        f"(DP-Sniper's published bound {entry.published_bound})",
        "",
        f"| pair | {' | '.join(settings)} | max \\|L\\| seen | E_a[e^(−L)], E_b[e^L] "
        "| patterns' total − 1 | CPU |",
        "|---|---|---|---|---|---|---|",
    ]
    summary = []
    for evaluation, confidence in SETTINGS:
        top = max(r for r in results if r[1] == evaluation and r[2] == confidence)
        summary.append(
            f"best over the pairs at {evaluation:.0e} draws and confidence {confidence}: "
            f"{top[0]:.4f} ({top[3]})"
        )
    held, rule_seeds = rule
    if rule_seeds:
        evaluation, confidence = SETTINGS[0]
        top = max(r for r in results if r[1] == evaluation and r[2] == confidence)
        forward, a, b, on_a, on_b = ratios[top[3]]
        bounds = []
        for k in range(rule_seeds):
            held_a = _draw_log_ratios(mechanism, a, forward, held, seed + 1000 + 2 * k)
            held_b = _draw_log_ratios(mechanism, b, forward, held, seed + 1001 + 2 * k)
            bounds.append(rule_bounds(on_a, on_b, (held_a, held_b), evaluation, confidence))
        summary.append(
            f"the threshold rule with the exact log ratio as its score, on {held:.3g} held-out draws per "
            f"input ({top[3]}, {rule_seeds} seeds): {', '.join(f'{v:.4f}' for v in bounds)}; median "
            f"{float(np.median(bounds)):.4f}"
        )
    return [*head, *lines, "", *(f"- {s}" for s in summary), ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=20_000_000, help="draws per input for the estimates")
    parser.add_argument("--only", default=",".join(NAMES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--patterns-only",
        action="store_true",
        help="leave the released values' term out of L: the best event on the ⊤/⊥/aborted pattern alone",
    )
    parser.add_argument("--part", type=int, help="mechanisms side by side: this part's outputs alone (0, 1)")
    parser.add_argument(
        "--rule-draws",
        type=int,
        default=0,
        help="held-out draws per input for the threshold rule with the exact log ratio (0: not run)",
    )
    parser.add_argument("--rule-seeds", type=int, default=6)
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    for name in names:
        if name not in NAMES:
            parser.error(f"--only: one of {', '.join(NAMES)}")
    if args.draws < 1000:
        parser.error("--draws: at least 1000")
    if args.rule_draws < 0 or args.rule_seeds < 1:
        parser.error("--rule-draws: 0 or more; --rule-seeds: at least 1")
    for name in names if args.part is not None else ():
        mechanism = benchmark_mechanism(name).mechanism
        if not isinstance(mechanism, Parallel) or not 0 <= args.part < len(mechanism.parts):
            parser.error(f"--part: {name} has no part {args.part} (only mechanisms side by side have parts)")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(
        f"Command: `python benchmarks/audit_best_possible.py --draws {args.draws} --only {','.join(names)} "
        f"--seed {args.seed}{' --patterns-only' if args.patterns_only else ''}"
        f"{'' if args.part is None else f' --part {args.part}'}"
        f"{f' --rule-draws {args.rule_draws} --rule-seeds {args.rule_seeds}' if args.rule_draws else ''}`; "
        f"start: {uptime}"
    )
    print()
    rule = (args.rule_draws, args.rule_seeds if args.rule_draws else 0)
    for name in names:
        print("\n".join(analyse(name, args.draws, args.seed, not args.patterns_only, args.part, rule)))
    print(f"end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
