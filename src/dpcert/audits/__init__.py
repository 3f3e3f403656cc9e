"""Audits: test privacy and unbiasedness claims from samples, exactly where outputs are discrete.

``audit(mechanism, a, b, epsilon, delta=0, samples=..., seed=...)`` draws outputs on two neighbouring
inputs and returns an :class:`AuditReport` with a (1 − α) lower confidence bound on ε and a verdict;
``audit(mechanism, epsilon=..., search=VectorSearch(length, sensitivity))`` finds the pair itself.
Nothing in dpcert imports this package except the command line and the pytest plugin.

The names below are imported on first use, so that loading the pytest plugin (which lives in this
package) does not slow down the start of every test run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpcert.audits.delta_lower_bound import audit_delta
    from dpcert.audits.report import AuditReport
    from dpcert.audits.run import audit, audit_samples
    from dpcert.audits.search import CandidatePairs, ScalarSearch, VectorSearch

_LAZY = {
    "AuditReport": "dpcert.audits.report",
    "audit": "dpcert.audits.run",
    "audit_samples": "dpcert.audits.run",
    "audit_delta": "dpcert.audits.delta_lower_bound",
    "VectorSearch": "dpcert.audits.search",
    "ScalarSearch": "dpcert.audits.search",
    "CandidatePairs": "dpcert.audits.search",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpcert.audits' has no attribute {name!r}")


__all__ = [
    "AuditReport",
    "CandidatePairs",
    "ScalarSearch",
    "VectorSearch",
    "audit",
    "audit_delta",
    "audit_samples",
]
