"""Closed-form profiles of the Laplace and discrete Laplace mechanisms against direct evaluation of
the hockey-stick divergence (summed over integers; integrated numerically for the continuous case)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from dpcert.mechanisms.discrete_laplace import DiscreteLaplaceProfile
from dpcert.mechanisms.laplace import LaplaceProfile


@pytest.mark.parametrize(("a", "shift"), [(0.3, 1), (1.0, 1), (0.5, 3), (0.2, 7)])
def test_discrete_laplace_profile_equals_the_summed_divergence(a: float, shift: int) -> None:
    support = np.arange(-600, 600 + shift)
    mass = math.tanh(a / 2.0) * np.exp(-a * np.abs(support))
    shifted = math.tanh(a / 2.0) * np.exp(-a * np.abs(support - shift))
    profile = DiscreteLaplaceProfile({"noise_parameter": a, "sensitivity": shift})
    for epsilon in np.linspace(0.0, a * shift * 1.1, 12):
        forward = np.maximum(mass - math.exp(epsilon) * shifted, 0.0).sum()
        backward = np.maximum(shifted - math.exp(epsilon) * mass, 0.0).sum()
        reference = max(forward, backward)
        value = profile.delta_for(float(epsilon))
        assert (
            reference * (1 - 1e-12) - 1e-15 <= value <= reference * (1 + 1e-9) + 1e-300
        )  # reference round-off


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
def test_laplace_profile_equals_the_integrated_divergence(scale: float) -> None:
    def density(x: float, centre: float) -> float:
        return math.exp(-abs(x - centre) / scale) / (2.0 * scale)

    profile = LaplaceProfile({"scale": scale, "sensitivity": 1.0})
    for epsilon in np.linspace(0.0, 1.2 / scale, 9):
        growth = math.exp(epsilon)

        def excess(x: float, growth: float = growth) -> float:
            return max(density(x, 0.0) - growth * density(x, 1.0), 0.0)

        reference = sum(
            integrate.quad(excess, low, high, epsabs=1e-14, epsrel=1e-12)[0]
            for low, high in ((-60.0 * scale, 0.0), (0.0, 1.0), (1.0, 60.0 * scale))
        )
        value = profile.delta_for(float(epsilon))
        assert value >= reference - 1e-12
        assert value <= reference + 1e-9
