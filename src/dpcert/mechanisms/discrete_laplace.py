"""The discrete Laplace mechanism: integer outputs, no floating-point leakage in the released value.

DLap(a) has mass ``tanh(a/2) · exp(−a|x|)`` on the integers (Canonne, Kamath & Steinke 2020, Def. 3 with
t = 1/a; dp_accounting's ``DiscreteLaplaceDpEvent`` uses the same parameter).  Adding it to an integer
query of ℓ1-sensitivity Δ (an integer) is ε0-DP with ε0 = aΔ.  The exact profile is the hockey-stick
divergence between DLap(a) and DLap(a) shifted by Δ, summed in closed form over the three regions of the
privacy loss L(x) = a(|x − Δ| − |x|):

    δ(ε) = (1 − e^{ε−aΔ}) / (1 + e^{−a})  +  Σ_{x=1}^{Δ−1} tanh(a/2) e^{−ax} (1 − e^{ε − a(Δ−2x)})₊

for 0 <= ε < aΔ (the first term is P(X <= 0) times its loss-ε excess), and 0 for ε >= aΔ.

The sampler draws the difference of two geometric variables (exact in distribution up to numpy's
geometric sampler); releases are integers, so the low-order-bit attack on floating-point Laplace
(Mironov 2012) does not apply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert._numerics import product_rounded_up, smallest_valid
from dpcert.certificates import Certificate, Neighbouring, TrustModel
from dpcert.errors import InvalidParameter
from dpcert.mechanisms._common import certificate_at_delta, release_shape, require_certificate_for
from dpcert.mechanisms.secure.samplers import SecureRandom, sample_discrete_laplace, timing_failure
from dpcert.mechanisms.secure.timing import covering_release_time
from dpcert.profiles import ALL_TRUST_MODELS, EVENT_LEVEL, ParameterSpec, register_profile

DISCRETE_LAPLACE_BASIS = "Canonne, Kamath & Steinke 2020 (discrete Laplace, exact profile)"


@register_profile(
    "discrete-laplace",
    parameters={
        "noise_parameter": ParameterSpec("number"),
        "sensitivity": ParameterSpec("integer", required=False),
        "sampler": ParameterSpec("string", required=False, choices=("integer-exact", "float")),
        "granularity": ParameterSpec("number", required=False),
    },
    trust_models=ALL_TRUST_MODELS,
    neighbourings=EVENT_LEVEL,
)
class DiscreteLaplaceProfile:
    """Exact profile. Parameters: ``noise_parameter`` (a > 0) and integer ``sensitivity`` (Δ >= 1).

    The pure ε0 = aΔ is rounded up to the next float when the product is inexact.
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.noise_parameter = check.positive_finite("noise_parameter", parameters.get("noise_parameter"))
        self.sensitivity = check.positive_int("sensitivity", parameters.get("sensitivity", 1))
        self.pure_epsilon = product_rounded_up(self.noise_parameter, float(self.sensitivity))

    def delta_for(self, epsilon: float) -> float:
        a, shift = self.noise_parameter, self.sensitivity
        if epsilon >= self.pure_epsilon:
            return 0.0
        total = -math.expm1(epsilon - self.pure_epsilon) / (1.0 + math.exp(-a))
        if shift > 1:
            x = np.arange(1, shift, dtype=float)
            loss = a * (shift - 2.0 * x)
            mass = math.tanh(a / 2.0) * np.exp(-a * x)
            total += float(np.sum(np.where(loss > epsilon, mass * -np.expm1(epsilon - loss), 0.0)))
        return min(1.0, total * (1.0 + 1e-13))  # allowance for rounding, on the safe side

    def epsilon_for(self, delta: float) -> float:
        if delta <= 0.0:
            return self.pure_epsilon
        return min(
            self.pure_epsilon, smallest_valid(lambda e: self.delta_for(e) - delta, 0.0, self.pure_epsilon)
        )

    def dp_event(self) -> Any:
        from dp_accounting import dp_event

        return dp_event.DiscreteLaplaceDpEvent(
            noise_parameter=self.noise_parameter, sensitivity=self.sensitivity
        )

    def privacy_loss_parts(self, interval: float) -> list[tuple[Any, int]]:
        """dp_accounting's pessimistic PLD of this mechanism (the PLD protocol of
        :class:`dpcert.profiles.PrivacyLossParts`)."""
        return [(discrete_laplace_pld(self.noise_parameter, self.sensitivity, interval), 1)]


MAX_PLD_POINTS = 2**22


@lru_cache(maxsize=256)
def discrete_laplace_pld(noise_parameter: float, sensitivity: int, interval: float) -> Any:
    """Pessimistic PLD of DLap(``noise_parameter``) for integer ``sensitivity`` (losses in ±aΔ)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    loss_range = 2.0 * noise_parameter * sensitivity
    if not loss_range / interval <= MAX_PLD_POINTS:
        raise InvalidParameter(
            "value_discretization_interval",
            interval,
            f"an interval above {loss_range / MAX_PLD_POINTS:.3g} for this discrete Laplace mechanism "
            f"(at most {MAX_PLD_POINTS} grid points), or another method",
        )
    return pld.from_discrete_laplace_mechanism(
        noise_parameter,
        sensitivity=sensitivity,
        pessimistic_estimate=True,
        value_discretization_interval=interval,
    )


def discrete_laplace_certificate(
    noise_parameter: float,
    *,
    sensitivity: int = 1,
    delta: float = 0.0,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    sampler: str | None = None,
) -> Certificate:
    """Certificate of DLap(``noise_parameter``) noise at the point ``delta`` of its exact profile.

    ``sampler`` (``"integer-exact"`` or ``"float"``), when given, is recorded in the parameters.
    """
    parameters: dict[str, Any] = {
        "noise_parameter": check.positive_finite("noise_parameter", noise_parameter),
        "sensitivity": check.positive_int("sensitivity", sensitivity),
    }
    if sampler is not None:
        if sampler not in ("integer-exact", "float"):
            raise InvalidParameter("sampler", sampler, "'integer-exact' or 'float'")
        parameters["sampler"] = sampler
    return certificate_at_delta(
        "discrete-laplace",
        DiscreteLaplaceProfile(parameters),
        parameters,
        delta,
        trust_model,
        neighbouring,
        DISCRETE_LAPLACE_BASIS + ("; integer-exact sampler" if sampler == "integer-exact" else ""),
    )


@dataclass(frozen=True)
class DiscreteLaplaceMechanism:
    """Adds DLap(a) noise to integer query answers; calibrate with :meth:`for_epsilon`.

    ``secure=True`` draws the noise with the integer-exact sampler (CKS 2020, Alg. 2) from the operating
    system's random bits (:mod:`dpcert.mechanisms.secure.samplers`) and ignores ``rng``.  That sampler
    does fixed work per draw except with probability p per release of ``dimension`` coordinates
    (:func:`~dpcert.mechanisms.secure.samplers.timing_failure`), so the ``certificate`` of a secure
    mechanism is the one given with the release-time term (1 + e^ε) p added to its δ
    (:func:`~dpcert.mechanisms.secure.timing.covering_release_time`; Jin, McMurtry, Rubinstein &
    Ohrimenko 2022), per release; a secure release of more than ``dimension`` coordinates is refused.
    The float path (``secure=False``) draws numpy geometric variables and carries no timing claim.
    """

    noise_parameter: float
    certificate: Certificate
    secure: bool = False
    dimension: int = 1

    def __post_init__(self) -> None:
        check.positive_finite("noise_parameter", self.noise_parameter)
        check.positive_int("dimension", self.dimension)
        if not isinstance(self.secure, (bool, np.bool_)):
            raise InvalidParameter("secure", self.secure, "true or false")
        require_certificate_for(
            self.certificate,
            "discrete-laplace",
            "noise_parameter",
            self.noise_parameter,
            "a discrete-Laplace certificate for this parameter",
        )
        if self.secure:
            failure = timing_failure("discrete-laplace", self.scale, self.dimension)
            object.__setattr__(self, "certificate", covering_release_time(self.certificate, failure))

    @property
    def scale(self) -> Fraction:
        """The sampler's scale 1/a, exactly."""
        return 1 / Fraction(self.noise_parameter)

    @classmethod
    def for_epsilon(
        cls, epsilon: float, sensitivity: int = 1, *, secure: bool = False, dimension: int = 1
    ) -> DiscreteLaplaceMechanism:
        """The least noise (largest a, rounded so that aΔ <= ε) giving ε-DP (with ``secure``, the
        output's ε-DP and a δ of the release-time term only)."""
        epsilon = check.epsilon(epsilon)
        sensitivity = check.positive_int("sensitivity", sensitivity)
        noise_parameter = epsilon / sensitivity
        while noise_parameter * sensitivity > epsilon:
            noise_parameter = math.nextafter(noise_parameter, 0.0)
        certificate = discrete_laplace_certificate(
            noise_parameter, sensitivity=sensitivity, sampler="integer-exact" if secure else None
        )
        return cls(noise_parameter, certificate, secure, dimension)

    def __call__(self, value: Any, rng: np.random.Generator, size: int | None = None) -> Any:
        """Release integer ``value`` plus DLap(a) noise; with ``size``, ``size`` releases (leading axis)."""
        array = check.finite_array("value", value)
        if not np.all(array == np.round(array)):
            raise InvalidParameter(
                "value", value, "integers (the discrete Laplace mechanism releases integers)"
            )
        shape = release_shape(array, size)
        if self.secure:
            if array.size > self.dimension:
                raise InvalidParameter(
                    "value", value, f"at most dimension = {self.dimension} coordinate(s) per release"
                )
            count = int(np.prod(shape, dtype=np.int64))
            noise = sample_discrete_laplace(self.scale, count, SecureRandom())
            released = array.astype(np.int64) + noise.reshape(shape)
            return int(released) if released.ndim == 0 else released
        rng = check.generator(rng)
        success = -math.expm1(-self.noise_parameter)
        noise = rng.geometric(success, size=shape) - rng.geometric(success, size=shape)
        released = array.astype(np.int64) + noise
        return int(released) if released.ndim == 0 else released
