"""Registry of bandit algorithms and figure reproductions behind ``dpcert bandit run`` / ``dpcert reproduce``.

:mod:`dpcert.bandits.runner` registers every algorithm with :func:`register_algorithm` (the package
``dpcert.bandits`` imports it), and each module of :mod:`dpcert.reproductions` its reproductions with
:func:`register_reproduction` (the package ``dpcert.reproductions`` imports them all): both at import,
so the registry, below them, never imports them.  A run returns a :class:`BanditRun`, the common result
shape of every algorithm.

Algorithms of other installed packages join through the entry-point group :data:`ALGORITHM_ENTRY_POINTS`
(``dpcert.algorithms``): each entry point is named after its algorithm and points at its
:class:`AlgorithmSpec` (``package.module:SPEC``).  It is loaded the first time the algorithm is asked for
or listed; a name dpcert registers itself is never taken from another package, and every run of a plugin
algorithm is checked (:func:`checked_run`) before its result is shown (docs/plugins.md).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from dpcert.bandits.privatizers import (
    Calibration,
    calibration_label,
    calibration_of,
    privacy_label,
    trust_model_of,
)
from dpcert.certificates import Certificate, Guarantee
from dpcert.errors import InvalidParameter, PluginError
from dpcert.profiles import TrustModel
from dpcert.session import meets_target


@dataclass(frozen=True)
class RunConfig:
    """What a user asks of ``dpcert bandit run`` (algorithm-specific extras go in ``options``).

    ``privacy``: the run's :class:`~dpcert.profiles.TrustModel`, ``None`` for a non-private run (the
    strings ``"none"``, ``"central"``, ``"local"``, ``"shuffle"`` are converted on construction);
    ``calibration``: a :class:`~dpcert.bandits.privatizers.Calibration` (``"paper"`` and
    ``"least-noise"`` are converted; a bad value raises :class:`~dpcert.errors.InvalidParameter`
    naming the field).
    """

    algorithm: str
    privacy: TrustModel | None = None
    epsilon: float | None = None
    delta: float | None = None
    horizon: int = 10_000
    runs: int = 1
    seed: int = 0
    calibration: Calibration = Calibration.LEAST_NOISE
    ledger_path: Path | None = None
    ledger_signing_key: Path | None = None  # the operator's Ed25519 key: the ledger's heads are signed
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "privacy", trust_model_of(self.privacy, "privacy"))
        object.__setattr__(self, "calibration", calibration_of(self.calibration, "calibration", stacklevel=4))

    @property
    def privacy_name(self) -> str:
        """``none``, ``central``, ``local`` or ``shuffle``: the privacy model as results and user ids say."""
        return privacy_label(self.privacy)

    @property
    def calibration_name(self) -> str:
        """``tight`` or ``paper``: the calibration as ``--calibration`` and run results name it."""
        return calibration_label(self.calibration)


@dataclass(frozen=True)
class BanditRun:
    """Result of R repetitions of one algorithm.

    Attributes
    ----------
    algorithm
        Algorithm name.
    cumulative_regret
        Array of shape (runs, horizon): cumulative pseudo-regret after each round of each run.
    certificate
        The final certificate: the worst user's composed guarantee (``None`` for non-private runs).
    users
        Number of distinct users who contributed data (per run).
    max_user_epsilon
        Largest ε spent by any user at the target's δ (0 for non-private runs).
    seconds
        Wall time of the whole run.
    extras
        JSON-ready algorithm-specific results (communication cost, noise levels, realised regret, …).
    privacy
        The run's trust model (``None`` for a non-private run).
    target
        The requested per-user total (ε, δ) over all of a user's participations (``None``: non-private).
    """

    algorithm: str
    cumulative_regret: np.ndarray
    certificate: Certificate | None
    users: int
    max_user_epsilon: float
    seconds: float
    extras: Mapping[str, Any] = field(default_factory=dict)
    privacy: TrustModel | None = None
    target: Guarantee | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "privacy", trust_model_of(self.privacy, "privacy"))

    @property
    def privacy_name(self) -> str:
        """``none``, ``central``, ``local`` or ``shuffle``."""
        return privacy_label(self.privacy)

    @property
    def target_met(self) -> bool:
        """Whether the certificate covers the target: δ(target ε) <= target δ on its profile."""
        return meets_target(self.certificate, self.target)

    def final_regret(self) -> tuple[float, float]:
        """Mean and standard error over runs of the final cumulative regret."""
        mean, stderr = mean_stderr(np.asarray(self.cumulative_regret)[:, -1])
        return float(mean), float(stderr)


def mean_stderr(values: Any, axis: int = 0) -> tuple[Any, Any]:
    """Mean and standard error of the mean along ``axis`` (standard error 0 for a single value)."""
    values = np.asarray(values, dtype=float)
    count = values.shape[axis]
    mean = values.mean(axis=axis)
    stderr = values.std(axis=axis, ddof=1) / math.sqrt(count) if count > 1 else 0.0 * mean
    return mean, stderr


@dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm; ``options`` lists its ``--option`` keys (``None``: ``run`` checks them).

    ``distributable``: its repetitions run one by one and may go to a Dask scheduler (option
    ``scheduler``); the others are vectorised in one pass.  ``seeds``: how each random stream of a run
    is derived from :attr:`RunConfig.seed` (recorded in the run's provenance).
    """

    name: str
    description: str
    privacy_models: tuple[str, ...]
    run: Callable[[RunConfig], BanditRun]
    options: frozenset[str] | None = None
    distributable: bool = False
    seeds: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReproductionSpec:
    name: str
    description: str
    run: Callable[..., Mapping[str, Any]]  # run(runs: int | None, out: Path, seed: int) -> summary


_ALGORITHMS: dict[str, AlgorithmSpec] = {}
_REPRODUCTIONS: dict[str, ReproductionSpec] = {}


def register_algorithm(spec: AlgorithmSpec) -> AlgorithmSpec:
    _ALGORITHMS[spec.name] = spec
    return spec


def register_reproduction(spec: ReproductionSpec) -> ReproductionSpec:
    _REPRODUCTIONS[spec.name] = spec
    return spec


ALGORITHM_ENTRY_POINTS = "dpcert.algorithms"
"""Entry-point group of algorithms from other installed packages (module docstring)."""


@lru_cache(maxsize=1)
def _declared_algorithms() -> Mapping[str, importlib.metadata.EntryPoint]:
    """Algorithm name -> entry point of :data:`ALGORITHM_ENTRY_POINTS`, as installed."""
    found = importlib.metadata.entry_points(group=ALGORITHM_ENTRY_POINTS)
    return MappingProxyType({entry_point.name: entry_point for entry_point in found})


def _load_plugin(name: str) -> None:
    """Register the algorithm another package declares under ``name`` (nothing if dpcert has one)."""
    if name in _ALGORITHMS or name not in _declared_algorithms():
        return
    entry_point = _declared_algorithms()[name]
    where = f"entry point {name} = {entry_point.value!r} of group {ALGORITHM_ENTRY_POINTS!r}"
    try:
        spec = entry_point.load()
    except Exception as exc:  # noqa: BLE001 - reported with the entry point that failed
        raise PluginError(f"the {where} failed to load: {type(exc).__name__}: {exc}") from None
    if not isinstance(spec, AlgorithmSpec) or spec.name != name:
        got = (
            f"an AlgorithmSpec named {spec.name!r}"
            if isinstance(spec, AlgorithmSpec)
            else type(spec).__name__
        )
        raise PluginError(f"the {where} must name an AlgorithmSpec {name!r}, not {got}")
    register_algorithm(dataclasses.replace(spec, run=checked_run(spec.run, name)))


def checked_run(run: Callable[[RunConfig], BanditRun], name: str) -> Callable[[RunConfig], BanditRun]:
    """``run`` with its result checked: a :class:`BanditRun` of the algorithm with one regret curve per
    run and round, and, for a private run, a certificate of the run's trust model that re-derives its claim
    from its profile (:meth:`~dpcert.certificates.Certificate.verify`) and states the worst user's ε."""

    def checked(config: RunConfig) -> BanditRun:
        result = run(config)
        if not isinstance(result, BanditRun):
            raise PluginError(f"algorithm {name!r} returned {type(result).__name__}, not a BanditRun")
        shape = np.shape(result.cumulative_regret)
        if shape != (config.runs, config.horizon):
            raise PluginError(
                f"algorithm {name!r} returned regret curves of shape {shape}, not (runs, horizon) = "
                f"({config.runs}, {config.horizon})"
            )
        if config.privacy is None:
            return result
        certificate = result.certificate
        if certificate is None:
            raise PluginError(f"algorithm {name!r} ran with privacy but returned no certificate")
        certificate.verify()
        if certificate.trust_model is not config.privacy:
            raise PluginError(
                f"algorithm {name!r} ran under {privacy_label(config.privacy)} privacy but its certificate "
                f"states {certificate.trust_model.value}"
            )
        delta = config.delta if config.delta is not None else certificate.delta
        if certificate.epsilon_for(delta) > result.max_user_epsilon * (1 + 1e-12):
            raise PluginError(
                f"algorithm {name!r} reports a worst user's epsilon of {result.max_user_epsilon:g}, below "
                f"its certificate's {certificate.epsilon_for(delta):g} at delta={delta:g}"
            )
        return result

    return checked


def algorithms() -> dict[str, AlgorithmSpec]:
    """The registered algorithms: all of :mod:`dpcert.bandits.runner`'s (registered on import) and those
    other installed packages declare in :data:`ALGORITHM_ENTRY_POINTS`."""
    for name in _declared_algorithms():
        _load_plugin(name)
    return dict(sorted(_ALGORITHMS.items()))


def reproductions() -> dict[str, ReproductionSpec]:
    """The registered reproductions (every paper's once ``dpcert.reproductions`` is imported)."""
    return dict(sorted(_REPRODUCTIONS.items()))


def algorithm(name: str) -> AlgorithmSpec:
    _load_plugin(name)
    known = dict(sorted(_ALGORITHMS.items()))
    if name not in known:
        raise InvalidParameter("algorithm", name, "one of " + ", ".join(known) if known else "none yet")
    return known[name]


def reproduction(name: str) -> ReproductionSpec:
    known = reproductions()
    if name not in known:
        raise InvalidParameter("name", name, "one of " + ", ".join(known) if known else "none yet")
    return known[name]
