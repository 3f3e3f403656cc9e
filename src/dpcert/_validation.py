"""Input validation shared by every public entry point."""

from __future__ import annotations

import math
import numbers
import os
from typing import Any, SupportsInt, cast

import numpy as np

from dpcert.errors import DataOutOfBounds, InvalidParameter


def _as_real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameter(name, value, "a real number")
    try:
        result = float(value)
    except OverflowError:  # an integer or fraction beyond the largest float: as large as a float gets
        result = math.inf if cast(Any, value) > 0 else -math.inf
    if math.isnan(result):
        raise InvalidParameter(name, value, "a real number, not NaN")
    return result


def positive_finite(name: str, value: object) -> float:
    """Return ``value`` as a float if ``0 < value < inf``, else raise."""
    result = _as_real(name, value)
    if not (0.0 < result < math.inf):
        raise InvalidParameter(name, value, f"0 < {name} < inf")
    return result


def nonnegative_finite(name: str, value: object) -> float:
    """Return ``value`` as a float if ``0 <= value < inf``, else raise."""
    result = _as_real(name, value)
    if not (0.0 <= result < math.inf):
        raise InvalidParameter(name, value, f"0 <= {name} < inf")
    return result


def epsilon(value: object, name: str = "epsilon") -> float:
    """A privacy parameter epsilon: finite and strictly positive."""
    return positive_finite(name, value)


def delta(value: object, name: str = "delta") -> float:
    """A privacy parameter delta: ``0 <= delta < 1``."""
    result = _as_real(name, value)
    if not (0.0 <= result < 1.0):
        raise InvalidParameter(name, value, f"0 <= {name} < 1")
    return result


SMALLEST_POSITIVE_DELTA = 1e-300
"""Least positive δ accepted where δ must be positive: float64 loses relative precision towards its
smallest normal number (2.2e-308), where the profiles' δ(ε) could no longer be told from 0."""


def positive_delta(value: object, name: str = "delta") -> float:
    """A delta that must be strictly positive (e.g. for the Gaussian mechanism): 1e-300 <= delta < 1."""
    result = delta(value, name)
    if result == 0.0:
        raise InvalidParameter(
            name, value, f"0 < {name} < 1", hint="the Gaussian mechanism cannot give delta = 0"
        )
    if result < SMALLEST_POSITIVE_DELTA:
        raise InvalidParameter(name, value, f"{SMALLEST_POSITIVE_DELTA:g} <= {name} < 1")
    return result


def probability(name: str, value: object, *, open_low: bool = False, open_high: bool = False) -> float:
    """A probability in [0, 1], optionally with open ends."""
    result = _as_real(name, value)
    low_ok = result > 0.0 if open_low else result >= 0.0
    high_ok = result < 1.0 if open_high else result <= 1.0
    if not (low_ok and high_ok):
        low = "<" if open_low else "<="
        high = "<" if open_high else "<="
        raise InvalidParameter(name, value, f"0 {low} {name} {high} 1")
    return result


def positive_int(name: str, value: object, minimum: int = 1) -> int:
    """An integer ``>= minimum`` (bools and non-integral floats are refused)."""
    if isinstance(value, bool):
        raise InvalidParameter(name, value, f"an integer >= {minimum}")
    if isinstance(value, numbers.Integral):
        result = int(value)
    elif isinstance(value, numbers.Real) and float(value).is_integer():
        result = int(cast(SupportsInt, value))  # every registered Real converts (numpy's too)
    else:
        raise InvalidParameter(name, value, f"an integer >= {minimum}")
    if result < minimum:
        raise InvalidParameter(name, value, f"an integer >= {minimum}")
    return result


def finite_array(name: str, value: object) -> np.ndarray:
    """A float array with only finite entries."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: an integer beyond float range
        raise InvalidParameter(name, value, "a finite number or array of numbers") from exc
    if not np.all(np.isfinite(array)):
        raise InvalidParameter(name, "<array with non-finite entries>", "finite numbers only (no NaN or inf)")
    return array


def bounded_array(name: str, value: object, low: float, high: float) -> np.ndarray:
    """A finite float array whose entries lie in ``[low, high]``."""
    array = finite_array(name, value)
    if array.size and (array.min() < low or array.max() > high):
        raise DataOutOfBounds(
            name,
            f"<array in [{array.min()}, {array.max()}]>",
            f"entries in [{low}, {high}]",
            hint="clip the data to the declared bounds first",
        )
    return array


def generator(value: object, name: str = "rng") -> np.random.Generator:
    """A :class:`numpy.random.Generator` (explicit randomness, no global state)."""
    if not isinstance(value, np.random.Generator):
        raise InvalidParameter(
            name, type(value).__name__, "a numpy.random.Generator, e.g. numpy.random.default_rng(seed)"
        )
    return value


def available_memory() -> int:
    """Bytes of memory this process may use (MemAvailable on Linux, else physical memory), for refusing
    sizes that cannot fit before any work starts."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return 8 * 2**30
