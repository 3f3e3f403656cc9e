"""The Laplace mechanism and its exact privacy profile.

Adding Lap(b) noise to a query of ℓ1-sensitivity Δ is ε0-DP with ε0 = Δ/b (Dwork, McSherry,
Nissim & Smith 2006; Dwork & Roth 2014, Thm 3.6).  Its exact hockey-stick profile is

    δ(ε) = 1 − exp((ε − ε0)/2)   for 0 <= ε < ε0,      δ(ε) = 0 for ε >= ε0,

the mass of the region where the privacy loss exceeds ε (e.g. Balle, Barthe & Gaboardi 2018, §3;
at ε = 0 it is the total-variation distance 1 − exp(−ε0/2)).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert._numerics import UNIT_ROUNDOFF, nudge_up, ratio_rounded_up
from dpcert.certificates import Certificate, Neighbouring, TrustModel
from dpcert.errors import InvalidParameter
from dpcert.mechanisms._common import add_real_noise, certificate_at_delta, require_certificate_for
from dpcert.mechanisms.secure.noise import secure_laplace
from dpcert.profiles import ALL_TRUST_MODELS, EVENT_LEVEL, ParameterSpec, register_profile

LAPLACE_BASIS = "Dwork, McSherry, Nissim & Smith 2006 (Laplace, exact profile)"


@register_profile(
    "laplace",
    parameters={
        "scale": ParameterSpec("number"),
        "sensitivity": ParameterSpec("number", required=False),
        "sampler": ParameterSpec("string", required=False, choices=("float",)),
    },
    trust_models=ALL_TRUST_MODELS,
    neighbourings=EVENT_LEVEL,
)
class LaplaceProfile:
    """Exact profile of the Laplace mechanism. Parameters: ``scale`` (b) and ``sensitivity`` (ℓ1).

    The pure ε0 = Δ/b is rounded up to the next float when the division is inexact.
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.scale = check.positive_finite("scale", parameters.get("scale"))
        self.sensitivity = check.positive_finite("sensitivity", parameters.get("sensitivity", 1.0))
        self.pure_epsilon = ratio_rounded_up(self.sensitivity, self.scale)

    def delta_for(self, epsilon: float) -> float:
        if epsilon >= self.pure_epsilon:
            return 0.0
        # x = (ε − ε0)/2 carries one rounding (relative u = 2^-53) and expm1 at most 2u of its value, so
        # |computed − exact| <= u|x|e^x + 2u·value; 4u(value + |x|e^x) covers both with margin.
        x = (epsilon - self.pure_epsilon) / 2.0
        value = -math.expm1(x)
        return min(1.0, value + 4.0 * UNIT_ROUNDOFF * (value + abs(x) * math.exp(x)))

    def epsilon_for(self, delta: float) -> float:
        if delta <= 0.0:
            return self.pure_epsilon
        candidate = max(0.0, self.pure_epsilon + 2.0 * math.log1p(-delta))
        # round toward more privacy loss
        return nudge_up(lambda e: self.delta_for(e) <= delta, candidate, self.pure_epsilon)

    def dp_event(self) -> Any:
        from dp_accounting import dp_event

        return dp_event.LaplaceDpEvent(noise_multiplier=self.scale / self.sensitivity)

    def privacy_loss_parts(self, interval: float) -> list[tuple[Any, int]]:
        """dp_accounting's pessimistic PLD of this Laplace mechanism (the PLD protocol of
        :class:`dpcert.profiles.PrivacyLossParts`)."""
        return [(laplace_pld(self.scale, self.sensitivity, interval), 1)]


MAX_PLD_POINTS = 2**22


@lru_cache(maxsize=256)
def laplace_pld(scale: float, sensitivity: float, interval: float) -> Any:
    """Pessimistic PLD of Laplace noise of ``scale`` for ℓ1 ``sensitivity`` (losses in ±Δ/b)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    if not 2.0 * sensitivity / scale / interval <= MAX_PLD_POINTS:
        raise InvalidParameter(
            "value_discretization_interval",
            interval,
            f"an interval above {2.0 * sensitivity / scale / MAX_PLD_POINTS:.3g} for this Laplace mechanism "
            f"(at most {MAX_PLD_POINTS} grid points), or another method",
        )
    return pld.from_laplace_mechanism(
        scale, sensitivity=sensitivity, pessimistic_estimate=True, value_discretization_interval=interval
    )


def laplace_certificate(
    scale: float,
    *,
    sensitivity: float = 1.0,
    delta: float = 0.0,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> Certificate:
    """Certificate of the Laplace mechanism at the point ``delta`` of its profile (ε0-DP at δ = 0)."""
    parameters = {
        "scale": check.positive_finite("scale", scale),
        "sensitivity": check.positive_finite("sensitivity", sensitivity),
        "sampler": "float",
    }
    return certificate_at_delta(
        "laplace", LaplaceProfile(parameters), parameters, delta, trust_model, neighbouring, LAPLACE_BASIS
    )


@dataclass(frozen=True)
class LaplaceMechanism:
    """Adds Lap(b) noise to each coordinate of a query answer.

    This is the textbook floating-point sampler: fine for research and simulation, but its low-order
    bits leak (Mironov 2012), so it is not a deployment sampler.
    """

    scale: float
    certificate: Certificate

    def __post_init__(self) -> None:
        check.positive_finite("scale", self.scale)
        require_certificate_for(
            self.certificate, "laplace", "scale", self.scale, "a Laplace certificate for this scale"
        )

    def __call__(self, value: Any, rng: np.random.Generator, size: int | None = None) -> Any:
        """Release ``value`` plus noise; with ``size``, ``size`` independent releases (leading axis)."""
        return add_real_noise(value, rng, size, lambda rng, shape: rng.laplace(0.0, self.scale, size=shape))

    def secure(self, granularity: float | None = None, dimension: int = 1, bits: str = "os") -> Any:
        """The integer-exact counterpart at this scale on a power-of-two grid (rounding charged).

        See :func:`dpcert.mechanisms.secure.noise.secure_laplace`.
        """
        sensitivity = self.certificate.parameters.get("sensitivity", 1.0)
        return secure_laplace(
            scale=self.scale, sensitivity=sensitivity, dimension=dimension, granularity=granularity, bits=bits
        )


@dataclass(frozen=True)
class LaplaceCalibration:
    """Result of :func:`calibrate_laplace`: the noise ``scale`` and the certificate it earns."""

    scale: float
    certificate: Certificate

    def mechanism(self) -> LaplaceMechanism:
        return LaplaceMechanism(self.scale, self.certificate)


def calibrate_laplace(
    epsilon: float,
    *,
    sensitivity: float = 1.0,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> LaplaceCalibration:
    """The least float Laplace scale b with Δ/b <= ε in exact arithmetic, for ε-DP."""
    epsilon = check.epsilon(epsilon)
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    scale = ratio_rounded_up(sensitivity, epsilon)  # b >= Δ/ε exactly, so Δ/b <= ε exactly
    if not math.isfinite(scale):
        raise InvalidParameter(
            "epsilon", epsilon, "epsilon > 0 large enough that sensitivity/epsilon is finite"
        )
    certificate = laplace_certificate(
        scale, sensitivity=sensitivity, trust_model=trust_model, neighbouring=neighbouring
    )
    return LaplaceCalibration(scale, certificate)
