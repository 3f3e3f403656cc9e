"""Timing audits: the joint view of a release's output and the time the release took.

A sampler whose running time depends on the value it draws leaks the noise through time, and with it
the input: Jin, McMurtry, Rubinstein & Ohrimenko (2022), "Are we there yet? Timing and floating-point
attacks on differential privacy systems", IEEE S&P.  An observer who sees when a release comes back
sees the pair (output, release time), so that pair is what a timing audit tests.

:func:`draw_timed` calls the mechanism once per release on the two inputs in turn (a, b, b, a, a, b, …,
so that changes in machine load fall on both alike), timing each call with :func:`time.perf_counter_ns`.
:func:`joint_view` cuts the outputs and the times into quantile bins of the pooled *selection* draws
(both inputs, never the evaluation draws; :meth:`TimedDraws.alternated` spreads the selection and the
evaluation draws over the whole run) and hands the cells (output bin, release-time bin) to the
usual rejection-set machinery (:func:`dpcert.audits.selection.select_rejection_set`: superlevel sets
of the estimated likelihood ratio over cells).  A set of cells is an event of the joint view chosen
on the selection draws alone, so the Clopper–Pearson bound of
:mod:`dpcert.audits.epsilon_lower_bound` holds for it as for any rejection set; a mechanism whose
release time carries information about its input gets a larger bound than its outputs alone give.

Measured times are noisy and not reproducible from a seed: the verdict of a timing audit is a
statement about this machine under its load while the audit ran.  The bound treats the releases as
independent draws, as every audit does; the interleaving keeps a changing load from favouring either
input, and the time bins move with the load only through the selection draws.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.audits.sampling import Mechanism, SamplePair
from dpcert.errors import InvalidParameter

CLOCKS = {"wall": time.perf_counter_ns, "cpu": time.thread_time_ns}
"""``"wall"``: the time an observer of the release sees; ``"cpu"``: the calling thread's processor time,
which leaves out the waits the operating system imposes on a loaded machine (the work itself)."""
DEFAULT_TIME_BINS = 8
DEFAULT_OUTPUT_BINS = 16
WARM_UP = 32  # releases per input made and discarded before timing (caches, first-call set-up)


@dataclass(frozen=True)
class TimedDraws:
    """Outputs on the two inputs and the duration of each release in nanoseconds (same order)."""

    outputs_a: np.ndarray
    outputs_b: np.ndarray
    times_a: np.ndarray
    times_b: np.ndarray
    clock: str = "wall"

    @property
    def samples(self) -> int:
        return int(self.outputs_a.shape[0])

    def alternated(self) -> TimedDraws:
        """The same draws reordered so that the first half takes every other block of two pairs
        (pairs 0, 1, 4, 5, 8, 9, …) and the second half the others (2, 3, 6, 7, …).

        Audits choose the rejection set on the first half and count on the second; in this order both
        halves span the whole run, so a drift of the machine's speed during the audit reaches them
        alike, and in each half each input goes first in every other pair.  The order depends on the
        position of a pair only, never on what was drawn.
        """
        index = np.arange(self.samples)
        first = (index // 2) % 2 == 0
        order = np.concatenate([index[first], index[~first]])
        return TimedDraws(
            self.outputs_a[order], self.outputs_b[order], self.times_a[order], self.times_b[order], self.clock
        )


def _single_release(mechanism: Mechanism) -> Any:
    """``f(value, rng)`` for one release: the callable itself, or ``f(value, rng, size=1)[0]`` when it
    needs ``size``."""
    try:
        inspect.signature(mechanism).bind(0, None)
        return mechanism
    except TypeError:

        def single(value: Any, rng: np.random.Generator) -> Any:
            return np.asarray(mechanism(value, rng, size=1))[0]

        return single
    except ValueError:  # no signature (a builtin): called as f(value, rng)
        return mechanism


def _scalar(output: Any) -> float:
    array = np.asarray(output)
    if array.size != 1 or array.dtype.kind not in "biuf":
        raise InvalidParameter(
            "mechanism output", f"shape {array.shape} of {array.dtype}", "one number per release (timing)"
        )
    return float(array.reshape(()))


def draw_timed(
    mechanism: Mechanism,
    a: Any,
    b: Any,
    samples: int,
    rng: np.random.Generator,
    *,
    warm_up: int = WARM_UP,
    clock: str = "wall",
) -> TimedDraws:
    """``samples`` releases on each input, interleaved a, b, b, a, a, b, …, each timed on its own.

    Consecutive releases alternate between the inputs and each input is first in every other pair, so
    that drifts in machine load and any cost of going first or second fall on both inputs alike.

    The clock (:data:`CLOCKS`: ``time.perf_counter_ns`` or ``time.thread_time_ns``) is read
    immediately before and after each call; nothing else runs between the two readings.  ``warm_up``
    releases per input are made first and discarded.
    """
    if clock not in CLOCKS:
        raise InvalidParameter("clock", clock, "'wall' (time.perf_counter_ns) or 'cpu' (time.thread_time_ns)")
    samples = check.positive_int("samples", samples)
    rng = check.generator(rng)
    if not callable(mechanism):
        raise InvalidParameter("mechanism", type(mechanism).__name__, "a callable f(value, rng[, size])")
    release = _single_release(mechanism)
    for _ in range(check.positive_int("warm_up", warm_up, minimum=0)):
        release(a, rng)
        release(b, rng)
    outputs = np.empty((2, samples), dtype=float)
    times = np.empty((2, samples), dtype=np.int64)
    inputs = (a, b)
    read = CLOCKS[clock]
    for i in range(samples):
        first = i & 1  # a, b, b, a, a, b, …: each input goes first in every other pair
        start = read()
        out_first = release(inputs[first], rng)
        middle = read()
        out_second = release(inputs[1 - first], rng)
        end = read()
        times[first, i], times[1 - first, i] = middle - start, end - middle
        outputs[first, i], outputs[1 - first, i] = _scalar(out_first), _scalar(out_second)
    return TimedDraws(outputs[0], outputs[1], times[0], times[1], clock)


def _edges(pooled: np.ndarray, bins: int) -> np.ndarray:
    """Bin edges: between the distinct values if there are at most ``bins`` of them, else the pooled
    quantiles at 1/bins, …, (bins − 1)/bins (duplicates merged)."""
    values = np.unique(pooled)
    if values.size <= bins:
        return (values[:-1] + values[1:]) / 2.0
    return np.unique(np.quantile(pooled, np.arange(1, bins) / bins))


@dataclass(frozen=True)
class JointView:
    """The draws as cells (output bin, release-time bin), with the edges that define the bins."""

    pair: SamplePair
    output_edges: np.ndarray
    time_edges: np.ndarray

    @property
    def cells(self) -> int:
        return (self.output_edges.size + 1) * (self.time_edges.size + 1)

    def outputs_only(self) -> SamplePair:
        """The same draws with the release time dropped (output bins only)."""
        return SamplePair(self.pair.on_a[:, 0], self.pair.on_b[:, 0])

    def notes(self, draws: TimedDraws) -> list[str]:
        times = np.concatenate([draws.times_a, draws.times_b]) / 1e3
        clock = (
            "wall clock, time.perf_counter_ns"
            if draws.clock == "wall"
            else "thread CPU time, time.thread_time_ns"
        )
        return [
            f"timing audit: looked at each release's output and its release time ({clock} around one "
            "call), releases on the two inputs interleaved a, b, b, a, a, b, …; selection and evaluation "
            "draws alternate in blocks of two pairs over the run",
            f"joint view: {self.output_edges.size + 1} output bins x {self.time_edges.size + 1} "
            "release-time bins, edges at quantiles of the pooled selection draws; cell = (output bin, "
            "time bin)",
            "release times in microseconds: median on a "
            f"{np.median(draws.times_a) / 1e3:.1f}, on b {np.median(draws.times_b) / 1e3:.1f}; "
            f"time bin edges {', '.join(f'{edge / 1e3:.1f}' for edge in self.time_edges)}; "
            f"5th-95th percentile {np.percentile(times, 5):.1f}-{np.percentile(times, 95):.1f}",
        ]


def joint_view(
    draws: TimedDraws,
    selection_draws: int,
    *,
    output_bins: int = DEFAULT_OUTPUT_BINS,
    time_bins: int = DEFAULT_TIME_BINS,
) -> JointView:
    """Cells of (output, release time), binned by edges taken from the first ``selection_draws`` draws of
    each input (the draws that choose the rejection set) and applied to all draws."""
    output_bins = check.positive_int("output_bins", output_bins, minimum=2)
    time_bins = check.positive_int("time_bins", time_bins, minimum=2)
    if not 1 <= selection_draws < draws.samples:
        raise InvalidParameter("selection_draws", selection_draws, f"1 <= selection_draws < {draws.samples}")
    split = selection_draws
    output_edges = _edges(np.concatenate([draws.outputs_a[:split], draws.outputs_b[:split]]), output_bins)
    time_edges = _edges(
        np.concatenate([draws.times_a[:split], draws.times_b[:split]]).astype(float), time_bins
    )

    def cells(outputs: np.ndarray, times: np.ndarray) -> np.ndarray:
        return np.stack(
            [
                np.searchsorted(output_edges, outputs, side="right"),
                np.searchsorted(time_edges, times.astype(float), side="right"),
            ],
            axis=1,
        ).astype(np.int64)

    pair = SamplePair(cells(draws.outputs_a, draws.times_a), cells(draws.outputs_b, draws.times_b))
    return JointView(pair, output_edges, time_edges)
