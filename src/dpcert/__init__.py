"""dpcert: differential privacy with explicit, checkable certificates.

The privacy profile of every built-in mechanism is found by name (imported on first use), so
certificates read back from JSON can always be re-verified.
"""

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
