"""Audits: test privacy and unbiasedness claims from samples, exactly where outputs are discrete.

``audit(mechanism, a, b, epsilon, delta=0, samples=..., seed=...)`` draws outputs on two neighbouring
inputs and returns an :class:`AuditReport` with a (1 − α) lower confidence bound on ε and a verdict.
Nothing in dpcert imports this package except the command line and the pytest plugin.
"""

from dpcert.audits.report import AuditReport
from dpcert.audits.run import audit, audit_samples

__all__ = ["AuditReport", "audit", "audit_samples"]
