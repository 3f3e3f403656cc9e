"""Release-time term in the certificates of the secure LinUCB calibration.

Every certificate :func:`calibrate_secure` returns must cover release times (Jin, McMurtry, Rubinstein
& Ohrimenko 2022): δ >= δ_output(ε) + (1 + e^ε)·p, with p the union bound over the user's releases of
:func:`timing_failure` for one release of m = d + d(d+1)/2 integer-exact draws (one user's message or
one tree node), recomputed here in exact rational arithmetic.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpcert.bandits.calibration.linucb_secure import calibrate_secure
from dpcert.certificates import Certificate
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.secure.samplers import timing_failure


def _draws(dimension: int) -> int:
    return dimension + dimension * (dimension + 1) // 2  # phi*y and upper(phi phi^T)


def _levels(horizon: int, batch_size: int) -> int:
    return math.floor(math.log2(math.ceil(horizon / batch_size))) + 1


def _covers(certificate: Certificate, steps: int, draws: int, releases: int) -> None:
    p = Fraction(releases) * Fraction(timing_failure("discrete-gaussian", Fraction(steps) ** 2, draws))
    assert p > 0
    epsilon = certificate.epsilon
    # e^ε rounded up by 1e-12 relative, well above the error of math.exp
    factor = 1 + Fraction(math.exp(epsilon)) * (1 - Fraction(1, 10**12))
    assert Fraction(certificate.delta_for(epsilon)) + factor * p <= Fraction(certificate.delta)


CASES = [
    ("linucb-ldp", "least-noise", 1),
    ("linucb-ldp", "paper", 1),
    ("linucb-jdp", "least-noise", 1),
    ("linucb-jdp", "least-noise", 3),
    ("linucb-jdp", "paper", 2),
    ("linucb-sdp-amp", "least-noise", 2),
]


@pytest.mark.parametrize(("algorithm", "calibration", "participations"), CASES)
def test_certificates_cover_release_time(algorithm: str, calibration: str, participations: int) -> None:
    horizon, batch_size, dimension = 1000, 10, 3
    result = calibrate_secure(
        algorithm, epsilon=1.0, delta=1e-5, horizon=horizon, batch_size=batch_size, dimension=dimension,
        calibration=calibration, participations=participations,
    )  # fmt: skip
    steps = int(result.noise["sigma_steps"])
    assert steps <= 1 << 26
    levels = _levels(horizon, batch_size) if algorithm == "linucb-jdp" else 1
    assert result.certificate is not None and result.batch_certificate is not None
    _covers(result.batch_certificate, steps, _draws(dimension), levels)
    _covers(result.certificate, steps, _draws(dimension), levels * participations)
    if calibration == "least-noise":
        assert result.claim_met
        assert Fraction(result.certificate.delta) <= Fraction(1e-5)
        assert result.certificate.epsilon <= 1.0


def test_amplified_certificate_covers_the_shuffled_batch() -> None:
    horizon, batch_size, dimension = 10_000, 1000, 2
    result = calibrate_secure(
        "linucb-sdp-amp", epsilon=1.0, delta=1e-5, horizon=horizon, batch_size=batch_size,
        dimension=dimension,
    )  # fmt: skip
    assert result.certificate is not None
    assert Fraction(result.certificate.delta) <= Fraction(1e-5)
    assert "epsilon0" in result.noise  # amplified: every message of the batch is timed
    _covers(result.certificate, int(result.noise["sigma_steps"]), _draws(dimension), batch_size)


def test_sigma_beyond_the_sampler_range_is_refused_naming_sigma() -> None:
    # at ε = 1e-5 the least σ is about 5.6e7 grid steps (< 2^26 = 6.7e7): accepted; at ε = 5e-6 σ
    # doubles to about 1.1e8 steps (the rounding term sqrt(m) = sqrt(20300) steps dominates): refused
    common = dict(delta=1e-10, horizon=100, batch_size=1, dimension=200, calibration="least-noise")
    accepted = calibrate_secure("linucb-ldp", epsilon=1e-5, **common)  # type: ignore[arg-type]
    assert 1 << 25 < accepted.noise["sigma_steps"] <= 1 << 26
    with pytest.raises(InvalidParameter) as error:
        calibrate_secure("linucb-ldp", epsilon=5e-6, **common)  # type: ignore[arg-type]
    assert error.value.name == "sigma"
