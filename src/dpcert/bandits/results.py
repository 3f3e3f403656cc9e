"""The result of R repetitions of one elimination engine: :class:`RunResult`.

The multi-armed eliminations of :mod:`dpcert.bandits.algorithms.mab` (Tenenbaum et al. 2021 and
dpcert's central and local eliminations) and the robust linear elimination of
:mod:`dpcert.bandits.algorithms.robust_elimination` (Charisopoulos, Esfandiari & Mirrokni 2023) run their
R repetitions in lockstep and return this one type: regret at checkpoints, pulls, users, the run's
certificate and each engine's own record in typed optional fields.  ``dpcert bandit run`` wraps it (and
the per-round engines' curves) in :class:`~dpcert.bandits.registry.BanditRun`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert.bandits.registry import mean_stderr
from dpcert.certificates import Certificate


@dataclass(frozen=True)
class RunResult:
    """R repetitions of one elimination engine.

    ``regret_curve[r, g]`` is run r's cumulative pseudo-regret after ``checkpoints[g]`` rounds: exact at
    phase (or batch) ends, linearly interpolated inside one (a batch is played at once); ``final_regret``
    is exact.

    Attributes
    ----------
    algorithm, horizon
        The engine's name and the rounds played.
    final_regret, checkpoints, regret_curve
        Shapes (runs,), (G,) and (runs, G).
    pulls
        Shape (runs, arms): pulls of each arm.
    users
        Shape (runs,): users whose data was released (MAB: users whose batch went through the summation;
        robust elimination: clients who sent a report, M1 one per elimination-phase pull, M2 the clients
        owning a support action at least once; the final phase's rewards are never collected).
    best_arm_eliminated, good_event_violated
        Shape (runs,) bool.
    certificate
        The run's guarantee per user (``None`` without privacy).
    seconds
        Wall time.
    parameters
        JSON-ready settings of the engine (arms, summation or client model, …).
    summation_calls, phases, phase_records
        MAB engines: summation calls per run, phases played, and a record per phase when asked for
        (:class:`~dpcert.bandits.algorithms.mab.PhaseRecord`).
    batches, final_arm, client_level_epsilon, logs
        Robust elimination: batches used and the arm kept per run, the M2 client-level ε (composed over
        the batches a client reports in; ``None`` otherwise) and per-phase logs when asked for
        (:class:`~dpcert.bandits.algorithms.robust_elimination.PhaseLog`).
    """

    algorithm: str
    horizon: int
    final_regret: np.ndarray
    checkpoints: np.ndarray
    regret_curve: np.ndarray
    pulls: np.ndarray
    users: np.ndarray
    best_arm_eliminated: np.ndarray
    good_event_violated: np.ndarray
    certificate: Certificate | None
    seconds: float
    parameters: Mapping[str, Any]
    summation_calls: np.ndarray | None = None
    phases: int = 0
    phase_records: tuple[Any, ...] = ()
    batches: np.ndarray | None = None
    final_arm: np.ndarray | None = None
    client_level_epsilon: float | None = None
    logs: tuple[tuple[Any, ...], ...] = ()

    def regret(self) -> tuple[float, float]:
        """Mean and standard error of the final pseudo-regret over runs."""
        mean, stderr = mean_stderr(self.final_regret)
        return float(mean), float(stderr)

    def cumulative_regret(self, horizon_grid: np.ndarray | None = None) -> np.ndarray:
        """Regret curves on ``horizon_grid`` (default every round 1..T), shape (runs, len(grid))."""
        grid = np.arange(1, self.horizon + 1) if horizon_grid is None else np.asarray(horizon_grid)
        return np.stack([np.interp(grid, self.checkpoints, curve) for curve in self.regret_curve])
