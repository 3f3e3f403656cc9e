"""Ledger budget boundary: a charge is accepted exactly when the independently composed history
(``compose_counts`` at the budget's δ) is within the budget, and what is read back is what was checked."""

from __future__ import annotations

import math

import pytest

from dpcert import BudgetExceeded, Guarantee
from dpcert.accounting.composition import compose_counts
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate


@pytest.mark.parametrize("mixed", [False, True])
def test_budget_boundary_is_exact_and_consistent(tmp_path, mixed: bool) -> None:
    laplace = laplace_certificate(4.0)
    other = gaussian_certificate(3.0, delta=1e-7) if mixed else laplace
    delta = 1e-6
    history = [(laplace, 3), (other, 1)] if mixed else [(laplace, 4)]
    total = compose_counts(history, method="best", delta=delta).epsilon
    below = math.nextafter(total, 0.0)
    with Ledger(tmp_path / "a.db") as ledger:
        ledger.set_budget(None, Guarantee(below, delta))
        for _ in range(3):
            ledger.charge([1, 2], laplace)
        with pytest.raises(BudgetExceeded):
            ledger.charge([1], other)  # one ulp short: refused, nothing recorded
        assert len(ledger.charges(1)) == 3
        ledger.set_budget(2, Guarantee(total, delta))
        ledger.charge([2], other)  # exactly at the budget: accepted
        spent = ledger.spent(2)
        assert spent.epsilon == total
        assert spent.delta_for(spent.epsilon) <= delta
        assert ledger.remaining(2).epsilon == 0.0
