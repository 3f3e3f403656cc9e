"""The Poisson-subsampled Gaussian mechanism composed over many steps (the DP-SGD accounting).

Each step samples every record independently with probability ``q`` and releases the sum of the
sampled records' contributions (ℓ2 sensitivity Δ) plus N(0, σ²) noise (Abadi et al. 2016).  Under the
add/remove relation its privacy loss distribution is that of the pair (N(0, σ²), (1 − q) N(0, σ²) +
q N(Δ, σ²)) in one direction and the reverse pair in the other (Koskela, Jälkö & Honkela 2020;
Zhu, Dong & Wang 2022).  The single-step PLD is built by ``dp_accounting`` with pessimistic
discretisation (losses rounded up to the grid, tails to the infinite loss), and the ``steps``-fold
composition is computed by :func:`~dpcert.accounting.composition.pld_self_composed_delta_for`, whose
floating-point round-off is bounded and added (:mod:`dpcert.accounting.pld_bound`).  The profile is
therefore an upper bound on the true δ(ε), up to the accuracy assumption on dp_accounting's
single-step masses stated in that module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from dpcert import _validation as check
from dpcert._numerics import smallest_valid
from dpcert.certificates import (
    Certificate,
    Neighbouring,
    ParameterSpec,
    TrustModel,
    point_on_profile,
    register_profile,
)
from dpcert.errors import InvalidParameter

SAMPLED_GAUSSIAN_BASIS = (
    "Poisson-subsampled Gaussian (Abadi et al. 2016), add/remove; the smaller of the pessimistic PLD "
    "(dp_accounting) composed with a proven round-off bound (Koskela, Jalko & Honkela 2020; Higham 2002, "
    "Thm 24.2) and the RDP conversion (Mironov 2017; Canonne, Kamath & Steinke 2020)"
)
DEFAULT_INTERVAL = 1e-4
_RDP_RELATIVE_ALLOWANCE = 1e-6  # on the RDP-converted δ, for the accountant's floating-point evaluation


@register_profile(
    "poisson-sampled-gaussian",
    parameters={
        "sigma": ParameterSpec("number"),
        "sampling_probability": ParameterSpec("number"),
        "steps": ParameterSpec("integer"),
        "sensitivity": ParameterSpec("number", required=False),
        "value_discretization_interval": ParameterSpec("number", required=False),
    },
    trust_models=(TrustModel.CENTRAL,),
    neighbourings=(Neighbouring.ADD_REMOVE,),  # Poisson subsampling amplifies under add/remove
)
class PoissonSampledGaussianProfile:
    """Profile of ``steps`` Poisson-subsampled Gaussian releases.

    Parameters: ``sigma`` (noise standard deviation), ``sampling_probability`` q in (0, 1], ``steps``,
    ``sensitivity`` (ℓ2, default 1) and ``value_discretization_interval`` of the PLD (default 1e-4).
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.sigma = check.positive_finite("sigma", parameters.get("sigma"))
        self.sampling_probability = check.probability(
            "sampling_probability", parameters.get("sampling_probability"), open_low=True
        )
        self.steps = check.positive_int("steps", parameters.get("steps"))
        self.sensitivity = check.positive_finite("sensitivity", parameters.get("sensitivity", 1.0))
        self.interval = check.positive_finite(
            "value_discretization_interval", parameters.get("value_discretization_interval", DEFAULT_INTERVAL)
        )

    @cached_property
    def single_step(self) -> Any:
        from dp_accounting.pld import privacy_loss_distribution as pld

        return pld.from_gaussian_mechanism(
            self.sigma / self.sensitivity,
            sampling_prob=self.sampling_probability,
            value_discretization_interval=self.interval,
            pessimistic_estimate=True,
        )

    @cached_property
    def _rdp(self) -> Any:
        from dpcert.accounting.rdp_events import RdpEventProfile

        return RdpEventProfile(self.dp_event(), Neighbouring.ADD_REMOVE)

    def delta_for(self, epsilon: float) -> float:
        """The smaller of two upper bounds: the proven-round-off PLD bound and the RDP conversion.

        The PLD bound is the tighter one at moderate δ; each single-step mass carries an absolute
        allowance for dp_accounting's CDF differences, which over many buckets and steps leaves a
        floor near 1e-8, below which the RDP conversion (Mironov 2017; Canonne, Kamath & Steinke
        2020, Prop. 12, inflated by a relative 1e-6 for its evaluation) is the smaller.
        """
        from dpcert.accounting.composition import pld_self_composed_delta_for

        pld = pld_self_composed_delta_for(self.single_step, self.steps, epsilon)
        return min(pld, min(1.0, self._rdp.delta_for(epsilon) * (1.0 + _RDP_RELATIVE_ALLOWANCE)))

    def epsilon_for(self, delta: float) -> float:
        if delta <= 0.0:
            return math.inf
        return smallest_valid(lambda e: self.delta_for(e) - delta, 0.0, 1.0)

    def dp_event(self) -> Any:
        from dp_accounting import dp_event

        step = dp_event.PoissonSampledDpEvent(
            self.sampling_probability, dp_event.GaussianDpEvent(self.sigma / self.sensitivity)
        )
        return step if self.steps == 1 else dp_event.SelfComposedDpEvent(step, self.steps)


def poisson_sampled_gaussian_certificate(
    sigma: float,
    sampling_probability: float,
    steps: int,
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    sensitivity: float = 1.0,
    value_discretization_interval: float = DEFAULT_INTERVAL,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
) -> Certificate:
    """Certificate of ``steps`` Poisson-subsampled Gaussian releases (e.g. DP-SGD) at a profile point."""
    parameters: dict[str, Any] = {
        "sigma": check.positive_finite("sigma", sigma),
        "sampling_probability": check.probability(
            "sampling_probability", sampling_probability, open_low=True
        ),
        "steps": check.positive_int("steps", steps),
        "sensitivity": check.positive_finite("sensitivity", sensitivity),
        "value_discretization_interval": check.positive_finite(
            "value_discretization_interval", value_discretization_interval
        ),
    }
    if steps > 10**7:
        raise InvalidParameter("steps", steps, "at most 1e7 steps")
    profile = PoissonSampledGaussianProfile(parameters)
    certificate = Certificate(
        "poisson-sampled-gaussian",
        point_on_profile(profile, epsilon, delta),
        trust_model,
        Neighbouring.ADD_REMOVE,
        parameters,
        SAMPLED_GAUSSIAN_BASIS,
    )
    certificate.__dict__["profile"] = profile  # the profile just evaluated: its FFT passes are reused
    return certificate.verify()
