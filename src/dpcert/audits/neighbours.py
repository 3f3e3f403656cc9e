"""Neighbour relations of query-answer vectors and datasets, and the input pairs a search tries.

Whether a mechanism is ε-DP depends on which inputs count as neighbours.  A noisy histogram with
Laplace(1/ε) noise on every bin is ε-DP when neighbouring histograms differ in one bin by one, and only
(L·ε)-DP when every one of its L bins may move by one.  An audit therefore states the relation it
tests, and a search builds its candidate pairs inside it:

* ``linf`` — every answer moves by at most D (StatDP's ALL_DIFFER; counting queries each of
  sensitivity D).  Patterns: StatDP's one above / one below / one above rest below / one below rest
  above / half-half / all above / all below / X shape (Ding, Wang, Wang, Zhang & Kifer 2018,
  "Detecting violations of differential privacy", §5.1), plus alternating signs.
* ``one-differ`` — one answer moves by at most D, the others stay (StatDP's ONE_DIFFER, DP-Sniper's
  single-entry neighbourhood, Bichsel, Steffen, Bogunovic & Vechev 2021, "DP-Sniper: black-box
  discovery of differential privacy violations using classifiers", §6): histograms, partial sums.
  Patterns: one above, one below (the first entry, as StatDP and DP-Sniper), and the same on the last
  entry.
* ``l1`` — the answers move by at most D in ℓ1 norm (a histogram under replacement of one record
  with D = 2).  Patterns: those of one-differ, one above one below (±D/2 on two entries) and the
  budget spread over every entry (all above, all below, half-half at D/L each).
* ``add-remove`` — the inputs are datasets (1-D arrays of records) and one record of absolute value
  at most D is added or removed.  Patterns: remove the first or the last record, add a record D, −D
  or 0 at the end.

:class:`Relation` checks a pair given by the user (``violation`` / ``check_pair``) so that a pair
outside the stated relation is refused before any draw is made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert.errors import InvalidParameter

RELATIONS = ("linf", "one-differ", "l1", "add-remove")
_ROUNDING = 8.0 * float(np.finfo(float).eps)  # relative slack for shifts made in floating point

Pattern = tuple[str, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Relation:
    """A neighbour relation ``name`` (one of :data:`RELATIONS`) of radius ``sensitivity`` (D)."""

    name: str = "linf"
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        if self.name not in RELATIONS:
            raise InvalidParameter("relation", self.name, " | ".join(RELATIONS))
        object.__setattr__(self, "sensitivity", check.positive_finite("sensitivity", self.sensitivity))

    def describe(self) -> str:
        """One phrase saying which inputs are neighbours."""
        radius = f"{self.sensitivity:g}"
        return {
            "linf": f"linf: every answer moves by at most {radius}",
            "one-differ": f"one-differ: one answer moves by at most {radius}, the others stay",
            "l1": f"l1: the answers move by at most {radius} in all (l1 norm)",
            "add-remove": f"add-remove: one record of absolute value at most {radius} added or removed",
        }[self.name]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "sensitivity": self.sensitivity}

    @classmethod
    def from_dict(cls, data: Any) -> Relation | None:
        if data is None:
            return None
        return cls(str(data["name"]), float(data["sensitivity"]))

    # ----------------------------------------------------------------------- membership
    def violation(self, a: Any, b: Any) -> str | None:
        """Why ``a`` and ``b`` are not neighbours under this relation, or None if they are."""
        try:
            first = np.asarray(a, dtype=float)
            second = np.asarray(b, dtype=float)
        except (TypeError, ValueError):
            return "the inputs are not numbers or arrays of numbers"
        if not (np.all(np.isfinite(first)) and np.all(np.isfinite(second))):
            return "the inputs hold a value that is not finite"
        if self.name == "add-remove":
            return self._dataset_violation(first, second)
        if first.shape != second.shape:
            return f"shapes {first.shape} and {second.shape} differ ({self.name} keeps the shape)"
        change = np.abs(second - first).reshape(-1)
        slack = _ROUNDING * np.maximum(
            np.maximum(np.abs(first), np.abs(second)).reshape(-1), self.sensitivity
        )
        radius = self.sensitivity
        if self.name == "linf":
            over = change > radius + slack
            if np.any(over):
                index = int(np.argmax(over))
                return f"entry {index} moves by {change[index]:g} > {radius:g}"
            return None
        if self.name == "one-differ":
            moved = np.flatnonzero(change > 0)
            if moved.size > 1:
                shown = ", ".join(str(i) for i in moved[:4]) + (", ..." if moved.size > 4 else "")
                return f"{moved.size} entries differ (entries {shown}), one-differ allows one"
            if moved.size == 1 and change[moved[0]] > radius + slack[moved[0]]:
                return f"entry {int(moved[0])} moves by {change[moved[0]]:g} > {radius:g}"
            return None
        total = float(np.sum(change))
        if total > radius + float(np.sum(slack)):
            return f"the l1 distance is {total:g} > {radius:g}"
        return None

    def _dataset_violation(self, first: np.ndarray, second: np.ndarray) -> str | None:
        if first.ndim != 1 or second.ndim != 1:
            return "add-remove compares datasets given as flat lists of records"
        longer, shorter = (first, second) if first.shape[0] > second.shape[0] else (second, first)
        if longer.shape[0] != shorter.shape[0] + 1:
            sizes = f"{first.shape[0]} and {second.shape[0]}"
            return f"the datasets hold {sizes} records (one more or fewer allowed)"
        longer, shorter = np.sort(longer), np.sort(shorter)
        differ = np.flatnonzero(longer[:-1] != shorter)
        index = int(differ[0]) if differ.size else shorter.shape[0]  # the first record of one only
        if not np.array_equal(longer[index + 1 :], shorter[index:]):
            return "the datasets differ in more than one record"
        extra = float(longer[index])
        if abs(extra) > self.sensitivity * (1.0 + _ROUNDING):
            return f"the added or removed record {extra:g} exceeds {self.sensitivity:g} in absolute value"
        return None

    def check_pair(self, name: str, a: Any, b: Any) -> None:
        """Raise :class:`InvalidParameter` naming ``name`` if ``a`` and ``b`` are not neighbours."""
        reason = self.violation(a, b)
        if reason is not None:
            raise InvalidParameter(
                name, [plain_value(a), plain_value(b)], f"neighbours under {self.describe()}", reason
            )

    # ----------------------------------------------------------------------- patterns
    def patterns(self, start: np.ndarray) -> list[Pattern]:
        """The pairs of StatDP / DP-Sniper for this relation around ``start`` (a 1-D vector)."""
        length, radius = start.shape[0], self.sensitivity
        if self.name == "add-remove":
            return _dataset_patterns(start, radius)
        first = _unit(length, 0)
        last = _unit(length, length - 1)
        single = [("one above", first), ("one below", -first)]
        if length >= 2:
            single += [("last above", last), ("last below", -last)]
        if self.name == "one-differ":
            return [(name, start, start + radius * u) for name, u in single]
        if self.name == "l1":
            spread = [("one above one below", (first - _unit(length, 1)) / 2.0)] if length >= 2 else []
            half = np.where(np.arange(length) < length // 2, -1.0, 1.0)
            spread += [
                ("spread above", np.ones(length) / length),
                ("spread below", -np.ones(length) / length),
                ("spread half-half", half / length),
            ]
            return [(name, start, start + radius * u) for name, u in single + spread]
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
        result = [(name, start, start + radius * u) for name, u in directions]
        if length >= 2:  # X shape: [1, 1, 0, 0, 0] against [0, 0, 1, 1, 1] (both inputs move)
            split = np.arange(length) < (length + 1) // 2
            result.append(("x-shape", start + radius * split, start + radius * ~split))
        return result

    def random_pair(self, start: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """One random neighbour pair starting at ``start``."""
        length, radius = start.shape[0], self.sensitivity
        if self.name == "add-remove":
            if length >= 1 and rng.random() < 0.5:
                return start, np.delete(start, int(rng.integers(length)))
            return start, np.append(start, radius * float(rng.integers(-1, 2)))
        if self.name == "one-differ":
            return start, start + radius * float(rng.choice((-1.0, 1.0))) * _unit(
                length, int(rng.integers(length))
            )
        direction = np.zeros(length)
        while not np.any(direction):
            direction = rng.integers(-1, 2, length).astype(float)
        if self.name == "l1":
            direction = direction / float(np.sum(np.abs(direction)))
        return start, start + radius * direction

    def moves(self, a: np.ndarray, b: np.ndarray) -> list[tuple[str, np.ndarray]]:
        """Neighbours of ``a`` one entry away from ``b`` (linf: ``b`` with one entry changed; one-differ
        and l1: ``a`` with one entry moved by ±D), each with a label."""
        if self.name == "add-remove" or a.shape != b.shape or a.ndim != 1:
            return []
        radius = self.sensitivity
        options = []
        for index in range(a.shape[0]):
            for offset in (-1.0, 0.0, 1.0):
                moved = (b if self.name == "linf" else a).copy()
                moved[index] = a[index] + offset * radius
                if np.array_equal(moved, b) or not np.any(moved != a) or self.violation(a, moved):
                    continue
                options.append((f"entry {index} -> {moved[index]:g}", moved))
        return options


def relation_from(value: Any, sensitivity: float = 1.0) -> Relation:
    """A :class:`Relation` from its name (with ``sensitivity``) or itself."""
    if isinstance(value, Relation):
        return value
    if not isinstance(value, str):
        raise InvalidParameter("relation", value, " | ".join(RELATIONS))
    return Relation(value, sensitivity)


def _unit(length: int, index: int) -> np.ndarray:
    vector = np.zeros(length)
    vector[index] = 1.0
    return vector


def _dataset_patterns(start: np.ndarray, radius: float) -> list[Pattern]:
    result: list[Pattern] = []
    if start.shape[0] >= 1:
        result.append(("remove first", start, start[1:]))
        if start.shape[0] >= 2:
            result.append(("remove last", start, start[:-1]))
    for name, record in (("add above", radius), ("add below", -radius), ("add zero", 0.0)):
        result.append((name, start, np.append(start, record)))
    return result


def plain_value(value: Any) -> Any:
    """A numpy array or scalar as plain Python values (lists, floats, ints) for reports and JSON."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value
