"""What every bandit engine returns: :class:`Run`, and its record for engines on a fixed arm set.

:class:`Run` holds what every engine knows of its R repetitions of one algorithm: regret at checkpoints
(every round for the per-round engines), the users whose data was released, the run's certificate,
its wall time and its settings.  An engine adds its own record in a subclass:

* :class:`RunResult`: engines on a fixed arm set, which can lose the best arm or leave their good event:
  the multi-armed eliminations of :mod:`dpcert.bandits.algorithms.mab` (Tenenbaum et al. 2021 and
  dpcert's central and local eliminations), DP-SE, DP-UCB and the LDP baselines, the robust linear
  elimination of :mod:`dpcert.bandits.algorithms.robust_elimination` (Charisopoulos, Esfandiari &
  Mirrokni 2023) and DP-DPE / DP-PE of :mod:`dpcert.bandits.algorithms.elimination` (Li, Zhou & Ji 2022);
* :class:`~dpcert.bandits.algorithms.ldp_linear.LDPLinearRun`: the contextual LDP linear bandits.

The batched LinUCB algorithms of Chowdhury & Zhou 2022 advance several algorithms in one shared pass
(:func:`~dpcert.bandits.algorithms.linucb.run_batched_linucb`, whose record is per pass, not per
algorithm); :func:`~dpcert.bandits.algorithms.linucb.run_group` certifies each algorithm of the pass as
a :class:`~dpcert.bandits.registry.BanditRun` directly.

``dpcert bandit run`` turns a :class:`Run` and the sessions its users were charged through into a
:class:`~dpcert.bandits.registry.BanditRun` (:func:`~dpcert.bandits.experiment.certified_run`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert.bandits.registry import mean_stderr
from dpcert.certificates import Certificate


@dataclass(frozen=True)
class Run:
    """R repetitions of one algorithm, as every engine returns them.

    ``regret_curve[r, g]`` is run r's cumulative pseudo-regret after ``checkpoints[g]`` rounds: exact at
    phase (or batch) ends, linearly interpolated inside one (a batch is played at once); the per-round
    engines check every round.  ``final_regret`` is exact.

    Attributes
    ----------
    algorithm, horizon
        The engine's name and the rounds played.
    final_regret, checkpoints, regret_curve
        Shapes (runs,), (G,) and (runs, G).
    users
        Shape (runs,): users whose data was released (MAB: users whose batch went through the summation;
        robust elimination: clients who sent a report, M1 one per elimination-phase pull, M2 the clients
        owning a support action at least once; DP-DPE / DP-PE: users of the released phases; LDP linear
        bandits: one user per round.  A final phase truncated at T releases nothing).
    certificate
        The run's guarantee per user (``None`` without privacy): for one participation where every
        user contributes once (MAB, DP-SE, DP-UCB, LDP baselines, LDP linear bandits; one report of
        robust elimination), the worst user's composition in the run's session for DP-DPE / DP-PE (whose
        users may return).  A user's total over all her participations is her composition in the
        session she was charged through.
    seconds
        Wall time.
    parameters
        JSON-ready settings of the engine (arms, summation or client model, …).
    """

    algorithm: str
    horizon: int
    final_regret: np.ndarray
    checkpoints: np.ndarray
    regret_curve: np.ndarray
    users: np.ndarray
    certificate: Certificate | None
    seconds: float
    parameters: Mapping[str, Any]

    @property
    def runs(self) -> int:
        """The number of repetitions R."""
        return int(np.asarray(self.final_regret).shape[0])

    def regret(self) -> tuple[float, float]:
        """Mean and standard error of the final pseudo-regret over runs."""
        mean, stderr = mean_stderr(self.final_regret)
        return float(mean), float(stderr)

    def cumulative_regret(self, horizon_grid: np.ndarray | None = None) -> np.ndarray:
        """Regret curves on ``horizon_grid`` (default every round 1..T), shape (runs, len(grid))."""
        every_round = np.asarray(self.checkpoints).shape == (self.horizon,)
        if horizon_grid is None and every_round:  # the per-round engines: the curves themselves
            return np.array(self.regret_curve, dtype=float)
        grid = np.arange(1, self.horizon + 1) if horizon_grid is None else np.asarray(horizon_grid)
        return np.stack([np.interp(grid, self.checkpoints, curve) for curve in self.regret_curve])


@dataclass(frozen=True)
class RunResult(Run):
    """R repetitions of an engine on a fixed arm set, with its arms' record.

    Its attributes besides those of :class:`Run`:

    Attributes
    ----------
    pulls
        Shape (runs, arms): pulls of each arm.
    best_arm_eliminated, good_event_violated
        Shape (runs,) bool: the best arm was eliminated; the run left the event its analysis conditions
        on (its confidence widths held in every phase).
    summation_calls, phases, phase_records
        Summation calls per run, phases played, and a record per phase when asked for
        (:class:`~dpcert.bandits.algorithms.mab.PhaseRecord`,
        :class:`~dpcert.bandits.algorithms.elimination.PhaseRecord`).
    batches, final_arm, client_level_epsilon, logs
        Robust elimination: batches used and the arm kept per run, the M2 client-level ε (composed over
        the batches a client reports in; ``None`` otherwise) and per-phase logs when asked for
        (:class:`~dpcert.bandits.algorithms.robust_elimination.PhaseLog`).
    realised_curve, communication
        DP-DPE / DP-PE: the realised regret after every round (best mean minus the average reward the
        phase's users saw), shape (runs, T), and the units sent per run (eq. 2 of Li, Zhou & Ji 2022; the
        unit is ``parameters["unit"]``).
    """

    pulls: np.ndarray
    best_arm_eliminated: np.ndarray
    good_event_violated: np.ndarray
    summation_calls: np.ndarray | None = None
    phases: int = 0
    phase_records: tuple[Any, ...] = ()
    batches: np.ndarray | None = None
    final_arm: np.ndarray | None = None
    client_level_epsilon: float | None = None
    logs: tuple[tuple[Any, ...], ...] = ()
    realised_curve: np.ndarray | None = None
    communication: np.ndarray | None = None
