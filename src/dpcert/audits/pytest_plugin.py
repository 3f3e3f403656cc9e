"""pytest plugin (entry point ``pytest11: dpcert``): audit privacy claims inside users' test suites.

Provides

* the ``audit`` fixture: ``audit(mechanism, a, b, epsilon, delta=0, samples=..., seed=...)`` returns an
  :class:`~dpcert.audits.AuditReport`, and ``audit.assert_dp(...)`` raises ``AssertionError`` on a
  "violated" verdict.  Without an explicit seed, each call's seed is derived from the test's node id
  and a call counter, so runs are reproducible and tests do not share randomness.
* command-line options ``--dpcert-samples N`` (default draws per input) and ``--dpcert-confidence C``.
* every report is attached to the test's ``user_properties`` (visible in JUnit XML).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from dpcert.audits.run import audit
from dpcert.audits.sampling import DEFAULT_SAMPLES

if TYPE_CHECKING:
    from dpcert.audits.report import AuditReport


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dpcert", "differential-privacy audits")
    group.addoption(
        "--dpcert-samples",
        type=int,
        default=DEFAULT_SAMPLES,
        help=f"draws per input for the audit fixture (default {DEFAULT_SAMPLES})",
    )
    group.addoption(
        "--dpcert-confidence",
        type=float,
        default=0.95,
        help="confidence of the audit fixture's epsilon lower bounds (default 0.95)",
    )


@dataclass
class Auditor:
    """The ``audit`` fixture: audits with per-test reproducible seeds."""

    node_id: str
    samples: int
    confidence: float
    reports: list[AuditReport] = field(default_factory=list)

    def _next_seed(self) -> int:
        text = f"{self.node_id}#{len(self.reports)}".encode()
        return int.from_bytes(hashlib.sha256(text).digest()[:8], "little")

    def __call__(
        self,
        mechanism: Any,
        a: Any,
        b: Any,
        epsilon: float | None = None,
        delta: float | None = None,
        **options: Any,
    ) -> AuditReport:
        options.setdefault("samples", self.samples)
        options.setdefault("confidence", self.confidence)
        if options.get("rng") is None:
            options.setdefault("seed", self._next_seed())
        report = audit(mechanism, a, b, epsilon, delta, **options)
        self.reports.append(report)
        return report

    def assert_dp(
        self,
        mechanism: Any,
        a: Any,
        b: Any,
        epsilon: float | None = None,
        delta: float | None = None,
        **options: Any,
    ) -> AuditReport:
        """Like :func:`dpcert.testing.assert_dp`, with this test's seed and options."""
        report = self(mechanism, a, b, epsilon, delta, **options)
        if report.violated:
            raise AssertionError(f"privacy claim refuted: {report.summary()}")
        return report


@pytest.fixture(name="audit")
def audit_fixture(request: pytest.FixtureRequest) -> Iterator[Auditor]:
    """Audit privacy claims in a test; reports are attached to the test's ``user_properties``."""
    auditor = Auditor(
        node_id=request.node.nodeid,
        samples=request.config.getoption("--dpcert-samples"),
        confidence=request.config.getoption("--dpcert-confidence"),
    )
    yield auditor
    for index, report in enumerate(auditor.reports):
        request.node.user_properties.append((f"dpcert_audit_{index}", report.to_json()))
