"""The Gaussian mechanism: its sampler (float, or integer-exact with ``secure=True``) and calibration.

Its exact privacy profile (Balle & Wang 2018, Thm 8), certificates and the least σ for a target are in
:mod:`dpcert.mechanisms.gaussian_profile`, which imports no sampler (what ``dpcert calibrate gaussian``
loads); every name there is re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.certificates import Certificate, Neighbouring, TrustModel
from dpcert.mechanisms._common import add_real_noise, require_certificate_for
from dpcert.mechanisms.gaussian_profile import (
    ANALYTIC_BASIS,
    CLASSICAL_BASIS,
    GAUSSIAN_METHODS,
    MAX_COMPOSITIONS,
    MAX_MU,
    ClassicalGaussianBound,
    GaussianNoise,
    GaussianProfile,
    calibrate_gaussian_noise,
    classical_delta,
    classical_sigma,
    gaussian_certificate,
)
from dpcert.mechanisms.secure.noise import secure_gaussian

__all__ = [
    "ANALYTIC_BASIS",
    "CLASSICAL_BASIS",
    "GAUSSIAN_METHODS",
    "MAX_COMPOSITIONS",
    "MAX_MU",
    "ClassicalGaussianBound",
    "GaussianCalibration",
    "GaussianMechanism",
    "GaussianNoise",
    "GaussianProfile",
    "calibrate_gaussian",
    "calibrate_gaussian_noise",
    "classical_delta",
    "classical_sigma",
    "gaussian_certificate",
]


@dataclass(frozen=True)
class GaussianMechanism:
    """Adds N(0, σ²) noise to each coordinate of a query answer.

    Parameters
    ----------
    sigma
        Noise standard deviation.
    certificate
        The guarantee this noise level carries (see :func:`gaussian_certificate`).
    """

    sigma: float
    certificate: Certificate

    def __post_init__(self) -> None:
        check.positive_finite("sigma", self.sigma)
        require_certificate_for(
            self.certificate, "gaussian", "sigma", self.sigma, "a Gaussian certificate for this sigma"
        )

    def __call__(self, value: Any, rng: np.random.Generator, size: int | None = None) -> Any:
        """Release ``value`` plus noise; with ``size``, ``size`` independent releases (leading axis)."""
        return add_real_noise(value, rng, size, lambda rng, shape: rng.normal(0.0, self.sigma, size=shape))

    def secure(self, granularity: float | None = None, bits: str = "os") -> Any:
        """The integer-exact counterpart at this σ on a power-of-two grid, its certificate at this δ.

        See :func:`dpcert.mechanisms.secure.noise.secure_gaussian` (scalar queries; rounding charged).
        """
        parameters = self.certificate.parameters
        return secure_gaussian(
            delta=self.certificate.delta,
            sigma=self.sigma,
            sensitivity=parameters.get("sensitivity", 1.0),
            compositions=parameters.get("compositions", 1),
            granularity=granularity,
            bits=bits,
        )


@dataclass(frozen=True)
class GaussianCalibration:
    """Result of :func:`calibrate_gaussian`: the noise ``sigma`` and the certificate it earns."""

    sigma: float
    certificate: Certificate
    method: str

    def mechanism(self) -> GaussianMechanism:
        return GaussianMechanism(self.sigma, self.certificate)


def calibrate_gaussian(
    epsilon: float,
    delta: float,
    *,
    sensitivity: float = 1.0,
    compositions: int = 1,
    method: str = "analytic",
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> GaussianCalibration:
    """The least Gaussian noise meeting (ε, δ) over ``compositions`` releases, with the mechanism that adds
    it (:meth:`GaussianCalibration.mechanism`): :func:`calibrate_gaussian_noise`'s search and parameters."""
    noise = calibrate_gaussian_noise(
        epsilon,
        delta,
        sensitivity=sensitivity,
        compositions=compositions,
        method=method,
        trust_model=trust_model,
        neighbouring=neighbouring,
    )
    return GaussianCalibration(noise.sigma, noise.certificate, noise.method)
