"""Assertions for users' own test suites: ``assert_dp(mechanism, a, b, epsilon, delta=0, ...)``.

Example (in a user's ``test_*.py``)::

    from dpcert.testing import assert_dp

    def test_my_mechanism_is_one_dp():
        assert_dp(my_mechanism, 0, 1, epsilon=1.0, samples=200_000, seed=7)

The assertion fails only when the audit's lower confidence bound on ε exceeds the claim, so a correct
mechanism fails with probability at most 1 − ``confidence`` (and never, for a fixed seed, once it
passed).  The pytest plugin (:mod:`dpcert.audits.pytest_plugin`) adds an ``audit`` fixture with seeds
derived from the test's name.
"""

from __future__ import annotations

from typing import Any

from dpcert.audits.report import AuditReport
from dpcert.audits.run import audit
from dpcert.audits.sampling import DEFAULT_SAMPLES


def assert_dp(
    mechanism: Any,
    a: Any,
    b: Any,
    epsilon: float | None = None,
    delta: float | None = None,
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int | None = 0,
    confidence: float = 0.95,
    **options: Any,
) -> AuditReport:
    """Audit ``mechanism`` on the neighbouring inputs ``a``, ``b``; raise ``AssertionError`` if violated.

    Parameters are those of :func:`dpcert.audits.audit` (``score``, ``max_cells``, ``batch_size`` and
    ``progress`` pass through ``options``).  The default seed is fixed (0) so that a test suite is
    reproducible.  Returns the :class:`~dpcert.audits.AuditReport` when the claim survives.
    """
    report = audit(
        mechanism, a, b, epsilon, delta, samples=samples, seed=seed, confidence=confidence, **options
    )
    if report.violated:
        raise AssertionError(f"privacy claim refuted: {report.summary()}")
    return report


__all__ = ["assert_dp"]
