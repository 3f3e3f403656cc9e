"""dpcert: differential privacy with explicit, checkable certificates.

Importing :mod:`dpcert` registers the privacy profile of every built-in mechanism, so certificates
read back from JSON can always be re-verified.
"""

from dpcert import mechanisms  # noqa: E402,F401  (registers mechanism profiles)
from dpcert.accounting import composition  # noqa: E402,F401  (registers the "composition" profile)
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
    UnknownUser,
)

__version__ = "0.1.0"

__all__ = [
    "BudgetExceeded",
    "Certificate",
    "CertificateFormatError",
    "CertificateMismatch",
    "DPCertError",
    "DataOutOfBounds",
    "Guarantee",
    "InvalidParameter",
    "Neighbouring",
    "PreconditionFailed",
    "TrustModel",
    "UnknownUser",
    "approximate_dp_certificate",
]
