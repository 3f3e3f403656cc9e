"""Per-release budgets of the DP-DPE / DP-PE family (Li, Zhou & Ji 2022) for returning users.

A returning user joins at most one release per phase; the run's per-user target is split over the
phases that release, by the tight split or the paper's (Chowdhury & Zhou 2022, Thm E.2) through
:func:`dpcert.accounting.returning_users.split_budget`.
"""

from __future__ import annotations

from dpcert import _validation as check
from dpcert.accounting.returning_users import split_budget
from dpcert.bandits.algorithms.elimination import EliminationSettings
from dpcert.bandits.privatizers import Calibration, calibration_of
from dpcert.certificates import Guarantee


def max_released_phases(horizon: int) -> int:
    """Most phases that release in T rounds: phase l plays at least 2^l times (sum of ⌈π(x) 2^l⌉), so
    released phases 1..L need 2^{L+1} − 2 <= T.  A returning user joins each phase at most once."""
    horizon = check.positive_int("horizon", horizon)
    return max(1, (horizon + 2).bit_length() - 2)


def release_budget(
    target: Guarantee | None, settings: EliminationSettings, calibration: Calibration | str
) -> Guarantee | None:
    """Each release's (ε, δ) so that every user's total over the run stays within ``target``.

    Unique users release once: the target itself.  Returning users (DP-DPE, a finite population) join
    at most :func:`max_released_phases` releases; the target is split over them
    (:func:`~dpcert.accounting.returning_users.split_budget`: the tight split, or the paper's with
    ``Calibration.PAPER``, Chowdhury & Zhou 2022 Thm E.2).
    """
    mode = calibration_of(calibration)
    if target is None or settings.user_mode == "unique":
        return target
    participations = max_released_phases(settings.horizon)
    if participations == 1:
        return target
    split = split_budget(target, participations)
    chosen = split.paper if mode is Calibration.PAPER else split.tight
    return Guarantee(chosen.epsilon, chosen.delta)
