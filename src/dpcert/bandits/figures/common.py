"""Helpers shared by the reproductions of Tenenbaum et al. 2021 and Charisopoulos, Esfandiari & Mirrokni
2023."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpcert.bandits.algorithms.mab import EliminationResult
from dpcert.bandits.algorithms.robust_elimination import RobustEliminationResult
from dpcert.bandits.experiment import mean_stderr, plot_curves


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
    pairs = {}
    for label in (key.split("|")[0] for key in curves if key.endswith("|regret")):
        rounds, regret = curves[f"{label}|checkpoints"], curves[f"{label}|regret"]
        pairs[label] = (rounds[rounds > 0], regret[:, rounds > 0])  # R(t)/t is drawn from t = 1 on
    if not pairs or plot_curves(pairs, out / f"{stem}.png") is None:
        return summary
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
