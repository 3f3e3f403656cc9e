"""Audits: test privacy and unbiasedness claims from samples, exactly where outputs are discrete.

``audit(mechanism, a, b, epsilon, delta=0, samples=..., seed=...)`` draws outputs on two neighbouring
inputs and returns an :class:`AuditReport` with a (1 − α) lower confidence bound on ε and a verdict;
``audit(mechanism, epsilon=..., search=VectorSearch(length, sensitivity, relation="one-differ"))`` finds
the pair itself among the neighbours of the stated relation (:mod:`dpcert.audits.neighbours`).
Nothing in dpcert imports this package except the command line, the demo and the pytest plugin.

The statistics libraries (statsmodels, scipy.special) are imported on first use, so that loading the
pytest plugin (which lives in this package) does not slow down the start of every test run.
"""

from __future__ import annotations

from dpcert.audits.classifier_search import ClassifierSearch
from dpcert.audits.delta_lower_bound import audit_delta
from dpcert.audits.neighbours import RELATIONS, Relation
from dpcert.audits.report import AuditReport
from dpcert.audits.run import audit, audit_samples
from dpcert.audits.search import CandidatePairs, ScalarSearch, VectorSearch

__all__ = [
    "AuditReport",
    "RELATIONS",
    "CandidatePairs",
    "ClassifierSearch",
    "Relation",
    "ScalarSearch",
    "VectorSearch",
    "audit",
    "audit_delta",
    "audit_samples",
]
