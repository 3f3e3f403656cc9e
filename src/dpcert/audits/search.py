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
on the mechanism's ε.

Searches:

* :class:`VectorSearch` — query-answer vectors of length L in the ℓ∞ ball of radius D (counting-query
  neighbours): a = start, b = start + D·u with u ∈ {−1, 0, 1}^L (and the X shape, whose *a* moves too).
* :class:`ScalarSearch` — scalar inputs (c, c ± D) for c on a grid around a start.
* :class:`CandidatePairs` — the user's own list of pairs.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dpcert import _validation as check
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
        return {"input": _json(self.a), "neighbour": _json(self.b), "pattern": self.pattern}


def _as_key(value: Any) -> tuple:
    return tuple(np.atleast_1d(np.asarray(value, dtype=float)).tolist())


def _json(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclass(frozen=True)
class VectorSearch:
    """Pairs of query-answer vectors of length ``length`` differing by at most ``sensitivity`` per entry.

    Parameters
    ----------
    length
        L, the number of query answers the mechanism takes.
    sensitivity
        D, the largest change of one answer between neighbours (the ℓ∞ radius).
    start
        The first input of the patterns (default all zeros).
    random_pairs
        Extra candidates b = start + D·u with u uniform on {−1, 0, 1}^L \\ {0}.
    local_rounds, local_moves
        Local search: for ``local_rounds`` rounds, ``local_moves`` single-coordinate changes of the
        best pair's direction u are screened as well.
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

    kind = "vector"

    def __post_init__(self) -> None:
        length = check.positive_int("length", self.length)
        if length > MAX_SEARCH_LENGTH:
            raise InvalidParameter("length", length, f"an integer in [1, {MAX_SEARCH_LENGTH}]")
        object.__setattr__(self, "length", length)
        object.__setattr__(self, "sensitivity", check.positive_finite("sensitivity", self.sensitivity))
        if self.start is None:
            start = np.zeros(length)
        else:
            start = check.finite_array("start", self.start).astype(float).reshape(-1)
            if start.shape != (length,):
                raise InvalidParameter("start", f"length {start.shape[0]}", f"a vector of length {length}")
        object.__setattr__(self, "start", start)
        _validate_schedule(self)

    def patterns(self) -> list[Candidate]:
        """StatDP's patterns around ``start`` (Ding et al. 2018, §5.1)."""
        length, start, radius = self.length, self.start, self.sensitivity
        first = np.zeros(length)
        first[0] = 1.0
        rest = 1.0 - first
        half = np.where(np.arange(length) < length // 2, -1.0, 1.0)
        alternating = np.where(np.arange(length) % 2 == 0, 1.0, -1.0)
        ones = np.ones(length)
        directions = [
            ("one above", first),
            ("one below", -first),
            ("one above rest below", first - rest),
            ("one below rest above", rest - first),
            ("half-half", half),
            ("alternating", alternating),
            ("all above", ones),
            ("all below", -ones),
        ]
        candidates = [Candidate(start, start + radius * u, name) for name, u in directions]
        if length >= 2:  # X shape: [1, 1, 0, 0, 0] against [0, 0, 1, 1, 1] (both inputs move)
            split = np.arange(length) < (length + 1) // 2
            candidates.append(Candidate(start + radius * split, start + radius * ~split, "x-shape"))
        return candidates

    def candidates(self, rng: np.random.Generator) -> list[Candidate]:
        """The patterns and ``random_pairs`` random directions (duplicates removed)."""
        result = self.patterns()
        for index in range(self.random_pairs):
            direction = np.zeros(self.length)
            while not np.any(direction):
                direction = rng.integers(-1, 2, self.length).astype(float)
            result.append(Candidate(self.start, self.start + self.sensitivity * direction, f"random {index}"))
        return _unique(result)

    def moves(self, best: Candidate, rng: np.random.Generator) -> list[Candidate]:
        """Up to ``local_moves`` pairs that change one entry of the best pair's neighbour by ±D or to a."""
        a = np.asarray(best.a, float)
        b = np.asarray(best.b, float)
        options = []
        for index in range(self.length):
            for offset in (-1.0, 0.0, 1.0):
                value = a[index] + offset * self.sensitivity
                if value != b[index]:
                    options.append((index, value))
        chosen = rng.permutation(len(options))[: self.local_moves]
        result = []
        for option in chosen:
            index, value = options[int(option)]
            moved = b.copy()
            moved[index] = value
            if np.any(moved != a):
                result.append(Candidate(a, moved, f"{best.pattern} / entry {index} -> {value:g}"))
        return result


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

    kind = "scalar"
    local_rounds: ClassVar[int] = 0  # no local search on a scalar grid
    local_moves: ClassVar[int] = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", check.positive_finite("sensitivity", self.sensitivity))
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


@dataclass(frozen=True)
class CandidatePairs:
    """The user's own candidate pairs ``[(a1, b1), (a2, b2), ...]``, screened like a search's."""

    pairs: tuple = field(default=())
    screening_share: float = 0.2
    finalists: int = 1

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
        _validate_schedule(self)

    def candidates(self, rng: np.random.Generator) -> list[Candidate]:
        return [Candidate(a, b, f"pair {index}") for index, (a, b) in enumerate(self.pairs)]

    def moves(self, best: Candidate, rng: np.random.Generator) -> list[Candidate]:
        return []


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
