"""What every ``dpcert reproduce`` writes: readable figures, a Markdown table and the per-run curves.

A reproduction hands over its regret curves as :class:`Curve` values (one per algorithm and setting,
each with the guarantee its certificates state) and calls :func:`write_report`, which writes, next to
the reproduction's JSON:

* ``STEM.md`` — final regret per curve: mean, ± one standard deviation and ± one standard error over
  the runs, with the certified (ε, δ) (the table is also returned, for the command line to print);
* ``STEM_curves.npz`` — every run's cumulative regret at the saved rounds, so bands can be redrawn;
* ``STEM.png`` (or ``STEM_<panel>.png``, one per panel) — cumulative regret, mean ± one standard
  deviation, at most :data:`MAX_CURVES` curves per panel (larger panels are split), distinct colours
  and line styles, the legend outside the data, and a title stating the panel's target; or, for a
  figure whose paper draws per-round regret, ``STEM.png`` with every panel's R(t)/t in one figure and
  ``STEM-cumulative.png`` with their cumulative regret.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import provenance
from dpcert.bandits.registry import mean_stderr
from dpcert.provenance import Recorder
from dpcert.reproductions.claims import markdown_cell

MAX_CURVES = 8
_STYLES = ("-", "--", "-.", ":")


@dataclass(frozen=True)
class Curve:
    """One algorithm's cumulative regret over ``runs`` repetitions.

    Attributes
    ----------
    label
        Legend label (algorithm and calibration).
    rounds
        Rounds ``t`` at which the regret was saved, shape ``(points,)``.
    regret
        Cumulative pseudo-regret of every run at those rounds, shape ``(runs, points)``.
    certified
        ``(ε, δ)`` the run's final certificate states for the worst user, or ``None`` (non-private).
    panel
        Panel the curve belongs to (curves are grouped into one figure per panel).
    """

    label: str
    rounds: np.ndarray
    regret: np.ndarray
    certified: tuple[float, float] | None = None
    panel: str = ""

    def __post_init__(self) -> None:
        rounds = np.asarray(self.rounds, dtype=float)
        regret = np.atleast_2d(np.asarray(self.regret, dtype=float))
        if rounds.ndim != 1 or regret.shape[-1] != rounds.size:
            raise ValueError(f"curve {self.label!r}: regret must have shape (runs, {rounds.size})")
        object.__setattr__(self, "rounds", rounds)
        object.__setattr__(self, "regret", regret)

    @property
    def final(self) -> np.ndarray:
        return self.regret[:, -1]


def _certified_text(certified: tuple[float, float] | None) -> str:
    if certified is None:
        return "none (non-private)"
    epsilon, delta = certified
    return f"({epsilon:.4g}, {delta:.3g})"


def _spread(values: np.ndarray) -> tuple[float, float, float]:
    """Mean, standard deviation and standard error (both 0 for a single run)."""
    mean, stderr = mean_stderr(values)
    return float(mean), float(stderr) * float(np.sqrt(values.size)), float(stderr)


def markdown_table(curves: Sequence[Curve]) -> str:
    """Final regret per curve: mean, ± s.d., ± s.e. over the runs, and the certified (ε, δ)."""
    lines = [
        "| panel | curve | certified (ε, δ) | runs | final regret (mean) | ± s.d. | ± s.e. |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for curve in curves:
        mean, sd, se = _spread(curve.final)
        cells = [curve.panel or "—", curve.label, _certified_text(curve.certified)]
        lines.append(
            "| "
            + " | ".join(markdown_cell(cell) for cell in cells)
            + f" | {curve.final.size} | {mean:,.1f} | {sd:,.1f} | {se:,.1f} |"
        )
    return "\n".join(lines) + "\n"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", text).strip("_") or "panel"


def _panels(curves: Sequence[Curve]) -> list[tuple[str, list[Curve]]]:
    """Curves grouped by panel (in order of first appearance), split into chunks of MAX_CURVES."""
    groups: dict[str, list[Curve]] = {}
    for curve in curves:
        groups.setdefault(curve.panel, []).append(curve)
    result = []
    for name, members in groups.items():
        chunks = [members[i : i + MAX_CURVES] for i in range(0, len(members), MAX_CURVES)]
        for index, chunk in enumerate(chunks):
            suffix = f" ({index + 1}/{len(chunks)})" if len(chunks) > 1 else ""
            result.append((name + suffix, chunk))
    return result


def plot_panels(
    curves: Sequence[Curve], out: Path, stem: str, title: str, *, log_x: bool = False
) -> list[Path]:
    """One PNG per panel: cumulative regret, mean ± one standard deviation over the runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = _panels(curves)
    paths = []
    colours = matplotlib.color_sequences["tab10"]
    for name, members in panels:
        figure, axis = plt.subplots(figsize=(9.5, 4.6))
        for index, curve in enumerate(members):
            mean, stderr = mean_stderr(curve.regret)
            sd = stderr * np.sqrt(curve.regret.shape[0])
            colour = colours[index % len(colours)]
            label = f"{curve.label} — certified {_certified_text(curve.certified)}"
            axis.plot(curve.rounds, mean, _STYLES[index % len(_STYLES)], color=colour, label=label, lw=1.6)
            # the band is kept within the runs' range (a skewed regret would otherwise dip below 0)
            low = np.maximum(mean - sd, curve.regret.min(axis=0))
            high = np.minimum(mean + sd, curve.regret.max(axis=0))
            axis.fill_between(curve.rounds, low, high, color=colour, alpha=0.15, lw=0)
        axis.set_xlabel("round t")
        axis.set_ylabel("cumulative pseudo-regret R(t)")
        if log_x:
            axis.set_xscale("log")
        axis.grid(alpha=0.3)
        runs = max(curve.regret.shape[0] for curve in members)
        heading = f"{title}: {name}" if name else title
        axis.set_title(f"{heading}\nmean ± 1 s.d. over {runs} run(s), within the runs' range", fontsize=10)
        axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        figure.tight_layout()
        path = out / (f"{stem}.png" if len(panels) == 1 else f"{stem}_{_slug(name)}.png")
        out.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(figure)
        paths.append(path)
    return paths


LOG_Y_RATIO = 20.0
"""A panel of :func:`plot_figure` gets a logarithmic y axis when its curves' final values differ by more
than this factor (otherwise the smaller curves lie flat on the axis)."""


def plot_figure(
    curves: Sequence[Curve],
    path: Path,
    title: str,
    *,
    per_round: bool,
    log_x: bool = False,
) -> Path:
    """One PNG holding every panel side by side, each with its own legend below it.

    ``per_round``: the panels show the per-round regret R(t)/t (what Li, Zhou & Ji 2022, Fig. 2(b)–(c)
    draw), otherwise the cumulative regret R(t); both as mean ± one standard deviation over the runs
    (the paper's shaded area), the band kept within the runs' range.  Curves keep their colour and
    line style by position within the panel.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, list[Curve]] = {}
    for curve in curves:
        groups.setdefault(curve.panel, []).append(curve)
    colours = matplotlib.color_sequences["tab10"]
    figure, axes = plt.subplots(1, len(groups), figsize=(6.4 * len(groups), 4.8), squeeze=False)
    runs = max(curve.regret.shape[0] for curve in curves)
    for axis, (name, members) in zip(axes[0], groups.items(), strict=True):
        finals = []
        for index, curve in enumerate(members):
            values = curve.regret / curve.rounds if per_round else curve.regret
            mean, stderr = mean_stderr(values)
            sd = stderr * np.sqrt(values.shape[0])
            colour = colours[index % len(colours)]
            label = f"{curve.label}\ncertified {_certified_text(curve.certified)}"
            axis.plot(curve.rounds, mean, _STYLES[index % len(_STYLES)], color=colour, label=label, lw=1.6)
            low = np.maximum(mean - sd, values.min(axis=0))
            high = np.minimum(mean + sd, values.max(axis=0))
            axis.fill_between(curve.rounds, low, high, color=colour, alpha=0.15, lw=0)
            finals.append(float(mean[-1]))
        positive = [value for value in finals if value > 0]
        log_y = len(positive) > 1 and max(positive) > LOG_Y_RATIO * min(positive)
        if log_y:
            axis.set_yscale("log")
        if log_x:
            axis.set_xscale("log")
        axis.set_xlabel("round t")
        axis.set_ylabel(
            ("per-round regret R(t)/t" if per_round else "cumulative pseudo-regret R(t)")
            + (" (log scale)" if log_y else "")
        )
        axis.set_title(name, fontsize=10)
        axis.grid(alpha=0.3)
        axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=7.5, frameon=False)
    figure.suptitle(f"{title}\nmean ± 1 s.d. over {runs} run(s), within the runs' range", fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path


def save_curves(curves: Sequence[Curve], path: Path, recorder: Recorder | None = None) -> Path:
    """Every run's curve: ``<i>_rounds``, ``<i>_regret`` and the labels, in one compressed NPZ (with
    ``recorder``, its provenance record as the ``provenance`` entry)."""
    arrays: dict[str, Any] = {
        "labels": np.array([c.label for c in curves]),
        "panels": np.array([c.panel for c in curves]),
    }
    if recorder is not None:
        arrays[provenance.KEY] = provenance.npz_entry(recorder(provenance.REPRODUCTION_CURVES))
    for index, curve in enumerate(curves):
        arrays[f"{index}_rounds"] = curve.rounds
        arrays[f"{index}_regret"] = curve.regret
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    return path


def write_report(
    curves: Sequence[Curve],
    out: Path,
    stem: str,
    title: str,
    *,
    log_x: bool = False,
    recorder: Recorder | None = None,
    note: str = "",
    per_round: bool = False,
) -> dict[str, Any]:
    """Write the table, the per-run curves and the figures of a reproduction; return their paths.

    The returned mapping holds ``table`` (the Markdown text), ``table_file``, ``curves_file`` and
    ``figures`` (paths as strings), to be merged into the reproduction's JSON summary.  With
    ``recorder``, the table file ends with its provenance footer and the NPZ holds its provenance entry;
    ``note`` is Markdown shown after the table (in the file and in ``table``).  With ``per_round``,
    the figures are ``STEM.png``, every panel's per-round regret R(t)/t in one figure, and
    ``STEM-cumulative.png``, the same panels' cumulative regret (:func:`plot_figure`); otherwise one
    PNG of cumulative regret per panel (:func:`plot_panels`).
    """
    if not curves:
        raise ValueError("a report needs at least one curve")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = markdown_table(curves) + note
    table_file = out / f"{stem}.md"
    footer = "" if recorder is None else provenance.markdown_footer(recorder(provenance.REPRODUCTION_TABLE))
    table_file.write_text(f"# {title}\n\n{table}{footer}")
    curves_file = save_curves(curves, out / f"{stem}_curves.npz", recorder)
    if per_round:
        figures = [
            plot_figure(curves, out / f"{stem}.png", title, per_round=True, log_x=log_x),
            plot_figure(curves, out / f"{stem}-cumulative.png", title, per_round=False, log_x=log_x),
        ]
    else:
        figures = plot_panels(curves, out, stem, title, log_x=log_x)
    return {
        "table": table,
        "table_file": str(table_file),
        "curves_file": str(curves_file),
        "figures": [str(path) for path in figures],
    }
