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
"""Fewest runs on which a comparative claim gets a verdict; below it the verdict is "no verdict"."""

SMALL_SAMPLE = 20
"""Below this many runs a verdict also needs the exact Wilcoxon signed-rank test to agree with the
paired t-test (the t-test's normality assumption cannot be checked on so few runs)."""

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
        ``"holds"``, ``"does not hold"``, ``"not resolved (…)"`` or ``"no verdict (fewer than N runs)"``.
    numbers
        Mean paired difference ± its standard error, the p-values and the number of runs.
    difference, stderr
        Mean and standard error (ddof 1) of ``first − second`` over the runs.
    runs
        Number of paired runs.
    """

    holds: str
    numbers: str
    difference: float
    stderr: float
    runs: int


def paired_verdict(
    first: np.ndarray,
    second: np.ndarray,
    claim: str,
    *,
    margin: float | None = None,
    alpha: float = 0.05,
    min_runs: int = MIN_RUNS,
    labels: tuple[str, str] = ("first", "second"),
) -> PairedVerdict:
    """Decide a comparative claim on per-run values of two arms run on the same seeds.

    ``first[i]`` and ``second[i]`` are run ``i`` of each arm; the test is on the differences
    ``d = first − second`` (one-sample t-test on ``d``, i.e. the paired t-test).  ``claim`` is one of
    :data:`COMPARISONS`:

    * ``"first < second"``: *holds* if the one-sided test rejects mean d ≥ 0 at level ``alpha``,
      *does not hold* if the opposite one-sided test rejects mean d ≤ 0, else *not resolved*.
      ``"first > second"`` likewise with the signs exchanged.
    * ``"first ≈ second"`` within the relative ``margin``: the equivalence bound is
      b = margin·|mean(second)| (taken as fixed).  *Holds* if both one-sided tests of TOST reject
      (mean d ≤ −b and mean d ≥ b), *does not hold* if mean d > b or mean d < −b is shown (each
      one-sided at ``alpha``/2), else *not resolved*.

    Every verdict errs with probability at most ``alpha`` under its null hypothesis.  Below
    :data:`SMALL_SAMPLE` runs a rejection also needs the exact Wilcoxon signed-rank test at the same
    level.  When the differences do not vary (every run gives the same d, as when pseudo-regret is
    exact), the sign of d decides.  Fewer than ``min_runs`` runs give ``"no verdict (fewer than N
    runs)"``.
    """
    if claim not in COMPARISONS:
        raise InvalidParameter("claim", claim, " or ".join(repr(c) for c in COMPARISONS))
    alpha = check.probability("alpha", alpha, open_low=True, open_high=True)
    min_runs = check.positive_int("min_runs", min_runs, minimum=2)
    a = check.finite_array("first", first).astype(float).ravel()
    b = check.finite_array("second", second).astype(float).ravel()
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
        text = f"{head}; {where}" if n else where
        return PairedVerdict(f"no verdict (fewer than {min_runs} runs)", text, mean, stderr, n)
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
        p_low, w_low = _one_sided(d, -bound, "greater", n)  # rejects mean d <= -b
        p_high, w_high = _one_sided(d, bound, "less", n)  # rejects mean d >= b
        p_above, w_above = _one_sided(d, bound, "greater", n)  # shows mean d > b
        p_below, w_below = _one_sided(d, -bound, "less", n)  # shows mean d < -b
        if _rejects(p_low, w_low, alpha) and _rejects(p_high, w_high, alpha):
            holds = HOLDS
        elif _rejects(p_above, w_above, alpha / 2) or _rejects(p_below, w_below, alpha / 2):
            holds = DOES_NOT_HOLD
        else:
            holds = f"{NOT_RESOLVED} (neither within nor outside the margin at α = {alpha:g})"
        tests = f"TOST t-test p = {max(p_low, p_high):.3g}, outside-margin p = {min(p_above, p_below):.3g}"
        if n < SMALL_SAMPLE:
            w_tost, w_out = _max(w_low, w_high), _min(w_above, w_below)
            tests += f"; Wilcoxon: TOST p = {w_tost:.3g}, outside-margin p = {w_out:.3g}"
    else:
        towards, away = ("less", "greater") if claim == "first < second" else ("greater", "less")
        p_for, w_for = _one_sided(d, 0.0, towards, n)
        p_against, w_against = _one_sided(d, 0.0, away, n)
        if _rejects(p_for, w_for, alpha):
            holds = HOLDS
        elif _rejects(p_against, w_against, alpha):
            holds = DOES_NOT_HOLD
        else:
            holds = f"{NOT_RESOLVED} (no paired difference shown at α = {alpha:g})"
        tests = f"paired t-test p = {p_for:.3g} (one-sided for the claim), {p_against:.3g} (against)"
        if n < SMALL_SAMPLE:
            tests += f"; Wilcoxon signed-rank p = {_max(w_for):.3g} (for), {_max(w_against):.3g} (against)"
    return PairedVerdict(holds, f"{head}; {tests}; {where}", mean, stderr, n)


def all_hold(verdicts: Sequence[str]) -> str:
    """The verdict of a claim that needs every one of ``verdicts``: ``"does not hold"`` if one does
    not hold, ``"holds"`` if all hold, else the first "no verdict …" or ``"not resolved"``."""
    if not verdicts:
        raise InvalidParameter("verdicts", verdicts, "at least one verdict")
    if DOES_NOT_HOLD in verdicts:
        return DOES_NOT_HOLD
    if all(v == HOLDS for v in verdicts):
        return HOLDS
    return next((v for v in verdicts if v.startswith("no verdict")), NOT_RESOLVED)


def _one_sided(d: np.ndarray, shift: float, alternative: str, n: int) -> tuple[float, float | None]:
    """One-sided p-values of the t-test (and below :data:`SMALL_SAMPLE` runs the Wilcoxon signed-rank
    test) of mean(d) against ``shift``."""
    from scipy import stats

    p_t = float(stats.ttest_1samp(d, shift, alternative=alternative).pvalue)
    if n >= SMALL_SAMPLE:
        return p_t, None
    shifted = d - shift
    if not np.any(shifted):
        return p_t, 1.0
    p_w = float(stats.wilcoxon(shifted, alternative=alternative).pvalue)
    return p_t, p_w


def _max(*values: float | None) -> float:
    return max(value for value in values if value is not None)


def _min(*values: float | None) -> float:
    return min(value for value in values if value is not None)


def _number(value: float, sign: str = "") -> str:
    """``value`` with thousands separators and no decimals from 100 on, three significant digits below."""
    if math.isfinite(value) and abs(value) >= 100:
        return format(value, f"{sign},.0f")
    return format(value, f"{sign}.3g")


def _rejects(p_t: float, p_w: float | None, level: float) -> bool:
    return p_t < level and (p_w is None or p_w < level)


def few_runs_warning(name: str, runs: int, min_runs: int = MIN_RUNS) -> None:
    """One warning line on stderr when ``runs`` is below the fewest runs a verdict needs."""
    if runs < min_runs:
        sys.stderr.write(
            f"[{name}] warning: --runs {runs} is below {min_runs}: comparative claims read "
            f'"no verdict (fewer than {min_runs} runs)"\n'
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
