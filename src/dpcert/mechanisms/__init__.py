"""Noise-adding mechanisms; each carries a :class:`dpcert.Certificate`."""

from dpcert.mechanisms.discrete_gaussian import (
    DiscreteGaussianMechanism,
    calibrate_discrete_gaussian,
    discrete_gaussian_certificate,
)
from dpcert.mechanisms.discrete_laplace import DiscreteLaplaceMechanism, discrete_laplace_certificate
from dpcert.mechanisms.gaussian import GaussianMechanism, gaussian_certificate
from dpcert.mechanisms.laplace import LaplaceMechanism, laplace_certificate

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
