"""The privacy of one run: user ids, charges before every release, each user's composed guarantee.

A :class:`PrivacySession` is the only path by which a run releases user data:

* it hands out user ids namespaced by run (``"<namespace>/<i>"``), unique across runs that share a
  durable :class:`~dpcert.ledger.api.Ledger`;
* :meth:`PrivacySession.release` charges the ledger *before* the noise of a release is drawn, so a
  refused charge (:class:`~dpcert.errors.BudgetExceeded`) stops the release;
* every charge is one event-level certificate (replace-one or add/remove) per participation; a user's
  guarantee over the run is the adaptive composition of her charges
  (:func:`dpcert.accounting.composition.compose_counts`), never a stored second relation, so any mix
  of runs in one ledger stays composable;
* :meth:`PrivacySession.worst_user_certificate` is the run's certificate: the worst user's composition.

A run's target (ε, δ) is the per-user total over all of a user's participations;
:func:`meets_target` compares a certificate with it through the profile, δ(target ε) <= target δ
(never through a re-inverted ε, whose float error can exceed the target by an ulp).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, cast

import numpy as np

from dpcert import _validation as check
from dpcert.accounting.composition import certificate_key, compose_counts
from dpcert.certificates import Certificate, Guarantee, Neighbouring
from dpcert.errors import InvalidParameter, LedgerStorageError

T = TypeVar("T")
EVENT_LEVEL = (Neighbouring.REPLACE_ONE, Neighbouring.ADD_REMOVE)


class ChargeSink(Protocol):
    """What a session needs of a durable ledger (:class:`~dpcert.ledger.api.Ledger`)."""

    def charge(self, user_ids: Any, certificate: Certificate, run_id: str | None = None) -> Any: ...


class KeyedChargeSink(Protocol):
    """A ledger that takes idempotency keys (:meth:`~dpcert.ledger.api.Ledger.charge`): a session with
    ``keys`` needs one."""

    def charge(
        self,
        user_ids: Any,
        certificate: Certificate,
        run_id: str | None = None,
        *,
        idempotency_key: str | None,
    ) -> Any: ...


def meets_target(certificate: Certificate | None, target: Guarantee | None) -> bool:
    """Whether ``certificate`` covers ``target``: δ(target ε) <= target δ on its profile.

    ``None`` (no release, or no target) meets trivially.
    """
    if certificate is None or target is None:
        return True
    return bool(certificate.delta_for(target.epsilon) <= target.delta)


def new_namespace(*parts: object) -> str:
    """A run namespace ``part/part/…/token`` with a random token: unique across runs sharing a ledger."""
    return "/".join([*(str(p) for p in parts), uuid.uuid4().hex[:12]])


class PrivacySession:
    """Charges, user ids and the worst user's guarantee of one run (one repetition).

    Parameters
    ----------
    namespace
        Prefix of every user id this session forwards to the ledger (see :func:`new_namespace`).
    ledger
        Optional durable ledger, charged before each release with ids ``"<namespace>/<i>"``.
    run_id
        Label of this run's charges in the ledger (default: the namespace).
    keys
        Prefix of idempotency keys: the ledger charge at index i of this session is keyed
        ``"<keys>/<i>"``, so a run repeated after an interruption (the same releases in the same order)
        replays its committed charges instead of recording them twice.  ``None``: no keys.

    Notes
    -----
    Local user ids are non-negative integers chosen by the engine (arrival order, or a returning
    user's index); each release charges each of its users at most once.
    """

    def __init__(
        self,
        namespace: str,
        ledger: ChargeSink | None = None,
        run_id: str | None = None,
        *,
        keys: str | None = None,
    ) -> None:
        if not isinstance(namespace, str) or not namespace:
            raise InvalidParameter("namespace", namespace, "a non-empty string")
        if keys is not None and (not isinstance(keys, str) or not keys):
            raise InvalidParameter("keys", keys, "a non-empty string or None")
        self.namespace = namespace
        self.ledger = ledger
        self.run_id = namespace if run_id is None else run_id
        self.keys = keys
        # each charge's users as runs of consecutive ids [start, stop) (arrays, or two ints for one run):
        # batches of arrivals stay small
        self.intervals: list[tuple[Any, Any]] = []
        self.certificates: list[Certificate] = []
        self.interval: float | None = None  # PLD discretisation for compositions (None: the default)
        self._once: bool | None = None  # cached: no user charged twice
        self._worst: dict[tuple[float, float | None], Certificate | None] = {}  # cached, by (δ, interval)

    # ----------------------------------------------------------------- ids
    def user_ids(self, local_ids: Any) -> list[str]:
        """The ledger ids of local user ids: ``"<namespace>/<i>"``."""
        prefix = self.namespace + "/"
        return [prefix + str(i) for i in np.asarray(local_ids, dtype=np.int64).ravel().tolist()]

    # ----------------------------------------------------------------- charging
    def _to_ledger(self, ids: list[str], certificate: Certificate, run_id: str) -> None:
        """Charge the ledger; a storage failure also says what this session had recorded before it."""
        assert self.ledger is not None
        try:
            if self.keys is None:
                self.ledger.charge(ids, certificate, run_id=run_id)
            else:  # the charge's index in this session: the same release of a repeated run, the same key
                key = f"{self.keys}/{len(self.certificates)}"
                cast(KeyedChargeSink, self.ledger).charge(
                    ids, certificate, run_id=run_id, idempotency_key=key
                )
        except LedgerStorageError as exc:
            raise type(exc)(
                f"{exc}; the {len(self.certificates)} earlier charge(s) of this session (run id "
                f"{run_id}) stay recorded"
            ) from exc

    @staticmethod
    def _check(certificate: Any) -> None:
        if not isinstance(certificate, Certificate):
            raise InvalidParameter("certificate", type(certificate).__name__, "a dpcert Certificate")
        if certificate.neighbouring not in EVENT_LEVEL:
            raise InvalidParameter(
                "certificate",
                certificate.neighbouring.value,
                "an event-level certificate (replace-one or add-remove): one charge per participation",
            )

    def charge(self, user_ids: Any, certificate: Certificate, run_id: str | None = None) -> None:
        """Charge one participation of each user (local ids) in ``certificate``; ledger first.

        Raises :class:`~dpcert.errors.BudgetExceeded` (nothing recorded) when the ledger refuses.
        """
        self._check(certificate)
        ids = np.asarray(user_ids, dtype=np.int64).ravel()
        if ids.size == 0:
            return
        step = ids[1:] - ids[:-1]
        if (step <= 0).any():  # not strictly increasing: sort (arrival batches already are)
            ids = np.sort(ids)
            step = ids[1:] - ids[:-1]
            if (step == 0).any():
                raise InvalidParameter("user_ids", "<ids with repeats>", "each user at most once per charge")
        if ids[0] < 0:
            raise InvalidParameter("user_ids", int(ids[0]), "non-negative local user ids")
        breaks = np.flatnonzero(step != 1) + 1
        starts = ids[np.concatenate(([0], breaks))]
        stops = ids[np.concatenate((breaks - 1, [ids.size - 1]))] + 1
        if self.ledger is not None:
            self._to_ledger(self.user_ids(ids), certificate, run_id or self.run_id)
        self.intervals.append((starts, stops))
        self.certificates.append(certificate)
        self._forget()

    def charge_ranges(self, starts: Any, length: int, certificate: Certificate) -> None:
        """Charge users ``starts[i] .. starts[i] + length − 1`` for every i (increasing, disjoint ranges):
        :meth:`charge` for batches of consecutive arrivals, without materialising their ids."""
        self._check(certificate)
        starts = np.asarray(starts, dtype=np.int64).ravel()
        length = check.positive_int("length", length)
        if starts.size == 0:
            return
        if starts[0] < 0 or ((starts[1:] - starts[:-1]) < length).any():
            raise InvalidParameter("starts", "<ranges>", "increasing, disjoint ranges of non-negative ids")
        if self.ledger is not None:
            ids = (starts[:, None] + np.arange(length)).ravel()
            self._to_ledger(self.user_ids(ids), certificate, self.run_id)
        self.intervals.append((starts, starts + length))
        self.certificates.append(certificate)
        self._forget()

    def charge_range(self, start: int, length: int, certificate: Certificate) -> None:
        """Charge users ``start .. start + length − 1`` (one range: :meth:`charge_ranges` for a single
        batch of consecutive ids, with no array work on the hot path)."""
        self._check(certificate)
        start, length = int(start), int(length)
        if start < 0 or length < 1:
            raise InvalidParameter("start/length", (start, length), "start >= 0 and length >= 1")
        if self.ledger is not None:
            ids = self.user_ids(np.arange(start, start + length))
            self._to_ledger(ids, certificate, self.run_id)
        self.intervals.append((start, start + length))
        self.certificates.append(certificate)
        self._forget()

    def release(self, user_ids: Any, certificate: Certificate | None, draw: Callable[[], T]) -> T:
        """Charge ``user_ids`` with ``certificate`` and only then call ``draw`` (which draws the noise).

        A refused charge raises before ``draw`` runs.  ``certificate=None`` (a non-private release)
        charges nothing.
        """
        if certificate is not None:
            self.charge(user_ids, certificate)
        return draw()

    # ----------------------------------------------------------------- guarantees
    def _forget(self) -> None:
        """Drop what was derived from the charges (a charge was added)."""
        self._once = None
        self._worst = {}

    def _each_user_once(self) -> bool:
        """Whether no user was charged twice: the charges' id intervals are pairwise disjoint."""
        if self._once is not None:
            return self._once
        starts, stops = (self._interval_ends(side) for side in (0, 1))
        order = np.argsort(starts, kind="stable")
        reach = np.maximum.accumulate(stops[order])
        self._once = bool(np.all(starts[order][1:] >= reach[:-1]))
        return self._once

    def _interval_ends(self, side: int) -> np.ndarray:
        """The starts (``side`` 0) or stops (1) of every charge's id ranges, in charge order."""
        ends = [interval[side] for interval in self.intervals]
        if all(type(end) is int for end in ends):  # single ranges (charge_range): no array per charge
            return np.array(ends, dtype=np.int64)
        return np.concatenate([np.atleast_1d(np.asarray(end, dtype=np.int64)) for end in ends])

    def _charged_ids(self, index: int) -> np.ndarray:
        starts, stops = (np.atleast_1d(np.asarray(v, dtype=np.int64)) for v in self.intervals[index])
        lengths = stops - starts
        return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())

    def charges_per_user(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct charged local ids and how many charges each received."""
        if not self.intervals:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.unique(
            np.concatenate([self._charged_ids(i) for i in range(len(self.intervals))]), return_counts=True
        )

    def max_charges_per_user(self) -> int:
        """The most charges any one user received (0 without charges)."""
        if not self.intervals:
            return 0
        if self._each_user_once():
            return 1
        return int(self.charges_per_user()[1].max())

    def worst_user_certificate(self, delta: float) -> Certificate | None:
        """The composition of the charges of the user with the largest ε at ``delta`` (``None`` if none).

        Users with one charge hold that charge's certificate; users with several hold the adaptive
        composition of their charges (``compose_counts``, method ``best``), one composition per
        distinct charge history.
        """
        delta = check.delta(delta)
        key = (delta, self.interval)
        if key not in self._worst:
            self._worst[key] = self._worst_user_certificate(delta)
        return self._worst[key]

    def _worst_user_certificate(self, delta: float) -> Certificate | None:
        if not self.certificates:
            return None
        distinct: dict[str, int] = {}
        keys: dict[int, str] = {}  # the same object charged again is hashed once
        column_of = []
        for certificate in self.certificates:
            if id(certificate) not in keys:
                keys[id(certificate)] = certificate_key(certificate)
            column_of.append(distinct.setdefault(keys[id(certificate)], len(distinct)))
        by_column = {column_of[i]: c for i, c in enumerate(self.certificates)}
        if self._each_user_once():
            return largest_epsilon(list(by_column.values()), delta)
        ids, _ = self.charges_per_user()
        history = np.zeros((ids.size, len(distinct)), dtype=np.int32)
        for index, column in enumerate(column_of):  # a loop over charges, not users
            history[np.searchsorted(ids, self._charged_ids(index)), column] += 1
        candidates = []
        for row in np.unique(history, axis=0):
            pairs = [(by_column[c], int(n)) for c, n in enumerate(row) if n]
            if len(pairs) == 1 and pairs[0][1] == 1:
                candidates.append(pairs[0][0])
            else:
                if self.interval is None:
                    candidates.append(compose_counts(pairs, delta=delta))
                else:
                    candidates.append(
                        compose_counts(pairs, delta=delta, value_discretization_interval=self.interval)
                    )
        return largest_epsilon(candidates, delta)

    # ----------------------------------------------------------------- workers
    def __getstate__(self) -> dict[str, Any]:  # certificates hold read-only mappings: send JSON
        return {
            "namespace": self.namespace,
            "run_id": self.run_id,
            "keys": self.keys,
            "interval": self.interval,
            "intervals": self.intervals,
            "certificates": [c.to_json() for c in self.certificates],
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.namespace = state["namespace"]
        self.run_id = state["run_id"]
        self.keys = state.get("keys")
        self.ledger = None
        self.interval = state["interval"]
        self._forget()
        self.intervals = state["intervals"]
        self.certificates = [Certificate.from_json(text) for text in state["certificates"]]


def largest_epsilon(certificates: Sequence[Certificate], delta: float) -> Certificate:
    """The first of ``certificates`` with the largest ε at ``delta``; a single one is returned without
    evaluating its ε (a search on an exact profile)."""
    if len(certificates) == 1:
        return certificates[0]
    return max(certificates, key=lambda c: c.epsilon_for(delta))


def worst_certificate(sessions: Sequence[PrivacySession], delta: float) -> Certificate | None:
    """The worst user's certificate over several sessions (repetitions have disjoint users)."""
    found = [s.worst_user_certificate(delta) for s in sessions]
    candidates = [c for c in found if c is not None]
    return largest_epsilon(candidates, delta) if candidates else None
