"""A contextual bandit built from real choices: Greene & Hensher's travel-mode data.

The supervised-to-bandit conversion of Dudík, Langford & Li 2011: every round one traveller of the data
set arrives, the arms are the four travel modes she could take between Sydney and Melbourne (air, train,
bus, car), each described by its own attributes (terminal time, in-vehicle cost and time, generalised
cost) and by her household income, and playing an arm earns 1 when it is the mode she actually chose,
else 0.  The data (210 travellers, Greene & Hensher 1997; Greene 2011, Econometric Analysis, Table F18-2)
ships with statsmodels (``statsmodels.datasets.modechoice``, public domain), a dependency of dpcert.

Unlike :func:`~dpcert.bandits.environments.contextual.vaswani_instance`, the arm set is real and changes
every round, and no linear model holds exactly: the best fixed linear policy still errs on some
travellers.  Regret is measured against the oracle that knows every traveller's choice, so a round's
regret is 1 minus the mean reward of the chosen arm (the regret of uniform play is 3/4 per round).

Feature map (d = 12, every entry in [0, 1], then divided by √6 so that ``‖x‖ <= 1``): the mode's one-hot
code (4), its terminal time, in-vehicle cost, in-vehicle time and generalised cost each divided by its
largest value in the data (4), and the traveller's household income divided by its largest value, placed
in the mode's slot (4: income moves each mode's utility separately, as in a conditional logit with
alternative-specific income terms).  At most six entries are non-zero.

Orders of arrival (``order``): ``"iid"`` draws each round's traveller uniformly with replacement;
``"by-income"`` walks through the travellers sorted by household income (ties by their index), from a
random starting point per run and cyclically, so the contexts drift instead of being re-drawn i.i.d.

The object follows the protocol of :class:`~dpcert.bandits.environments.contextual.ContextualLinearBandit`
that the LinUCB and LDP-linear engines use (``runs``, ``n_arms``, ``dimension``, ``fixed_arms``,
``reward``, ``noise_std``, ``contexts(rng)``, ``means(features)``, ``sample_rewards(means, rng)``).
``means`` is the mean reward of each arm given the round's arm set: the share of travellers with exactly
that arm set who chose the arm (one traveller per arm set in this data, so 0 or 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcert import _validation as check
from dpcert.errors import InvalidParameter

MODES = ("air", "train", "bus", "car")
ORDERS = ("iid", "by-income")
ATTRIBUTES = ("ttme", "invc", "invt", "gc")
NONZERO = 6  # one mode code, four attributes, one income entry
DIMENSION = 3 * len(MODES)


@dataclass(frozen=True)
class TravelData:
    """The travel-mode data as arrays: ``features`` (travellers, 4, d), ``chosen`` (travellers,) the index
    of each traveller's mode, ``income`` (travellers,) household income."""

    features: np.ndarray
    chosen: np.ndarray
    income: np.ndarray


def travel_mode_data() -> TravelData:
    """Load ``statsmodels.datasets.modechoice`` and build the feature map of the module docstring."""
    from statsmodels.datasets import modechoice  # third-party data, loaded when an environment is built

    table = modechoice.load_pandas().data.sort_values(["individual", "mode"])
    travellers = int(table["individual"].nunique())
    if len(table) != travellers * len(MODES):
        raise InvalidParameter("modechoice", len(table), f"{len(MODES)} rows per traveller")
    attributes = np.stack([table[name].to_numpy(float) for name in ATTRIBUTES], axis=1)
    attributes = (attributes / attributes.max(axis=0)).reshape(travellers, len(MODES), len(ATTRIBUTES))
    income = table["hinc"].to_numpy(float).reshape(travellers, len(MODES))[:, 0]
    code = np.eye(len(MODES))
    features = np.concatenate(
        [
            np.broadcast_to(code, (travellers, len(MODES), len(MODES))),
            attributes,
            code[None, :, :] * (income / income.max())[:, None, None],
        ],
        axis=2,
    ) / math.sqrt(NONZERO)
    choice = table["choice"].to_numpy(float).reshape(travellers, len(MODES))
    if not np.all(choice.sum(axis=1) == 1.0):
        raise InvalidParameter("modechoice", "<choices>", "exactly one chosen mode per traveller")
    return TravelData(np.ascontiguousarray(features), choice.argmax(axis=1), income)


@dataclass(frozen=True)
class TravelModeBandit:
    """R runs of the travel-mode contextual bandit (module docstring).

    ``start`` holds each run's first position in the income order (``order="by-income"``).  The only
    state is the count of rounds served, which advances at every :meth:`contexts`; give each engine run
    its own :meth:`restarted` copy.
    """

    runs: int
    order: str = "iid"
    data: TravelData = field(default_factory=travel_mode_data, repr=False)
    start: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    fixed_arms: bool = field(default=False, init=False)
    reward: str = field(default="bernoulli", init=False)
    noise_std: float = field(default=0.0, init=False)
    _state: dict[str, int] = field(default_factory=lambda: {"position": 0}, init=False, repr=False)
    _lookup: dict[bytes, np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _income_order: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=np.int64), init=False, repr=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "runs", check.positive_int("runs", self.runs))
        if self.order not in ORDERS:
            raise InvalidParameter("order", self.order, "one of " + ", ".join(ORDERS))
        travellers = self.data.features.shape[0]
        start = np.asarray(self.start, dtype=np.int64)
        if start.size == 0:
            start = np.zeros(self.runs, dtype=np.int64)
        if start.shape != (self.runs,) or np.any(start < 0) or np.any(start >= travellers):
            raise InvalidParameter("start", start.tolist(), f"{self.runs} positions in [0, {travellers})")
        object.__setattr__(self, "start", start)
        # mean reward of each arm given the round's arm set: the share of travellers with that set who
        # chose the arm
        groups: dict[bytes, list[int]] = {}
        for index, arm_set in enumerate(self.data.features):
            groups.setdefault(arm_set.tobytes(), []).append(index)
        for key, members in groups.items():
            self._lookup[key] = np.bincount(self.data.chosen[members], minlength=len(MODES)) / len(members)
        object.__setattr__(self, "_income_order", np.lexsort((np.arange(travellers), self.data.income)))

    @classmethod
    def draw(cls, runs: int, rng: np.random.Generator, *, order: str = "iid") -> TravelModeBandit:
        """``runs`` runs; with ``order="by-income"`` each run's starting traveller is drawn from ``rng``."""
        runs = check.positive_int("runs", runs)
        rng = check.generator(rng)
        data = travel_mode_data()
        start = np.zeros(runs, dtype=np.int64)
        if order == "by-income":
            start = rng.integers(0, data.features.shape[0], size=runs)
        return cls(runs, order, data, start)

    @property
    def n_arms(self) -> int:
        return len(MODES)

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def travellers(self) -> int:
        return int(self.data.features.shape[0])

    def restarted(self) -> TravelModeBandit:
        """The same runs from their first round again (a fresh round counter)."""
        return TravelModeBandit(self.runs, self.order, self.data, self.start)

    def arrivals(self, rng: np.random.Generator) -> np.ndarray:
        """The index of the next round's traveller in every run (advances the round counter)."""
        position = self._state["position"]
        self._state["position"] = position + 1
        if self.order == "iid":
            return rng.integers(0, self.travellers, size=self.runs)
        return self._income_order[(self.start + position) % self.travellers]

    def contexts(self, rng: np.random.Generator) -> np.ndarray:
        """The arm features of the next round, shape (runs, K, d)."""
        return self.data.features[self.arrivals(rng)]

    def means(self, features: np.ndarray) -> np.ndarray:
        """Mean reward of every arm given each run's arm set (runs, K, d) -> (runs, K)."""
        features = np.asarray(features, dtype=float)
        if features.ndim != 3 or features.shape[1:] != (len(MODES), DIMENSION):
            raise InvalidParameter("features", features.shape, f"(runs, {len(MODES)}, {DIMENSION})")
        try:
            return np.stack([self._lookup[np.ascontiguousarray(arm_set).tobytes()] for arm_set in features])
        except KeyError:
            raise InvalidParameter(
                "features", "<an arm set>", "the arm set of a traveller in the data"
            ) from None

    def sample_rewards(self, means: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One Bernoulli reward per entry of ``means`` (0 or 1: whether the mode was the traveller's)."""
        return (rng.random(np.shape(means)) < means).astype(float)
