"""dpcert: differential privacy with explicit, checkable certificates.

The face of the package: the values (``Certificate``, ``Guarantee`` and their labels), the verbs of
the three jobs — calibrate noise for a budget (``calibrate_*``, ``secure_*``), account for what ran
(``compose``, ``Ledger``, ``PrivacySession``, ``certificate_from_*``), audit a claim (``audit``,
``audit_delta``, ``check_unbiased``) — the plugin point (``register_profile``) and the errors.
Everything else lives in the layered modules below (``dpcert.theory``, ``dpcert.mechanisms``,
``dpcert.accounting``, ``dpcert.ledger``, ``dpcert.interop``, ``dpcert.audits``, ``dpcert.bandits``).

The names are loaded on first use (each from the module defining it), so that ``import dpcert`` and
the ``dpcert`` command do not import every layer of the library up front.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpcert.accounting.composition import compose
    from dpcert.accounting.dp_sgd import calibrate_dp_sgd
    from dpcert.audits.delta_lower_bound import audit_delta
    from dpcert.audits.run import audit
    from dpcert.audits.unbiased import check_unbiased
    from dpcert.certificates import (
        Certificate,
        Guarantee,
        Neighbouring,
        TrustModel,
        approximate_dp_certificate,
    )
    from dpcert.errors import (
        BudgetExceeded,
        CertificateFormatError,
        CertificateMismatch,
        DataOutOfBounds,
        DPCertError,
        InvalidParameter,
        PreconditionFailed,
        UnknownMechanism,
        UnknownUser,
    )
    from dpcert.interop.dp_accounting import certificate_from_dp_event
    from dpcert.interop.opacus import certificate_from_opacus_history
    from dpcert.interop.opendp import certificate_from_opendp
    from dpcert.ledger.api import Ledger
    from dpcert.mechanisms.discrete_gaussian import calibrate_discrete_gaussian
    from dpcert.mechanisms.gaussian import calibrate_gaussian
    from dpcert.mechanisms.laplace import calibrate_laplace
    from dpcert.mechanisms.secure.noise import secure_gaussian, secure_laplace
    from dpcert.mechanisms.shuffle.binary_sum import calibrate_binary_sum
    from dpcert.mechanisms.shuffle.binomial_sum import calibrate_binomial_sum
    from dpcert.mechanisms.shuffle.pamp import calibrate_pamp
    from dpcert.profiles import PrivacyProfile, register_profile
    from dpcert.session import PrivacySession

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "compose": "dpcert.accounting.composition",
    "calibrate_dp_sgd": "dpcert.accounting.dp_sgd",
    "audit_delta": "dpcert.audits.delta_lower_bound",
    "audit": "dpcert.audits.run",
    "check_unbiased": "dpcert.audits.unbiased",
    "Certificate": "dpcert.certificates",
    "Guarantee": "dpcert.certificates",
    "Neighbouring": "dpcert.certificates",
    "TrustModel": "dpcert.certificates",
    "approximate_dp_certificate": "dpcert.certificates",
    "BudgetExceeded": "dpcert.errors",
    "CertificateFormatError": "dpcert.errors",
    "CertificateMismatch": "dpcert.errors",
    "DataOutOfBounds": "dpcert.errors",
    "DPCertError": "dpcert.errors",
    "InvalidParameter": "dpcert.errors",
    "PreconditionFailed": "dpcert.errors",
    "UnknownMechanism": "dpcert.errors",
    "UnknownUser": "dpcert.errors",
    "certificate_from_dp_event": "dpcert.interop.dp_accounting",
    "certificate_from_opacus_history": "dpcert.interop.opacus",
    "certificate_from_opendp": "dpcert.interop.opendp",
    "Ledger": "dpcert.ledger.api",
    "calibrate_discrete_gaussian": "dpcert.mechanisms.discrete_gaussian",
    "calibrate_gaussian": "dpcert.mechanisms.gaussian",
    "calibrate_laplace": "dpcert.mechanisms.laplace",
    "secure_gaussian": "dpcert.mechanisms.secure.noise",
    "secure_laplace": "dpcert.mechanisms.secure.noise",
    "calibrate_binary_sum": "dpcert.mechanisms.shuffle.binary_sum",
    "calibrate_binomial_sum": "dpcert.mechanisms.shuffle.binomial_sum",
    "calibrate_pamp": "dpcert.mechanisms.shuffle.pamp",
    "PrivacyProfile": "dpcert.profiles",
    "register_profile": "dpcert.profiles",
    "PrivacySession": "dpcert.session",
}
"""Where each public name is defined (read by :func:`__getattr__`)."""


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562) and kept in this namespace."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dpcert' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    # values and labels
    "Certificate",
    "Guarantee",
    "Neighbouring",
    "TrustModel",
    "approximate_dp_certificate",
    # noise for a target budget
    "calibrate_binary_sum",
    "calibrate_binomial_sum",
    "calibrate_discrete_gaussian",
    "calibrate_dp_sgd",
    "calibrate_gaussian",
    "calibrate_laplace",
    "calibrate_pamp",
    "secure_gaussian",
    "secure_laplace",
    # accounting for what ran
    "Ledger",
    "PrivacySession",
    "certificate_from_dp_event",
    "certificate_from_opacus_history",
    "certificate_from_opendp",
    "compose",
    # audits
    "audit",
    "audit_delta",
    "check_unbiased",
    # the plugin point
    "PrivacyProfile",
    "register_profile",
    # errors
    "BudgetExceeded",
    "CertificateFormatError",
    "CertificateMismatch",
    "DPCertError",
    "DataOutOfBounds",
    "InvalidParameter",
    "PreconditionFailed",
    "UnknownMechanism",
    "UnknownUser",
]
