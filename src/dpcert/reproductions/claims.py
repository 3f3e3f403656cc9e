"""The "claims" table every reproduction writes next to its outputs: claim | holds? | numbers | command.

Each row states one claim of the paper (or one finding the run tests), whether the run's numbers
support it, the numbers themselves and the command that regenerates them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import provenance
from dpcert.provenance import Recorder


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
    return "holds" if condition else "does not hold"


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


def claims_table(claims: Sequence[Claim]) -> str:
    """Markdown: ``| claim | holds? | numbers | command |``."""
    lines = ["| claim | holds? | numbers | command |", "|---|---|---|---|"]
    for row in claims:
        cells = [row.claim, f"**{row.holds}**", row.numbers, f"`{row.command}`"]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
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
