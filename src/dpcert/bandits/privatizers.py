"""One privatizer protocol for every bandit: contributions in, a charged and certified release out.

A bandit's server learns its users' data only through releases.  Each release takes the users'
:class:`Contributions` (the exact statistic per group, the users per group, each user's row when the
mechanism needs it, and who the users are) and returns a :class:`Release`: the private estimate, the
variance of its error and the certificate charged.  :class:`Privatizer` is that protocol,
``release(contributions, rng, *, session=None)``; every implementation charges ``session`` (the run's
:class:`~dpcert.session.PrivacySession`, or a ledger) for exactly the users of the release with the
release's certificate, and only then draws its noise, so a refused charge stops the release.

Two families implement it here and in :mod:`dpcert.bandits.algorithms.mab`:

* the privatizers P = (R, S, A) of Li, Zhou & Ji 2022 ("Differentially Private Linear Bandits with
  Partial Distributed Feedback", §4): a local randomizer R run by each user, a trusted shuffler S (the
  identity when absent) and an analyzer A at the server, for two statistics —
  the mean of n users' vectors ȳ_u ∈ [−B, B]^s (DP-DPE, Alg. 1 lines 8–16;
  :meth:`Contributions.mean_of_rows`) and per-arm sums of one reward in [−B, B] per user (DP-PE, Alg. 3
  lines 5–13; :meth:`Contributions.of_rows`);
* the batch summations of multi-armed elimination (Tenenbaum et al. 2021 and its baselines), which
  need only each batch's exact sum and size (:meth:`Contributions.of_sums`).

A privatizer that needs per-user rows (the shuffle bit sums round each user's value to bits) raises
when the contributions carry only sums.

Calibrations
------------
``paper``
    The paper's formulas: σ = Δ·sqrt(2 ln(1.25/δ))/ε (eqs. 5/7/18/20, Thms 4.2, 4.4, C.1, C.3, all by the
    classical Gaussian mechanism, Dwork & Roth 2014 Thm A.1).  That bound is only proven for ε < 1
    (docs/PAPER_NOTES.md, PN-LZJ-1); the certificate is therefore re-derived from the exact Gaussian profile
    (Balle & Wang 2018, Thm 8) and claims the requested (ε, δ) only when it holds — otherwise it claims the
    ε that the noise really gives at δ, and says so in its notes.
``tight``
    The least σ meeting (ε, δ) by the exact analytic Gaussian profile (Balle & Wang 2018, Thm 8),
    for the same sensitivity and neighbouring relation.

Secure noise (``secure=True``, central and local Gaussian privatizers)
    Float Gaussian noise leaks through its low-order bits (Mironov 2012).  With ``secure=True`` every
    release is drawn by
    :func:`dpcert.mechanisms.secure.noise.secure_gaussian`: the statistic is
    rounded to the grid g ℤ (g a power of two), integer discrete Gaussian noise N_Z(0, σ_g²) is added
    by the integer-exact sampler (Canonne, Kamath & Steinke 2020, Alg. 3) and the release is an exact
    multiple of g.  The certificate charged is that mechanism's: the discrete Gaussian's exact profile
    at the integer sensitivity ⌊Δ/g⌋ + 1, which accounts for the rounding (``tight``: least σ_g for
    (ε, δ); ``paper``: the paper's σ rounded up to the grid, certified as above).  The sampler's random
    bits come from the run's seeded ``numpy.random.Generator`` (``bits="rng"``), so runs stay
    reproducible; it is not a cryptographic source.  The noise variance reported is σ_g² g² (the
    discrete Gaussian's variance is below σ², CKS 2020); the rounding adds a bias of at most g/2 per
    rounded value (g ≈ σ·2^-13), which the confidence widths do not include.  A release of s > 1
    coordinates (DP-DPE's averages) is certified as s discrete Gaussians at the rounded entry-wise
    shift (each coordinate moves by at most 2B/n, or 2B for a local message), composed by the proven
    PLD bound; for continuous noise this equals the paper's ℓ2 calibration (μ = Δ√s/σ either way).

Sensitivities (replace-one neighbours, the paper's "differ in a single client", §4):
central average 2B√s/n (eq. 19); local vector 2B√s (eq. 21); central/local scalar sum 2B (Thms C.1,
C.3).  All assume every coordinate lies in [−B, B]; inputs outside raise :class:`DataOutOfBounds`.
"""

from __future__ import annotations

import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

import numpy as np

from dpcert import _validation as check
from dpcert.bandits.calibration.common import earned_gaussian_certificate, paper_gaussian_sigma, with_notes
from dpcert.certificates import Certificate, Neighbouring, TrustModel
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.gaussian import calibrate_gaussian
from dpcert.mechanisms.secure.noise import SecureGaussianMechanism, secure_gaussian
from dpcert.mechanisms.shuffle.binomial_sum import calibrate_binomial_sum, simulate_group_sums
from dpcert.session import ChargeSink

PRIVACY_MODELS = ("none", "central", "local", "shuffle")


class Calibration(str, Enum):
    """How a bandit's noise is chosen for its claimed (ε, δ).

    ``PAPER``: the paper's formula (its certificate states what that noise really earns, which may miss
    the claim); ``LEAST_NOISE``: the least noise whose certificate meets the claim, by the mechanism's
    exact privacy profile.
    """

    PAPER = "paper"
    LEAST_NOISE = "least-noise"


LEAST_NOISE_SPELLINGS = ("tight", "analytic_joint", "exact", "numeric")
"""Former names of :attr:`Calibration.LEAST_NOISE`, accepted for one release with a DeprecationWarning."""


def calibration_of(
    value: Calibration | str, name: str = "calibration", *, stacklevel: int = 3
) -> Calibration:
    """``value`` as a :class:`Calibration`: the member, its value (``"paper"``, ``"least-noise"``), or a
    former spelling of least noise (:data:`LEAST_NOISE_SPELLINGS`, with a DeprecationWarning attributed
    ``stacklevel`` frames up: by default the caller of the function that called this one)."""
    if isinstance(value, Calibration):
        return value
    if isinstance(value, str) and value in LEAST_NOISE_SPELLINGS:
        warnings.warn(
            f"{name}={value!r} is deprecated; use Calibration.LEAST_NOISE ('least-noise')",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        return Calibration.LEAST_NOISE
    try:
        return Calibration(value)
    except (ValueError, TypeError):
        raise InvalidParameter(
            name, value, "Calibration.PAPER ('paper') or Calibration.LEAST_NOISE ('least-noise')"
        ) from None


CALIBRATION_LABELS = {"tight": Calibration.LEAST_NOISE, "paper": Calibration.PAPER}
"""The names ``dpcert bandit run --calibration`` takes and run results report (``tight``: least noise)."""


def calibration_label(calibration: Calibration) -> str:
    """The name results and the CLI give ``calibration``: ``"paper"``, or ``"tight"`` for least noise."""
    return "paper" if calibration is Calibration.PAPER else "tight"


def calibration_from_label(value: Calibration | str, name: str = "calibration") -> Calibration:
    """``value`` as a :class:`Calibration`: the member, or a name of :data:`CALIBRATION_LABELS` (the
    ``--calibration`` names, ``tight`` and ``paper``, which reproductions also use)."""
    if isinstance(value, Calibration):
        return value
    if isinstance(value, str) and value in CALIBRATION_LABELS:
        return CALIBRATION_LABELS[value]
    raise InvalidParameter(name, value, "tight or paper (or a Calibration)")


def trust_model_of(value: TrustModel | str | None, name: str = "privacy") -> TrustModel | None:
    """``value`` as the privacy model of a run: ``None`` (or ``"none"``) for a non-private run, else a
    :class:`~dpcert.profiles.TrustModel` (the member or its value: ``central``, ``local``, ``shuffle``)."""
    if value is None or value == "none":
        return None
    if isinstance(value, TrustModel):
        return value
    try:
        return TrustModel(value)
    except (ValueError, TypeError):
        raise InvalidParameter(name, value, "one of " + ", ".join(PRIVACY_MODELS)) from None


def privacy_label(model: TrustModel | None) -> str:
    """The name of a run's privacy model in results, user ids and the CLI: ``none`` or the trust model's."""
    return "none" if model is None else model.value


PAPER_BASIS = (
    "Li, Zhou & Ji 2022, {theorem} (classical Gaussian sigma, Dwork & Roth 2014 Thm A.1); "
    "guarantee re-derived from the exact Gaussian profile (Balle & Wang 2018, Thm 8)"
)
TIGHT_BASIS = "Balle & Wang 2018, Thm 8 (analytic Gaussian, least sigma for the target)"


@dataclass(frozen=True)
class UserRanges:
    """Users ``starts[i] .. starts[i] + lengths[i] − 1`` (consecutive local ids), without listing them.

    Batches of consecutive arrivals are charged this way: a session records the ranges, not the ids.
    """

    starts: np.ndarray
    lengths: np.ndarray

    def __post_init__(self) -> None:
        starts = np.asarray(self.starts, dtype=np.int64).ravel()
        lengths = np.broadcast_to(np.asarray(self.lengths, dtype=np.int64), starts.shape)
        if starts.size and (starts.min() < 0 or lengths.min() < 1):
            raise InvalidParameter(
                "users", "<ranges>", "ranges of non-negative ids with at least one user each"
            )
        object.__setattr__(self, "starts", starts)
        object.__setattr__(self, "lengths", lengths)

    @property
    def count(self) -> int:
        """Users in all ranges."""
        return int(self.lengths.sum())

    def ids(self) -> np.ndarray:
        """Every user's local id, range by range."""
        if not self.starts.size:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([np.arange(a, a + n) for a, n in zip(self.starts, self.lengths, strict=True)])


Users = UserRanges | np.ndarray


@dataclass(frozen=True)
class Contributions:
    """What the users of one release contribute, and who they are.

    Attributes
    ----------
    sums
        The exact statistic of each group, any shape (the release's shape): per-batch or per-arm
        sums, or for ``statistic="mean"`` the mean of ``rows`` (shape (s,)).
    counts
        Users per group, the shape of ``sums`` (for ``"mean"``: all users, repeated per coordinate).
    rows
        Each user's value when the release needs it: shape (n,) with ``groups``, or (n, s) for
        ``"mean"``; ``None`` when only the sums are known (e.g. Bernoulli batches simulated by their
        binomial counts).
    groups
        Group (flat index into ``sums``) of each row, for ``"sum"`` releases with rows.
    users
        Who is charged: :class:`UserRanges`, or one local id per row (per group when
        ``grouped_by_user``); ``None`` when nothing is charged.
    statistic
        ``"sum"``: the release estimates ``sums``; ``"mean"``: the mean of the rows over all users.
    grouped_by_user
        Each group is one user holding several rows (:meth:`of_user_rows`); ``counts`` is then 1.
    """

    sums: np.ndarray
    counts: np.ndarray
    rows: np.ndarray | None = None
    groups: np.ndarray | None = None
    users: Users | None = None
    statistic: str = "sum"
    grouped_by_user: bool = False

    @classmethod
    def of_sums(cls, sums: Any, counts: Any, users: Users | None = None) -> Contributions:
        """Groups known by their exact sums and sizes only (``counts`` broadcast to the sums' shape)."""
        total = np.asarray(sums, dtype=float)
        sizes = np.broadcast_to(np.asarray(counts, dtype=np.int64), total.shape)
        if sizes.size and sizes.min() < 0:
            raise InvalidParameter("counts", "<negative count>", "users per group >= 0")
        return cls(total, sizes, users=users)

    @classmethod
    def of_rows(cls, values: Any, groups: Any, group_count: int, users: Users | None = None) -> Contributions:
        """One value per user (shape (n,)); user i is in ``groups[i]`` of ``group_count`` disjoint groups."""
        rows = np.asarray(values, dtype=float)
        if rows.ndim != 1 or rows.shape[0] < 1:
            raise InvalidParameter(
                "values", f"<array of shape {rows.shape}>", "a 1-D array with at least one user"
            )
        group_count = check.positive_int("group_count", group_count)
        index = np.asarray(groups)
        if (
            index.shape != rows.shape
            or index.size
            and (not np.issubdtype(index.dtype, np.integer) or index.min() < 0 or index.max() >= group_count)
        ):
            raise InvalidParameter(
                "groups", f"<array of shape {index.shape}>", f"one group in [0, {group_count}) per value"
            )
        sums = np.bincount(index, weights=rows, minlength=group_count)
        counts = np.bincount(index, minlength=group_count)
        return cls(sums, counts, rows, index, users)

    @classmethod
    def of_user_rows(
        cls, values: Any, owners: Any, user_count: int, users: Users | None = None
    ) -> Contributions:
        """Several values per user: row i belongs to user ``owners[i]`` of ``user_count`` (non-decreasing,
        every user with one row or more); the statistic is each user's sum."""
        base = cls.of_rows(values, owners, user_count)
        assert base.groups is not None
        if np.any(np.diff(base.groups) < 0) or np.any(base.counts == 0):
            raise InvalidParameter(
                "owners", "<owners>", "non-decreasing owners, every user with at least one row"
            )
        ones = np.ones(user_count, dtype=np.int64)
        return cls(base.sums, ones, base.rows, base.groups, users, grouped_by_user=True)

    @classmethod
    def mean_of_rows(cls, values: Any, users: Users | None = None) -> Contributions:
        """The mean of n users' vectors (shape (n, s))."""
        rows = np.asarray(values, dtype=float)
        if rows.ndim != 2 or rows.shape[0] < 1:
            raise InvalidParameter(
                "values", f"<array of shape {rows.shape}>", "a 2-D array with at least one user"
            )
        counts = np.full(rows.shape[1], rows.shape[0], dtype=np.int64)
        return cls(rows.mean(axis=0), counts, rows, None, users, "mean")

    def require_rows(self, privatizer: str) -> np.ndarray:
        """The per-user rows, or :class:`InvalidParameter` naming ``contributions`` when only sums exist."""
        if self.rows is None:
            raise InvalidParameter(
                "contributions",
                "<sums only>",
                f"per-user rows (the {privatizer} privatizes each user's value)",
            )
        return self.rows

    def charge(self, session: ChargeSink | None, certificate: Certificate | None, rows: Any = None) -> None:
        """Charge the users (or, with ``rows`` a boolean mask over the rows, those users) ``certificate``.

        Nothing is charged without a session or a certificate; with both, the users must be known.
        """
        if session is None or certificate is None:
            return
        users = self.users
        if users is None:
            raise InvalidParameter("users", None, "the users of the release when it is charged to a session")
        if isinstance(users, UserRanges):
            if rows is not None:
                users = users.ids()
            elif hasattr(session, "charge_ranges"):
                for length in np.unique(users.lengths):  # one call per batch length, order kept
                    session.charge_ranges(users.starts[users.lengths == length], int(length), certificate)
                return
            else:
                session.charge(users.ids(), certificate)
                return
        ids = np.asarray(users)
        if self.grouped_by_user:
            if rows is not None:
                raise InvalidParameter("rows", "<mask>", "None when each group is one user")
            expected = self.sums.size
        else:
            expected = int(self.counts.sum()) if self.rows is None else len(self.rows)
        if ids.shape != (expected,):
            raise InvalidParameter(
                "users", f"<array of shape {ids.shape}>", f"one id per user, shape ({expected},)"
            )
        session.charge(ids if rows is None else ids[rows], certificate)


@dataclass(frozen=True)
class Release:
    """Output of one privatizer call.

    Attributes
    ----------
    estimate
        The private estimate of the contributions' statistic, in the shape of their ``sums``.
    noise_variance
        Per entry, the variance of ``estimate`` minus the exact statistic, or an upper bound on it
        (a sub-Gaussian variance proxy for bit sums).
    certificate
        The call's guarantee for each user it touched (``None`` without privacy).
    units_per_user
        Numbers (reals) or bits each user sends in this call.
    unit
        ``"reals"`` or ``"bits"``.
    units_total
        Units sent by all users together when they do not all send ``units_per_user`` (else ``None``).
    """

    estimate: np.ndarray
    noise_variance: np.ndarray
    certificate: Certificate | None
    units_per_user: int
    unit: str = "reals"
    units_total: int | None = None


class Privatizer(Protocol):
    """How a bandit's server learns its users' data: one certified release of their contributions.

    ``release`` charges ``session`` for the users of ``contributions`` with the release's certificate
    before any noise is drawn, then returns the :class:`Release`.
    """

    @property
    def name(self) -> str: ...

    def release(
        self, contributions: Contributions, rng: np.random.Generator, *, session: ChargeSink | None = None
    ) -> Release: ...


def _check_values(values: np.ndarray, bound: float) -> np.ndarray:
    return check.bounded_array("values", values, -bound, bound)


class RowPrivatizer(ABC):
    """The privatizers of Li, Zhou & Ji 2022: rows in [−B, B], the mean of vectors or per-group sums."""

    model: str = "none"
    name: str = "exact"

    def __init__(self, reward_bound: float) -> None:
        self.reward_bound = check.positive_finite("reward_bound", reward_bound)

    def _set_budget(self, epsilon: float, delta: float, calibration: Calibration | str) -> None:
        """Validate and keep each release's target (ε, δ) and the :class:`Calibration`."""
        self.epsilon = check.epsilon(epsilon)
        self.delta = check.positive_delta(delta)
        self.calibration = calibration_of(calibration, stacklevel=4)  # attributed to the constructor's caller

    def release(
        self, contributions: Contributions, rng: np.random.Generator, *, session: ChargeSink | None = None
    ) -> Release:
        """The mean of the rows (``statistic="mean"``) or the per-group sums of scalar rows, privatized."""
        rows = _check_values(contributions.require_rows(self.name), self.reward_bound)
        if contributions.statistic == "mean":
            return self._mean(contributions, rows, rng, session)
        if contributions.groups is None:
            raise InvalidParameter("contributions", "<rows without groups>", "a group per row for sums")
        return self._sums(contributions, rows, contributions.groups, rng, session)

    @abstractmethod
    def _mean(
        self,
        contributions: Contributions,
        rows: np.ndarray,
        rng: np.random.Generator,
        session: ChargeSink | None,
    ) -> Release:
        """Private estimate of the mean of ``rows`` (n users × s coordinates)."""

    @abstractmethod
    def _sums(
        self,
        contributions: Contributions,
        rows: np.ndarray,
        groups: np.ndarray,
        rng: np.random.Generator,
        session: ChargeSink | None,
    ) -> Release:
        """Private per-group sums of scalar ``rows``; groups are disjoint (parallel composition)."""


class NonPrivate(RowPrivatizer):
    """P = (id, id, average): DPE and PE (no privacy, no charge)."""

    model = "none"
    name = "exact"

    def _mean(self, contributions, rows, rng, session) -> Release:
        return Release(contributions.sums, np.zeros(rows.shape[1]), None, rows.shape[1])

    def _sums(self, contributions, rows, groups, rng, session) -> Release:
        return Release(contributions.sums, np.zeros(contributions.sums.size), None, 1)


def _secure_add(
    mechanism: SecureGaussianMechanism, statistic: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """``g (round(x/g) + Z)`` for every entry x of ``statistic``, Z drawn by ``mechanism``'s sampler."""
    grid = mechanism.grid
    units = grid.to_units(statistic)
    return grid.from_units(units + mechanism.noise_units(units.size, rng).reshape(units.shape))


class _GaussianPrivatizer(RowPrivatizer):
    """Gaussian privatizer; ``secure=True`` draws every release with integer-exact noise.

    Parameters
    ----------
    reward_bound, epsilon, delta, calibration
        See the module docstring.
    secure
        Draw the noise with :func:`dpcert.mechanisms.secure.noise.secure_gaussian` on a power-of-two
        grid and charge its certificate (module docstring, "Secure noise").  The sampler's bits come
        from the Generator passed to each release (reproducible, not cryptographic).
    """

    trust_model = TrustModel.CENTRAL

    def __init__(
        self,
        reward_bound: float,
        epsilon: float,
        delta: float,
        calibration: Calibration | str = Calibration.LEAST_NOISE,
        secure: bool = False,
    ) -> None:
        super().__init__(reward_bound)
        self._set_budget(epsilon, delta, calibration)
        if not isinstance(secure, (bool, np.bool_)):
            raise InvalidParameter("secure", secure, "true or false")
        self.secure = bool(secure)
        self._cache: dict[tuple[float, str], tuple[float, Certificate]] = {}
        self._secure_cache: dict[
            tuple[float, str, int, float], tuple[SecureGaussianMechanism, Certificate]
        ] = {}

    def secure_noise(
        self, sensitivity: float, theorem: str, size: int = 1, entry_sensitivity: float | None = None
    ) -> tuple[SecureGaussianMechanism, Certificate]:
        """The secure mechanism for one release of ``size`` coordinates and its certificate.

        ``sensitivity`` is the release's ℓ2-sensitivity (what the paper's σ is computed from) and
        ``entry_sensitivity`` the bound on each coordinate's change (default: ``sensitivity``); the
        certificate composes ``size`` discrete Gaussians at the rounded entry-wise shift, which for
        the continuous Gaussian would be the same as the ℓ2 calibration (μ = Δ√s/σ either way).
        """
        entry = sensitivity if entry_sensitivity is None else entry_sensitivity
        key = (sensitivity, theorem, size, entry)
        if key in self._secure_cache:
            return self._secure_cache[key]
        common: dict[str, Any] = dict(
            sensitivity=entry,
            dimension=size,
            bits="rng",
            trust_model=self.trust_model,
            neighbouring=Neighbouring.REPLACE_ONE,
        )
        if self.calibration is Calibration.LEAST_NOISE:
            mechanism = secure_gaussian(self.epsilon, self.delta, **common)
            certificate = mechanism.certificate
        else:
            sigma = paper_gaussian_sigma(self.epsilon, self.delta, sensitivity)
            mechanism = secure_gaussian(delta=self.delta, sigma=sigma, **common)
            exact = mechanism.certificate
            if exact.epsilon <= self.epsilon:
                mechanism = secure_gaussian(self.epsilon, self.delta, sigma=sigma, **common)
                certificate = mechanism.certificate
            else:
                note = (
                    f"the paper's sigma on the grid does not give the requested (epsilon={self.epsilon:g}, "
                    f"delta={self.delta:g}); the discrete Gaussian profile gives epsilon={exact.epsilon:.6g} "
                    f"at delta={self.delta:g}, which is what is certified ({theorem})"
                )
                certificate = with_notes(exact, note)
        self._secure_cache[key] = (mechanism, certificate)
        return mechanism, certificate

    def noise_adder(
        self, sensitivity: float, theorem: str, size: int = 1, entry_sensitivity: float | None = None
    ) -> tuple[Certificate, Callable[[np.ndarray, np.random.Generator], np.ndarray], float]:
        """Certificate, noise-adding function and noise variance per value for one release.

        Float Gaussian noise of :meth:`noise`, or with ``secure=True`` the integer-exact noise of
        :meth:`secure_noise` on its grid (variance ``real_sigma**2``).
        """
        if self.secure:
            mechanism, certificate = self.secure_noise(sensitivity, theorem, size, entry_sensitivity)
            return certificate, lambda x, rng: _secure_add(mechanism, x, rng), mechanism.real_sigma**2
        sigma, certificate = self.noise(sensitivity, theorem)
        return certificate, lambda x, rng: x + rng.normal(0.0, sigma, size=np.shape(x)), sigma**2

    def noise(self, sensitivity: float, theorem: str) -> tuple[float, Certificate]:
        """σ and its certificate for one Gaussian release of ℓ2-sensitivity ``sensitivity``."""
        key = (sensitivity, theorem)
        if key in self._cache:
            return self._cache[key]
        if self.calibration is Calibration.LEAST_NOISE:
            result = calibrate_gaussian(
                self.epsilon,
                self.delta,
                sensitivity=sensitivity,
                trust_model=self.trust_model,
                neighbouring=Neighbouring.REPLACE_ONE,
            )
            value = (result.sigma, result.certificate)
        else:
            sigma = paper_gaussian_sigma(self.epsilon, self.delta, sensitivity)
            value = (sigma, self._paper_certificate(sigma, sensitivity, theorem))
        self._cache[key] = value
        return value

    def _paper_certificate(self, sigma: float, sensitivity: float, theorem: str) -> Certificate:
        unmet = (
            f"the paper's sigma does not give the requested (epsilon={self.epsilon:g}, "
            f"delta={self.delta:g}): the classical bound needs epsilon < 1; the exact profile gives "
            "epsilon={epsilon:.6g}" + f" at delta={self.delta:g}, which is what is certified"
        )
        certificate, _ = earned_gaussian_certificate(
            sigma,
            self.epsilon,
            self.delta,
            unmet_note=unmet,
            sensitivity=sensitivity,
            basis=PAPER_BASIS.format(theorem=theorem),
            trust_model=self.trust_model,
            neighbouring=Neighbouring.REPLACE_ONE,
        )
        return certificate


class CentralGaussian(_GaussianPrivatizer):
    """Trusted server adds N(0, σ²) to the exact aggregate (eq. 5 / Thm 4.2; eq. 55 / Thm C.1)."""

    model = "central"
    name = "central Gaussian"
    trust_model = TrustModel.CENTRAL

    def _mean(self, contributions, rows, rng, session) -> Release:
        users, size = rows.shape
        sensitivity = 2.0 * self.reward_bound * math.sqrt(size) / users  # eq. 19
        entry = 2.0 * self.reward_bound / users  # each coordinate of the average
        certificate, add_noise, variance = self.noise_adder(sensitivity, "Thm 4.2", size, entry)
        contributions.charge(session, certificate)
        return Release(add_noise(contributions.sums, rng), np.full(size, variance), certificate, size)

    def _sums(self, contributions, rows, groups, rng, session) -> Release:
        certificate, add_noise, variance = self.noise_adder(2.0 * self.reward_bound, "Thm C.1")
        contributions.charge(session, certificate)
        group_count = contributions.sums.size
        return Release(add_noise(contributions.sums, rng), np.full(group_count, variance), certificate, 1)


class LocalGaussian(_GaussianPrivatizer):
    """Each user adds N(0, σ²) before sending (eq. 7 / Thm 4.4; eq. 57 / Thm C.3)."""

    model = "local"
    name = "local Gaussian"
    trust_model = TrustModel.LOCAL

    def _mean(self, contributions, rows, rng, session) -> Release:
        users, size = rows.shape
        sensitivity = 2.0 * self.reward_bound * math.sqrt(size)  # eq. 21
        entry = 2.0 * self.reward_bound  # each coordinate of a user's vector
        certificate, add_noise, variance = self.noise_adder(sensitivity, "Thm 4.4", size, entry)
        contributions.charge(session, certificate)
        messages = add_noise(rows, rng)  # R: what each user sends
        return Release(messages.mean(axis=0), np.full(size, variance / users), certificate, size)

    def _sums(self, contributions, rows, groups, rng, session) -> Release:
        certificate, add_noise, variance = self.noise_adder(2.0 * self.reward_bound, "Thm C.3")
        contributions.charge(session, certificate)
        messages = add_noise(rows, rng)  # each user's message
        group_count = contributions.sums.size
        sums = np.bincount(groups, weights=messages, minlength=group_count)
        counts = np.bincount(groups, minlength=group_count)
        return Release(sums, counts * variance, certificate, 1)


SIZE_GRID_STEPS = 4  # grid sizes per doubling for the tight calibration of DP-PE's per-arm sums
GRID_NOTE = (
    "calibrated for m users and run with n >= m users, each sending b_n = max(1, ceil(m b / n)) noise "
    "bits (n b_n >= m b): the exact profile depends on (n, b) only through the total noise trials "
    "M = n b and is non-increasing in M for fixed (g, p), since Bin(M', p) = Bin(M, p) + an independent "
    "Bin(M' - M, p) (post-processing); so this certificate for m users is conservative for the run"
)


def grid_size(users: int, steps: int = SIZE_GRID_STEPS) -> int:
    """Largest size of the grid {⌈2^{j/steps}⌉ : j = 0, 1, …} that is at most ``users``."""
    users = check.positive_int("users", users)
    steps = check.positive_int("steps", steps)
    j = math.floor(steps * math.log2(users))
    while math.ceil(2.0 ** ((j + 1) / steps)) <= users:  # float error in log2: never too small
        j += 1
    while math.ceil(2.0 ** (j / steps)) > users:  # … nor too large
        j -= 1
    return math.ceil(2.0 ** (j / steps))


@dataclass(frozen=True)
class GroupProtocol:
    """Bit-sum parameters of one group of ``users`` and the certificate charged to them."""

    g: int
    b: int
    p: float
    certificate: Certificate


class ShuffleBitSum(RowPrivatizer):
    """Shuffle model: Cheu et al. bit sums (Alg. 2 for DP-DPE, Alg. 4 for DP-PE).

    Built on :func:`dpcert.mechanisms.shuffle.binomial_sum.calibrate_binomial_sum`, whose certificates are
    re-derived by exact accounting of the binomial counts.  ``paper``: Alg. 2 with Δ₂ = B√s_l as the
    encoding bound (proof of Thm 4.6) and Alg. 4 / eq. 60 for the scalar sums; ``tight``: the least
    noise bits b by exact accounting, encoding each coordinate in [−B, B] (every coordinate of ȳ_u
    lies there, so the encoding never overflows).  The privacy-error variance reported for the
    confidence width is the sub-Gaussian proxy of the estimate's error, (2Δ/g)²·n·(1 + b)/4 for a
    sum of n users (Hoeffding for the rounding bits, b/4 for Bin(b, p)); divided by n² for an
    average this is the rigorous Δ₂²(1 + b)/(g²n) (docs/PAPER_NOTES.md, PN-LZJ-5; the paper's
    360-constant form drops the ceiling in b).

    DP-PE's per-arm sums (:meth:`Contributions.of_rows`) have a different group size n for almost every
    arm and phase.  With the ``tight`` calibration and ``size_grid`` steps per doubling, a group of n users
    uses the calibration (g, b, p) of the largest grid size m <= n (:func:`grid_size`) with
    b_n = max(1, ⌈m·b/n⌉) noise bits per user, and is charged the certificate for m users.  That is
    conservative: the exact profile (:mod:`dpcert.theory.binomial`) depends on (n, b)
    only through the total noise trials M = n·b, and is non-increasing in M because Bin(M', p) is
    Bin(M, p) plus independent noise (post-processing); n·b_n >= m·b.  The cost is a precision g
    chosen for m instead of n: the bound on the rounding variance, n(2B/g)²/4 <= B²·n/m with
    g >= √m, is below 2^{1/steps}·B² (about 1.19·B² for 4 steps) instead of B².
    ``size_grid=None`` calibrates every size exactly.  The ``paper``
    calibration always uses eq. 60 at the actual n (its g = ⌈B√n⌉ is what Lemma C.5 requires).
    All groups are simulated at once (no loop over groups or users).
    """

    model = "shuffle"
    name = "shuffle bit sum"

    def __init__(
        self,
        reward_bound: float,
        epsilon: float,
        delta: float,
        calibration: Calibration | str = Calibration.LEAST_NOISE,
        size_grid: int | None = SIZE_GRID_STEPS,
    ) -> None:
        super().__init__(reward_bound)
        self._set_budget(epsilon, delta, calibration)
        self.size_grid = None if size_grid is None else check.positive_int("size_grid", size_grid)
        self._calibrate = calibrate_binomial_sum
        self._cache: dict[tuple[int, int], Any] = {}
        self._groups: dict[int, GroupProtocol] = {}
        self._grid_certificates: dict[int, Certificate] = {}

    def _protocol(self, users: int, size: int) -> Any:
        key = (users, size)
        if key not in self._cache:
            bound = (
                self.reward_bound * math.sqrt(size)
                if self.calibration is Calibration.PAPER
                else self.reward_bound
            )
            self._cache[key] = self._calibrate(
                self.epsilon,
                self.delta,
                users=users,
                dimension=size,
                bound=bound,
                shape="vector",
                method="paper" if self.calibration is Calibration.PAPER else "exact",
            )
        return self._cache[key]

    def _grid_certificate(self, size: int) -> Certificate:
        """The certificate for ``size`` users with :data:`GRID_NOTE` (re-verified; one per grid size)."""
        if size not in self._grid_certificates:
            base = self._protocol(size, 1).certificate
            self._grid_certificates[size] = with_notes(base, GRID_NOTE)
        return self._grid_certificates[size]

    def group_protocol(self, users: int) -> GroupProtocol:
        """Parameters (g, b, p) for a scalar sum over ``users`` and the certificate to charge them."""
        users = check.positive_int("users", users)
        if users not in self._groups:
            if self.calibration is Calibration.PAPER or self.size_grid is None:
                calibration = self._protocol(users, 1)
                protocol = GroupProtocol(calibration.g, calibration.b, calibration.p, calibration.certificate)
            else:
                size = grid_size(users, self.size_grid)
                calibration = self._protocol(size, 1)
                certificate = self._grid_certificate(size)  # shared by the grid cell: one charge
                bits = max(1, -(-size * calibration.b // users))  # ⌈m·b/n⌉: n·b_n >= m·b
                protocol = GroupProtocol(calibration.g, bits, calibration.p, certificate)
            self._groups[users] = protocol
        return self._groups[users]

    @staticmethod
    def _proxy(calibration: Any, users: int) -> float:
        q = calibration.parameters
        return (2.0 * q.bound / q.g) ** 2 * users * (1.0 + q.b) / 4.0

    def _mean(self, contributions, rows, rng, session) -> Release:
        users, size = rows.shape
        calibration = self._protocol(users, size)
        contributions.charge(session, calibration.certificate)
        estimate = np.asarray(calibration.mechanism().simulate(rows, rng), dtype=float) / users
        variance = np.full(size, self._proxy(calibration, users) / users**2)
        bits = (calibration.g + calibration.b) * size
        return Release(estimate.reshape(size), variance, calibration.certificate, bits, "bits")

    def _sums(self, contributions, rows, groups, rng, session) -> Release:
        """Alg. 4 for every group at once: one protocol run per arm (disjoint users).

        Group k runs the protocol with its own (g_k, b_k, p_k) (:meth:`group_protocol`); all groups
        are simulated at once by :func:`dpcert.mechanisms.shuffle.binomial_sum.simulate_group_sums`.
        """
        group_count = contributions.sums.size
        counts = np.bincount(groups, minlength=group_count)
        present = np.flatnonzero(counts)
        # one protocol per arm, not per user
        protocols = {int(k): self.group_protocol(int(counts[k])) for k in present}
        # charged before any randomness is drawn: a refused charge stops the release
        by_certificate: dict[int, tuple[Certificate, list[int]]] = {}
        for k, protocol in protocols.items():  # one charge per distinct certificate (disjoint users)
            by_certificate.setdefault(id(protocol.certificate), (protocol.certificate, []))[1].append(k)
        worst: Certificate | None = None
        for certificate, members in by_certificate.values():
            contributions.charge(session, certificate, rows=np.isin(groups, members))
            if worst is None or certificate.epsilon > worst.epsilon:
                worst = certificate
        g = np.ones(group_count)
        b = np.zeros(group_count, dtype=np.int64)
        p = np.full(group_count, 0.5)
        for k, protocol in protocols.items():
            g[k], b[k], p[k] = protocol.g, protocol.b, protocol.p
        estimate = simulate_group_sums(rows, groups, g, b, p, self.reward_bound, rng)
        variance = (2.0 * self.reward_bound / g) ** 2 * counts * (1.0 + b) / 4.0  # sub-Gaussian proxy
        bits_per_user = (g + b).astype(np.int64)
        total_bits = int(np.sum(counts * bits_per_user))
        bits = int(bits_per_user[present].max()) if present.size else 0
        return Release(estimate, variance, worst, bits, "bits", total_bits)


def make_privatizer(
    model: str,
    *,
    reward_bound: float,
    epsilon: float | None = None,
    delta: float | None = None,
    calibration: Calibration | str = Calibration.LEAST_NOISE,
    secure: bool = False,
) -> RowPrivatizer:
    """The privatizer of a privacy model (``none``, ``central``, ``local``, ``shuffle``).

    ``secure=True`` (central and local only) draws integer-exact noise; see the module docstring.
    """
    if model not in PRIVACY_MODELS:
        raise InvalidParameter("privacy", model, "one of " + ", ".join(PRIVACY_MODELS))
    if not isinstance(secure, (bool, np.bool_)):
        raise InvalidParameter("secure", secure, "true or false")
    if secure and model not in ("central", "local"):
        raise InvalidParameter("secure", True, f"false with privacy={model} (secure noise: central or local)")
    if model == "none":
        return NonPrivate(reward_bound)
    if epsilon is None or delta is None:
        raise InvalidParameter(
            "epsilon/delta", (epsilon, delta), f"both given (epsilon > 0, 0 < delta < 1) for privacy={model}"
        )
    calibration = calibration_of(calibration)
    if model == "shuffle":
        return ShuffleBitSum(reward_bound, epsilon, delta, calibration)
    cls = CentralGaussian if model == "central" else LocalGaussian
    return cls(reward_bound, epsilon, delta, calibration, secure=bool(secure))
