"""The certificate of a ρ-zCDP mechanism (Bun & Steinke 2016), converted to (ε, δ).

The conversion is that of Canonne, Kamath & Steinke (2020, Cor. 13), evaluated in
:mod:`dpcert.theory.zcdp`; this module registers it as the ``"zcdp"`` profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpcert import _validation as check
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.profiles import ALL_TRUST_MODELS, EVENT_LEVEL, ParameterSpec, register_profile
from dpcert.theory.zcdp import ZCDP_BASIS, zcdp_delta, zcdp_epsilon


@register_profile(
    "zcdp",
    parameters={"rho": ParameterSpec("number"), "name": ParameterSpec("string", required=False)},
    trust_models=ALL_TRUST_MODELS,
    neighbourings=EVENT_LEVEL,
)
class ZCDPProfile:
    """Profile implied by ρ-zCDP.  Parameters: ``rho`` (ρ >= 0) and optionally ``name``."""

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.rho = check.nonnegative_finite("rho", parameters.get("rho"))

    def delta_for(self, epsilon: float) -> float:
        return zcdp_delta(epsilon, self.rho)

    def epsilon_for(self, delta: float) -> float:
        return zcdp_epsilon(delta, self.rho)

    def dp_event(self) -> Any:
        return None


def zcdp_certificate(
    rho: float,
    *,
    delta: float,
    name: str = "",
    basis: str = ZCDP_BASIS,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
) -> Certificate:
    """Certificate of a ρ-zCDP mechanism at the point ``delta`` of the converted profile."""
    parameters: dict[str, Any] = {"rho": check.nonnegative_finite("rho", rho)}
    if name:
        parameters["name"] = str(name)
    guarantee = point_on_profile(ZCDPProfile(parameters), delta=check.delta(delta))
    return Certificate("zcdp", guarantee, trust_model, neighbouring, parameters, basis).verify()
