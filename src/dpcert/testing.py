"""Assertions for users' own test suites: ``assert_dp(mechanism, a, b, epsilon, delta=0, ...)`` and
``assert_release_stops_at_refusal(call, rng)``.

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

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from dpcert.audits.report import AuditReport
from dpcert.audits.run import audit
from dpcert.audits.sampling import DEFAULT_SAMPLES
from dpcert.errors import BudgetExceeded
from dpcert.session import PrivacySession


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


class RefusingLedger:
    """A ledger that refuses every charge, remembering the generator's state at the refusal.

    ``inspect`` (optional) is called with each refused certificate first, e.g. to check what is charged.
    """

    def __init__(self, rng: np.random.Generator, inspect: Callable[[Any], None] | None = None) -> None:
        self.rng, self.inspect = rng, inspect
        self.state: str | None = None  # the generator's state (JSON) at the last refusal

    def charge(self, user_ids: Any, certificate: Any, run_id: str | None = None) -> None:
        if self.inspect is not None:
            self.inspect(certificate)
        self.state = json.dumps(self.rng.bit_generator.state)
        raise BudgetExceeded("refused (dpcert.testing.RefusingLedger)")


def assert_release_stops_at_refusal(
    call: Callable[[Any], Any],
    rng: np.random.Generator,
    *,
    inspect: Callable[[Any], None] | None = None,
) -> tuple[str, str]:
    """Check that a refused charge stops ``call(session)``'s release: no noise is drawn after it.

    ``call`` runs with a :class:`~dpcert.session.PrivacySession` whose ledger refuses every
    charge; it must raise :class:`~dpcert.errors.BudgetExceeded`, record nothing, and leave ``rng`` (the
    generator its noise comes from) where it was at the refusal: no randomness drawn after it.  Returns
    the generator's state (JSON) at the refusal and after the call.  Randomness drawn *before* the
    first charge (rewards, say, or noise drawn too early) is not visible here: compare the returned
    state with the generator's state before the call where nothing may be drawn before the charge.
    """
    ledger = RefusingLedger(rng, inspect)
    session = PrivacySession("refused", ledger)
    try:
        call(session)
    except BudgetExceeded:
        pass
    else:
        raise AssertionError("the call released without a charge being refused (no BudgetExceeded)")
    if session.certificates:
        raise AssertionError("a refused charge was recorded in the session")
    after = json.dumps(rng.bit_generator.state)
    if ledger.state != after:
        raise AssertionError("randomness was drawn after the refused charge")
    return ledger.state, after


__all__ = ["RefusingLedger", "assert_release_stops_at_refusal", "assert_dp"]
