"""Helpers shared by the seed 001 and seed 003 reproductions: mean ± s.e., rows and saved summaries."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpcert.bandits.algorithms.mab import (
    EliminationResult,
)
from dpcert.bandits.algorithms.robust_elimination import (
    RobustEliminationResult,
)
from dpcert.bandits.experiment import mean_stderr


def mean_se(values: np.ndarray) -> dict[str, float]:
    mean, stderr = mean_stderr(values)
    return {"mean": float(mean), "stderr": float(stderr)}


def save_summary(
    out: Path, stem: str, summary: dict[str, Any], curves: Mapping[str, np.ndarray]
) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(summary, indent=2, allow_nan=False))
    np.savez_compressed(
        out / f"{stem}.npz", **{key.replace(" ", "_"): value for key, value in curves.items()}
    )
    if not curves:
        return summary
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - the plot extra is optional
        return summary
    figure, axis = plt.subplots(figsize=(6, 4))
    for label, curve in curves.items():
        if label.endswith("checkpoints"):
            continue
        grid = curves.get(label.split("|")[0] + "|checkpoints")
        if grid is None:
            continue
        mean, stderr = mean_stderr(curve)
        axis.plot(grid, mean, label=label.split("|")[0])
        axis.fill_between(grid, mean - stderr, mean + stderr, alpha=0.2)
    axis.set_xlabel("round")
    axis.set_ylabel("cumulative pseudo-regret")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(out / f"{stem}.png", dpi=120)
    plt.close(figure)
    summary["plot"] = str(out / f"{stem}.png")
    return summary


def result_row(
    result: EliminationResult | RobustEliminationResult, seconds: float, **extra: Any
) -> dict[str, Any]:
    return {
        "regret": mean_se(result.final_regret),
        "seconds": seconds,
        "runs": int(result.final_regret.size),
        **extra,
    }
