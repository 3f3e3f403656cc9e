"""Neighbour search: find the pair of inputs on which a mechanism leaks most, then audit that pair.

A user rarely knows which pair of neighbouring inputs exposes a bug.  Following StatDP (Ding, Wang,
Wang, Zhang & Kifer 2018, "Detecting violations of differential privacy", CCS, §5.1: the query-answer
patterns *one above*, *one below*, *one above rest below*, *one below rest above*, *half-half*, *all
above / all below* and *X shape*), a search proposes candidate pairs, screens each with a small
share of the draws, refines the best by a small local search, and spends the rest of the budget on
the best pair.

Validity: screening only *chooses* the pair.  The reported bound comes from fresh draws on the chosen
pair (split into selection and evaluation parts as in every audit), so it is a (1 − α) lower
confidence bound on that pair's ε; with ``finalists = m > 1`` pairs evaluated, each is evaluated at
level α/m and the largest bound reported (Bonferroni).  A bound on one pair of neighbours is a bound
on the mechanism's ε *under the relation the pairs belong to*: every search states its neighbour
relation (:mod:`dpcert.audits.neighbours`), and the report names it.

Searches:

* :class:`VectorSearch` — query-answer vectors of length L (or datasets of L records), neighbours
  under ``relation`` of radius D: ``linf`` (default: a = start, b = start + D·u with
  u ∈ {−1, 0, 1}^L, and the X shape, whose *a* moves too), ``one-differ``, ``l1`` or ``add-remove``,
  around one or more starts.
* :class:`ScalarSearch` — scalar inputs (c, c ± D) for c on a grid around a start.
* :class:`CandidatePairs` — the user's own list of pairs, checked against a stated relation.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from dpcert import _validation as check
from dpcert.audits.neighbours import Relation, plain_value
from dpcert.audits.sampling import DEFAULT_BATCH_SIZE, Mechanism, draw_pair
from dpcert.audits.selection import DEFAULT_MAX_CELLS, select_rejection_set
from dpcert.errors import InvalidParameter

MAX_SEARCH_LENGTH = 10_000  # longest query-answer vector a search builds (memory of the patterns)


@dataclass(frozen=True)
class Candidate:
    """One pair of neighbouring inputs and the name of the pattern that produced it."""

    a: Any
    b: Any
    pattern: str

    def key(self) -> tuple:
        return (_as_key(self.a), _as_key(self.b))

    def to_dict(self) -> dict[str, Any]:
        return {"input": plain_value(self.a), "neighbour": plain_value(self.b), "pattern": self.pattern}


def _as_key(value: Any) -> tuple:
    return tuple(np.atleast_1d(np.asarray(value, dtype=float)).tolist())


@dataclass(frozen=True)
class VectorSearch:
    """Pairs of query-answer vectors (or datasets) of length ``length``, neighbours under ``relation``.

    Parameters
    ----------
    length
        L, the number of query answers the mechanism takes (with ``relation="add-remove"``: the number
        of records of the starting dataset).
    sensitivity
        D, the radius of the relation: the largest change of one answer (``linf``, ``one-differ``), of
        all answers together (``l1``), or the largest absolute value of a record (``add-remove``).
    relation
        ``"linf"`` (default), ``"one-differ"``, ``"l1"`` or ``"add-remove"``
        (:mod:`dpcert.audits.neighbours`): the candidates are the StatDP / DP-Sniper patterns of that
        relation, and every pair screened or audited is a pair of neighbours under it.
    start
        The first input of the patterns (default all zeros).
    starts
        More starting points: each a number c (the vector of all c) or a vector of length L; the
        patterns are built around every start (e.g. around the threshold of a sparse vector).
    around_threshold
        Add the starts T − D, T and T + D for the threshold T the mechanism exposes as
        ``mechanism.threshold`` (read when the audit runs).
    random_pairs
        Extra random neighbour pairs from the start (under the relation).
    local_rounds, local_moves
        Local search: for ``local_rounds`` rounds, ``local_moves`` single-entry changes of the best
        pair (staying inside the relation) are screened as well.
    screening_share
        Share of the draws spent screening (the rest goes to the finalists).
    finalists
        Number of best pairs evaluated on fresh draws (each at level α/finalists).
    """

    length: int
    sensitivity: float = 1.0
    start: Any = None
    random_pairs: int = 8
    local_rounds: int = 2
    local_moves: int = 6
    screening_share: float = 0.2
    finalists: int = 1
    relation: str = "linf"
    starts: tuple = ()
    around_threshold: bool = False

    kind = "vector"

    def __post_init__(self) -> None:
        length = check.positive_int("length", self.length)
        if length > MAX_SEARCH_LENGTH:
            raise InvalidParameter("length", length, f"an integer in [1, {MAX_SEARCH_LENGTH}]")
        object.__setattr__(self, "length", length)
        object.__setattr__(self, "sensitivity", check.positive_finite("sensitivity", self.sensitivity))
        object.__setattr__(self, "relation", Relation(self.relation, self.sensitivity).name)
        object.__setattr__(self, "start", self._start_vector("start", self.start, length))
        try:
            starts = tuple(self.starts)
        except TypeError:
            raise InvalidParameter("starts", self.starts, "a list of numbers or vectors") from None
        extra = tuple(self._start_vector(f"starts[{i}]", value, length) for i, value in enumerate(starts))
        object.__setattr__(self, "starts", extra)
        if self.relation == "add-remove":  # a dataset's records lie in [-D, D]
            for name, value in (("start", self.start),) + tuple(
                (f"starts[{i}]", v) for i, v in enumerate(extra)
            ):
                if np.any(np.abs(value) > self.sensitivity):
                    raise InvalidParameter(
                        name,
                        value.tolist(),
                        f"records of absolute value at most {self.sensitivity:g} (relation add-remove)",
                    )
        if not isinstance(self.around_threshold, bool):
            raise InvalidParameter("around_threshold", self.around_threshold, "True or False")
        _validate_schedule(self)

    @staticmethod
    def _start_vector(name: str, value: Any, length: int) -> np.ndarray:
        if value is None:
            return np.zeros(length)
        array = check.finite_array(name, value).astype(float)
        if array.ndim == 0:
            return np.full(length, float(array))
        array = array.reshape(-1)
        if array.shape != (length,):
            raise InvalidParameter(
                name, f"length {array.shape[0]}", f"a number or a vector of length {length}"
            )
        return array

    @property
    def neighbours(self) -> Relation:
        """The relation every candidate pair belongs to."""
        return Relation(self.relation, self.sensitivity)

    def patterns(self) -> list[Candidate]:
        """The StatDP / DP-Sniper patterns of the relation around each start."""
        relation = self.neighbours
        result = []
        for index, start in enumerate((self.start, *self.starts)):
            suffix = "" if index == 0 else f" from {_start_name(start)}"
            result += [Candidate(a, b, name + suffix) for name, a, b in relation.patterns(start)]
        return result

    def candidates(self, rng: np.random.Generator) -> list[Candidate]:
        """The patterns and ``random_pairs`` random neighbour pairs (duplicates removed)."""
        result = self.patterns()
        relation = self.neighbours
        for index in range(self.random_pairs):
            a, b = relation.random_pair(self.start, rng)
            result.append(Candidate(a, b, f"random {index}"))
        return _unique(result)

    def moves(self, best: Candidate, rng: np.random.Generator) -> list[Candidate]:
        """Up to ``local_moves`` single-entry changes of the best pair that stay neighbours."""
        a = np.asarray(best.a, float)
        b = np.asarray(best.b, float)
        options = self.neighbours.moves(a, b)
        chosen = rng.permutation(len(options))[: self.local_moves]
        return [Candidate(a, options[int(i)][1], f"{best.pattern} / {options[int(i)][0]}") for i in chosen]

    def around(self, threshold: Any) -> VectorSearch:
        """This search with the starts T − D, T and T + D added for the threshold T."""
        value = check.finite_array("threshold", threshold)
        if value.ndim != 0:
            raise InvalidParameter("threshold", threshold, "a finite number (mechanism.threshold)")
        centre = float(value)
        extra = tuple(centre + offset * self.sensitivity for offset in (-1.0, 0.0, 1.0))
        return replace(self, starts=tuple(self.starts) + extra, around_threshold=False)


def _start_name(start: np.ndarray) -> str:
    if start.size and np.all(start == start[0]):
        return f"all {start[0]:g}"
    return "[" + ", ".join(f"{v:g}" for v in start[:4]) + (", ...]" if start.size > 4 else "]")


def with_exposed_threshold(search: Search, mechanism: Any) -> Search:
    """``search`` with starts around ``mechanism.threshold`` when it asks for them (``around_threshold``)."""
    if not isinstance(search, VectorSearch) or not search.around_threshold:
        return search
    threshold = getattr(mechanism, "threshold", None)
    if threshold is None:
        raise InvalidParameter(
            "around_threshold", True, "a mechanism exposing its threshold as mechanism.threshold"
        )
    return search.around(threshold)


@dataclass(frozen=True)
class ScalarSearch:
    """Scalar inputs ``(c, c + D)`` and ``(c, c − D)`` for ``points`` centres c spread over ``start ± span``.

    ``span`` defaults to ten times the sensitivity; the centres are ``start`` and points spaced
    geometrically towards both ends (bugs such as clipping show only away from the start).
    """

    sensitivity: float = 1.0
    start: float = 0.0
    span: float | None = None
    points: int = 7
    screening_share: float = 0.2
    finalists: int = 1
    relation: str = "linf"

    kind = "scalar"
    local_rounds: ClassVar[int] = 0  # no local search on a scalar grid
    local_moves: ClassVar[int] = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", check.positive_finite("sensitivity", self.sensitivity))
        relation = Relation(self.relation, self.sensitivity).name
        if relation == "add-remove":  # on one number linf, one-differ and l1 coincide: |a - b| <= D
            raise InvalidParameter("relation", relation, "linf, one-differ or l1 for scalar inputs")
        object.__setattr__(self, "relation", relation)
        start = check.finite_array("start", self.start)
        if start.shape != ():
            raise InvalidParameter("start", self.start, "a finite number")
        object.__setattr__(self, "start", float(start))
        span = 10.0 * self.sensitivity if self.span is None else check.positive_finite("span", self.span)
        object.__setattr__(self, "span", span)
        object.__setattr__(self, "points", check.positive_int("points", self.points))
        _validate_schedule(self)

    def candidates(self, rng: np.random.Generator) -> list[Candidate]:
        side = (self.points - 1) // 2
        span = self.span
        assert span is not None  # set from the sensitivity on construction
        offsets = [0.0]
        if side:
            steps = np.geomspace(span / 10.0 ** (side - 1) if side > 1 else span, span, side)
            offsets += [float(s) for s in steps] + [-float(s) for s in steps]
        result = []
        for offset in offsets:
            centre = self.start + offset
            result.append(Candidate(centre, centre + self.sensitivity, f"{centre:g} up"))
            result.append(Candidate(centre, centre - self.sensitivity, f"{centre:g} down"))
        return _unique(result)

    def moves(self, best: Candidate, rng: np.random.Generator) -> list[Candidate]:
        return []

    @property
    def neighbours(self) -> Relation:
        return Relation(self.relation, self.sensitivity)


@dataclass(frozen=True)
class CandidatePairs:
    """The user's own candidate pairs ``[(a1, b1), (a2, b2), ...]``, screened like a search's.

    With ``relation`` (and its radius ``sensitivity``), a pair that is not a pair of neighbours under
    it is refused (:class:`InvalidParameter` naming ``pairs[i]``) before any draw is made; without it
    the pairs are taken as given, unchecked.
    """

    pairs: tuple = field(default=())
    screening_share: float = 0.2
    finalists: int = 1
    relation: str | None = None
    sensitivity: float = 1.0

    kind = "pairs"
    local_rounds: ClassVar[int] = 0  # the user's list is screened as given
    local_moves: ClassVar[int] = 0

    def __post_init__(self) -> None:
        try:
            pairs = tuple((a, b) for a, b in self.pairs)
        except (TypeError, ValueError):
            raise InvalidParameter("pairs", self.pairs, "a list of (input, neighbour) pairs") from None
        if not pairs:
            raise InvalidParameter("pairs", "[]", "at least one (input, neighbour) pair")
        object.__setattr__(self, "pairs", pairs)
        object.__setattr__(self, "sensitivity", check.positive_finite("sensitivity", self.sensitivity))
        if self.relation is not None:
            relation = Relation(self.relation, self.sensitivity)
            object.__setattr__(self, "relation", relation.name)
            for index, (a, b) in enumerate(pairs):
                relation.check_pair(f"pairs[{index}]", a, b)
        _validate_schedule(self)

    def candidates(self, rng: np.random.Generator) -> list[Candidate]:
        return [Candidate(a, b, f"pair {index}") for index, (a, b) in enumerate(self.pairs)]

    def moves(self, best: Candidate, rng: np.random.Generator) -> list[Candidate]:
        return []

    @property
    def neighbours(self) -> Relation | None:
        """The stated relation, or None when the pairs are taken as given."""
        return None if self.relation is None else Relation(self.relation, self.sensitivity)


Search = VectorSearch | ScalarSearch | CandidatePairs


def _validate_schedule(search: Any) -> None:
    share = check.probability("screening_share", search.screening_share, open_low=True, open_high=True)
    object.__setattr__(search, "screening_share", share)
    object.__setattr__(search, "finalists", check.positive_int("finalists", search.finalists))
    for name in ("random_pairs", "local_rounds", "local_moves"):
        if name in getattr(search, "__dataclass_fields__", {}):
            object.__setattr__(search, name, check.positive_int(name, getattr(search, name), minimum=0))


def _unique(candidates: list[Candidate]) -> list[Candidate]:
    seen, result = set(), []
    for candidate in candidates:
        if candidate.key() not in seen:
            seen.add(candidate.key())
            result.append(candidate)
    return result


# --------------------------------------------------------------------------- screening
@dataclass(frozen=True)
class Screened:
    """A screened candidate and its forecast bound (the selection score at the final sample size)."""

    candidate: Candidate
    forecast: float

    def to_dict(self) -> dict[str, Any]:
        forecast = self.forecast if math.isfinite(self.forecast) else None
        return self.candidate.to_dict() | {"forecast": forecast}


@dataclass(frozen=True)
class SearchOutcome:
    """Which candidates were screened, with how many draws, and the finalists (best first)."""

    kind: str
    screened: tuple[Screened, ...]
    screening_draws: int
    finalists: tuple[Candidate, ...]
    final_draws: int
    seconds: float

    def to_dict(self, shown: int = 5) -> dict[str, Any]:
        ranked = sorted(self.screened, key=lambda s: -s.forecast)
        return {
            "kind": self.kind,
            "candidates": len(self.screened),
            "screening_draws_per_candidate": self.screening_draws,
            "final_draws_per_finalist": self.final_draws,
            "finalists": [c.to_dict() for c in self.finalists],
            "best_screened": [s.to_dict() for s in ranked[:shown]],
            "seconds": self.seconds,
        }


def planned_candidates(search: Search) -> int:
    """How many candidates a search screens (initial list plus local moves), for the draw budget."""
    initial = len(search.candidates(np.random.default_rng(0)))
    return initial + search.local_rounds * search.local_moves


def _forecast(
    mechanism: Mechanism,
    candidate: Candidate,
    draws: int,
    final_evaluation: int,
    delta: float,
    confidence: float,
    rng: np.random.Generator,
    *,
    score: Any,
    max_cells: int,
    batch_size: int,
) -> Screened:
    pair = draw_pair(mechanism, candidate.a, candidate.b, draws, rng, batch_size=batch_size)
    selection = select_rejection_set(
        pair.on_a,
        pair.on_b,
        (final_evaluation, final_evaluation),
        delta,
        confidence,
        score=score,
        max_cells=max_cells,
    )
    return Screened(candidate, selection.projected)


def screen(
    mechanism: Mechanism,
    search: Search,
    samples: int,
    delta: float,
    confidence: float,
    rng: np.random.Generator,
    *,
    final_evaluation: int,
    score: Any = None,
    max_cells: int = DEFAULT_MAX_CELLS,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> SearchOutcome:
    """Screen the search's candidates with ``screening_share · samples`` draws per input in all.

    Each candidate gets the same number of draws; its forecast is the cautious selection score of the
    best rejection set for the final evaluation size ``final_evaluation`` (never reported as a bound).
    """
    start = time.perf_counter()
    planned = planned_candidates(search)
    per_candidate = int(search.screening_share * samples) // planned
    if per_candidate < 20:
        raise InvalidParameter(
            "samples",
            samples,
            f"at least {math.ceil(20 * planned / search.screening_share)} draws per input to screen "
            f"{planned} candidate pairs with 20 draws each",
        )
    options = {"score": score, "max_cells": max_cells, "batch_size": batch_size}
    screened = [
        _forecast(mechanism, c, per_candidate, final_evaluation, delta, confidence, rng, **options)
        for c in search.candidates(rng)
    ]
    seen = {s.candidate.key() for s in screened}
    for _ in range(search.local_rounds):
        best = max(screened, key=lambda s: s.forecast).candidate
        for move in search.moves(best, rng):
            if move.key() in seen:
                continue
            seen.add(move.key())
            screened.append(
                _forecast(mechanism, move, per_candidate, final_evaluation, delta, confidence, rng, **options)
            )
    ranked = sorted(screened, key=lambda s: -s.forecast)
    finalists = tuple(s.candidate for s in ranked[: search.finalists])
    return SearchOutcome(
        kind=search.kind,
        screened=tuple(screened),
        screening_draws=per_candidate,
        finalists=finalists,
        final_draws=0,
        seconds=time.perf_counter() - start,
    )
