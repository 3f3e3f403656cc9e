"""Certificates of OpenDP measurements, read through their privacy maps.

:func:`certificate_from_opendp` reads an OpenDP measurement through its privacy map at ``d_in``:
pure DP (``MaxDivergence``) and ``Approximate(MaxDivergence)`` become declared (ε, δ) certificates,
zCDP (``ZeroConcentratedDivergence``) a ``zcdp`` certificate whose profile dpcert re-derives from ρ,
and a ``SmoothedMaxDivergence`` profile is read at the requested δ (declared).  A declared certificate
is only as good as the library's privacy map; it is re-verifiable as the (ε, δ) it states.
"""

from __future__ import annotations

from typing import Any

from dpcert import _validation as check
from dpcert.certificates import Certificate, Neighbouring, TrustModel, approximate_dp_certificate
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.zcdp import zcdp_certificate
from dpcert.theory.zcdp import ZCDP_BASIS


def certificate_from_opendp(
    measurement: Any,
    d_in: Any,
    *,
    delta: float | None = None,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
) -> Certificate:
    """The certificate of an OpenDP ``measurement`` for inputs at distance ``d_in`` (its privacy map).

    ``delta`` is required for zCDP and smoothed-max-divergence measures (the point of the profile to
    claim).  The measurement's own description is kept in the certificate's ``name``.
    """
    if delta is not None:
        delta = check.delta(delta)
    measure = str(getattr(measurement, "output_measure", ""))
    if not measure or not callable(getattr(measurement, "map", None)):
        raise InvalidParameter("measurement", type(measurement).__name__, "an OpenDP Measurement")
    try:
        distance = measurement.map(d_in)
    except Exception as exc:  # OpenDP raises its own exception type for an invalid d_in
        raise InvalidParameter(
            "d_in", d_in, f"an input distance the measurement's privacy map accepts ({exc})"
        ) from exc
    metric = getattr(measurement, "input_metric", "?")
    name = f"OpenDP measurement ({measure}, input metric {metric}, d_in={d_in!r})"
    labels = {"neighbouring": Neighbouring(neighbouring), "trust_model": TrustModel(trust_model)}
    basis = f"OpenDP privacy map at d_in={d_in!r} ({measure})"
    if measure == "MaxDivergence":
        return approximate_dp_certificate(float(distance), 0.0, mechanism_name=name, basis=basis, **labels)
    if measure.startswith("Approximate(MaxDivergence"):
        epsilon, declared_delta = distance
        return approximate_dp_certificate(
            float(epsilon), float(declared_delta), mechanism_name=name, basis=basis, **labels
        )
    if measure == "ZeroConcentratedDivergence":
        if delta is None:
            raise InvalidParameter("delta", delta, "0 <= delta < 1: the point of the zCDP profile to claim")
        return zcdp_certificate(
            float(distance), delta=delta, name=name, basis=f"{basis}; {ZCDP_BASIS}", **labels
        )
    if measure == "SmoothedMaxDivergence":
        if delta is None or delta == 0.0:
            raise InvalidParameter("delta", delta, "0 < delta < 1: the point of the privacy profile to claim")
        epsilon = float(distance.epsilon(delta))
        return approximate_dp_certificate(epsilon, delta, mechanism_name=name, basis=basis, **labels)
    raise InvalidParameter(
        "measurement",
        measure,
        "an OpenDP measurement with a pure, approximate, smoothed or zCDP output measure",
    )


__all__ = ["certificate_from_opendp"]
