"""The "claims" table every reproduction writes next to its outputs: claim | holds? | numbers | command.

Each row states one claim of the paper (or one finding the run tests), whether the run's numbers
support it, the numbers themselves and the command that regenerates them.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert import provenance
from dpcert.errors import InvalidParameter
from dpcert.provenance import Recorder

MIN_RUNS = 5
"""Fewest paired runs on which a comparative claim gets a verdict; below it the row reads
``"not resolved (n = N < 5 runs)"``.  Five runs give the paired t-test four degrees of freedom: the
sample standard deviation of the differences is then within a factor 2.4 of the true one with
probability 0.9 (χ²₄ quantiles 0.711 and 9.49), against a factor 16 with two runs (one degree of
freedom), where a verdict would rest on an unknown spread."""

ALPHA = 0.05
"""Level of every comparative verdict (each wrong verdict has probability at most ``ALPHA``)."""

COMPARISONS = ("first < second", "first > second", "first ≈ second")
"""The comparative claims :func:`paired_verdict` decides."""

HOLDS, DOES_NOT_HOLD, NOT_RESOLVED = "holds", "does not hold", "not resolved"


@dataclass(frozen=True)
class Claim:
    """One row of a claims table.

    Attributes
    ----------
    claim
        The statement tested (cite the paper by author and year).
    holds
        ``"holds"``, ``"does not hold"`` or a qualified verdict such as ``"holds at ε = 10"``.
    numbers
        The measured numbers the verdict rests on.
    command
        The command that regenerates the numbers.
    """

    claim: str
    holds: str
    numbers: str
    command: str


def verdict(condition: bool) -> str:
    """``"holds"`` or ``"does not hold"``."""
    return HOLDS if condition else DOES_NOT_HOLD


@dataclass(frozen=True)
class PairedVerdict:
    """The verdict of :func:`paired_verdict` and the numbers it rests on.

    Attributes
    ----------
    holds
        ``"holds"``, ``"does not hold"`` or ``"not resolved (…)"`` (also ``"not resolved (n = N < 5
        runs)"`` below :data:`MIN_RUNS`, where no test is made).
    numbers
        Mean paired difference ± its standard error, the p-values, α and the number of runs.
    difference, stderr
        Mean and standard error (ddof 1) of ``first − second`` over the runs.
    runs
        Number of paired runs.
    p_value
        p-value of the test that decided (the one-sided test for the claim, or TOST's larger one);
        ``None`` below the minimum runs or when every run gives the same difference.
    """

    holds: str
    numbers: str
    difference: float
    stderr: float
    runs: int
    p_value: float | None = None


def too_few_runs(runs: int, min_runs: int = MIN_RUNS) -> str:
    """The verdict of a comparative claim measured on fewer than ``min_runs`` runs."""
    return f"{NOT_RESOLVED} (n = {runs} < {min_runs} runs)"


def paired_verdict(
    first: np.ndarray,
    second: np.ndarray,
    claim: str,
    *,
    margin: float | None = None,
    alpha: float = ALPHA,
    min_runs: int = MIN_RUNS,
    labels: tuple[str, str] = ("first", "second"),
) -> PairedVerdict:
    """Decide a comparative claim on per-run values (e.g. final regrets) of two arms run on the same seeds.

    ``first[i]`` and ``second[i]`` are run ``i`` of each arm (same seed, hence the same environment
    draw where the reproduction draws it so); ``second`` may also be a constant (a bound) broadcast to
    the runs.  The test is the paired t-test, i.e. the one-sample t-test on the differences
    ``d = first − second`` (``scipy.stats.ttest_rel``), with ``n − 1`` degrees of freedom.  ``claim``
    is one of :data:`COMPARISONS`:

    * ``"first < second"``: *holds* if the one-sided test rejects mean d ≥ 0 at level ``alpha``,
      *does not hold* if the opposite one-sided test rejects mean d ≤ 0, else *not resolved*.
      ``"first > second"`` likewise with the signs exchanged.
    * ``"first ≈ second"`` within the relative ``margin``: the equivalence bound is
      b = margin·|mean(second)| (taken as fixed).  *Holds* if both one-sided tests of TOST reject
      (mean d ≤ −b and mean d ≥ b, each at ``alpha``), *does not hold* if mean d > b or mean d < −b is
      shown (each one-sided at ``alpha``/2, i.e. the two-sided 1 − ``alpha`` interval lies outside the
      margin), else *not resolved*.  "Not significantly different" is never read as "≈".

    Every verdict errs with probability at most ``alpha`` under its null hypothesis (normal
    differences).  The t-test alone decides: a conjunction with the exact Wilcoxon signed-rank test
    would make "does not hold" unreachable for "≈" at five runs (its smallest one-sided p-value is
    2⁻⁵ = 0.031 > ``alpha``/2).  When the differences do not vary (every run gives the same d, as when
    pseudo-regret is exact), the sign of d decides.  Fewer than ``min_runs`` runs give
    ``"not resolved (n = N < min_runs runs)"`` with the numbers but no test.

    The returned ``numbers`` read e.g. ``"A − B = -811 ± 108 (s.e.); paired t-test p = 1.1e-05
    (one-sided for the claim), 1 (against); 10 paired runs, α = 0.05"``.
    """
    if claim not in COMPARISONS:
        raise InvalidParameter("claim", claim, " or ".join(repr(c) for c in COMPARISONS))
    alpha = check.probability("alpha", alpha, open_low=True, open_high=True)
    min_runs = check.positive_int("min_runs", min_runs, minimum=2)
    a = check.finite_array("first", first).astype(float).ravel()
    b = check.finite_array("second", second).astype(float).ravel()
    if b.size == 1 and a.size != 1:
        b = np.full(a.shape, float(b[0]))
    if a.shape != b.shape:
        raise InvalidParameter("second", f"{b.size} runs", f"as many runs as first ({a.size})")
    bound = 0.0
    if claim == "first ≈ second":
        if margin is None:
            raise InvalidParameter("margin", margin, "a relative margin > 0 for an equivalence claim")
        margin = check.positive_finite("margin", margin)
        bound = margin * abs(float(b.mean())) if b.size else 0.0
    elif margin is not None:
        raise InvalidParameter("margin", margin, "None unless claim is 'first ≈ second'")
    d = a - b
    n = int(d.size)
    mean = float(d.mean()) if n else math.nan
    stderr = float(d.std(ddof=1) / math.sqrt(n)) if n >= 2 else math.nan
    head = f"{labels[0]} − {labels[1]} = {_number(mean, '+')} ± {_number(stderr)} (s.e.)"
    where = f"{n} paired runs, α = {alpha:g}"
    if bound:
        where = f"margin ± {_number(bound)} ({margin:.0%} of {labels[1]}'s mean), " + where
    if n < min_runs:
        text = f"{head}; no test below {min_runs} runs; {where}" if n else where
        return PairedVerdict(too_few_runs(n, min_runs), text, mean, stderr, n)
    if float(d.std(ddof=1)) == 0.0:
        exact = {
            "first < second": mean < 0.0,
            "first > second": mean > 0.0,
            "first ≈ second": abs(mean) < bound,
        }[claim]
        return PairedVerdict(
            verdict(exact), f"{head}; every run gives the same difference; {where}", mean, stderr, n
        )
    if claim == "first ≈ second":
        p_low = _one_sided(d, -bound, "greater")  # rejects mean d <= -b
        p_high = _one_sided(d, bound, "less")  # rejects mean d >= b
        p_above = _one_sided(d, bound, "greater")  # shows mean d > b
        p_below = _one_sided(d, -bound, "less")  # shows mean d < -b
        p_tost, p_out = max(p_low, p_high), min(p_above, p_below)
        if p_tost < alpha:
            holds, p_value = HOLDS, p_tost
        elif p_out < alpha / 2:
            holds, p_value = DOES_NOT_HOLD, p_out
        else:
            holds = f"{NOT_RESOLVED} (neither within nor outside the margin at α = {alpha:g})"
            p_value = p_tost
        tests = f"TOST t-test p = {p_tost:.3g}, outside-margin p = {p_out:.3g} (vs α/2)"
    else:
        towards, away = ("less", "greater") if claim == "first < second" else ("greater", "less")
        p_for = _one_sided(d, 0.0, towards)
        p_against = _one_sided(d, 0.0, away)
        if p_for < alpha:
            holds, p_value = HOLDS, p_for
        elif p_against < alpha:
            holds, p_value = DOES_NOT_HOLD, p_against
        else:
            holds = f"{NOT_RESOLVED} (no paired difference shown at α = {alpha:g})"
            p_value = p_for
        tests = f"paired t-test p = {p_for:.3g} (one-sided for the claim), {p_against:.3g} (against)"
    return PairedVerdict(holds, f"{head}; {tests}; {where}", mean, stderr, n, p_value)


def all_hold(verdicts: Sequence[str]) -> str:
    """The verdict of a claim that needs every one of ``verdicts``: ``"does not hold"`` if one does
    not hold, ``"holds"`` if all hold, else the first "not resolved (n = …)" or ``"not resolved"``."""
    if not verdicts:
        raise InvalidParameter("verdicts", verdicts, "at least one verdict")
    if DOES_NOT_HOLD in verdicts:
        return DOES_NOT_HOLD
    if all(v == HOLDS for v in verdicts):
        return HOLDS
    return next((v for v in verdicts if v.startswith(f"{NOT_RESOLVED} (n = ")), NOT_RESOLVED)


def per_run_line(x: Sequence[float], values: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Intercepts and slopes of the least-squares line through ``(x[j], values[j][i])`` for every run ``i``.

    ``values[j]`` holds every run's value at ``x[j]``; run ``i`` of every point is paired (same seed or
    same index), so the per-run intercepts (slopes) are independent over runs and can be tested with
    :func:`paired_verdict` against a constant.  Elementwise sums, no BLAS.
    """
    xs = np.asarray(check.finite_array("x", np.asarray(x, dtype=float)), dtype=float).ravel()
    if xs.size < 2 or float(np.ptp(xs)) == 0.0:
        raise InvalidParameter("x", list(xs), "at least two distinct points")
    if len(values) != xs.size:
        raise InvalidParameter("values", f"{len(values)} points", f"one array per x ({xs.size})")
    ys = np.stack([check.finite_array("values", v).astype(float).ravel() for v in values])
    centred = xs - xs.mean()
    slopes = np.sum(centred[:, None] * (ys - ys.mean(axis=0)), axis=0) / float(np.sum(centred * centred))
    intercepts = ys.mean(axis=0) - slopes * xs.mean()
    return intercepts, slopes


ADDITIVE_MARGIN = 0.10
"""Margin of an additive-cost claim (:func:`additive_cost`): the privacy cost left when the privacy
term's variable goes to 0 must be within ±10 % of the non-private arm's mean regret."""


@dataclass(frozen=True)
class AdditiveCost:
    """The verdict of :func:`additive_cost`.

    Attributes
    ----------
    verdict
        TOST of the per-run intercepts against 0 within ``margin`` × the non-private mean regret.
    intercepts, slopes
        Per-run least-squares intercept and slope of private − non-private against the variable.
    text
        The fitted line (means ± s.e. over runs) and the test's numbers, for the row.
    """

    verdict: PairedVerdict
    intercepts: np.ndarray
    slopes: np.ndarray
    text: str


def additive_cost(
    private: Sequence[np.ndarray],
    nonprivate: np.ndarray,
    x: Sequence[float],
    labels: tuple[str, str],
    *,
    variable: str = "x",
    margin: float = ADDITIVE_MARGIN,
    alpha: float = ALPHA,
    min_runs: int = MIN_RUNS,
) -> AdditiveCost:
    """Whether a privacy cost is additive: ``private[j] − nonprivate = c·x[j]`` with nothing left at x = 0.

    ``private[j]`` holds every run's final regret at the j-th privacy level, whose privacy term is
    proportional to ``x[j]`` (e.g. σ² ∝ log(1/δ)/ε² or σ ∝ 1/ε); ``nonprivate`` every run's regret
    without privacy (run i paired with run i of every level).  For each run the least-squares line of
    the difference against ``x`` (:func:`per_run_line`) is fitted; an additive cost has intercept 0,
    a multiplicative one (private = r × non-private) intercept (r − 1) × non-private.  The claim holds
    when TOST shows the mean intercept within ±``margin`` × mean(non-private)
    (:func:`paired_verdict` of non-private + intercept ≈ non-private), does not hold when it is shown
    outside, and is not resolved otherwise or with fewer than two levels.
    """
    base = check.finite_array("nonprivate", nonprivate).astype(float).ravel()
    name = f"{labels[0]} at {variable} = 0"
    if len(x) < 2:
        empty = np.zeros(0)
        result = PairedVerdict(f"{NOT_RESOLVED} (one privacy level: no line)", "", math.nan, math.nan, 0)
        return AdditiveCost(result, empty, empty, "one privacy level: no line to fit")
    intercepts, slopes = per_run_line(x, [np.asarray(p, dtype=float) - base for p in private])
    result = paired_verdict(
        base + intercepts,
        base,
        "first ≈ second",
        margin=margin,
        alpha=alpha,
        min_runs=min_runs,
        labels=(name, labels[1]),
    )
    slope, _, slope_se = mean_sd_se(slopes)
    text = (
        f"per-run line {labels[0]} − {labels[1]} = a + c·{variable} over {variable} = "
        + ", ".join(f"{value:.3g}" for value in x)
        + f": c = {_number(slope)} ± {_number(slope_se)}, intercept a: {result.numbers}"
    )
    return AdditiveCost(result, intercepts, slopes, text)


def _one_sided(d: np.ndarray, shift: float, alternative: str) -> float:
    """One-sided p-value of the t-test of mean(d) against ``shift``."""
    from scipy import stats

    return float(stats.ttest_1samp(d, shift, alternative=alternative).pvalue)


def _number(value: float, sign: str = "") -> str:
    """``value`` with thousands separators and no decimals from 100 on, three significant digits below."""
    if math.isfinite(value) and abs(value) >= 100:
        return format(value, f"{sign},.0f")
    return format(value, f"{sign}.3g")


def few_runs_warning(name: str, runs: int, min_runs: int = MIN_RUNS) -> None:
    """One warning line on stderr when ``runs`` is below the fewest runs a verdict needs."""
    if runs < min_runs:
        sys.stderr.write(
            f"[{name}] warning: --runs {runs} is below {min_runs}: comparative claims read "
            f'"{too_few_runs(runs, min_runs)}" (no test is made)\n'
        )
        sys.stderr.flush()


def command_line(name: str, runs: int, seed: int, options: Mapping[str, Any]) -> str:
    """``dpcert reproduce NAME --runs R [--seed S] [--option KEY=VALUE ...]`` for the given options."""
    parts = ["dpcert", "reproduce", name, "--runs", str(runs)]
    if seed:
        parts += ["--seed", str(seed)]
    for key, value in options.items():
        text = json.dumps(list(value) if isinstance(value, tuple) else value, separators=(",", ":"))
        parts += ["--option", f"{key}={text}"]
    return " ".join(parts)


def changed_options(given: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The options whose value differs from the reproduction's default (for :func:`command_line`)."""
    return {key: value for key, value in given.items() if value != defaults.get(key)}


def markdown_cell(text: str) -> str:
    """``text`` as one Markdown table cell: every ``|`` not already escaped gets a backslash (one
    preceded by an even number of backslashes is a separator) and line breaks become spaces."""
    out: list[str] = []
    backslashes = 0
    for char in text.replace("\r\n", " ").replace("\n", " ").replace("\r", " "):
        if char == "|" and backslashes % 2 == 0:
            out.append("\\")
        out.append(char)
        backslashes = backslashes + 1 if char == "\\" else 0
    return "".join(out)


def claims_table(claims: Sequence[Claim]) -> str:
    """Markdown: ``| claim | holds? | numbers | command |`` (cells through :func:`markdown_cell`)."""
    lines = ["| claim | holds? | numbers | command |", "|---|---|---|---|"]
    for row in claims:
        cells = [row.claim, f"**{row.holds}**", row.numbers, f"`{row.command}`"]
        lines.append("| " + " | ".join(markdown_cell(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def write_claims(
    claims: Sequence[Claim], out: Path, stem: str, title: str, *, recorder: Recorder | None = None
) -> dict[str, Any]:
    """Write ``STEM_claims.md`` (with ``recorder``, ending with its provenance footer); return ``claims``
    (rows), ``claims_table`` and ``claims_file``."""
    table = claims_table(claims)
    path = Path(out) / f"{stem}_claims.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {title}: claims\n\n{table}{claims_footer(recorder)}")
    return {"claims": [asdict(row) for row in claims], "claims_table": table, "claims_file": str(path)}


def claims_footer(recorder: Recorder | None) -> str:
    """The provenance footer of a claims file (empty without ``recorder``)."""
    if recorder is None:
        return ""
    return provenance.markdown_footer(recorder(provenance.REPRODUCTION_CLAIMS))


def with_record(summary: dict[str, Any], recorder: Recorder) -> dict[str, Any]:
    """``summary`` with the reproduction's JSON provenance record under ``provenance``."""
    summary[provenance.KEY] = recorder(provenance.REPRODUCTION)
    return summary


def progress(name: str, label: str) -> None:
    """One progress line on stderr naming the reproduction and the curve being run."""
    sys.stderr.write(f"[{name}] running {label}\n")
    sys.stderr.flush()


def mean_sd_se(values: np.ndarray) -> tuple[float, float, float]:
    """Mean, standard deviation (ddof 1) and standard error of ``values``."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    if values.size < 2:
        return mean, 0.0, 0.0
    sd = float(values.std(ddof=1))
    return mean, sd, sd / float(np.sqrt(values.size))


def fmt(values: np.ndarray) -> str:
    """``mean ± s.e.`` of ``values`` with thousands separators."""
    mean, _, se = mean_sd_se(values)
    return f"{mean:,.0f} ± {se:,.0f}"
