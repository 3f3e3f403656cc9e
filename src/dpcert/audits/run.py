"""``audit(mechanism, a, b, epsilon, delta)``: sample, bound ε from below, and give a verdict."""

from __future__ import annotations

import time
import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.audits.classifier_search import ClassifierSearch, audit_with_classifier
from dpcert.audits.epsilon_lower_bound import (
    FEW_DRAWS_FACTOR,
    SELECTION_FRACTION,
    FewDrawsWarning,
    epsilon_lower_bound,
    few_draws_message,
)
from dpcert.audits.neighbours import Relation, relation_from
from dpcert.audits.rejection_set import Score
from dpcert.audits.report import AuditReport, verdict_for
from dpcert.audits.sampling import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_SAMPLES,
    Mechanism,
    SamplePair,
    accepts_size,
    check_draws_fit,
    draw_pair,
    generator_from,
)
from dpcert.audits.search import Search, screen, with_exposed_threshold
from dpcert.audits.selection import DEFAULT_MAX_CELLS
from dpcert.audits.timing import CLOCKS, draw_timed, joint_view
from dpcert.certificates import Guarantee
from dpcert.errors import InvalidParameter

__all__ = [
    "FEW_DRAWS_FACTOR",
    "METHOD",
    "FewDrawsWarning",
    "audit",
    "audit_samples",
    "json_ready",
    "linf_hint",
]

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
    message = few_draws_message(claim.delta, result.counts.draws_numerator)
    if message is not None:
        warnings.warn(message, FewDrawsWarning, stacklevel=3)
        notes.append(message)
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
    a: Any = None,
    b: Any = None,
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
    search: Search | ClassifierSearch | None = None,
    timing: bool | str = False,
    relation: str | Relation | None = None,
) -> AuditReport:
    """Test the claim that ``mechanism`` is (ε, δ)-DP on the neighbouring inputs ``a`` and ``b``.

    Parameters
    ----------
    mechanism
        Any callable ``f(value, rng)`` or ``f(value, rng, size)`` (used in batches when available).
    a, b
        The two neighbouring inputs (omit both with ``search``).
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
    search
        A neighbour search (:class:`dpcert.audits.search.VectorSearch`, ``ScalarSearch`` or
        ``CandidatePairs``): a share of ``samples`` screens its candidate pairs, the rest audits the
        best pair on fresh draws; the report names the pair (``inputs``) and the search (``search``).
        :class:`dpcert.audits.classifier_search.ClassifierSearch` wraps one of them: it screens the
        pairs by successive halving with an event learned by logistic regression (DP-Sniper's
        approach) and evaluates the fixed event on all the remaining draws, streamed in chunks.
    relation
        The neighbour relation the claim is made under: ``"linf"``, ``"one-differ"``, ``"l1"`` or
        ``"add-remove"`` (radius 1), or a :class:`dpcert.audits.neighbours.Relation` with its radius.
        With ``a`` and ``b``, a pair that is not a pair of neighbours under it is refused before any
        draw; with ``search``, it must be the search's own relation.  The report names it.
    timing
        Audit what an observer of release times sees: the pair (output, release time) of single
        releases made in turn on ``a`` and ``b`` and timed one by one (:mod:`dpcert.audits.timing`);
        scalar outputs, no ``score``, ``search`` or batches.  ``True`` or ``"wall"`` times them with the
        wall clock, ``"cpu"`` with the thread's processor time (the work alone, without the waits of a
        loaded machine).  The times, hence the bound, are not reproducible from the seed.

    Returns
    -------
    AuditReport
        With ``verdict`` ``"violated"`` iff the lower bound exceeds the claimed ε.
    """
    claim = _claim(mechanism, epsilon, delta)
    if timing is True:
        timing = "wall"
    if timing is not False and timing not in CLOCKS:
        raise InvalidParameter("timing", timing, "False, True, 'wall' or 'cpu'")
    confidence = check.probability("confidence", confidence, open_low=True, open_high=True)
    samples = check.positive_int("samples", samples, minimum=2)
    check_draws_fit(samples, batched=not timing and accepts_size(mechanism))  # one value per draw at least
    max_cells = check.positive_int("max_cells", max_cells)
    stated = None if relation is None else relation_from(relation)
    rng = generator_from(seed, rng)
    start = time.perf_counter()
    if search is not None:
        if timing:
            raise InvalidParameter("timing", timing, "False with a neighbour search")
        if a is not None or b is not None:
            raise InvalidParameter("a, b", (a, b), "None when a search chooses the pair")
        if stated is not None and stated != search.neighbours:
            raise InvalidParameter(
                "relation", stated.name, f"the search's own relation ({_described(search.neighbours)})"
            )
        if isinstance(search, ClassifierSearch):
            if score is not None:
                raise InvalidParameter("score", score, "None with a classifier search (it learns its score)")
            report = audit_with_classifier(mechanism, search, claim, samples, rng, confidence)
        else:
            report = _audit_with_search(
                mechanism, search, claim, samples, rng, confidence, score, max_cells, batch_size
            )
        return replace(report, seconds=time.perf_counter() - start)
    if a is None or b is None:
        raise InvalidParameter("a, b", (a, b), "two neighbouring inputs (or search=...)")
    if stated is not None:
        stated.check_pair("a, b", a, b)
    if timing:
        if score is not None:
            raise InvalidParameter("score", score, "None with timing=True (the view is (output, time))")
        report = _audit_timing(mechanism, a, b, claim, samples, rng, confidence, str(timing))
        return replace(report, seconds=time.perf_counter() - start, relation=stated)
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
    report = replace(report, seconds=time.perf_counter() - start, relation=stated)
    hint = linf_hint(report)
    return report if hint is None else replace(report, notes=report.notes + (hint,))


def _described(relation: Relation | None) -> str:
    return "none: pairs taken as given" if relation is None else relation.describe()


def _audit_timing(
    mechanism: Mechanism,
    a: Any,
    b: Any,
    claim: Guarantee,
    samples: int,
    rng: np.random.Generator,
    confidence: float,
    clock: str,
) -> AuditReport:
    """The audit of the joint view (output, release time); the bound of the outputs alone, from the
    same draws and output bins, is stated in a note for comparison (the verdict is the joint one)."""
    draws = draw_timed(mechanism, a, b, samples, rng, clock=clock).alternated()
    split = int(round(samples * SELECTION_FRACTION))
    if not 1 <= split < samples:
        raise InvalidParameter(
            "samples", samples, "at least 2 draws per input (one to select, one to evaluate)"
        )
    view = joint_view(draws, split)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewDrawsWarning)
        alone = audit_samples(
            view.outputs_only(), claim.epsilon, claim.delta, confidence=confidence, max_cells=view.cells
        )
    report = audit_samples(
        view.pair, claim.epsilon, claim.delta, confidence=confidence, max_cells=view.cells, inputs=(a, b)
    )
    notes = view.notes(draws) + [
        f"outputs alone (same draws and output bins, release time dropped): epsilon >= "
        f"{alone.epsilon_lower_bound:.4f} ({alone.verdict}); the verdict is the joint view's"
    ]
    return replace(
        report, method=f"{report.method} on (output, release time)", notes=tuple(notes) + report.notes
    )


def _audit_with_search(
    mechanism: Mechanism,
    search: Search,
    claim: Guarantee,
    samples: int,
    rng: np.random.Generator,
    confidence: float,
    score: Score | None,
    max_cells: int,
    batch_size: int,
) -> AuditReport:
    """Screen the search's candidates, then audit each finalist on fresh draws at level α/finalists."""
    search = with_exposed_threshold(search, mechanism)
    finalists = search.finalists
    final_draws = (samples - int(search.screening_share * samples)) // finalists
    final_evaluation = final_draws - int(round(final_draws * SELECTION_FRACTION))
    if final_evaluation < 1 or final_draws - final_evaluation < 1:
        raise InvalidParameter("samples", samples, "enough draws to screen and then audit the finalists")
    outcome = screen(
        mechanism,
        search,
        samples,
        claim.delta,
        confidence,
        rng,
        final_evaluation=final_evaluation,
        score=score,
        max_cells=max_cells,
        batch_size=batch_size,
    )
    level = 1.0 - (1.0 - confidence) / finalists
    reports = []
    for candidate in outcome.finalists:
        pair = draw_pair(mechanism, candidate.a, candidate.b, final_draws, rng, batch_size=batch_size)
        reports.append(
            audit_samples(
                pair,
                claim.epsilon,
                claim.delta,
                confidence=level,
                score=score,
                max_cells=max_cells,
                inputs=(candidate.a, candidate.b),
            )
        )
    best = max(range(finalists), key=lambda index: reports[index].epsilon_lower_bound)
    chosen = outcome.finalists[best]
    screened = outcome.screening_draws * len(outcome.screened)
    summary = replace(outcome, final_draws=final_draws).to_dict() | {
        "pair": chosen.to_dict(),
        "family_confidence": confidence,
    }
    notes: tuple[str, ...] = (
        f"neighbour search ({search.kind}): {len(outcome.screened)} candidate pairs screened with "
        f"{outcome.screening_draws} draws per input each ({screened} in all); the pair "
        f"'{chosen.pattern}' was audited on {final_draws} fresh draws per input",
    )
    if finalists > 1:
        notes += (
            f"{finalists} finalists each evaluated at confidence {level:.6g} (Bonferroni); the largest "
            f"bound holds with confidence {confidence:g}",
        )
    relation = search.neighbours
    summary["relation"] = None if relation is None else relation.to_dict()
    if relation is not None:
        notes += (f"every pair screened and audited is a pair of neighbours under {relation.describe()}",)
    report = replace(reports[best], search=summary, relation=relation)
    hint = linf_hint(report)
    notes += () if hint is None else (hint,)
    return replace(report, notes=notes + report.notes)


def linf_hint(report: AuditReport) -> str | None:
    """For a violation found under linf on a pair moving several answers at once: that the verdict is
    about linf neighbours, and which relation to audit instead if the query's neighbours differ less."""
    relation = report.relation
    if not report.violated or relation is None or relation.name != "linf":
        return None
    try:
        a = np.atleast_1d(np.asarray(report.inputs[0], float))
        b = np.atleast_1d(np.asarray(report.inputs[1], float))
    except (TypeError, ValueError):
        return None
    moved = int(np.count_nonzero(a != b)) if a.shape == b.shape else 1
    if moved <= 1:
        return None
    return (
        f"the claim is violated under linf neighbours (the pair moves {moved} answers at once); if "
        "neighbouring inputs of this query change one answer (histograms, counts, sums), audit with "
        "relation one-differ (or l1, add-remove)"
    )
