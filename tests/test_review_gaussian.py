"""The Gaussian profile δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle & Wang 2018, Thm 8) against
50-digit ``mpmath``: never below the exact value, never zero (the Gaussian mechanism is never pure DP)."""

from __future__ import annotations

import mpmath
import pytest

from dpcert.errors import DPCertError
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.theory.gaussian import gaussian_delta


def exact_delta(epsilon: float, mu: float) -> mpmath.mpf:
    with mpmath.workdps(50):
        m, e = mpmath.mpf(mu), mpmath.mpf(epsilon)
        return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0])
def test_delta_is_never_below_the_exact_value(mu: float) -> None:
    # Regression: the allowance of 16 ulp of the larger term ignored the size of the logs being
    # exponentiated (e.g. mu = 5, epsilon = 50 came out 6e-15 relative below the exact value).
    for epsilon in (0.0, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0):
        exact = exact_delta(epsilon, mu)
        value = gaussian_delta(epsilon, mu)
        assert mpmath.mpf(value) >= exact
        if exact > 1e-300:
            assert mpmath.mpf(value) <= exact * (1 + 1e-9)


def test_delta_is_never_zero_so_no_pure_dp_claim_verifies() -> None:
    assert gaussian_delta(50.0, 0.5) > 0.0
    assert gaussian_delta(5.0, 0.01) > 0.0
    with pytest.raises(DPCertError):
        gaussian_certificate(1.0, epsilon=60.0, delta=0.0)
    assert gaussian_certificate(1.0, epsilon=60.0).delta > 0.0
