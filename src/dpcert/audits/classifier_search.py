"""A neighbour search whose rejection event is learned by a classifier, with adaptive screening and
streamed evaluation.

:class:`ClassifierSearch` takes its candidate pairs from another search (:class:`VectorSearch`,
:class:`ScalarSearch` or :class:`CandidatePairs`, with their neighbour relation) and

1. **screens** them by successive halving (Karnin, Koren & Somekh 2013): the screening budget
   (``screening_share`` of the draws per input) is split into ⌈log₂ K⌉ rounds of equal cost; in each
   round every surviving pair gets fresh draws added to its own, a logistic-regression classifier is
   fitted on the first half of its draws and DP-Sniper's threshold with randomised tie is chosen on
   the other half (:mod:`dpcert.audits.learned_event`, Bichsel, Steffen, Bogunovic & Vechev 2021), and
   the better half of the pairs, by the cautious forecast of the bound, survives;
2. **learns** the survivor's event on more fresh draws (``learning_share`` of the draws per input,
   at most ``max_learning``, together with its screening draws) and fixes it: scores, threshold, tie
   probability and orientation;
3. **evaluates** it on fresh draws, all the draws left (``samples`` minus the screening and learning
   draws per input), streamed in chunks of ``chunk`` draws (memory bounded by one chunk), counting how many
   outputs of each input fall in the event; the Clopper–Pearson union bound of
   :func:`dpcert.audits.epsilon_lower_bound.bound_from_counts` turns the counts into the bound.

Validity: everything adaptive (which pairs survive, the classifier, the threshold, the tie, the
orientation) is a function of the screening draws only.  The evaluation draws are made after the event
is fixed and independently of the screening draws, so given the event the two counts are binomial with
the event's true probabilities, and the reported number is a (1 − α) lower confidence bound on the
chosen pair's ε, hence on the mechanism's ε under the search's relation (one pair is evaluated: no
multiplicity correction).  The tie is decided by a uniform draw per output, independent of the
mechanism: the event is an event of (M(x), U), whose ε is at most M's (see
:mod:`dpcert.audits.learned_event`).
"""

from __future__ import annotations

import math
import mmap
import multiprocessing
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.audits.epsilon_lower_bound import (
    EvaluationCounts,
    bound_from_counts,
    epsilon_ceiling,
    few_draws_message,
)
from dpcert.audits.learned_event import (
    BLOCK_BINS,
    MARGINAL_FDR,
    Binning,
    Block,
    CellTable,
    LearnedEvent,
    OutputFeatures,
    as_rows,
    binned_cells,
    cell_log_ratios,
    cell_log_ratios_of_index,
    coarse_counts,
    code_counts,
    fine_tables,
    fit_logistic,
    independent_blocks,
    marginal_binnings,
    marginal_log_ratios_of_counts,
    marginal_scores,
    pattern_cells,
    pattern_index,
    pattern_value_scores,
    shared_log_ratios_of_counts,
    summary_cells,
    value_log_ratios_of_counts,
    values_independent_of_patterns,
)
from dpcert.audits.neighbours import Relation, plain_value
from dpcert.audits.rejection_set import RejectionSet
from dpcert.audits.report import AuditReport, verdict_for
from dpcert.audits.sampling import Mechanism, draw, refuse_unless_fits
from dpcert.audits.search import (
    Candidate,
    CandidatePairs,
    ScalarSearch,
    VectorSearch,
    with_exposed_threshold,
)
from dpcert.audits.selection import projected_bound
from dpcert.certificates import Guarantee
from dpcert.errors import InvalidParameter

DEFAULT_CHUNK = 262_144  # evaluation draws per input held in memory at once
DEFAULT_FIT_DRAWS = 20_000  # most draws per input the logistic regression is fitted on while screening
DEFAULT_FINAL_FIT_DRAWS = 200_000  # most draws per input the survivor's logistic regression is fitted on
DEFAULT_MAX_LEARNING = 1_000_000  # most fresh draws per input spent learning the survivor's event
HELD_COPIES = 3.0  # float64 copies of the screening and learning draws held at the peak (measured)
MIN_ROUND_DRAWS = 20  # least new draws per pair and round
_TARGETS = 600  # target probabilities c on the grid of the threshold rule
COMPARISON_CAUTION = 4.0  # standard deviations against each scorer's chosen event when scorers are compared

METHOD = "clopper-pearson/learned (classifier score, DP-Sniper threshold with randomised tie)"


@dataclass(frozen=True)
class ClassifierSearch:
    """Screen the pairs of ``pairs_from`` by successive halving with a learned event; evaluate the
    survivor's event on fresh, streamed draws.

    Parameters
    ----------
    pairs_from
        The search that proposes the candidate pairs (and states the neighbour relation); its own
        screening settings are not used.
    screening_share
        Share of the draws per input spent screening (all pairs and rounds together).
    learning_share, max_learning
        Share of the draws per input (at most ``max_learning``) drawn afresh on the survivor to learn
        its event.
    fit_draws
        Most draws per input the classifier is fitted on while screening (the rest choose the
        threshold); the value bins of binned scorers are cut at quantiles of these draws.
    final_fit_draws
        Most draws per input the survivor's logistic regression is fitted on when its event is
        learned (one fit, after the screening): at least ``fit_draws``; by default the larger of
        ``fit_draws`` and 200,000.
    chunk
        Evaluation draws per input held in memory at once; also the screening and learning draws per
        block of one generator.
    binned
        Also score continuous outputs by cells of binned values (the better scorer on held-out
        screening draws is kept); False: logistic regression alone.
    workers
        Processes that draw the screening and learning draws, learn the events of a screening round's
        pairs, fit and judge the survivor's groups of scorers (:func:`learn_event`), and draw and count
        the evaluation's chunks, side by side (forked, where the platform can fork; one process
        otherwise).  Every block of ``chunk`` screening or learning draws
        (:func:`spawned_draws`) and every evaluation chunk (:func:`streamed_counts`) has its own
        generator spawned from the audit's, and the learning uses no randomness, so the report is the
        same for every ``workers``.
    """

    pairs_from: VectorSearch | ScalarSearch | CandidatePairs
    screening_share: float = 0.3
    learning_share: float = 0.3
    max_learning: int = DEFAULT_MAX_LEARNING
    fit_draws: int = DEFAULT_FIT_DRAWS
    final_fit_draws: int | None = None
    chunk: int = DEFAULT_CHUNK
    binned: bool = True
    workers: int = 1

    kind = "classifier"
    finalists = 1

    def __post_init__(self) -> None:
        if not isinstance(self.pairs_from, (VectorSearch, ScalarSearch, CandidatePairs)):
            raise InvalidParameter(
                "pairs_from", type(self.pairs_from).__name__, "a VectorSearch, ScalarSearch or CandidatePairs"
            )
        share = check.probability("screening_share", self.screening_share, open_low=True, open_high=True)
        object.__setattr__(self, "screening_share", share)
        learning = check.probability("learning_share", self.learning_share, open_high=True)
        if share + learning >= 1.0:
            raise InvalidParameter(
                "learning_share", learning, f"a share below 1 - screening_share = {1.0 - share:g}"
            )
        object.__setattr__(self, "learning_share", learning)
        object.__setattr__(
            self, "max_learning", check.positive_int("max_learning", self.max_learning, minimum=0)
        )
        object.__setattr__(self, "fit_draws", check.positive_int("fit_draws", self.fit_draws, minimum=10))
        final = (
            max(self.fit_draws, DEFAULT_FINAL_FIT_DRAWS)
            if self.final_fit_draws is None
            else self.final_fit_draws
        )
        object.__setattr__(
            self, "final_fit_draws", check.positive_int("final_fit_draws", final, minimum=self.fit_draws)
        )
        object.__setattr__(self, "chunk", check.positive_int("chunk", self.chunk))
        if not isinstance(self.binned, bool):
            raise InvalidParameter("binned", self.binned, "True or False")
        object.__setattr__(self, "workers", check.positive_int("workers", self.workers))

    @property
    def neighbours(self) -> Relation | None:
        return self.pairs_from.neighbours

    def candidates(self, rng: np.random.Generator) -> list[Candidate]:
        return self.pairs_from.candidates(rng)


# --------------------------------------------------------------------------- the threshold rule
@dataclass(frozen=True)
class EventChoice:
    """The chosen orientation, threshold and tie, with the forecast (never reported as a bound)."""

    numerator: str
    threshold: float
    tie: float
    forecast: float
    guarded: float = -math.inf  # the same event's forecast at COMPARISON_CAUTION (scorers are compared by it)


def tail_counts(
    num: np.ndarray, den: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct values v of ``num`` and ``den`` together, ascending, and per value the counts of
    ``num > v``, ``num == v``, ``den > v`` and ``den == v``: both sorted, then merged by one stable
    sort of the two runs (linear time), with the counts read off cumulative sums (no binary search)."""
    merged = np.concatenate([np.sort(num), np.sort(den)])
    order = np.argsort(merged, kind="stable")  # two sorted runs: a single merge
    ordered = merged[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    from_den = (order >= num.shape[0]).astype(np.int64)
    den_eq = np.add.reduceat(from_den, starts) if starts.size else np.zeros(0, np.int64)
    ends = np.concatenate([starts[1:], [ordered.shape[0]]])
    num_eq = (ends - starts) - den_eq
    den_gt = den.shape[0] - np.cumsum(den_eq)
    num_gt = num.shape[0] - np.cumsum(num_eq)
    return ordered[starts], num_gt, num_eq, den_gt, den_eq


def _target_counts(
    num: np.ndarray, den: np.ndarray, targets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For each target count c of denominator draws: the least score value whose strict upper set
    holds at most c denominator draws, the tie probability q that brings the denominator count to c
    exactly (``#{u > t} + q·#{u = t} = c``), and the numerator and denominator counts of that event."""
    values, num_gt, num_eq, den_gt, den_eq = tail_counts(num, den)
    index = np.minimum(np.searchsorted(-den_gt, -targets, side="left"), values.shape[0] - 1)
    equal = den_eq[index]
    ties = np.where(equal > 0, np.clip((targets - den_gt[index]) / np.maximum(equal, 1), 0.0, 1.0), 1.0)
    return values[index], ties, num_gt[index] + ties * num_eq[index], den_gt[index] + ties * equal


def _best_threshold(
    folds: list[tuple[np.ndarray, np.ndarray]], evaluation: int, delta: float, alpha: float
) -> tuple[float, float, float, float]:
    """DP-Sniper's threshold with randomised tie for each target c, the best c by the projected bound;
    also the best event's forecast at :data:`COMPARISON_CAUTION`.

    ``folds`` holds (numerator, denominator) scores of held-out draws; the first fold's scores are
    those of the scorer that will be used.  With several folds (cross-fitting: each fold scored by a
    scorer fitted without it), each target is the same share of every fold's denominator draws, and
    the target is chosen on the folds' counts added up: the choice among hundreds of nested tail sets
    rests on all the held-out draws.  The threshold and tie are then read off the first fold."""
    n_den = folds[0][1].shape[0]
    targets = np.unique(
        np.concatenate([np.geomspace(0.5, float(n_den), _TARGETS), np.linspace(0.0, n_den, _TARGETS // 3)])
    )
    thresholds, ties, in_num, in_den = _target_counts(folds[0][0], folds[0][1], targets)
    first_den, n_num = n_den, folds[0][0].shape[0]
    for num, den in folds[1:]:  # each target the same share of this fold's denominator draws
        scaled = targets if den.shape[0] == first_den else targets * (den.shape[0] / first_den)
        _, _, fold_num, fold_den = _target_counts(num, den, scaled)
        in_num, in_den = in_num + fold_num, in_den + fold_den
        n_num, n_den = n_num + num.shape[0], n_den + den.shape[0]
    projected = projected_bound(in_num, n_num, in_den, n_den, evaluation, evaluation, delta, alpha)
    best = int(np.argmax(projected))
    guarded = projected_bound(
        in_num[best : best + 1], n_num, in_den[best : best + 1], n_den, evaluation, evaluation, delta, alpha,
        caution=COMPARISON_CAUTION,
    )  # fmt: skip
    return float(thresholds[best]), float(ties[best]), float(projected[best]), float(guarded[0])


def choose_event(
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    evaluation: int,
    delta: float,
    confidence: float,
    *,
    other_folds: tuple[tuple[np.ndarray, np.ndarray], ...] = (),
) -> EventChoice:
    """Orientation, threshold and tie probability for the scores ``logit P(a | o)`` of draws on a and
    on b that the classifier was not fitted on, for ``evaluation`` draws per input.

    ``other_folds`` holds more held-out (a, b) scores, each from a scorer fitted without them; the
    target share of the denominator is then chosen on all folds together (see :func:`_best_threshold`)
    and the threshold and tie are those of ``scores_a``, ``scores_b``."""
    alpha = 1.0 - confidence
    best = EventChoice("a", math.inf, 0.0, -math.inf)
    for numerator in ("a", "b"):
        folds = [(a, b) if numerator == "a" else (-b, -a) for a, b in ((scores_a, scores_b), *other_folds)]
        threshold, tie, forecast, guarded = _best_threshold(folds, evaluation, delta, alpha)
        if forecast > best.forecast:
            best = EventChoice(numerator, threshold, tie, forecast, guarded)
    return best


def held_out_log_loss(scores_a: np.ndarray, scores_b: np.ndarray) -> float:
    """The log loss of the scores as logits of "drawn on a", averaged over the draws on a and over the
    draws on b (equal weight for each input): ``mean ln(1 + e^(−s)) over a + mean ln(1 + e^s) over b``.
    A proper scoring rule, least in expectation for the true log likelihood ratio; it averages over
    every held-out draw, so it tells two scorers apart with far less noise than a tail event does."""
    on_a = np.add.reduce(np.logaddexp(0.0, -scores_a)) / scores_a.shape[0]
    on_b = np.add.reduce(np.logaddexp(0.0, scores_b)) / scores_b.shape[0]
    return float(on_a + on_b)


def learn_event(
    on_a: np.ndarray,
    on_b: np.ndarray,
    evaluation: int,
    delta: float,
    confidence: float,
    *,
    fit_draws: int = DEFAULT_FIT_DRAWS,
    binned: bool = True,
    logistic_draws: int | None = None,
    workers: int = 1,
) -> tuple[LearnedEvent, float]:
    """Fit the classifier on the first half of the draws, choose the threshold on the second half; the
    event and its forecast.

    Outputs with at most :data:`~dpcert.audits.learned_event.MAX_CELLS` distinct values on the first
    half are scored by their cell's estimated log likelihood ratio (the saturated logistic model on
    one-hot cells, in closed form).  Other outputs get several scorers: the same on cells of binned
    values (:func:`~dpcert.audits.learned_event.binned_cells`), on cells of row summaries (atom counts
    and the largest other value, :func:`~dpcert.audits.learned_event.summary_cells`, for outputs of
    several coordinates), on cells of atom patterns plus each coordinate's table of its released
    values' bins (:func:`~dpcert.audits.learned_event.pattern_cells`, for outputs shaped like a sparse
    vector's), the sum of the coordinates' binned marginal log likelihood ratios, with one
    table per coordinate (:func:`~dpcert.audits.learned_event.marginal_log_ratios`) or one table shared
    by all (:func:`~dpcert.audits.learned_event.shared_log_ratios`), for each binning of
    :data:`~dpcert.audits.learned_event.BIN_COUNTS` (outputs of several coordinates), and logistic
    regression on :class:`~dpcert.audits.learned_event.OutputFeatures`, fitted on at most
    ``logistic_draws`` (default ``fit_draws``) draws per input; the bins and features are fitted on
    at most ``fit_draws``.  Outputs made of several blocks of coordinates found independent of each
    other (mechanisms run side by side on one input,
    :func:`~dpcert.audits.learned_event.independent_blocks`) get one scorer instead: the sum over the
    blocks of each block's scorer of least held-out log loss (:func:`_block_scorers`).

    The scorer kept is chosen on the second half only (screening draws).  Without a marginal score, it
    is the one whose chosen threshold forecasts the larger bound.  With one:

    * first the kind of scorer (cells, binned cells, summary cells, coordinate tables, shared tables,
      logistic regression) whose best scorer has the least held-out log loss
      (:func:`held_out_log_loss`).  A proper scoring rule averaged over every held-out draw separates
      kinds with far less noise than one tail event's forecast: on DP-Sniper's LaplaceParallel, where
      every coordinate's ratio is ±0.005, the forecasts of per-coordinate and shared tables differ by
      less than their noise, and on a noisy histogram whose neighbours differ in one bin the loss
      keeps the per-coordinate tables;
    * then, among that kind's scorers, the one whose chosen event's forecast is largest at
      :data:`COMPARISON_CAUTION` standard deviations of caution instead of the threshold rule's two:
      the threshold of a finely graded score is the best of hundreds of nested tail sets, and a small
      one can win by luck (LaplaceParallel, 79 against 33 held-out draws where at most e^0.1 : 1 is
      possible).

    With a marginal score, each compared scorer's threshold is chosen by cross-fitting: the scorer
    is also fitted on the second half and scores the first, and :func:`choose_event` chooses the
    target share of the denominator on both folds' counts added up (twice the held-out draws), then
    reads the threshold and tie off the second half's scores under the scorer fitted on the first,
    which is the one used.  The scorer fitted on the second half only helps choose; its scores of the
    first half are held out from it, so the folds' counts are honest held-out counts.

    The forecast returned, by which the screening ranks pairs, is the largest of the compared
    scorers' forecasts.

    With ``workers`` above 1 and no marginal score offered (every scorer is then judged), the groups
    of scorers (binned cells, row summaries, atom patterns, logistic regression), or the blocks, are
    fitted and judged in up to ``workers`` forked processes, with the same event and forecast as in one
    process.  With a marginal score one process fits them: only the kind kept is cross-fitted, and
    judging every kind side by side (cross-fitting each) took more time than it saved (DP-Sniper's
    LaplaceParallel: 10.6 s in one process, 14.5 s in two), and so did finding the kinds' held-out log
    losses side by side and fitting the kind kept again (7.4–7.7 s against 7.6–7.9 s).
    """
    rows_a, rows_b = as_rows(on_a), as_rows(on_b)
    half_a, half_b = rows_a.shape[0] // 2, rows_b.shape[0] // 2
    if min(half_a, half_b) < 1:
        raise InvalidParameter("samples", rows_a.shape[0], "at least 2 screening draws per input")
    most = fit_draws if logistic_draws is None else logistic_draws
    groups, guard = _scorer_groups(
        rows_a, rows_b, fit_draws, most, binned=binned, blocks=binned, workers=workers
    )

    def held(scorer: _Scorer) -> tuple[np.ndarray, np.ndarray]:
        return _held_scores(scorer, rows_a, rows_b)

    def judge(scorer: _Scorer) -> _Judged:
        """The scorer with its chosen event; its threshold by cross-fitting where a marginal score is
        offered."""
        other_folds = (scorer.crossed(),) if guard and scorer.crossed is not None else ()
        choice = choose_event(*held(scorer), evaluation, delta, confidence, other_folds=other_folds)
        return _Judged(scorer.event, choice)

    if workers > 1 and len(groups) > 1 and not guard:
        # every scorer is judged: the groups are fitted and judged side by side, in order
        parts = _map_forked(lambda group: [judge(scorer) for scorer in group()], groups, workers)
        chosen = [judged for part in parts for judged in part]
    else:
        scorers = [scorer for group in groups for scorer in group()]
        kept = {scorer.family for scorer in scorers}
        if guard:  # the kind of scorer of the least held-out log loss; its scorers compete below
            for scorer in scorers:  # every scorer's held-out scores, kept for below
                scorer.held = held(scorer)
            losses = [held_out_log_loss(*held(scorer)) for scorer in scorers]
            kept = {scorers[int(np.argmin(losses))].family}
        chosen = [judge(scorer) for scorer in scorers if scorer.family in kept]
    best: tuple[LearnedEvent, float] | None = None
    best_key = (-math.inf, -math.inf)
    largest = -math.inf  # the pair's forecast: the best scorer's, as the screening ranks pairs
    for judged in chosen:  # the scorer with the better forecast on the held-out half
        choice = judged.choice
        key = (choice.guarded, choice.forecast) if guard else (choice.forecast, choice.forecast)
        if best is None or key > best_key:
            event = replace(
                judged.event, numerator=choice.numerator, threshold=choice.threshold, tie=choice.tie
            )
            best, best_key = (event, choice.forecast), key
        largest = max(largest, choice.forecast)
    assert best is not None  # at least one scorer
    return best[0], largest


def _scorer_groups(
    rows_a: np.ndarray,
    rows_b: np.ndarray,
    fit_draws: int,
    most: int,
    *,
    binned: bool,
    blocks: bool,
    workers: int = 1,
) -> tuple[list[Callable[[], list[_Scorer]]], bool]:
    """The groups of scorers :func:`learn_event` fits on the rows drawn on a and on b (halves split as
    there), and whether a marginal score is offered.  With ``blocks``, outputs made of independent
    blocks of coordinates (:func:`_block_starts`) get the sum over the blocks alone
    (:func:`_block_scorers`, its blocks learned in up to ``workers`` processes)."""
    half_a, half_b = rows_a.shape[0] // 2, rows_b.shape[0] // 2
    first = np.concatenate([rows_a[:half_a], rows_b[:half_b]])
    table = CellTable.of(first)
    if table is not None:  # few distinct outputs: the cells' estimated log likelihood ratios
        scores, unseen = cell_log_ratios(table, rows_a[:half_a], rows_b[:half_b])
        cells_event = LearnedEvent(None, tuple(float(s) for s in scores), "a", 0.0, 0.0, table, unseen)
        return [lambda: [_Scorer("cells", cells_event)]], False
    fit = np.concatenate([rows_a[: min(half_a, fit_draws)], rows_b[: min(half_b, fit_draws)]])
    draws = _Draws(rows_a, rows_b, half_a, half_b, first, fit)
    starts = _block_starts(draws, fit_draws) if blocks else None
    if starts is not None:
        return [lambda: _block_scorers(draws, starts, fit_draws, most, workers)], False
    marginals = {shared: marginal_binnings(fit, shared=shared) if binned else [] for shared in (False, True)}
    groups: list[Callable[[], list[_Scorer]]] = [
        *(
            (
                lambda: _binned_scorers(draws),
                lambda: _summary_scorers(draws),
                lambda: _pattern_scorers(draws),
            )
            if binned
            else ()
        ),
        lambda: _table_scorers(draws, marginals[False], shared=False),
        lambda: _table_scorers(draws, marginals[True], shared=True),
        lambda: _logistic_scorers(draws, most),
    ]
    return groups, any(marginals.values())


def _held_scores(scorer: _Scorer, rows_a: np.ndarray, rows_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scorer's scores of the held-out second half of the draws."""
    if scorer.held is not None:
        return scorer.held
    half_a, half_b = rows_a.shape[0] // 2, rows_b.shape[0] // 2
    return scorer.event.scores(rows_a[half_a:]), scorer.event.scores(rows_b[half_b:])


@dataclass
class _Scorer:
    """One scorer of :func:`learn_event`: its kind, its event (threshold not yet chosen), its scores of
    the held-out second half where already at hand, and the same scorer fitted on the second half
    scoring the first (cross-fitting), where it has one."""

    family: str
    event: LearnedEvent
    held: tuple[np.ndarray, np.ndarray] | None = None
    crossed: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None


@dataclass(frozen=True)
class _Judged:
    """A scorer's event and its chosen orientation, threshold and tie."""

    event: LearnedEvent
    choice: EventChoice


@dataclass(frozen=True)
class _Draws:
    """A pair's draws as rows, split into halves: ``first`` is the first halves of a and b together,
    ``fit`` the draws the bins and features are fitted on."""

    rows_a: np.ndarray
    rows_b: np.ndarray
    half_a: int
    half_b: int
    first: np.ndarray
    fit: np.ndarray


def _binned_scorers(draws: _Draws) -> list[_Scorer]:
    """Cells of positions and value bins (continuous values)."""
    cells_of = binned_cells(draws.fit, draws.first)
    if cells_of is None:
        return []
    binning, cells = cells_of
    rows_a, rows_b, half_a, half_b = draws.rows_a, draws.rows_b, draws.half_a, draws.half_b
    scores, unseen = cell_log_ratios(
        cells, binning.transform(rows_a[:half_a]), binning.transform(rows_b[:half_b])
    )
    event = LearnedEvent(None, tuple(float(s) for s in scores), "a", 0.0, 0.0, cells, unseen, binning)
    crossed = _crossed_cells(cells, binning.transform, rows_a, rows_b, half_a, half_b)
    return [_Scorer("binned cells", event, crossed=crossed)]


def _summary_scorers(draws: _Draws) -> list[_Scorer]:
    """Cells of row summaries (atoms and values in several coordinates), with their held-out scores."""
    rows_a, rows_b, half_a, half_b = draws.rows_a, draws.rows_b, draws.half_a, draws.half_b
    parts: dict[tuple[float, ...], tuple[np.ndarray, ...]] = {}  # of ``first``, by atoms
    held_parts: dict[tuple[float, ...], tuple[tuple[np.ndarray, ...], ...]] = {}  # of the second half
    scorers = []
    for summary, cells in summary_cells(draws.fit, draws.first, parts):
        image = summary.image(parts[summary.atoms])  # first: a's first half, then b's
        scores, unseen = cell_log_ratios(cells, image[:half_a], image[half_a:])
        event = LearnedEvent(
            None, tuple(float(s) for s in scores), "a", 0.0, 0.0, cells, unseen, summary=summary
        )
        if summary.atoms not in held_parts:
            held_parts[summary.atoms] = (summary.parts(rows_a[half_a:]), summary.parts(rows_b[half_b:]))
        second_a, second_b = held_parts[summary.atoms]
        held = (event.cell_scores(summary.image(second_a)), event.cell_scores(summary.image(second_b)))
        crossed = _crossed_cells(cells, summary.transform, rows_a, rows_b, half_a, half_b)
        scorers.append(_Scorer("summary cells", event, held, crossed))
    return scorers


def _pattern_scorers(draws: _Draws) -> list[_Scorer]:
    """Cells of atom patterns plus per-coordinate value tables (outputs shaped like a sparse vector's),
    with their held-out scores; none where the released values are found to depend on the pattern (on
    the finest binning's bins, tested on the first halves before the second halves are coded).  The
    patterns, their cells and their log ratios are the same under every binning: they are found
    once."""
    rows_a, rows_b, half_a, half_b = draws.rows_a, draws.rows_b, draws.half_a, draws.half_b
    found = pattern_cells(draws.fit, draws.first)
    if found is None:
        return []
    cells, binnings, first_codes = found  # the first halves' codes: a's, then b's
    first = (first_codes[:, :half_a], first_codes[:, half_a:])
    first_index = tuple(pattern_index(binnings[0], cells, codes) for codes in first)
    if not values_independent_of_patterns(binnings[0], cells, first, first_index):
        return []  # the released values depend on the pattern: the sum is not their likelihood ratio
    second = (binnings[0].codes(rows_a[half_a:]), binnings[0].codes(rows_b[half_b:]))
    codes = [
        (np.concatenate([first[0], second[0]], axis=1), np.concatenate([first[1], second[1]], axis=1)),
        *((binning.codes(rows_a), binning.codes(rows_b)) for binning in binnings[1:]),
    ]
    index_a = np.concatenate([first_index[0], pattern_index(binnings[0], cells, second[0])])
    index_b = np.concatenate([first_index[1], pattern_index(binnings[0], cells, second[1])])
    scores, unseen = cell_log_ratios_of_index(len(cells.cells), index_a[:half_a], index_b[:half_b])
    scorers = []
    for binning, (codes_a, codes_b) in zip(binnings, codes, strict=True):
        first_a, first_b = codes_a[:, :half_a], codes_b[:, :half_b]
        tables = value_log_ratios_of_counts(
            binning,
            code_counts(binning, first_a),
            code_counts(binning, first_b),
            false_discovery=MARGINAL_FDR,
        )
        weights = np.concatenate([scores, tables])
        event = LearnedEvent(
            None, tuple(float(w) for w in weights), "a", 0.0, 0.0, cells, unseen, patterns=binning
        )
        held = (
            pattern_value_scores(binning, cells, weights, unseen, codes_a[:, half_a:], index_a[half_a:]),
            pattern_value_scores(binning, cells, weights, unseen, codes_b[:, half_b:], index_b[half_b:]),
        )
        scorers.append(_Scorer("pattern cells", event, held))
    return scorers


def _block_starts(draws: _Draws, fit_draws: int) -> tuple[int, ...] | None:
    """The first coordinate of each block of :func:`~dpcert.audits.learned_event.independent_blocks`,
    tested on each input's fitting draws; None unless there are several blocks and some block has
    several coordinates (blocks of one coordinate each are the coordinates' marginal tables)."""
    binning = Binning.fit(draws.fit, BLOCK_BINS)
    fit_a = min(draws.half_a, fit_draws)  # the fitting draws: a's, then b's
    starts = independent_blocks(binning, (binning.codes(draws.fit[:fit_a]), binning.codes(draws.fit[fit_a:])))
    stops = (*starts[1:], draws.rows_a.shape[1])
    if len(starts) < 2 or max(stop - start for start, stop in zip(starts, stops, strict=True)) < 2:
        return None
    return starts


def _block_scorers(
    draws: _Draws, starts: tuple[int, ...], fit_draws: int, most: int, workers: int
) -> list[_Scorer]:
    """The sum of the blocks' scores, with its held-out scores.  The log likelihood ratio of an output
    made of independent blocks is the sum of the blocks' log ratios, so every scorer of the whole
    output models the same ratio with more cells or weights: the sum replaces them (a logistic
    regression on the coordinates' features is itself a sum over the coordinates).  Each block's
    scorer is, among the scorers :func:`learn_event` fits on the block's columns alone, the one of the
    least held-out log loss (:func:`held_out_log_loss`: the sum estimates the log likelihood ratio, and
    the proper scoring rule judges each term as that).  The blocks are learned in up to ``workers``
    forked processes, the same scorers as in one."""
    rows_a, rows_b = draws.rows_a, draws.rows_b
    stops = (*starts[1:], rows_a.shape[1])

    def learn(bounds: tuple[int, int]) -> tuple[Block, tuple[np.ndarray, np.ndarray]]:
        block_a, block_b = rows_a[:, bounds[0] : bounds[1]], rows_b[:, bounds[0] : bounds[1]]
        groups, _ = _scorer_groups(block_a, block_b, fit_draws, most, binned=True, blocks=False)
        scorers = [scorer for group in groups for scorer in group()]
        held = [_held_scores(scorer, block_a, block_b) for scorer in scorers]
        best = int(np.argmin([held_out_log_loss(*scores) for scores in held]))
        return Block(bounds[0], bounds[1], scorers[best].event), held[best]

    learned = _map_forked(learn, list(zip(starts, stops, strict=True)), workers)
    held_a, held_b = learned[0][1]
    for _, (block_a, block_b) in learned[1:]:  # left to right, as the event adds them
        held_a, held_b = held_a + block_a, held_b + block_b
    event = LearnedEvent(None, (), "a", 0.0, 0.0, blocks=tuple(block for block, _ in learned))
    return [_Scorer("independent blocks", event, (held_a, held_b))]


def _table_scorers(draws: _Draws, marginals: list[Binning], *, shared: bool) -> list[_Scorer]:
    """Sums of binned marginal log ratios, one table per coordinate or one shared by all, per binning,
    with their held-out scores."""
    if not marginals:
        return []
    rows_a, rows_b, half_a, half_b = draws.rows_a, draws.rows_b, draws.half_a, draws.half_b
    finest = _Coded.of(marginals[0], rows_a, rows_b, half_a, half_b)
    scorers = []
    for marginal in marginals:
        maps = marginal.code_maps(finest.binning)
        coded = finest if maps is not None else _Coded.of(marginal, rows_a, rows_b, half_a, half_b)
        tables = coded.tables(marginal, maps, shared, "first")
        event = LearnedEvent(None, tuple(float(w) for w in tables), "a", 0.0, 0.0, marginals=marginal)
        held = coded.scores(marginal, maps, tables, "second")
        crossed = _crossed_tables(coded, marginal, maps, shared)
        scorers.append(_Scorer("shared tables" if shared else "coordinate tables", event, held, crossed))
    return scorers


def _logistic_scorers(draws: _Draws, most: int) -> list[_Scorer]:
    """Logistic regression on the output's features, fitted on at most ``most`` draws per input."""
    rows_a, rows_b, half_a, half_b = draws.rows_a, draws.rows_b, draws.half_a, draws.half_b
    features = OutputFeatures.fit(draws.fit)
    logistic_a, logistic_b = rows_a[: min(half_a, most)], rows_b[: min(half_b, most)]
    weights = tuple(
        float(w) for w in fit_logistic(features.transform(logistic_a), features.transform(logistic_b))
    )
    crossed = _crossed_logistic(features, rows_a, rows_b, half_a, half_b, most)
    return [_Scorer("logistic regression", LearnedEvent(features, weights, "a", 0.0, 0.0), crossed=crossed)]


def _crossed_cells(
    cells: CellTable,
    transform: Callable[[np.ndarray], np.ndarray],
    rows_a: np.ndarray,
    rows_b: np.ndarray,
    half_a: int,
    half_b: int,
) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    """The cells' log ratios estimated on the second half of the draws, as scores of the first half."""

    def scores() -> tuple[np.ndarray, np.ndarray]:
        weights, unseen = cell_log_ratios(cells, transform(rows_a[half_a:]), transform(rows_b[half_b:]))
        event = LearnedEvent(None, tuple(float(w) for w in weights), "a", 0.0, 0.0, cells, unseen)
        return event.scores(transform(rows_a[:half_a])), event.scores(transform(rows_b[:half_b]))

    return scores


@dataclass(frozen=True)
class _Coded:
    """The codes of a pair's draws under one binning, and each half's code counts per coordinate:
    every coarser binning's tables are estimated from these counts and its scores read off these codes
    (:meth:`Binning.code_maps`), the same numbers as from its own codes, without coding again."""

    binning: Binning
    codes_a: np.ndarray
    codes_b: np.ndarray
    half_a: int
    half_b: int
    counts: dict[str, tuple[list[np.ndarray], list[np.ndarray]]]

    @classmethod
    def of(cls, binning: Binning, rows_a: np.ndarray, rows_b: np.ndarray, half_a: int, half_b: int) -> _Coded:
        codes_a, codes_b = binning.codes(rows_a), binning.codes(rows_b)
        counts = {
            "first": (code_counts(binning, codes_a[:, :half_a]), code_counts(binning, codes_b[:, :half_b])),
            "second": (code_counts(binning, codes_a[:, half_a:]), code_counts(binning, codes_b[:, half_b:])),
        }
        return cls(binning, codes_a, codes_b, half_a, half_b, counts)

    def _draws(self, half: str) -> tuple[int, int]:
        if half == "first":
            return self.half_a, self.half_b
        return self.codes_a.shape[1] - self.half_a, self.codes_b.shape[1] - self.half_b

    def tables(
        self, marginal: Binning, maps: tuple[np.ndarray, ...] | None, shared: bool, half: str
    ) -> np.ndarray:
        """``marginal``'s tables estimated on one half of the draws (``maps``: from these codes to
        ``marginal``'s, None when these are ``marginal``'s own codes)."""
        counts_a, counts_b = self.counts[half]
        if maps is not None:
            counts_a = coarse_counts(maps, counts_a, marginal)
            counts_b = coarse_counts(maps, counts_b, marginal)
        draws_a, draws_b = self._draws(half)
        if shared:
            return shared_log_ratios_of_counts(marginal, counts_a, counts_b, draws_a, draws_b)
        return marginal_log_ratios_of_counts(
            marginal, counts_a, counts_b, draws_a, draws_b, false_discovery=MARGINAL_FDR
        )

    def scores(
        self, marginal: Binning, maps: tuple[np.ndarray, ...] | None, tables: np.ndarray, half: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """The scores of one half's draws on a and on b under ``marginal``'s ``tables``."""
        weights = tables if maps is None else fine_tables(maps, tables, marginal)
        part_a = slice(None, self.half_a) if half == "first" else slice(self.half_a, None)
        part_b = slice(None, self.half_b) if half == "first" else slice(self.half_b, None)
        return (
            marginal_scores(self.binning, weights, self.codes_a[:, part_a]),
            marginal_scores(self.binning, weights, self.codes_b[:, part_b]),
        )


def _crossed_tables(
    coded: _Coded, marginal: Binning, maps: tuple[np.ndarray, ...] | None, shared: bool
) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    """The marginal tables estimated on the second half of the draws, as scores of the first half."""

    def scores() -> tuple[np.ndarray, np.ndarray]:
        return coded.scores(marginal, maps, coded.tables(marginal, maps, shared, "second"), "first")

    return scores


def _crossed_logistic(
    features: OutputFeatures,
    rows_a: np.ndarray,
    rows_b: np.ndarray,
    half_a: int,
    half_b: int,
    fit_draws: int,
) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    """The logistic regression fitted on the second half of the draws, as scores of the first half."""

    def scores() -> tuple[np.ndarray, np.ndarray]:
        fit_a = rows_a[half_a : half_a + min(rows_a.shape[0] - half_a, fit_draws)]
        fit_b = rows_b[half_b : half_b + min(rows_b.shape[0] - half_b, fit_draws)]
        weights = fit_logistic(features.transform(fit_a), features.transform(fit_b))
        return features.score(rows_a[:half_a], weights), features.score(rows_b[:half_b], weights)

    return scores


# --------------------------------------------------------------------------- screening
@dataclass
class _Screening:
    candidate: Candidate
    on_a: np.ndarray
    on_b: np.ndarray
    event: LearnedEvent | None = None
    forecast: float = -math.inf


def _rounds(candidates: int) -> int:
    return max(1, math.ceil(math.log2(candidates))) if candidates > 1 else 1


def successive_halving(
    mechanism: Mechanism,
    search: ClassifierSearch,
    candidates: list[Candidate],
    budget: int,
    evaluation: int,
    delta: float,
    confidence: float,
    rng: np.random.Generator,
    probe: np.ndarray | None = None,
) -> tuple[_Screening, list[dict[str, Any]]]:
    """Screen ``candidates`` with ``budget`` draws per input in all; the survivor and a log per round
    (the draws of a round by :func:`spawned_draws`, with ``probe`` one output of the mechanism)."""
    rounds = _rounds(len(candidates))
    alive = [_Screening(c, np.empty(0), np.empty(0)) for c in candidates]
    log = []
    for round_index in range(rounds):
        new = budget // (rounds * len(alive))
        if new < MIN_ROUND_DRAWS:
            least = math.ceil(MIN_ROUND_DRAWS * rounds * len(candidates) / search.screening_share)
            raise InvalidParameter(
                "samples",
                budget,
                f"at least {least} draws per input to screen {len(candidates)} candidate pairs "
                f"in {rounds} rounds of successive halving",
            )
        values = [value for entry in alive for value in (entry.candidate.a, entry.candidate.b)]
        fresh = spawned_draws(mechanism, values, new, rng, search.chunk, search.workers, probe)
        for position, entry in enumerate(alive):  # the draws first, in the order of the pairs
            fresh_a, fresh_b = fresh[2 * position], fresh[2 * position + 1]
            entry.on_a = fresh_a if entry.on_a.size == 0 else np.concatenate([entry.on_a, fresh_a])
            entry.on_b = fresh_b if entry.on_b.size == 0 else np.concatenate([entry.on_b, fresh_b])
        del fresh

        def learn(entry: _Screening) -> tuple[LearnedEvent, float]:
            return learn_event(
                entry.on_a,
                entry.on_b,
                evaluation,
                delta,
                confidence,
                fit_draws=search.fit_draws,
                binned=search.binned,
            )

        for entry, (event, forecast) in zip(alive, _map_forked(learn, alive, search.workers), strict=True):
            entry.event, entry.forecast = event, forecast
        ranked = sorted(alive, key=lambda e: -e.forecast)  # stable: ties keep the candidates' order
        log.append(
            {
                "round": round_index + 1,
                "pairs": len(alive),
                "draws_per_pair": int(ranked[0].on_a.shape[0]),
                "best": ranked[0].candidate.pattern,
                "best_forecast": ranked[0].forecast if math.isfinite(ranked[0].forecast) else None,
            }
        )
        alive = ranked[: max(1, math.ceil(len(alive) / 2))] if round_index + 1 < rounds else ranked[:1]
    return alive[0], log


def _map_forked(function: Callable[[Any], Any], items: list[Any], workers: int) -> list[Any]:
    """``[function(item) for item in items]``, computed by up to ``workers`` forked processes at a time.

    A forked child inherits ``function`` and ``items`` (nothing large is pickled on the way in) and
    sends back its result, or the exception it raised, through a pipe.  One process (the plain list)
    when ``workers`` is 1, there is one item, or the platform cannot fork."""
    if workers <= 1 or len(items) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [function(item) for item in items]
    context = multiprocessing.get_context("fork")
    results: list[Any] = [None] * len(items)
    pending = list(range(len(items)))
    running: list[tuple[int, Any, Any]] = []
    try:
        while pending or running:
            while pending and len(running) < workers:
                index = pending.pop(0)
                receiver, sender = context.Pipe(duplex=False)
                process = context.Process(target=_child, args=(function, items[index], sender), daemon=True)
                process.start()
                sender.close()
                running.append((index, process, receiver))
            index, process, receiver = running[0]
            try:
                payload = receiver.recv_bytes()
            except EOFError:
                payload = None
            process.join()
            receiver.close()
            running.pop(0)
            if payload is None:
                code = process.exitcode
                raise RuntimeError(f"a forked audit process ended without a result (exit code {code})")
            failed, value = pickle.loads(payload)
            if failed:
                raise value
            results[index] = value
    finally:  # after an error, the processes still running are stopped
        for _, process, receiver in running:
            process.terminate()
            process.join()
            receiver.close()
    return results


def _child(function: Callable[[Any], Any], item: Any, sender: Any) -> None:
    try:
        message: tuple[bool, Any] = (False, function(item))
    except BaseException as error:  # sent to the parent, which raises it
        message = (True, error)
    try:
        payload = pickle.dumps(message)
    except Exception as error:  # a result or error that cannot be pickled: its text
        text = f"{type(message[1]).__name__}: {message[1]}" if message[0] else repr(error)
        payload = pickle.dumps((True, RuntimeError(text)))
    sender.send_bytes(payload)
    sender.close()


def spawned_draws(
    mechanism: Mechanism,
    values: list[Any],
    samples: int,
    rng: np.random.Generator,
    chunk: int,
    workers: int = 1,
    probe: np.ndarray | None = None,
) -> list[np.ndarray]:
    """``samples`` outputs on each of ``values``, drawn in blocks of ``chunk``: every block of every
    value has its own generator (PCG64, seeded by one of the children that
    ``numpy.random.SeedSequence`` spawns from entropy drawn from ``rng``), in the order of the values
    and blocks.

    Up to ``workers`` forked processes draw consecutive runs of blocks side by side, into memory shared
    with this process; the outputs are the same for every ``workers``.  ``probe`` (outputs of the
    mechanism, from a generator of their own) gives the outputs' shape and type: without one, for
    outputs that are not numbers, or when a block's shape or type differs from the probe's, the blocks
    are drawn in this process, one after another (the same outputs)."""
    starts = range(0, samples, chunk)
    jobs = [(v, start, min(chunk, samples - start)) for v in range(len(values)) for start in starts]
    seeds = _child_seeds(rng, len(jobs))

    def block(index: int) -> np.ndarray:
        v, _, size = jobs[index]
        generator = np.random.Generator(np.random.PCG64(seeds[index]))
        return draw(mechanism, values[v], size, generator, batch_size=size)

    parts = max(1, min(workers, len(jobs)))
    if parts > 1 and probe is not None and probe.dtype.kind in "biufc":
        shape, dtype = probe.shape[1:], probe.dtype
        outputs = [_shared_array((samples, *shape), dtype) for _ in values]

        def fill(group: range) -> bool:
            for index in group:
                drawn = block(index)
                if drawn.shape[1:] != shape or drawn.dtype != dtype:
                    return False
                v, start, size = jobs[index]
                outputs[v][start : start + size] = drawn
            return True

        if all(_map_forked(fill, _consecutive_runs(len(jobs), parts), parts)):
            return outputs
        del outputs
    per_value = len(starts)
    blocks = [block(index) for index in range(len(jobs))]
    drawn = [blocks[v * per_value : (v + 1) * per_value] for v in range(len(values))]
    return [parts_of[0] if per_value == 1 else np.concatenate(parts_of) for parts_of in drawn]


def _child_seeds(rng: np.random.Generator, count: int) -> list[np.random.SeedSequence]:
    """``count`` children of a ``numpy.random.SeedSequence`` seeded by entropy drawn from ``rng``."""
    return np.random.SeedSequence([int(v) for v in rng.integers(0, 2**63, size=4)]).spawn(count)


def _consecutive_runs(count: int, parts: int) -> list[range]:
    """``range(count)`` cut into ``parts`` consecutive runs of nearly equal length."""
    return [range(g * count // parts, (g + 1) * count // parts) for g in range(parts)]


def _shared_array(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """A zeroed array in anonymous memory that forked processes share with this one (``mmap``)."""
    count = math.prod(shape)
    memory = mmap.mmap(-1, max(1, count * dtype.itemsize))
    return np.frombuffer(memory, dtype=dtype, count=count).reshape(shape)


# --------------------------------------------------------------------------- streamed evaluation
def streamed_counts(
    mechanism: Mechanism,
    candidate: Candidate,
    event: LearnedEvent,
    draws: int,
    chunk: int,
    rng: np.random.Generator,
    workers: int = 1,
) -> EvaluationCounts:
    """How many of ``draws`` fresh outputs on each input fall in the event, drawn ``chunk`` at a time.

    Every chunk has its own generator (PCG64, seeded by one of the children that
    ``numpy.random.SeedSequence`` spawns from entropy drawn from ``rng``): its outputs on a, its
    uniforms for the event's tie, then the same on b.  Up to ``workers`` forked processes count
    consecutive runs of chunks side by side; the counts are the same for every ``workers``."""
    sizes = [min(chunk, draws - start) for start in range(0, draws, chunk)]
    seeds = _child_seeds(rng, len(sizes))
    groups = _consecutive_runs(len(sizes), max(1, min(workers, len(sizes))))

    def count(group: range) -> tuple[int, int]:
        inside = [0, 0]
        for index in group:
            generator = np.random.Generator(np.random.PCG64(seeds[index]))
            size = sizes[index]
            for position, value in enumerate((candidate.a, candidate.b)):
                outputs = draw(mechanism, value, size, generator, batch_size=size)
                inside[position] += int(np.count_nonzero(event.contains(outputs, generator.random(size))))
        return inside[0], inside[1]

    counted = _map_forked(count, groups, workers)
    in_a, in_b = sum(c[0] for c in counted), sum(c[1] for c in counted)
    if event.numerator == "a":
        return EvaluationCounts("a", in_a, draws, in_b, draws)
    return EvaluationCounts("b", in_b, draws, in_a, draws)


def _split(search: ClassifierSearch, samples: int) -> tuple[int, int, int]:
    """Draws per input spent screening, learning the survivor's event, and evaluating it."""
    budget = int(search.screening_share * samples)
    learning = min(int(search.learning_share * samples), search.max_learning)
    return budget, learning, samples - budget - learning


def _held_bytes(search: ClassifierSearch, samples: int, width: int) -> float:
    """Bytes the search holds at its peak for ``samples`` draws per input of ``width`` values: the
    screening and learning draws of both inputs in :data:`HELD_COPIES` float64 copies, and each
    worker's evaluation chunk."""
    budget, learning, _ = _split(search, samples)
    return 2.0 * 8.0 * width * (HELD_COPIES * (budget + learning) + search.workers * search.chunk)


def check_classifier_fits(
    mechanism: Mechanism, search: ClassifierSearch, candidate: Candidate, samples: int
) -> np.ndarray:
    """Refuse ``samples`` whose screening and learning draws cannot fit in the memory available, before
    the audit's first draw; the message states the largest number that fits.  The outputs' width comes
    from one probe output, drawn with a generator of its own (the audit's draws are unchanged), which
    is returned."""
    probe = np.asarray(draw(mechanism, candidate.a, 1, np.random.default_rng(0)))
    width = int(np.prod(probe.shape[1:], dtype=np.int64)) if probe.ndim > 1 else 1
    refuse_unless_fits(
        samples,
        lambda count: _held_bytes(search, count, width),
        holding=f"outputs of {width} values; the classifier search holds its screening and learning draws: ",
    )
    return probe


def audit_with_classifier(
    mechanism: Mechanism,
    search: ClassifierSearch,
    claim: Guarantee,
    samples: int,
    rng: np.random.Generator,
    confidence: float,
) -> AuditReport:
    """Screen by successive halving, fix the survivor's learned event, evaluate it on fresh draws."""
    start = time.perf_counter()
    base = with_exposed_threshold(search.pairs_from, mechanism)
    candidates = base.candidates(rng)
    budget, learning, evaluation = _split(search, samples)
    if evaluation < 1:
        raise InvalidParameter("samples", samples, "enough draws to screen and then evaluate")
    probe = check_classifier_fits(mechanism, search, candidates[0], samples)
    survivor, log = successive_halving(
        mechanism, search, candidates, budget, evaluation, claim.delta, confidence, rng, probe
    )
    event = survivor.event
    if learning > 0:
        values = [survivor.candidate.a, survivor.candidate.b]
        fresh = spawned_draws(mechanism, values, learning, rng, search.chunk, search.workers, probe)
        on_a = np.concatenate([survivor.on_a, fresh[0]])
        survivor.on_a = np.empty((0, *on_a.shape[1:]), on_a.dtype)  # its draws live on in the copy alone
        on_b = np.concatenate([survivor.on_b, fresh[1]])
        survivor.on_b = np.empty((0, *on_b.shape[1:]), on_b.dtype)
        del fresh
        event, _ = learn_event(
            on_a,
            on_b,
            evaluation,
            claim.delta,
            confidence,
            fit_draws=search.fit_draws,
            binned=search.binned,
            logistic_draws=search.final_fit_draws,
            workers=search.workers,
        )
        del on_a, on_b
    assert event is not None  # every screened pair has its event
    screened = time.perf_counter()
    counts = streamed_counts(
        mechanism, survivor.candidate, event, evaluation, search.chunk, rng, search.workers
    )
    bound = bound_from_counts(counts, claim.delta, confidence).epsilon_lower_bound
    relation = base.neighbours
    summary = {
        "kind": search.kind,
        "candidates": len(candidates),
        "screening_draws_per_input": budget,
        "learning_draws_per_input": learning,
        "rounds": log,
        "final_draws_per_finalist": evaluation,
        "finalists": [survivor.candidate.to_dict()],
        "pair": survivor.candidate.to_dict(),
        "family_confidence": confidence,
        "screening_seconds": screened - start,
        "evaluation_seconds": time.perf_counter() - screened,
        "relation": None if relation is None else relation.to_dict(),
    }
    notes = [
        f"classifier search: {len(candidates)} candidate pairs screened by successive halving in "
        f"{len(log)} rounds ({budget} draws per input in all); the event learned on the pair "
        f"'{survivor.candidate.pattern}' (with {learning} more draws per input) was fixed, then "
        f"evaluated on {evaluation} fresh draws per input "
        f"(streamed in chunks of {search.chunk})",
        "two one-sided Clopper-Pearson bounds at alpha/2 each (union bound)",
    ]
    if relation is not None:
        notes.append(f"every pair screened and audited is a pair of neighbours under {relation.describe()}")
    message = few_draws_message(claim.delta, evaluation)
    if message is not None:
        notes.append(message)
    ceiling = epsilon_ceiling(evaluation, claim.delta, confidence)
    return AuditReport(
        verdict=verdict_for(bound, claim.epsilon),
        epsilon_lower_bound=bound,
        confidence=float(confidence),
        samples=evaluation,
        method=METHOD,
        claim=claim,
        counts=counts,
        rejection_set=RejectionSet("learned", event=event),
        epsilon_ceiling=ceiling,
        inputs=(plain_value(survivor.candidate.a), plain_value(survivor.candidate.b)),
        seconds=time.perf_counter() - start,
        notes=tuple(notes),
        search=summary,
        relation=relation,
    )
