"""The Gaussian mechanism's exact privacy profile, its certificates and the calibration of σ.

The part of :mod:`dpcert.mechanisms.gaussian` that states and checks guarantees, without the samplers
(which import the integer-exact noise of :mod:`dpcert.mechanisms.secure`): what ``dpcert calibrate
gaussian`` needs.  :mod:`dpcert.mechanisms.gaussian` re-exports every name here.

The profile is the analytic one of Balle & Wang (2018), "Improving the Gaussian Mechanism for
Differential Privacy: Analytical Calibration and Optimal Denoising", Thm 8: adding N(0, σ²) noise to
a query of ℓ2-sensitivity Δ is (ε, δ)-DP if and only if

    δ >= Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).

The k-fold composition of Gaussian mechanisms with the same σ and Δ is exactly one Gaussian
mechanism with sensitivity Δ√k (its privacy-loss distribution is N(μ²/2, μ²) with μ = Δ√k/σ), so
the profile above with μ = Δ√k/σ is exact for compositions as well (Dong, Roth & Su 2019, Cor. 3.3).

The classical calibration σ = Δ √(2 ln(1.25/δ)) / ε (Dwork & Roth 2014, Thm A.1) is only proven
for ε < 1; it is offered for comparison and refused for ε >= 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpcert import _validation as check
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.errors import CertificateFormatError, InvalidParameter, PreconditionFailed
from dpcert.profiles import ALL_RELATIONS, ALL_TRUST_MODELS, ParameterSpec, register_profile
from dpcert.theory.gaussian import analytic_gaussian_sigma, gaussian_delta, gaussian_epsilon

ANALYTIC_BASIS = "Balle & Wang 2018, Thm 8 (analytic Gaussian, exact profile)"
CLASSICAL_BASIS = "Dwork & Roth 2014, Thm A.1 (classical Gaussian, epsilon < 1)"
GAUSSIAN_METHODS = ("analytic", "classical")

MAX_COMPOSITIONS = 2**53
"""Most releases of one Gaussian certificate: every count up to it is exact as a float."""
MAX_MU = 1e150
"""Largest privacy parameter μ = Δ√k/σ of a Gaussian profile: its ε(δ) ≈ μ²/2 + μ Φ⁻¹(1 − δ) stays a
finite float (μ² <= 1e300); beyond it (σ subnormal or tiny against Δ√k) no ε can be stated."""


def _compositions(value: object) -> int:
    count = check.positive_int("compositions", value)
    if count > MAX_COMPOSITIONS:
        raise InvalidParameter("compositions", value, "an integer 1 <= compositions <= 2^53")
    return count


def classical_delta(epsilon: float, mu: float) -> float:
    """δ = 1.25 exp(−ε² / (2 μ²)) that Dwork & Roth (2014, Thm A.1) prove at ``0 < ε < 1`` (NaN elsewhere).

    The inverse of :func:`classical_sigma` for a Gaussian of privacy parameter ``mu = Δ√k/σ``: the
    bound the classical theorem gives, drawn for comparison with the exact profile.
    """
    if not 0.0 < epsilon < 1.0:
        return math.nan
    return min(1.0, 1.25 * math.exp(-(epsilon * epsilon) / (2.0 * mu * mu)))


@dataclass(frozen=True)
class ClassicalGaussianBound:
    """The classical Gaussian bound as a curve δ(ε) (defined for ε < 1 only; see :func:`classical_delta`)."""

    mu: float
    label: str = "classical bound (Dwork & Roth 2014, Thm A.1; ε < 1)"

    def delta_for(self, epsilon: float) -> float:
        return classical_delta(epsilon, self.mu)


@register_profile(
    "gaussian",
    parameters={
        "sigma": ParameterSpec("number"),
        "sensitivity": ParameterSpec("number", required=False),
        "compositions": ParameterSpec("integer", required=False),
        "participations": ParameterSpec("integer", required=False),
        "sampler": ParameterSpec("string", required=False, choices=("float",)),
    },
    trust_models=ALL_TRUST_MODELS,
    neighbourings=ALL_RELATIONS,
)
class GaussianProfile:
    """Exact profile of the (k-fold) Gaussian mechanism.

    Parameters: ``sigma`` (noise standard deviation), ``sensitivity`` (ℓ2), ``compositions`` (k), and
    ``participations`` for a user-level guarantee: the number of a user's participations the
    sensitivity covers.  A user-level claim must state it (an event-level certificate relabelled
    ``user-level`` is refused), and an event-level one must not.
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.sigma = check.positive_finite("sigma", parameters.get("sigma"))
        self.sensitivity = check.positive_finite("sensitivity", parameters.get("sensitivity", 1.0))
        self.compositions = _compositions(parameters.get("compositions", 1))
        self.mu = self.sensitivity * math.sqrt(self.compositions) / self.sigma
        if not self.mu <= MAX_MU:
            raise InvalidParameter(
                "sigma",
                self.sigma,
                f"sigma >= sensitivity * sqrt(compositions) / {MAX_MU:g} = "
                f"{self.sensitivity * math.sqrt(self.compositions) / MAX_MU:.3g} (the privacy loss "
                "of smaller noise exceeds every float)",
            )

        self.participations = parameters.get("participations")
        if self.participations is not None:
            self.participations = check.positive_int("participations", self.participations)

    def check_labels(self, trust_model: TrustModel, neighbouring: Neighbouring) -> None:
        """``user-level`` exactly when the parameters state the participations the sensitivity covers."""
        user_level = Neighbouring(neighbouring) is Neighbouring.USER_LEVEL
        if user_level and self.participations is None:
            raise CertificateFormatError(
                "a gaussian certificate claims the user-level relation only with parameter 'participations' "
                "(how many of a user's participations its sensitivity covers)"
            )
        if not user_level and self.participations is not None:
            raise CertificateFormatError(
                f"parameter 'participations' belongs to user-level gaussian certificates, not "
                f"{Neighbouring(neighbouring).value}"
            )

    def delta_for(self, epsilon: float) -> float:
        return gaussian_delta(epsilon, self.mu)

    def epsilon_for(self, delta: float) -> float:
        return gaussian_epsilon(delta, self.mu)

    def reference_bounds(self) -> dict[str, Any]:
        """Other proven bounds on this profile, for comparison curves: the classical theorem's."""
        bound = ClassicalGaussianBound(self.mu)
        return {bound.label: bound}

    def dp_event(self) -> Any:
        from dp_accounting import dp_event

        event = dp_event.GaussianDpEvent(noise_multiplier=self.sigma / self.sensitivity)
        if self.compositions == 1:
            return event
        return dp_event.SelfComposedDpEvent(event, self.compositions)


def classical_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = Δ √(2 ln(1.25/δ)) / ε of Dwork & Roth (2014), Thm A.1; only valid for ε < 1."""
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    if epsilon >= 1.0:
        raise PreconditionFailed(
            f"the classical Gaussian bound (Dwork & Roth 2014, Thm A.1) is only proven for "
            f"epsilon < 1, got epsilon={epsilon!r}; use the analytic method "
            f"(--method analytic / calibrate_gaussian(..., method='analytic'))"
        )
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def gaussian_certificate(
    sigma: float,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    sensitivity: float = 1.0,
    compositions: int = 1,
    basis: str = ANALYTIC_BASIS,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    participations: int | None = None,
    notes: tuple[str, ...] = (),
) -> Certificate:
    """Certificate of a (k-fold) Gaussian mechanism at a point of its exact profile.

    Give ``delta`` (the least ε is computed), ``epsilon`` (the least δ is computed) or both (the
    claim is verified).  A ``user-level`` certificate states ``participations``: how many of a user's
    participations ``sensitivity`` covers.  ``notes`` are stated on the certificate.
    """
    parameters: dict[str, Any] = {
        "sigma": check.positive_finite("sigma", sigma),
        "sensitivity": check.positive_finite("sensitivity", sensitivity),
        "compositions": _compositions(compositions),
        "sampler": "float",
    }
    if participations is not None:
        parameters["participations"] = check.positive_int("participations", participations)
    if epsilon is not None:
        check.epsilon(epsilon)
    elif delta is not None:
        check.positive_delta(delta)
    guarantee = point_on_profile(GaussianProfile(parameters), epsilon, delta)
    return Certificate(
        "gaussian", guarantee, trust_model, neighbouring, parameters, basis, tuple(notes)
    ).verify()


@dataclass(frozen=True)
class GaussianNoise:
    """The least Gaussian noise ``sigma`` for a target, the certificate it earns and the ``method``."""

    sigma: float
    certificate: Certificate
    method: str


def calibrate_gaussian_noise(
    epsilon: float,
    delta: float,
    *,
    sensitivity: float = 1.0,
    compositions: int = 1,
    method: str = "analytic",
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> GaussianNoise:
    """The least Gaussian noise meeting (ε, δ) over ``compositions`` releases.

    Calibration is a monotone search against the exact profile (in the spirit of
    ``dp_accounting.mechanism_calibration``): the returned σ is valid as evaluated and within a
    relative 1e-9 of the exact minimum.

    Parameters
    ----------
    epsilon, delta
        Target guarantee of the whole k-fold composition (ε > 0, 0 < δ < 1).
    sensitivity
        ℓ2-sensitivity Δ of each release.
    compositions
        Number k of releases with the same σ (exact: they compose to one Gaussian with Δ√k).
    method
        ``"analytic"`` (Balle & Wang 2018, Thm 8; exact) or ``"classical"`` (Dwork & Roth 2014,
        Thm A.1, ε < 1 only; for k > 1 it is applied to the equivalent sensitivity Δ√k).
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    compositions = _compositions(compositions)
    if method == "analytic":
        sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity, compositions)
        basis = ANALYTIC_BASIS
    elif method == "classical":
        sigma = classical_sigma(epsilon, delta, sensitivity * math.sqrt(compositions))
        basis = CLASSICAL_BASIS
    else:
        raise InvalidParameter("method", method, "one of " + ", ".join(GAUSSIAN_METHODS))
    if not (0.0 < sigma < math.inf):  # e.g. a subnormal epsilon: the noise is beyond float range
        raise InvalidParameter(
            "epsilon/sensitivity",
            (epsilon, sensitivity),
            "values whose noise sigma (proportional to sensitivity / epsilon) is a finite float",
        )
    certificate = gaussian_certificate(
        sigma,
        epsilon=epsilon,
        delta=delta,
        sensitivity=sensitivity,
        compositions=compositions,
        basis=basis,
        trust_model=trust_model,
        neighbouring=neighbouring,
    )
    return GaussianNoise(sigma, certificate, method)
