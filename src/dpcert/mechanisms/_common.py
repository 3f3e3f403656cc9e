"""Plumbing shared by the additive-noise mechanisms (Laplace, discrete Laplace, Gaussian).

Certificates at a point δ of an exact profile, the check that a mechanism carries a certificate for its
own noise, and the batch shape of a release.  Nothing here changes a guarantee: the profiles live in the
mechanism modules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.errors import InvalidParameter
from dpcert.profiles import PrivacyProfile


def certificate_at_delta(
    mechanism: str,
    profile: PrivacyProfile,
    parameters: Mapping[str, Any],
    delta: float,
    trust_model: TrustModel | str,
    neighbouring: Neighbouring | str,
    basis: str,
) -> Certificate:
    """The verified certificate ``(profile.epsilon_for(δ), δ)`` of ``mechanism`` after checking ``delta``.

    ``epsilon_for`` is the profile's least ε at δ, already rounded toward more privacy loss.
    """
    return Certificate(
        mechanism,
        point_on_profile(profile, delta=delta),
        trust_model,
        neighbouring,
        parameters,
        basis,
    ).verify()


def require_certificate_for(
    certificate: Certificate, mechanism: str, parameter: str, value: float, expected: str
) -> None:
    """Raise :class:`InvalidParameter` unless ``certificate`` is ``mechanism``'s for ``parameter == value``.

    ``expected`` is the allowed value named in the error.
    """
    if certificate.mechanism != mechanism or certificate.parameters[parameter] != value:
        raise InvalidParameter("certificate", certificate.mechanism, expected)


def release_shape(array: np.ndarray, size: int | None) -> tuple[int, ...]:
    """Shape of the noise for one release of ``array`` or, with ``size``, of ``size`` stacked releases."""
    return array.shape if size is None else (check.positive_int("size", size),) + array.shape


def add_real_noise(
    value: Any,
    rng: np.random.Generator,
    size: int | None,
    sample: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray],
) -> Any:
    """``value + sample(rng, shape)`` after validation; a float for a scalar release, else an array."""
    array = check.finite_array("value", value)
    rng = check.generator(rng)
    noisy = array + sample(rng, release_shape(array, size))
    return float(noisy) if noisy.ndim == 0 else noisy
