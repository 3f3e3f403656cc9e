"""Helpers shared by the reproductions of Tenenbaum et al. 2021 and Charisopoulos, Esfandiari & Mirrokni
2023."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpcert.bandits.registry import mean_stderr
from dpcert.bandits.results import RunResult


def mean_se(values: np.ndarray) -> dict[str, float]:
    mean, stderr = mean_stderr(values)
    return {"mean": float(mean), "stderr": float(stderr)}


def result_row(result: RunResult, seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "regret": mean_se(result.final_regret),
        "seconds": seconds,
        "runs": int(result.final_regret.size),
        **extra,
    }
