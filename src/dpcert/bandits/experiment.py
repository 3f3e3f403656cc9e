"""Experiment runner shared by every bandit algorithm: repetitions, accounting, results, plots.

* every repetition releases user data through one
  :class:`~dpcert.session.PrivacySession` (:func:`open_session`), which charges the
  ledger before each release and derives the worst user's composed guarantee.
* :func:`run_repetitions` runs R independent repetitions in this process or in forked worker
  processes, with a progress bar on stderr (tqdm when installed).
* :func:`certified_run` (and :func:`combine_runs` for R separate repetitions) builds the
  :class:`~dpcert.bandits.registry.BanditRun` whose certificate is the worst user's composition.
* :func:`save_results` writes a JSON summary and an NPZ of the regret curves; :func:`plot_regret`
  draws mean ± standard error (matplotlib, optional ``plot`` extra).
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from dpcert import _validation as check
from dpcert import provenance
from dpcert.bandits.registry import BanditRun, mean_stderr
from dpcert.bandits.scheduler import check_scheduler, map_on_dask, require_distributed
from dpcert.certificates import Guarantee
from dpcert.ledger.api import Ledger
from dpcert.profiles import TrustModel
from dpcert.session import PrivacySession, new_namespace, worst_certificate

T = TypeVar("T")
CURVE_POINTS = 2000  # saved points per regret curve


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
        return PlainProgress(total, label)


class PlainProgress:
    """``LABEL: done/total UNIT`` on stderr after every update."""

    def __init__(self, total: int, label: str, unit: str = "runs") -> None:
        self.total, self.label, self.unit, self.done = total, label, unit, 0

    def update(self, count: int = 1) -> None:
        self.done += count
        sys.stderr.write(f"{self.label}: {self.done}/{self.total} {self.unit}\n")

    def close(self) -> None:
        pass


def run_repetitions(
    task: Callable[[int], T],
    runs: int,
    *,
    workers: int = 1,
    progress: bool | None = None,
    label: str = "runs",
    scheduler: Any = "local",
) -> list[T]:
    """``[task(0), …, task(runs − 1)]``, in order.

    ``workers > 1`` forks worker processes (POSIX); ``task`` then need not be picklable but its
    results must be.  ``progress=None`` shows a bar on stderr when it is a terminal and runs > 1.
    ``scheduler`` other than ``"local"`` (``"dask"``, ``"tcp://HOST:PORT"`` or a ``distributed.Client``)
    runs the repetitions on Dask in chunks (:func:`dpcert.bandits.scheduler.map_on_dask`; ``workers`` is
    then ignored).  ``task(index)`` seeds itself from its index, so the results do not depend on where
    it ran.
    """
    global _TASK
    runs = check.positive_int("runs", runs)
    workers = check.positive_int("workers", workers)
    scheduler = check_scheduler(scheduler)
    if scheduler == "dask":
        require_distributed()
    show = progress if progress is not None else (runs > 1 and sys.stderr.isatty())
    bar = _progress(runs, bool(show), label)
    results: list[T] = []
    try:
        if scheduler != "local":
            results = map_on_dask(task, runs, scheduler, on_done=bar.update if bar else None)
        elif workers == 1 or runs == 1:
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


def run_identity(config: Any) -> str:
    """SHA-256 (hex) of what determines a run's releases: dpcert's version, the algorithm, privacy model,
    target, horizon, runs, seed, calibration and options of ``config`` (a ``RunConfig``; not its ledger)."""

    def plain(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.generic):
            return value.item()
        return repr(value)

    fields = {
        "dpcert": provenance.version("dpcert"),
        "algorithm": config.algorithm,
        "privacy": config.privacy_name,
        "epsilon": config.epsilon,
        "delta": config.delta,
        "horizon": config.horizon,
        "runs": config.runs,
        "seed": config.seed,
        "calibration": config.calibration_name,
        "options": dict(config.options),
    }
    text = json.dumps(fields, sort_keys=True, default=plain, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def open_sessions(config: Any, runs: int) -> list[PrivacySession]:
    """One :class:`PrivacySession` per repetition of ``config`` (a ``RunConfig``), sharing its ledger.

    User ids are ``<algorithm>/<privacy>/<token>/r<index>/<i>``: unique across runs sharing a ledger.
    With a ledger the token is the start of :func:`run_identity` and each charge carries the idempotency
    key ``<algorithm>/<privacy>/<token>/r<index>/<charge index>``: the same command run again with the
    same seed (after an interruption, say) makes the same releases, whose committed charges the ledger
    replays instead of recording twice.  Without a ledger the token is random.
    """
    if config.ledger_path is None:
        namespace = new_namespace(config.algorithm, config.privacy_name)
        return [PrivacySession(f"{namespace}/r{index}") for index in range(runs)]
    ledger = Ledger(config.ledger_path, signing_key=getattr(config, "ledger_signing_key", None))
    namespace = f"{config.algorithm}/{config.privacy_name}/{run_identity(config)[:16]}"
    return [
        PrivacySession(f"{namespace}/r{index}", ledger, keys=f"{namespace}/r{index}") for index in range(runs)
    ]


def target_of(config: Any) -> Guarantee | None:
    """The run's per-user total (ε, δ) (δ = 0 when not given), ``None`` for a non-private run."""
    if config.privacy is None or config.epsilon is None:
        return None
    return Guarantee(config.epsilon, 0.0 if config.delta is None else config.delta)


def certified_run(
    algorithm: str,
    cumulative_regret: np.ndarray,
    sessions: Sequence[PrivacySession],
    users: int,
    *,
    seconds: float,
    target: Guarantee | None,
    privacy: TrustModel | None = None,
    extras: Mapping[str, Any] | None = None,
) -> BanditRun:
    """The :class:`BanditRun` of curves ``(runs, T)`` whose users were charged through ``sessions``.

    The certificate is the worst user's over all sessions, composed at δ = target.delta (``None``
    without a ``target``); the run's ``target_met`` compares it with the target through its profile.
    """
    extras = dict(extras or {})
    certificate = None if target is None else worst_certificate(sessions, target.delta)
    worst_epsilon = 0.0 if certificate is None or target is None else certificate.epsilon_for(target.delta)
    extras["max_charges_per_user"] = max((s.max_charges_per_user() for s in sessions), default=0)
    return BanditRun(
        algorithm=algorithm,
        cumulative_regret=cumulative_regret,
        certificate=certificate,
        users=int(users),
        max_user_epsilon=float(worst_epsilon),
        seconds=float(seconds),
        extras=extras,
        privacy=privacy,
        target=target,
    )


def combine_runs(
    algorithm: str,
    cumulative_regret: Sequence[np.ndarray],
    sessions: Sequence[PrivacySession],
    users: Sequence[int],
    **run: Any,
) -> BanditRun:
    """One :class:`BanditRun` from R repetitions (one session each): :func:`certified_run` of their stack."""
    return certified_run(algorithm, np.stack(cumulative_regret), sessions, max(users), **run)


def json_ready(value: Any) -> Any:
    """JSON-safe copy: arrays inside mappings dropped, numpy scalars as Python numbers, NaN/inf as None."""
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items() if not isinstance(v, np.ndarray)}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def summary(run: BanditRun, *, include_phases: bool = False) -> dict[str, Any]:
    """The ``dpcert bandit run --json`` object (CLI.md), the same keys for every algorithm, plus extras."""
    mean, stderr = run.final_regret()
    extras = {k: v for k, v in run.extras.items() if include_phases or k != "phases"}
    return {
        **json_ready(extras),
        "algorithm": run.algorithm,
        "privacy": run.privacy_name,
        "target": None if run.target is None else run.target.to_dict(),
        "target_met": run.target_met,
        "certificate": None if run.certificate is None else run.certificate.to_dict(),
        "max_user_epsilon": float(run.max_user_epsilon),
        "users": int(run.users),
        "regret": {"mean": mean, "stderr": stderr},
        "seconds": float(run.seconds),
        "runs": int(np.asarray(run.cumulative_regret).shape[0]),
        "horizon": int(np.asarray(run.cumulative_regret).shape[1]),
    }


def curve_rounds(horizon: int, points: int = CURVE_POINTS) -> np.ndarray:
    """Rounds (1-based) at which curves are saved: log-spaced and linear-spaced, always including T."""
    grid = np.concatenate([np.geomspace(1, horizon, points // 2), np.linspace(1, horizon, points // 2)])
    return np.unique(np.round(grid).astype(np.int64))


def save_results(
    run: BanditRun, out: Path, stem: str, *, record: Mapping[str, Any] | None = None
) -> dict[str, Path]:
    """Write ``stem.json`` (summary with phases) and ``stem.npz`` (curves at :func:`curve_rounds`).

    ``record``: the run's provenance (:func:`dpcert.provenance.record`), written into both files (the
    JSON under ``provenance``, the NPZ as its ``provenance`` entry) with their own format tags.
    """
    out.mkdir(parents=True, exist_ok=True)
    regret = np.asarray(run.cumulative_regret)
    rounds = curve_rounds(regret.shape[1])
    arrays: dict[str, Any] = {"rounds": rounds, "cumulative_regret": regret[:, rounds - 1]}
    for key, value in run.extras.items():
        if isinstance(value, np.ndarray) and value.shape == regret.shape:
            arrays[key] = value[:, rounds - 1]
    json_path = out / f"{stem}.json"
    npz_path = out / f"{stem}.npz"
    written = summary(run, include_phases=True)
    if record is not None:
        written[provenance.KEY] = provenance.as_format(record, provenance.BANDIT_RUN)
        arrays[provenance.KEY] = provenance.npz_entry(provenance.as_format(record, provenance.BANDIT_CURVES))
    json_path.write_text(json.dumps(written, indent=1, allow_nan=False))
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
        mean, stderr = mean_stderr(values)
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
