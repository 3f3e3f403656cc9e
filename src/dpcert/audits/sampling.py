"""Draw outputs of a mechanism on two neighbouring inputs, in vectorised batches.

A *mechanism* here is any callable ``f(value, rng)`` returning one output (a float, an int, a bool, a
string or a 1-D array), or ``f(value, rng, size)`` (a parameter named ``size``) returning ``size``
outputs along a leading axis.
dpcert's own mechanisms accept ``size``; so do most numpy-based samplers.  When ``size`` is available
the draws are made in batches of ``batch_size``; otherwise the callable is called once per draw (the
only way to sample an opaque pipeline).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.errors import DPCertError, InvalidParameter

Mechanism = Callable[..., Any]
DEFAULT_BATCH_SIZE = 1_000_000
DEFAULT_SAMPLES = 100_000  # draws per input when the caller does not say
BYTES_PER_VALUE = 8 * 3
"""Bytes held per output value while auditing: the float64 draws, their concatenation and the
sorted copies of the selection step."""
BYTES_PER_UNBATCHED_DRAW = 120
"""Extra bytes per draw of a function without ``size`` (one Python object and a list slot per draw)."""
MEMORY_FRACTION = 0.5
"""Share of the available memory an audit may plan to use."""


def _gib(size: float) -> str:
    return f"{size / 2**30:.3g} GiB"


def check_draws_fit(samples: int, width: int = 1, *, batched: bool = True, name: str = "samples") -> None:
    """Refuse ``samples`` draws per input (of ``width`` values each, on both inputs) that cannot fit in
    :data:`MEMORY_FRACTION` of the memory available, before any draw is made; the message states the
    largest number that fits on this machine."""
    per_draw = width * BYTES_PER_VALUE + (0 if batched else BYTES_PER_UNBATCHED_DRAW)
    refuse_unless_fits(samples, lambda count: 2.0 * count * per_draw, name=name)


def refuse_unless_fits(
    samples: int, needed: Callable[[int], float], *, name: str = "samples", holding: str = ""
) -> None:
    """Refuse ``samples`` draws per input when ``needed(samples)`` bytes exceed :data:`MEMORY_FRACTION`
    of the memory available; the message states the largest count that fits (``needed`` grows with
    the count; found by bisection; at least 2, the fewest an audit takes) and, after ``holding``, the
    bytes a million draws need."""
    budget = check.available_memory() * MEMORY_FRACTION
    if needed(samples) <= budget:
        return
    low, high = 1, samples
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if needed(middle) <= budget else (low, middle)
    raise InvalidParameter(
        name,
        samples,
        f"{name.lstrip('-')} <= {max(2, low):.3g} on this machine ({holding}about {_gib(needed(10**6))} per "
        f"million draws per input; {_gib(budget)} of memory may be used, {_gib(needed(samples))} needed)",
    )


def generator_from(seed: int | None, rng: np.random.Generator | None) -> np.random.Generator:
    """The generator to draw from: ``rng`` itself, or ``numpy.random.default_rng(seed)`` (not both)."""
    if rng is not None:
        if seed is not None:
            raise InvalidParameter("seed", seed, "None when rng is given (pass one of seed, rng)")
        return check.generator(rng)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise InvalidParameter("seed", seed, "an integer >= 0 or None")
    return np.random.default_rng(seed)


def accepts_size(mechanism: Mechanism) -> bool:
    """True if ``mechanism`` has a parameter named ``size`` that can be passed by keyword.

    Only the name counts: a third parameter with another name (``f(value, rng, scale=2.0)``) is never
    mistaken for a batch size.
    """
    try:
        signature = inspect.signature(mechanism)
    except (TypeError, ValueError):  # builtins without signatures
        return False
    parameter = signature.parameters.get("size")
    return parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def _as_output_array(batch: Any, expected: int) -> np.ndarray:
    array = np.asarray(batch)
    if array.dtype == object:
        raise InvalidParameter(
            "mechanism output", type(batch).__name__, "numbers, booleans, strings or 1-D numeric arrays"
        )
    if array.ndim == 0 or array.shape[0] != expected:
        raise InvalidParameter(
            "mechanism output",
            f"shape {array.shape}",
            f"a leading axis of length size={expected} when called with size",
        )
    if array.ndim > 2:
        raise InvalidParameter(
            "mechanism output", f"shape {array.shape[1:]} per draw", "a scalar or 1-D array"
        )
    if array.dtype == bool:
        array = array.astype(np.int8)
    return array


def draw(
    mechanism: Mechanism,
    value: Any,
    samples: int,
    rng: np.random.Generator,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int], None] | None = None,
    name: str = "value",
) -> np.ndarray:
    """``samples`` independent outputs of ``mechanism(value, rng)``, stacked along axis 0.

    Parameters
    ----------
    mechanism
        ``f(value, rng)`` or ``f(value, rng, size)``.
    value
        The input.
    samples
        Number of draws (>= 1).
    rng
        Source of randomness, passed to every call.
    batch_size
        Largest ``size`` per vectorised call.
    progress
        Called with the number of draws completed by each batch (or by each block of 1024 single draws).
    name
        The parameter ``value`` was given as: a ``TypeError`` or ``ValueError`` the mechanism raises on
        it (an input of a type or shape it cannot take) is an :class:`InvalidParameter` naming it.
    """
    samples = check.positive_int("samples", samples)
    batch_size = check.positive_int("batch_size", batch_size)
    rng = check.generator(rng)
    if not callable(mechanism):
        raise InvalidParameter("mechanism", type(mechanism).__name__, "a callable f(value, rng[, size])")

    def call(*size: int) -> Any:
        try:
            return mechanism(value, rng, size=size[0]) if size else mechanism(value, rng)
        except (TypeError, ValueError) as exc:  # the mechanism cannot take this input
            if isinstance(exc, DPCertError) and not isinstance(exc, InvalidParameter):
                raise
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            raise InvalidParameter(
                name, value, f"an input the mechanism can take (it raised {detail})"
            ) from exc

    if accepts_size(mechanism):
        batches = []
        remaining = samples
        while remaining > 0:
            size = min(batch_size, remaining)
            batches.append(_as_output_array(call(size), size))
            remaining -= size
            if progress is not None:
                progress(size)
        return batches[0] if len(batches) == 1 else np.concatenate(batches, axis=0)
    outputs: list[Any] = []
    for start in range(0, samples, 1024):
        block = min(1024, samples - start)
        outputs.extend(call() for _ in range(block))
        if progress is not None:
            progress(block)
    return _as_output_array(outputs, samples)


@dataclass(frozen=True)
class SamplePair:
    """Outputs of a mechanism on the two neighbouring inputs ``a`` and ``b`` (same number of draws)."""

    on_a: np.ndarray
    on_b: np.ndarray

    def __post_init__(self) -> None:
        if self.on_a.shape[1:] != self.on_b.shape[1:]:
            raise InvalidParameter(
                "mechanism output",
                f"shapes {self.on_a.shape[1:]} and {self.on_b.shape[1:]}",
                "the same output shape on both inputs",
            )

    @property
    def samples(self) -> int:
        return int(self.on_a.shape[0])


def draw_pair(
    mechanism: Mechanism,
    a: Any,
    b: Any,
    samples: int,
    rng: np.random.Generator,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = False,
) -> SamplePair:
    """``samples`` outputs on each of ``a`` and ``b``; ``progress`` reports on stderr (tqdm if installed)."""
    samples = check.positive_int("samples", samples)
    bar = _progress_bar(2 * samples) if progress else None
    callback = None if bar is None else bar.update
    try:
        on_a = draw(mechanism, a, samples, rng, batch_size=batch_size, progress=callback, name="a")
        on_b = draw(mechanism, b, samples, rng, batch_size=batch_size, progress=callback, name="b")
    finally:
        if bar is not None:
            bar.close()
    return SamplePair(on_a, on_b)


class _PlainProgress:
    """Percentages on stderr, for installations without tqdm."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.shown = -1

    def update(self, count: int) -> None:
        self.done += count
        percent = 100 * self.done // self.total
        if percent // 10 != self.shown // 10:
            sys.stderr.write(f"\rsampling: {percent}%")
            sys.stderr.flush()
            self.shown = percent

    def close(self) -> None:
        sys.stderr.write("\n")


def _progress_bar(total: int) -> Any:
    """A tqdm bar on stderr (tqdm is optional), else plain percentages."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _PlainProgress(total)
    return tqdm(total=total, unit="draw", unit_scale=True, desc="sampling", leave=False)
