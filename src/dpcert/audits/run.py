"""``audit(mechanism, a, b, epsilon, delta)``: sample, bound ε from below, and give a verdict."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.audits.epsilon_lower_bound import epsilon_lower_bound
from dpcert.audits.rejection_set import Score
from dpcert.audits.report import AuditReport, verdict_for
from dpcert.audits.sampling import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_SAMPLES,
    Mechanism,
    SamplePair,
    draw_pair,
    generator_from,
)
from dpcert.audits.selection import DEFAULT_MAX_CELLS
from dpcert.certificates import Guarantee
from dpcert.errors import InvalidParameter

METHOD = "clopper-pearson union bound on a rejection set chosen on a held-out selection half"


def json_ready(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _claim(mechanism: Mechanism, epsilon: float | None, delta: float | None) -> Guarantee:
    if epsilon is None:
        certificate = getattr(mechanism, "certificate", None)
        if certificate is None:
            raise InvalidParameter(
                "epsilon", None, "a claimed epsilon > 0 (or a mechanism with a .certificate)"
            )
        return certificate.guarantee if delta is None else Guarantee(certificate.epsilon_for(delta), delta)
    return Guarantee(check.epsilon(epsilon), check.delta(0.0 if delta is None else delta))


def audit_samples(
    pair: SamplePair,
    epsilon: float,
    delta: float = 0.0,
    *,
    confidence: float = 0.95,
    score: Score | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
    inputs: tuple[Any, Any] = (None, None),
) -> AuditReport:
    """Audit a claim (ε, δ) against draws already made on the two inputs."""
    claim = Guarantee(check.epsilon(epsilon), check.delta(delta))
    start = time.perf_counter()
    result = epsilon_lower_bound(pair, claim.delta, confidence, score=score, max_cells=max_cells)
    notes = [
        f"rejection set chosen on the first {result.selection_draws} draws per input; "
        f"counts from the other {result.counts.draws_numerator}",
        "two one-sided Clopper-Pearson bounds at alpha/2 each (union bound)",
    ]
    if claim.epsilon >= result.epsilon_ceiling:
        notes.append(
            f"the claim epsilon={claim.epsilon:g} is at or above the ceiling {result.epsilon_ceiling:.4g} "
            f"(about ln n) of {result.counts.draws_numerator} evaluation draws: more samples are needed "
            "to refute it"
        )
    return AuditReport(
        verdict=verdict_for(result.epsilon_lower_bound, claim.epsilon),
        epsilon_lower_bound=result.epsilon_lower_bound,
        confidence=float(confidence),
        samples=pair.samples,
        method=f"clopper-pearson/{result.rejection_set.kind}",
        claim=claim,
        counts=result.counts,
        rejection_set=result.rejection_set,
        epsilon_ceiling=result.epsilon_ceiling,
        inputs=(json_ready(inputs[0]), json_ready(inputs[1])),
        seconds=time.perf_counter() - start,
        notes=tuple(notes),
    )


def audit(
    mechanism: Mechanism,
    a: Any,
    b: Any,
    epsilon: float | None = None,
    delta: float | None = None,
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int | None = None,
    rng: np.random.Generator | None = None,
    confidence: float = 0.95,
    score: Score | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = False,
) -> AuditReport:
    """Test the claim that ``mechanism`` is (ε, δ)-DP on the neighbouring inputs ``a`` and ``b``.

    Parameters
    ----------
    mechanism
        Any callable ``f(value, rng)`` or ``f(value, rng, size)`` (used in batches when available).
    a, b
        The two neighbouring inputs.
    epsilon, delta
        The claim; if ``epsilon`` is omitted, the mechanism's ``.certificate`` supplies it.
    samples
        Draws per input; half choose the rejection set, half evaluate it.
    seed, rng
        Randomness: an explicit generator, or a seed for ``numpy.random.default_rng`` (one of the two).
    confidence
        1 − α of the reported lower bound; a correct mechanism is reported "violated" with probability
        at most α.
    score
        Optional scalar feature of the outputs for the rejection set.
    progress
        Show a progress bar on stderr while sampling.

    Returns
    -------
    AuditReport
        With ``verdict`` ``"violated"`` iff the lower bound exceeds the claimed ε.
    """
    claim = _claim(mechanism, epsilon, delta)
    confidence = check.probability("confidence", confidence, open_low=True, open_high=True)
    samples = check.positive_int("samples", samples, minimum=2)
    rng = generator_from(seed, rng)
    start = time.perf_counter()
    pair = draw_pair(mechanism, a, b, samples, rng, batch_size=batch_size, progress=progress)
    report = audit_samples(
        pair,
        claim.epsilon,
        claim.delta,
        confidence=confidence,
        score=score,
        max_cells=max_cells,
        inputs=(a, b),
    )
    return replace(report, seconds=time.perf_counter() - start)
