"""Where the time of the Chowdhury & Zhou 2022 Figure 1 panel goes: ε = 0.2, 5 × 50 runs, T = 20,000.

Run as ``python benchmarks/linucb_profile.py [repeats]``: the panel runs once in this fresh interpreter
(numba's compiled code and the calibrations read from their disk caches, as in ``benchmarks/linucb.py
--speed``), then ``repeats`` times more (default 3; in-process caches warm), with process-CPU counters
around each part; prints, per part, the seconds of the first call and the median of the later ones:

* ``calibrations``: the five calibrations (read from the disk cache and re-verified);
* ``charges``: every ``PrivacySession`` charge made before a release;
* ``reward draws`` and ``noise draws``: the generators' work for a chunk of rounds (the environment's
  rewards, the privatizers' Gaussian noise);
* ``compiled rounds``: :func:`~dpcert.bandits.algorithms.linucb_kernel._run_chunk` (both passes, P_Vec's
  bit sums included; in the first call also numba's loading of the compiled code);
* ``P_Vec bit sums``: ``add_batch`` of the shuffle vector sum, when it runs outside the compiled rounds;
* ``certificates``: each run's worst-user certificate after the rounds;
* ``other``: the rest (driver, allocation, results).

A second table counts, per part, the FFT passes of the exact profiles' compositions
(:class:`~dpcert.theory.pld.ComposedLossBound`): P_Vec's ℓ2 profile at the Figure 1 setting composes 63
shift patterns, so one evaluation of it at a new point costs 63 passes, and the passes of a point are
reused by every later evaluation near it in the same process.

The counters wrap the module functions by name, so they cost a few microseconds per call: compare the
parts with each other, and the total with ``python benchmarks/linucb.py --speed`` for the panel's time.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

import dpcert.bandits.algorithms.linucb_kernel as kernel
import dpcert.bandits.algorithms.linucb_privatizers as linucb_privatizers
import dpcert.reproductions.chowdhury_zhou_2022 as figures
from dpcert.session import PrivacySession
from dpcert.theory.pld import ComposedLossBound

PARTS = (
    "calibrations",
    "charges",
    "reward draws",
    "noise draws",
    "compiled rounds",
    "P_Vec bit sums",
    "certificates",
)


ACTIVE: list[str] = []  # the parts running now, innermost last (FFT passes are counted to it)


class _Timed:
    """``function`` with a process-CPU counter; other attributes (a numba dispatcher's ``signatures``,
    its cache) are the function's own."""

    def __init__(self, seconds: dict[str, float], part: str, function: Callable[..., Any]) -> None:
        self._seconds, self._part, self._function = seconds, part, function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        ACTIVE.append(self._part)
        try:
            return self._function(*args, **kwargs)
        finally:
            ACTIVE.pop()
            self._seconds[self._part] += time.process_time() - start

    def __getattr__(self, name: str) -> Any:
        return getattr(self._function, name)


def _timed(seconds: dict[str, float], part: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with a process-CPU counter, as a plain function (so that it binds as a method)."""
    timed = _Timed(seconds, part, function)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return timed(*args, **kwargs)

    return wrapper


class _TimedGenerator:
    """A generator whose ``random`` and ``standard_normal`` calls are timed (the rewards' draws)."""

    def __init__(self, rng: np.random.Generator, seconds: dict[str, float]) -> None:
        self._rng, self._seconds = rng, seconds

    def random(self, *args: Any, **kwargs: Any) -> Any:
        return _timed(self._seconds, "reward draws", self._rng.random)(*args, **kwargs)

    def standard_normal(self, *args: Any, **kwargs: Any) -> Any:
        return _timed(self._seconds, "reward draws", self._rng.standard_normal)(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rng, name)


def instrument(seconds: dict[str, float]) -> None:
    """Wrap the parts' functions with process-CPU counters adding into ``seconds``."""
    figures.calibrate = _timed(seconds, "calibrations", figures.calibrate)
    PrivacySession.charge_range = _timed(seconds, "charges", PrivacySession.charge_range)
    PrivacySession.worst_user_certificate = _timed(
        seconds, "certificates", PrivacySession.worst_user_certificate
    )
    kernel._draw_noise = _timed(seconds, "noise draws", kernel._draw_noise)
    # bind the numba dispatchers first (binding replaces the module's steps), then wrap only the entry
    # points called from Python: the compiled steps call each other through numba, not these names
    kernel._bind_compiled()
    for name in ("_run_chunk", "_repair"):
        setattr(kernel, name, _Timed(seconds, "compiled rounds", getattr(kernel, name)))
    vec_add = linucb_privatizers.VecSum.add_batch
    linucb_privatizers.VecSum.add_batch = _timed(seconds, "P_Vec bit sums", vec_add)
    run_fixed_arms = kernel.run_fixed_arms

    def timed_rewards(*args: Any, rng: np.random.Generator, **kwargs: Any) -> Any:
        return run_fixed_arms(*args, rng=_TimedGenerator(rng, seconds), **kwargs)  # type: ignore[arg-type]

    kernel.run_fixed_arms = timed_rewards
    compute_pass = ComposedLossBound._compute_pass

    def counted_pass(self: ComposedLossBound, *args: Any, **kwargs: Any) -> Any:
        seconds[f"passes: {ACTIVE[-1] if ACTIVE else 'other'}"] += 1
        return compute_pass(self, *args, **kwargs)

    ComposedLossBound._compute_pass = counted_pass  # type: ignore[method-assign]


def panel() -> float:
    start = time.process_time()
    figures.figure_runs(0.2, runs=50, horizon=20_000, dimension=5, arms=100, delta=0.1, calibration="tight")
    return time.process_time() - start


def _median(values: list[float], unit: str = " s", digits: int = 2) -> str:
    """The median of ``values`` as text, or "–" when there are none (``repeats`` 0)."""
    return f"{float(np.median(values)):.{digits}f}{unit}" if values else "–"


def main() -> None:
    try:
        repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    except ValueError:
        raise SystemExit(f"repeats: {sys.argv[1]!r}; allowed: a whole number >= 0") from None
    if repeats < 0:
        raise SystemExit(f"repeats: {repeats}; allowed: a whole number >= 0")
    if not kernel.AVAILABLE:
        raise SystemExit("numba is not installed: pip install 'dpcert[fast]'")
    seconds: dict[str, float] = defaultdict(float)
    instrument(seconds)
    first_total = panel()
    first = dict(seconds)
    measured: list[dict[str, float]] = []
    totals = []
    for _ in range(repeats):
        seconds.clear()
        totals.append(panel())
        measured.append(dict(seconds))
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"uptime: {load}")
    print(f"| part | first call (fresh interpreter) | later calls (median of {repeats}) |")
    print("|---|---|---|")
    for part in PARTS:
        print(f"| {part} | {first.get(part, 0.0):.2f} s | {_median([m.get(part, 0.0) for m in measured])} |")
    first_seconds = sum(first.get(part, 0.0) for part in PARTS)
    others = [t - sum(m.get(part, 0.0) for part in PARTS) for t, m in zip(totals, measured, strict=True)]
    print(f"| other | {first_total - first_seconds:.2f} s | {_median(others)} |")
    print(f"| **panel** | **{first_total:.2f} s** | **{_median(totals)}** |")
    print()
    print("| part | exact-profile FFT passes, first call | later calls (median) |")
    print("|---|---|---|")
    for part in (*PARTS, "other"):
        key = f"passes: {part}"
        later = _median([m.get(key, 0.0) for m in measured], unit="", digits=0)
        print(f"| {part} | {first.get(key, 0.0):.0f} | {later} |")


if __name__ == "__main__":
    main()
