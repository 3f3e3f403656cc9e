"""Textbook mechanisms in the batched ``mechanism(value, rng, size)`` form that audits sample.

Plain floating-point samplers with known privacy (Laplace(b) noise on a sensitivity-1 query is
(1/b)-DP; binary randomized response keeping the bit with probability ``keep`` is ln(keep/(1 − keep))-DP),
used as reference targets when testing and benchmarking the audits.  They carry no certificate and
are not deployment samplers (their low-order bits leak, Mironov 2012).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

BatchedMechanism = Callable[[Any, np.random.Generator, int], np.ndarray]


def laplace_noise(scale: float) -> BatchedMechanism:
    """``value`` plus Laplace(``scale``) noise on each coordinate, ``size`` releases (leading axis)."""

    def mechanism(value: Any, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.asarray(value, float) + rng.laplace(0.0, scale, (size,) + np.shape(value))

    return mechanism


def gaussian_noise(sigma: float) -> BatchedMechanism:
    """``value`` plus N(0, ``sigma``²) noise on each coordinate, ``size`` releases (leading axis)."""

    def mechanism(value: Any, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.asarray(value, float) + rng.normal(0.0, sigma, (size,) + np.shape(value))

    return mechanism


def randomized_response(keep: float) -> BatchedMechanism:
    """Binary randomized response keeping the bit with probability ``keep`` (ε = ln(keep/(1-keep)))."""

    def mechanism(bit: Any, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.where(rng.random(size) < keep, bit, 1 - bit)

    return mechanism
