"""Exceptions raised by dpcert.

Every public entry point validates its inputs and raises a subclass of :class:`DPCertError`
naming the offending parameter and the allowed range, so that callers (and the command line,
which maps these errors to exit status 2) never see a silent NaN or an over-claimed guarantee.
"""

from __future__ import annotations

from typing import Any


class DPCertError(Exception):
    """Base class of every error raised by dpcert."""


_SHOWN_CHARACTERS = 120


def _shown(value: object) -> str:
    """``repr(value)``, cut in the middle beyond 120 characters (a huge number or list stays one line)."""
    text = repr(value)
    if len(text) <= _SHOWN_CHARACTERS:
        return text
    return f"{text[:60]}...({len(text) - 100} characters)...{text[-40:]}"


class InvalidParameter(DPCertError, ValueError):
    """A parameter is outside its allowed range or of the wrong type.

    Parameters
    ----------
    name
        The parameter's name as the caller spelt it.
    value
        The value received.
    allowed
        A human-readable statement of the allowed range, e.g. ``"0 <= delta < 1"``.
    """

    def __init__(self, name: str, value: object, allowed: str, hint: str | None = None) -> None:
        self.name = name
        self.value = value
        self.allowed = allowed
        self.hint = hint
        message = f"invalid {name}={_shown(value)}: allowed {allowed}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its parameters (it crosses process boundaries, e.g. from a worker process)."""
        return (type(self), (self.name, self.value, self.allowed, self.hint))


class DataOutOfBounds(InvalidParameter):
    """Input data lie outside the bounds the privacy analysis depends on."""


class CertificateMismatch(DPCertError):
    """A certificate's claimed guarantee does not follow from its parameters."""


class CertificateFormatError(DPCertError):
    """A serialised certificate cannot be read (corrupted JSON, unknown mechanism, …)."""


class UnknownMechanism(CertificateFormatError):
    """A certificate names a mechanism whose profile is neither registered nor declared by an installed
    package (entry-point group ``dpcert.profiles``): it cannot be re-derived in this environment."""


class BudgetExceeded(DPCertError):
    """A charge would take at least one user beyond their privacy budget; nothing was recorded."""


class LedgerStorageError(DPCertError):
    """A ledger's storage failed: a file that cannot be written (disk full, I/O error, read-only), or a
    database server that cannot be reached or refuses the role a privilege.  The message says whether
    anything was recorded."""


class SchedulerUnavailable(DPCertError):
    """A Dask scheduler could not be reached, or its cluster lost every worker for longer than the
    stated timeout; the message says how much of the work was done."""


class LedgerWriteInterrupted(LedgerStorageError):
    """The connection to a ledger's server was lost during a write, which the server rolled back:
    nothing was recorded, and the write may safely be run again."""


class LedgerIntegrityError(DPCertError):
    """The ledger's tables are not what its chained entries and signed heads say; nothing was written."""


class UnknownUser(DPCertError, KeyError):
    """A ledger query named a user that has never been charged."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else "unknown user"


class PluginError(DPCertError):
    """An algorithm from another installed package (entry-point group ``dpcert.algorithms``) failed to
    load or broke its contract: a result that is not a run of the algorithm, or a private run whose
    certificate is missing, does not verify or states less than the run reports."""


class PreconditionFailed(DPCertError):
    """A theorem's precondition does not hold for the requested parameters."""
