"""Low-order-bit test: does a mechanism's floating-point output leak its input?

Mironov (2012), "On significance of the least significant bits for differential privacy", CCS: the
textbook sampler ``x + Lap(b)`` evaluated in floating point has an input-dependent *support*.  For
instance every output of ``1.0 + n`` is a multiple of ``2^-53`` whenever ``|n| >= 1/2``, while outputs of
``0.0 + n`` near 0 have much finer granularity; a single output can rule one input out, so the
mechanism is not ε-DP for any finite ε.

This module makes that observable black-box.  The statistic of an output y is the exponent ``k`` of its
lowest set bit (y is an odd multiple of ``2^k``), computed exactly from the IEEE-754 representation.  It
is a function of the output, so by post-processing an (ε, δ)-DP mechanism yields (ε, δ)-DP statistics,
and the usual ε lower bound (:mod:`dpcert.audits.epsilon_lower_bound`) on the statistic's distribution
is a valid test of the claim: integer-exact samplers and other correct mechanisms are flagged with
probability at most α, while the textbook Laplace and Gaussian samplers show outcomes that occur under
one input and never under the other (a support difference) and are flagged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpcert.audits.report import AuditReport
from dpcert.audits.run import audit_samples
from dpcert.audits.sampling import DEFAULT_BATCH_SIZE, Mechanism, SamplePair, draw_pair, generator_from
from dpcert.errors import InvalidParameter

ZERO_EXPONENT = -1100  # stands for the output 0.0 (which has no set bit); below every float exponent
_MANTISSA_BITS = 52
_MANTISSA_MASK = np.uint64((1 << _MANTISSA_BITS) - 1)
_IMPLICIT_BIT = np.uint64(1 << _MANTISSA_BITS)


def lowest_bit_exponent(values: Any) -> np.ndarray:
    """The exponent k with ``y = odd × 2^k`` for each float64 ``y`` (``ZERO_EXPONENT`` for 0).

    Integers are converted exactly to float64 (refused beyond 2^53 in magnitude); vector outputs are
    summarised by the smallest exponent over their coordinates.
    """
    array = np.asarray(values)
    if array.dtype.kind in "iu" and array.size and np.max(np.abs(array.astype(np.float64))) > 2.0**53:
        raise InvalidParameter("outputs", "<integers beyond 2**53>", "integers of magnitude <= 2**53")
    if array.dtype.kind not in "biuf":
        raise InvalidParameter("outputs", str(array.dtype), "numbers (floats or integers)")
    floats = np.ascontiguousarray(array, dtype=np.float64)
    if not np.all(np.isfinite(floats)):
        raise InvalidParameter("outputs", "<non-finite values>", "finite numbers")
    bits = floats.view(np.uint64)
    exponent_field = ((bits >> np.uint64(_MANTISSA_BITS)) & np.uint64(0x7FF)).astype(np.int64)
    mantissa = bits & _MANTISSA_MASK
    normal = exponent_field > 0
    significand = np.where(normal, mantissa | _IMPLICIT_BIT, mantissa)
    scale = np.where(normal, exponent_field - 1075, -1074)  # y = ± significand × 2^scale
    lowest = significand & (~significand + np.uint64(1))  # isolates the lowest set bit
    _, power = np.frexp(lowest.astype(np.float64))  # exact: lowest is a power of two (or 0)
    exponent = np.where(significand == 0, ZERO_EXPONENT, scale + power.astype(np.int64) - 1)
    if exponent.ndim > 1:
        exponent = exponent.min(axis=tuple(range(1, exponent.ndim)))
    return exponent


@dataclass(frozen=True)
class FloatingPointReport:
    """Result of :func:`check_floating_point`.

    ``audit`` is the ε lower-bound audit of the lowest-bit statistic; ``only_on_a`` / ``only_on_b`` list
    the exponents seen under one input and never under the other (descriptive; the verdict rests on the
    audit's confidence bound).
    """

    audit: AuditReport
    only_on_a: tuple[int, ...]
    only_on_b: tuple[int, ...]
    share_only_on_a: float
    share_only_on_b: float

    @property
    def flagged(self) -> bool:
        return self.audit.violated

    def to_dict(self) -> dict[str, Any]:
        return {
            "flagged": self.flagged,
            "audit": self.audit.to_dict(),
            "only_on_a": list(self.only_on_a),
            "only_on_b": list(self.only_on_b),
            "share_only_on_a": self.share_only_on_a,
            "share_only_on_b": self.share_only_on_b,
        }


def check_floating_point_samples(
    pair: SamplePair,
    epsilon: float,
    delta: float = 0.0,
    *,
    confidence: float = 0.95,
    inputs: tuple[Any, Any] = (None, None),
) -> FloatingPointReport:
    """The low-order-bit test on draws already made."""
    on_a, on_b = lowest_bit_exponent(pair.on_a), lowest_bit_exponent(pair.on_b)
    report = audit_samples(SamplePair(on_a, on_b), epsilon, delta, confidence=confidence, inputs=inputs)
    report = replace(report, method="lowest-bit exponent/" + report.method)
    seen_a, seen_b = np.unique(on_a), np.unique(on_b)
    only_a, only_b = np.setdiff1d(seen_a, seen_b), np.setdiff1d(seen_b, seen_a)
    return FloatingPointReport(
        audit=report,
        only_on_a=tuple(int(k) for k in only_a),
        only_on_b=tuple(int(k) for k in only_b),
        share_only_on_a=float(np.mean(np.isin(on_a, only_a))),
        share_only_on_b=float(np.mean(np.isin(on_b, only_b))),
    )


def check_floating_point(
    mechanism: Mechanism,
    a: Any,
    b: Any,
    epsilon: float,
    delta: float = 0.0,
    *,
    samples: int = 100_000,
    seed: int | None = None,
    rng: np.random.Generator | None = None,
    confidence: float = 0.95,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> FloatingPointReport:
    """Flag a mechanism whose floating-point outputs reveal the input through their low-order bits.

    Parameters
    ----------
    mechanism
        ``f(value, rng)`` or ``f(value, rng, size)`` returning numbers (or 1-D numeric arrays).
    a, b
        Neighbouring inputs.
    epsilon, delta
        The claim; the report is flagged iff the lower confidence bound on ε from the lowest-bit
        statistic exceeds ``epsilon``.
    samples, seed, rng, confidence, batch_size
        As for :func:`dpcert.audits.audit`.
    """
    pair = draw_pair(mechanism, a, b, samples, generator_from(seed, rng), batch_size=batch_size)
    return check_floating_point_samples(pair, epsilon, delta, confidence=confidence, inputs=(a, b))
