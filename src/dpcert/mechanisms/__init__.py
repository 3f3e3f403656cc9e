"""Noise-adding mechanisms, one module per mechanism; each carries a :class:`dpcert.Certificate`.

The names below are loaded from their modules on first use (PEP 562), so importing one mechanism's
module (``dpcert.mechanisms.gaussian_profile`` for ``dpcert calibrate gaussian``, say) does not load the
others.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DiscreteGaussianMechanism": "dpcert.mechanisms.discrete_gaussian",
    "calibrate_discrete_gaussian": "dpcert.mechanisms.discrete_gaussian",
    "discrete_gaussian_certificate": "dpcert.mechanisms.discrete_gaussian",
    "DiscreteLaplaceMechanism": "dpcert.mechanisms.discrete_laplace",
    "discrete_laplace_certificate": "dpcert.mechanisms.discrete_laplace",
    "GaussianMechanism": "dpcert.mechanisms.gaussian",
    "gaussian_certificate": "dpcert.mechanisms.gaussian",
    "LaplaceMechanism": "dpcert.mechanisms.laplace",
    "laplace_certificate": "dpcert.mechanisms.laplace",
}
"""Where each name is defined (read by :func:`__getattr__`)."""


def __getattr__(name: str) -> Any:
    """A name of :data:`__all__`, imported from its module on first use and kept in this namespace."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dpcert.mechanisms' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "DiscreteGaussianMechanism",
    "calibrate_discrete_gaussian",
    "discrete_gaussian_certificate",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "discrete_laplace_certificate",
    "gaussian_certificate",
    "laplace_certificate",
]
