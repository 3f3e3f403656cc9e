"""Experiment runner shared by every bandit algorithm: repetitions, accounting, results, plots.

* :class:`UserAccountant` records every privatizer charge of one run (and forwards it to a durable
  ledger when one is given) and derives the run's final certificate: the worst user's composed
  guarantee.
* :func:`run_repetitions` runs R independent repetitions in this process or in forked worker
  processes, with a progress bar on stderr (tqdm when installed).
* :func:`combine_runs` builds the :class:`~dpcert.bandits.registry.BanditRun` of R repetitions and
  verifies the final certificate against the requested budget.
* :func:`save_results` writes a JSON summary and an NPZ of the regret curves; :func:`plot_regret`
  draws mean ± standard error (matplotlib, optional ``plot`` extra).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from dpcert import _validation as check
from dpcert.bandits.registry import BanditRun
from dpcert.certificates import Certificate, Guarantee
from dpcert.errors import InvalidParameter, PreconditionFailed
from dpcert.mechanisms.gaussian import gaussian_certificate

T = TypeVar("T")
COMPOSITION_BASIS = (
    "exact composition of Gaussian mechanisms: mu^2 adds (Dong, Roth & Su 2019, Cor. 3.3), "
    "profile by Balle & Wang 2018, Thm 8"
)
CURVE_POINTS = 2000  # saved points per regret curve


def _gaussian_mu(certificate: Certificate) -> float:
    parameters = certificate.parameters
    return parameters["sensitivity"] * math.sqrt(parameters.get("compositions", 1)) / parameters["sigma"]


class UserAccountant:
    """In-memory per-user record of one run's charges; forwards each charge to ``forward_to``.

    Has the ledger interface ``charge(user_ids, certificate, run_id=None)``.  User ids are integers;
    ``id_offset`` is added before forwarding so that repetitions sharing a ledger stay distinct.
    """

    def __init__(self, forward_to: Any = None, id_offset: int = 0) -> None:
        self.forward_to = forward_to
        self.id_offset = int(id_offset)
        self.user_ids: list[np.ndarray] = []
        self.certificates: list[Certificate] = []

    def charge(self, user_ids: Any, certificate: Certificate, run_id: str | None = None) -> None:
        ids = np.asarray(user_ids, dtype=np.int64).ravel()
        if not isinstance(certificate, Certificate):
            raise InvalidParameter("certificate", type(certificate).__name__, "a dpcert Certificate")
        if np.unique(ids).size != ids.size:
            raise InvalidParameter("user_ids", "<ids with repeats>", "each user at most once per charge")
        if self.forward_to is not None:
            self.forward_to.charge(ids + self.id_offset, certificate, run_id=run_id)
        self.user_ids.append(ids)
        self.certificates.append(certificate)

    def charges_per_user(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct charged user ids and how many charges each received."""
        if not self.user_ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(self.user_ids), return_counts=True)

    def worst_user_certificate(self, delta: float) -> Certificate | None:
        """The guarantee of the user with the largest privacy loss at ``delta`` (``None`` if no charge).

        Users charged once: their charge's certificate (the worst is the one with the largest ε at δ).
        Users charged several times (returning users): their Gaussian charges compose exactly
        (μ² adds); other mechanisms are not composed here.
        """
        delta = check.positive_delta(delta)
        if not self.certificates:
            return None
        ids, counts = self.charges_per_user()
        if counts.max() == 1:
            return max(self.certificates, key=lambda c: (c.epsilon_for(delta), c.delta))
        if any(c.mechanism != "gaussian" for c in self.certificates):
            return self._worst_composed(ids, delta)
        pairs = zip(self.user_ids, self.certificates, strict=True)
        squared = np.concatenate([np.full(ids_.size, _gaussian_mu(c) ** 2) for ids_, c in pairs])
        all_ids = np.concatenate(self.user_ids)
        inverse = np.searchsorted(ids, all_ids)
        totals = np.bincount(inverse, weights=squared, minlength=ids.size)
        worst = int(np.argmax(totals))
        first = self.certificates[0]
        mu = math.sqrt(float(totals[worst]))
        return gaussian_certificate(
            1.0,
            delta=delta,
            sensitivity=mu * (1.0 + 1e-12),  # rounding of the sum of squares goes toward more loss
            basis=COMPOSITION_BASIS,
            trust_model=first.trust_model,
            neighbouring=first.neighbouring,
        )

    def _worst_composed(self, ids: np.ndarray, delta: float) -> Certificate:
        """Worst user by composing each distinct charge history once (``accounting.composition``)."""
        try:
            from dpcert.accounting.composition import compose
        except ImportError:
            raise PreconditionFailed(
                "returning users with non-Gaussian charges need dpcert.accounting.composition"
            ) from None
        # users × charges incidence counts, then one composition per distinct history
        history = np.zeros((ids.size, len(self.certificates)), dtype=np.int64)
        for column, charged in enumerate(self.user_ids):  # a loop over charges, not users
            history[np.searchsorted(ids, charged), column] += 1
        distinct = np.unique(history, axis=0)
        composed = [
            compose([c for c, n in zip(self.certificates, row, strict=True) for _ in range(n)], delta=delta)
            for row in distinct
        ]
        return max(composed, key=lambda c: c.epsilon_for(delta))

    def __getstate__(self) -> dict[str, Any]:  # certificates hold read-only mappings: send JSON
        return {
            "id_offset": self.id_offset,
            "user_ids": self.user_ids,
            "certificates": [c.to_json() for c in self.certificates],
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.forward_to = None
        self.id_offset = state["id_offset"]
        self.user_ids = state["user_ids"]
        self.certificates = [Certificate.from_json(text) for text in state["certificates"]]


_TASK: Callable[[int], Any] | None = None


def _call_task(index: int) -> Any:
    assert _TASK is not None
    return _TASK(index)


def _progress(total: int, show: bool, label: str):
    if not show:
        return None
    try:
        from tqdm import tqdm

        return tqdm(total=total, desc=label, file=sys.stderr, unit="run")
    except ImportError:
        return _PlainProgress(total, label)


class _PlainProgress:
    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done = total, label, 0

    def update(self, count: int = 1) -> None:
        self.done += count
        sys.stderr.write(f"{self.label}: {self.done}/{self.total} runs\n")

    def close(self) -> None:
        pass


def run_repetitions(
    task: Callable[[int], T],
    runs: int,
    *,
    workers: int = 1,
    progress: bool | None = None,
    label: str = "runs",
) -> list[T]:
    """``[task(0), …, task(runs − 1)]``, in order.

    ``workers > 1`` forks worker processes (POSIX); ``task`` then need not be picklable but its
    results must be.  ``progress=None`` shows a bar on stderr when it is a terminal and runs > 1.
    """
    global _TASK
    runs = check.positive_int("runs", runs)
    workers = check.positive_int("workers", workers)
    show = progress if progress is not None else (runs > 1 and sys.stderr.isatty())
    bar = _progress(runs, bool(show), label)
    results: list[T] = []
    try:
        if workers == 1 or runs == 1:
            for index in range(runs):
                results.append(task(index))
                if bar:
                    bar.update(1)
        else:
            _TASK = task
            context = multiprocessing.get_context("fork")
            with context.Pool(min(workers, runs)) as pool:
                for result in pool.imap(_call_task, range(runs)):
                    results.append(result)
                    if bar:
                        bar.update(1)
    finally:
        _TASK = None
        if bar:
            bar.close()
    return results


def combine_runs(
    algorithm: str,
    cumulative_regret: Sequence[np.ndarray],
    accountants: Sequence[UserAccountant],
    users: Sequence[int],
    *,
    seconds: float,
    target: Guarantee | None,
    extras: Mapping[str, Any] | None = None,
) -> BanditRun:
    """One :class:`BanditRun` from R repetitions; the certificate is the worst user's over all runs.

    With a ``target`` the worst user's guarantee is computed at δ = target.delta, and
    ``extras["meets_target"]`` records whether ε ≤ target.epsilon.
    """
    extras = dict(extras or {})
    certificate = None
    max_epsilon = 0.0
    if target is not None:
        candidates = [a.worst_user_certificate(target.delta) for a in accountants]
        candidates = [c for c in candidates if c is not None]
        if candidates:
            certificate = max(candidates, key=lambda c: c.epsilon_for(target.delta))
            max_epsilon = float(certificate.epsilon_for(target.delta))
        extras["meets_target"] = bool(certificate is None or max_epsilon <= target.epsilon)
        extras["target"] = target.to_dict()
        charges = [a.charges_per_user()[1] for a in accountants]
        extras["max_charges_per_user"] = int(max((c.max() for c in charges if c.size), default=0))
    return BanditRun(
        algorithm=algorithm,
        cumulative_regret=np.stack(cumulative_regret),
        certificate=certificate,
        users=int(max(users)),
        max_user_epsilon=max_epsilon,
        seconds=float(seconds),
        extras=extras,
    )


def _json_ready(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items() if not isinstance(v, np.ndarray)}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def summary(run: BanditRun, *, include_phases: bool = False) -> dict[str, Any]:
    """The ``dpcert bandit run --json`` object (CLI.md) plus JSON-ready extras."""
    mean, stderr = run.final_regret()
    extras = {k: v for k, v in run.extras.items() if include_phases or k != "phases"}
    return {
        "algorithm": run.algorithm,
        "regret": {"mean": mean, "stderr": stderr},
        "certificate": None if run.certificate is None else run.certificate.to_dict(),
        "users": int(run.users),
        "max_user_epsilon": float(run.max_user_epsilon),
        "seconds": float(run.seconds),
        "runs": int(np.asarray(run.cumulative_regret).shape[0]),
        "horizon": int(np.asarray(run.cumulative_regret).shape[1]),
        **_json_ready(extras),
    }


def curve_rounds(horizon: int, points: int = CURVE_POINTS) -> np.ndarray:
    """Rounds (1-based) at which curves are saved: log-spaced and linear-spaced, always including T."""
    grid = np.concatenate([np.geomspace(1, horizon, points // 2), np.linspace(1, horizon, points // 2)])
    return np.unique(np.round(grid).astype(np.int64))


def save_results(run: BanditRun, out: Path, stem: str) -> dict[str, Path]:
    """Write ``stem.json`` (summary with phases) and ``stem.npz`` (curves at :func:`curve_rounds`)."""
    out.mkdir(parents=True, exist_ok=True)
    regret = np.asarray(run.cumulative_regret)
    rounds = curve_rounds(regret.shape[1])
    arrays = {"rounds": rounds, "cumulative_regret": regret[:, rounds - 1]}
    for key, value in run.extras.items():
        if isinstance(value, np.ndarray) and value.shape == regret.shape:
            arrays[key] = value[:, rounds - 1]
    json_path = out / f"{stem}.json"
    npz_path = out / f"{stem}.npz"
    json_path.write_text(json.dumps(summary(run, include_phases=True), indent=1, allow_nan=False))
    np.savez_compressed(npz_path, **arrays)
    return {"json": json_path, "npz": npz_path}


def regret_curve(run: BanditRun) -> tuple[np.ndarray, np.ndarray]:
    """(rounds, cumulative regret of each run at those rounds): the curve at :func:`curve_rounds`."""
    regret = np.asarray(run.cumulative_regret)
    rounds = curve_rounds(regret.shape[1])
    return rounds, regret[:, rounds - 1]


def plot_regret(runs: Mapping[str, BanditRun], path: Path, title: str = "") -> Path | None:
    """Cumulative regret and R(t)/t, mean ± standard error over runs; ``None`` without matplotlib."""
    return plot_curves({label: regret_curve(run) for label, run in runs.items()}, path, title)


def plot_curves(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]], path: Path, title: str = ""
) -> Path | None:
    """Plot ``{label: (rounds, values[runs, points])}`` as mean ± standard error (two panels)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, (rounds, values) in curves.items():
        mean = values.mean(axis=0)
        stderr = values.std(axis=0, ddof=1) / math.sqrt(values.shape[0]) if values.shape[0] > 1 else 0 * mean
        for axis, scale in ((left, 1.0), (right, 1.0 / rounds)):
            (line,) = axis.plot(rounds, mean * scale, label=label)
            axis.fill_between(
                rounds, (mean - stderr) * scale, (mean + stderr) * scale, alpha=0.25, color=line.get_color()
            )
    left.set(xlabel="round t", ylabel="cumulative pseudo-regret R(t)", title=title)
    right.set(xlabel="round t", ylabel="per-round regret R(t)/t", xscale="log")
    left.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
