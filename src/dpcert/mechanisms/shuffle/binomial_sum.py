"""Cheu et al. bit-sum shuffle protocol for scalars, vectors and symmetric matrices, exactly accounted.

API for bandit algorithms
-------------------------
``calibrate_binomial_sum(epsilon, delta, users=n, dimension=d, bound=B, shape=..., method=...)``
returns a :class:`BinomialSumCalibration` with the integer precision ``g``, the number ``b`` of noise
bits per user and coordinate, the bit probability ``p``, ``noise_std`` (the worst-case standard
deviation of each coordinate of the estimated sum) and the :class:`~dpcert.Certificate`;
``.mechanism()`` gives a :class:`BinomialSumMechanism` whose ``simulate(data, rng)`` takes users'
data of shape ``(..., n, d)`` (``shape="vector"``; ``d = 1`` for scalars) or ``(..., n, d, d)``
(``shape="symmetric-matrix"``) with any leading repetition axes and returns the analyzer's estimate
of the *sum* over the ``n`` users, of shape ``(..., d)`` or ``(..., d, d)``.  Simulation draws the
per-coordinate counts directly (exact in distribution; no per-bit work);
``materialize(data, rng)`` emits the actual shuffled bit multisets for small ``n``.
``method="paper"`` uses the theorem parameters (scalar: Li, Zhou & Ji 2022, Alg. 4 / eq. 60,
Thm C.6; vector: Li, Zhou & Ji 2022, Alg. 2, Thm A.2; symmetric matrix or vector+matrix: Chowdhury & Zhou
2022, P_Vec, Thm 3.5 = C.1);
``method="exact"`` uses ``p = 1/2``, ``g = max(4, ⌈√n⌉)`` and the least ``b`` meeting the target by
exact accounting.  Every certificate's claim is re-derived by exact accounting
(:mod:`dpcert.theory.binomial`).  ``norm="l2"`` (exact method, ``p = 1/2``) accounts
for users' vectors of ℓ2 norm (matrices of Frobenius norm) at most ``B`` instead of entry bounds
only, which roughly halves the noise for ``d = 5``; such mechanisms reject data above the norm.
With ``p = 1/2`` (entry bounds) a certificate's profile also offers ``privacy_loss_parts(interval)``,
the pessimistic PLD of a dominating coordinate pair and its count, so that ``compose(...,
method="pld")`` composes several runs (a returning user's batches) tightly, with proven round-off;
``least_noise_bits(..., compositions=M)`` calibrates for M runs.

Protocol (Li, Zhou & Ji 2022, Alg. 4; Chowdhury & Zhou 2022, Alg. 5–7)
----------------------------------------------------------------------
Randomizer: a value ``v ∈ [−B, B]`` is encoded as ``u = (v + B)·g/(2B) ∈ [0, g]`` and rounded at
random, ``x̂ = ⌊u⌋ + Ber(u − ⌊u⌋)`` (unbiased); the user sends ``g + b`` bits per coordinate,
``x̂ + Bin(b, p)`` of them ones.  This is the *safe* encoding range ``2B`` of Li, Zhou & Ji 2022, Alg. 2/4,
and of docs/PAPER_NOTES.md, PN-CZ-1: the encoded value never exceeds ``g`` (Chowdhury & Zhou 2022's
printed ``R(w, Δ = 1)`` with ``w ∈ [0, 2]`` could reach ``2g`` and overflow; this module follows the
safe version).  Shuffler: a uniform permutation of each coordinate's ``n(g + b)`` bits.
Analyzer: ``(2B/g)·(#ones − n·b·p) − n·B`` — re-centred by ``n·B`` (one shift per user), not by
``B`` as in Cheu et al. 2021 (the bug noted by Chowdhury & Zhou 2022; docs/PAPER_NOTES.md,
PN-CZ-2).

Its exact variance per coordinate is ``(2B/g)²·(Σ_i f_i(1 − f_i) + n·b·p(1 − p))`` with ``f_i`` the
fractional part of ``u_i`` (docs/PAPER_NOTES.md, PN-LZJ-5 and PN-CZ-4), at most
``(2B/g)²·n·(1/4 + b·p(1 − p))`` (:attr:`BinomialSumMechanism.noise_std`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert._numerics import least_valid_integer
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.errors import CertificateMismatch, DataOutOfBounds, InvalidParameter, PreconditionFailed
from dpcert.profiles import EVENT_LEVEL, SHUFFLE_OR_CENTRAL, ParameterSpec, register_profile
from dpcert.theory import binomial as exact
from dpcert.theory.gaussian import analytic_gaussian_sigma
from dpcert.theory.pld import pld_self_composed_delta_for

SHAPES = ("vector", "symmetric-matrix", "vector+matrix")
NORMS = ("entry", "l2")
L2_NOTE = (
    "l2-bounded data (vector l2 norm or matrix Frobenius norm <= bound): with coupled rounding the "
    "integer shifts satisfy sum (|t_k| - 1)_+^2 <= g^2; worst case over the maximal shift multisets"
)
METHODS = ("exact", "paper")
EXACT_BASIS = "exact accounting of the shifted binomial count (dpcert), pessimistic PLD across coordinates"
EXACT_L2_BASIS = "exact accounting of the shifted binomial count (dpcert), l2 shift lattice, pessimistic PLD"
ALG4_BASIS = (
    "Li, Zhou & Ji 2022, Alg. 4, eq. 60, Thm C.6 (Cheu et al. 2021 Lemma 3.1 at epsilon/2; "
    "docs/PAPER_NOTES.md, PN-LZJ-4)"
)
ALG2_BASIS = (
    "Li, Zhou & Ji 2022, Alg. 2, eq. 22, Thm A.2 (Cheu et al. 2021 vector summation; integer g, "
    "docs/PAPER_NOTES.md, PN-LZJ-3)"
)
PVEC_BASIS = (
    "Chowdhury & Zhou 2022, P_Vec, Thm 3.5 = C.1 (p = 1/4, C = 24e4; encoding range 2, "
    "docs/PAPER_NOTES.md, PN-CZ-1 and PN-CZ-3)"
)
PLD_NOTE = (
    "p = 1/2: the worst pair of one coordinate, (Bin(n b, 1/2), Bin(n b, 1/2) + g), has the same privacy "
    "loss distribution in both directions (reflect the count), so it is a dominating pair for every "
    "ordered pair of neighbours (Zhu, Dong & Wang 2022, Def. 7) and products of such pairs dominate "
    "adaptive compositions (their Thm 10); the loss PMF is pessimistic (every loss rounded up), the "
    "binomial tails outside the window go to the infinite loss, and compositions carry a proven "
    "floating-point round-off bound"
)
MAX_MATERIALIZED_BITS = 20_000_000
MAX_COORDINATES = 10**9
"""Most coordinates of one protocol run: beyond, the FFT round-off bound of their PLD composition
overflows double precision (10^10 coordinates did)."""

MAX_NOISE_BITS = 10**13
MAX_CALIBRATED_NOISE_BITS = 10**10
"""Most noise bits (users x b) the exact calibration searches: its evaluations grow with sqrt(users x b)
(about 15 s and 0.5 GiB near this limit)."""
NOTES = (
    "safe encoding range 2B: the encoded value never exceeds g (no overflow; docs/PAPER_NOTES.md, PN-CZ-1)",
    "each coordinate's worst case is the pair Bin(n b, p) vs its shift by g, both directions (exact)",
    "coordinates composed as if every one could shift by g (the l2 bound is not used: conservative)",
    "binomial tails beyond the Chernoff window and all PLD roundings go toward more privacy loss",
    "shuffle model, replace-one neighbours with the number n of users fixed and public; assumes all n "
    "users run the randomizer honestly and no one else sees their noise bits (dropouts or colluding "
    "users reveal noise and weaken the guarantee)",
    "several coordinates: FFT round-off is covered by an empirical allowance (1e-9 of the mass "
    "above epsilon), not a proven bound; delta is resolved only down to about 1e-14",
)


def coordinate_count(dimension: int, shape: str) -> int:
    """Number of privatised coordinates: ``d``, ``d(d+1)/2`` or ``d + d(d+1)/2``."""
    triangle = dimension * (dimension + 1) // 2
    return {"vector": dimension, "symmetric-matrix": triangle, "vector+matrix": dimension + triangle}[shape]


def _check_shape(shape: str) -> str:
    if shape not in SHAPES:
        raise InvalidParameter("shape", shape, "one of " + ", ".join(SHAPES))
    return shape


@dataclass(frozen=True)
class BitSumParameters:
    """Parameters of one run of the protocol (one batch of ``users``).

    Parameters
    ----------
    g
        Fixed-point precision: encoded values lie in ``{0, …, g}``.
    b
        Noise bits per user and coordinate.
    p
        Probability of a noise bit being one, ``0 < p < 1``.
    users
        Number ``n`` of users in the batch.
    dimension
        ``d`` (``1`` for scalars).
    bound
        Every coordinate of every user's data lies in ``[−bound, bound]`` (implied by an ℓ2 bound).
    shape
        ``"vector"``, ``"symmetric-matrix"`` (upper triangle privatised) or ``"vector+matrix"``
        (Chowdhury & Zhou 2022, P_Vec: both, accounted jointly).
    norm
        ``"entry"`` (privacy assumes only that every entry lies in ``[−bound, bound]``) or ``"l2"``
        (each user's vector has ℓ2 norm, and matrix Frobenius norm, at most ``bound``: tighter
        accounting, see :func:`~dpcert.theory.binomial.l2_shift_multisets`; needs
        ``p = 1/2``; for ``"vector+matrix"`` the two parts are bounded separately).
    """

    g: int
    b: int
    p: float
    users: int
    dimension: int = 1
    bound: float = 1.0
    shape: str = "vector"
    norm: str = "entry"

    def __post_init__(self) -> None:
        object.__setattr__(self, "g", check.positive_int("g", self.g))
        object.__setattr__(self, "b", check.positive_int("b", self.b))
        object.__setattr__(self, "p", check.probability("p", self.p, open_low=True, open_high=True))
        object.__setattr__(self, "users", check.positive_int("users", self.users))
        object.__setattr__(self, "dimension", check.positive_int("dimension", self.dimension))
        object.__setattr__(self, "bound", check.positive_finite("bound", self.bound))
        _check_shape(self.shape)
        if self.norm not in NORMS:
            raise InvalidParameter("norm", self.norm, "one of " + ", ".join(NORMS))
        if self.norm == "l2" and self.p != 0.5:
            raise InvalidParameter("norm", self.norm, "'entry' unless p = 1/2")
        if self.norm == "l2" and self.coordinates > 1:
            if exact.l2_pattern_count(self.l2_groups, self.g) is None:
                raise InvalidParameter(
                    "g",
                    self.g,
                    f"a precision with at most {exact.MAX_L2_MULTISETS} l2 shift patterns "
                    f"for {self.coordinates} coordinates (more at this g; lower g or use norm='entry')",
                )
        if self.users * self.b > MAX_NOISE_BITS:
            raise InvalidParameter("b", self.b, f"users * b <= {MAX_NOISE_BITS:.0e}")
        if self.coordinates > MAX_COORDINATES:
            raise InvalidParameter(
                "dimension",
                self.dimension,
                f"at most {MAX_COORDINATES:.0e} coordinates (shape {self.shape!r} has {self.coordinates}), "
                "which the composition across coordinates bounds in double precision",
            )

    @property
    def coordinates(self) -> int:
        return coordinate_count(self.dimension, self.shape)

    @property
    def l2_groups(self) -> tuple[int, ...]:
        """Sizes of the groups of coordinates each bounded in ℓ2 by ``bound`` (``norm="l2"``)."""
        triangle = coordinate_count(self.dimension, "symmetric-matrix")
        return {"vector": (self.dimension,), "symmetric-matrix": (triangle,)}.get(
            self.shape, (self.dimension, triangle)
        )

    @property
    def noise_trials(self) -> int:
        """Total noise bits per coordinate, ``n·b``."""
        return self.users * self.b

    @property
    def scale(self) -> float:
        """Value of one encoded unit, ``2B/g``."""
        return 2.0 * self.bound / self.g

    @property
    def noise_std(self) -> float:
        """Worst-case (over inputs) standard deviation of each coordinate of the estimated sum."""
        return self.scale * math.sqrt(self.users * (0.25 + self.b * self.p * (1.0 - self.p)))

    @property
    def privacy_noise_std(self) -> float:
        """Standard deviation of the binomial noise alone, in data units: ``(2B/g)·√(n b p(1−p))``."""
        return self.scale * math.sqrt(self.noise_trials * self.p * (1.0 - self.p))

    @property
    def bits_per_user(self) -> int:
        """Bits each user sends: ``(g + b)`` per coordinate."""
        return (self.g + self.b) * self.coordinates

    def to_dict(self) -> dict[str, Any]:
        return {
            "g": self.g,
            "b": self.b,
            "p": self.p,
            "users": self.users,
            "dimension": self.dimension,
            "bound": self.bound,
            "shape": self.shape,
            "norm": self.norm,
        }


# --------------------------------------------------------------------------- privacy profile
@register_profile(
    "binomial-sum",
    parameters={
        "g": ParameterSpec("integer"),
        "b": ParameterSpec("integer"),
        "p": ParameterSpec("number"),
        "users": ParameterSpec("integer"),
        "dimension": ParameterSpec("integer", required=False),
        "bound": ParameterSpec("number", required=False),
        "shape": ParameterSpec("string", required=False),
        "norm": ParameterSpec("string", required=False),
    },
    trust_models=SHUFFLE_OR_CENTRAL,
    neighbourings=EVENT_LEVEL,
)
class BinomialSumProfile:
    """Exact privacy profile of the bit-sum protocol (replace-one neighbours, analyzer's view).

    Parameters: ``g``, ``b``, ``p``, ``users``, ``dimension``, ``shape`` (``bound`` is recorded but
    does not affect privacy).  One coordinate is exact; several are composed conservatively (see
    :mod:`dpcert.theory.binomial`).
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        given: dict[str, Any] = {"g": None, "b": None, "p": None, "users": None, **parameters}
        self.parameters = BitSumParameters(
            g=given["g"],
            b=given["b"],
            p=given["p"],
            users=given["users"],
            dimension=parameters.get("dimension", 1),
            bound=parameters.get("bound", 1.0),
            shape=parameters.get("shape", "vector"),
            norm=parameters.get("norm", "entry"),
        )
        if self.has_dominating_pair:
            # the composition hook (accounting.composition, method "pld") exists only where it is valid
            self.privacy_loss_parts = self._dominating_parts

    @property
    def has_dominating_pair(self) -> bool:
        """True if one pair of count laws dominates every neighbouring pair (``p = 1/2``, entry bounds).

        With ``p != 1/2`` the two shift directions have different loss laws and the worst case is a
        maximum over them, which is not the profile of any single pair; with ``norm="l2"`` it is a
        maximum over shift patterns.  Such certificates compose through their (ε, δ) claims.
        """
        q = self.parameters
        return q.p == 0.5 and (q.norm == "entry" or q.coordinates == 1)

    def _dominating_parts(self, interval: float) -> list[tuple[Any, int]]:
        """One run as ``[(loss PMF of the dominating coordinate pair, coordinates)]``: the pessimistic
        PMF of a single coordinate and how many times it is composed (by dpcert's proven bound).

        Only set as ``privacy_loss_parts`` when :attr:`has_dominating_pair` (see ``PLD_NOTE``).
        """
        q = self.parameters
        interval = check.positive_finite("interval", interval)
        return [(exact.dominating_loss_pmf(q.noise_trials, q.g, interval), q.coordinates)]

    def _args(self) -> tuple[int, float, int, int]:
        q = self.parameters
        return q.noise_trials, q.p, q.g, q.coordinates

    def _l2(self) -> bool:
        return self.parameters.norm == "l2" and self.parameters.coordinates > 1

    def delta_for(self, epsilon: float) -> float:
        q = self.parameters
        if self._l2():
            return exact.l2_delta(epsilon, q.noise_trials, q.g, q.l2_groups)
        return exact.composed_delta(epsilon, *self._args())

    def meets(self, epsilon: float, delta: float) -> bool:
        """``delta_for(epsilon) <= delta``, decided without evaluating the directions (or ℓ2 shift
        patterns) left once one of them exceeds ``delta``."""
        q = self.parameters
        if self._l2():
            return exact.l2_delta_meets(epsilon, delta, q.noise_trials, q.g, q.l2_groups)
        return exact.composed_delta_meets(epsilon, delta, *self._args())

    def epsilon_for(self, delta: float) -> float:
        q = self.parameters
        if self._l2():
            return exact.l2_epsilon(delta, q.noise_trials, q.g, q.l2_groups)
        return exact.composed_epsilon(delta, *self._args())

    def dp_event(self) -> Any:
        return None


def binomial_sum_certificate(
    parameters: BitSumParameters,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    basis: str = EXACT_BASIS,
    notes: tuple[str, ...] = NOTES,
) -> Certificate:
    """Certificate of the protocol with ``parameters``, verified by exact accounting.

    Give ``delta`` (least ε computed), ``epsilon`` (least δ computed) or both (claim verified).
    """
    guarantee = point_on_profile(
        BinomialSumProfile(parameters.to_dict()),
        epsilon,
        delta,
        reachable_delta="a delta this protocol can reach (larger)",
    )
    if parameters.norm == "l2":
        notes = tuple(n for n in notes if not n.startswith("coordinates composed")) + (L2_NOTE,)
        basis = EXACT_L2_BASIS if basis == EXACT_BASIS else basis
    return Certificate(
        "binomial-sum",
        guarantee,
        TrustModel.SHUFFLE,
        Neighbouring.REPLACE_ONE,
        parameters.to_dict(),
        basis,
        notes,
    ).verify()


# --------------------------------------------------------------------------- the mechanism
@dataclass(frozen=True)
class BinomialSumMechanism:
    """Randomizer, shuffler and analyzer of the bit-sum protocol for one batch of ``users``.

    Parameters
    ----------
    parameters
        The protocol's :class:`BitSumParameters` (``shape`` ``"vector"`` or ``"symmetric-matrix"``).
    certificate
        Its certificate.
    """

    parameters: BitSumParameters
    certificate: Certificate

    def __post_init__(self) -> None:
        if self.parameters.shape == "vector+matrix":
            raise InvalidParameter(
                "shape", "vector+matrix", "'vector' or 'symmetric-matrix' (run one mechanism for each part)"
            )

    @property
    def noise_std(self) -> float:
        return self.parameters.noise_std

    # -- data layout
    def _flatten(self, data: Any) -> tuple[np.ndarray, tuple[int, ...]]:
        """Validated data as ``(..., n, coordinates)`` and the leading repetition shape."""
        q = self.parameters
        array = check.bounded_array("data", data, -q.bound, q.bound)
        if q.shape == "vector":
            if q.dimension == 1 and (array.ndim == 0 or array.shape[-1] != 1):
                array = array[..., None]  # scalars: (..., n) -> (..., n, 1)
            if array.ndim < 2 or array.shape[-2:] != (q.users, q.dimension):
                raise InvalidParameter("data", array.shape, f"shape (..., {q.users}, {q.dimension})")
            self._check_norms(np.sqrt((array**2).sum(axis=-1)))
            return array, array.shape[:-2]
        d = q.dimension
        if array.ndim < 3 or array.shape[-3:] != (q.users, d, d):
            raise InvalidParameter("data", array.shape, f"shape (..., {q.users}, {d}, {d})")
        if not np.allclose(array, np.swapaxes(array, -1, -2), rtol=0.0, atol=1e-12):
            raise InvalidParameter("data", "<non-symmetric matrices>", "symmetric matrices")
        self._check_norms(np.sqrt((array**2).sum(axis=(-2, -1))))
        rows, cols = np.triu_indices(d)
        return array[..., rows, cols], array.shape[:-3]

    def _check_norms(self, norms: np.ndarray) -> None:
        """With ``norm="l2"``, every user's ℓ2 (Frobenius) norm must be at most ``bound``.

        The relative tolerance 1e-12 is harmless: ``Σ (|t_k| − 1)_+²`` is an integer below
        ``g²(1 + 3e-12)``, hence at most ``g²`` for any ``g < 10⁵``.
        """
        q = self.parameters
        if q.norm == "l2" and np.any(norms > q.bound * (1 + 1e-12)):
            raise DataOutOfBounds(
                "data", "<norms above the bound>", f"l2 (Frobenius) norm <= {q.bound} per user"
            )

    def _scalar_layout(self, data: Any) -> bool:
        """True when scalar data come as ``(..., n)``: the estimate is then returned as ``(...)``."""
        q = self.parameters
        shape = np.shape(data)
        return q.shape == "vector" and q.dimension == 1 and (len(shape) == 0 or shape[-1] != 1)

    def _unflatten(self, flat: np.ndarray) -> np.ndarray:
        q = self.parameters
        if q.shape == "vector":
            return flat
        d = q.dimension
        rows, cols = np.triu_indices(d)
        out = np.empty(flat.shape[:-1] + (d, d))
        out[..., rows, cols] = flat
        out[..., cols, rows] = flat
        return out

    # -- randomizer pieces
    def encode(self, data: Any, rng: np.random.Generator) -> np.ndarray:
        """Randomized fixed-point encodings ``x̂ ∈ {0, …, g}``, shape ``(..., n, coordinates)``."""
        rng = check.generator(rng)
        flat, _ = self._flatten(data)
        q = self.parameters
        return encode_values(flat, q.g, q.bound, rng).astype(np.int64)

    def analyze_counts(self, counts: Any) -> np.ndarray:
        """Analyzer on per-coordinate counts of ones (shape ``(..., coordinates)``): the estimated sum."""
        q = self.parameters
        counts = np.asarray(counts, dtype=float)
        return self._unflatten(analyze_count(counts, q.g, q.noise_trials, q.p, q.users, q.bound))

    def analyze_bits(self, bits: Any) -> np.ndarray:
        """Analyzer on shuffled bit multisets of shape ``(..., coordinates, n(g + b))``."""
        return self.analyze_counts(np.asarray(bits).sum(axis=-1))

    # -- whole protocol
    def __call__(self, data: Any, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """``mechanism(value, rng)`` form: :meth:`simulate`; with ``size``, that many independent runs."""
        if size is not None:
            array = np.asarray(data, dtype=float)
            data = np.broadcast_to(array, (check.positive_int("size", size),) + array.shape)
        return self.simulate(data, rng)

    def simulate_counts(
        self, data: Any, rng: np.random.Generator, noise_rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """Per-coordinate counts of ones seen by the analyzer, drawn exactly in distribution.

        The rounding bits come from ``rng``, the binomial noise counts from ``noise_rng`` (default
        ``rng``, drawn after the rounding bits).
        """
        encoded = self.encode(data, rng)
        q = self.parameters
        noise_rng = rng if noise_rng is None else check.generator(noise_rng)
        noise = noise_rng.binomial(q.noise_trials, q.p, size=encoded.shape[:-2] + encoded.shape[-1:])
        return encoded.sum(axis=-2) + noise

    def simulate(
        self, data: Any, rng: np.random.Generator, noise_rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """The analyzer's estimate of the sum over users, shape ``(..., d)`` or ``(..., d, d)``.

        Scalar data given as ``(..., n)`` give estimates of shape ``(...)``.  ``noise_rng``: as in
        :meth:`simulate_counts`.
        """
        estimate = self.analyze_counts(self.simulate_counts(data, rng, noise_rng))
        return estimate[..., 0] if self._scalar_layout(data) else estimate

    def materialize(self, data: Any, rng: np.random.Generator) -> np.ndarray:
        """The shuffled bit multisets themselves, ``uint8`` of shape ``(..., coordinates, n(g + b))``.

        Each user emits, per coordinate, ``x̂`` unary ones, ``g − x̂`` zeros and ``b`` Bernoulli(p)
        noise bits; the shuffler permutes each coordinate's bits uniformly.  Small ``n`` only.
        """
        encoded = self.encode(data, rng)
        q = self.parameters
        total = encoded.size * (q.g + q.b)
        if total > MAX_MATERIALIZED_BITS:
            raise InvalidParameter(
                "data", f"<{total} bits>", f"at most {MAX_MATERIALIZED_BITS} bits in total"
            )
        unary = (np.arange(q.g) < encoded[..., None]).astype(np.uint8)
        noise = (rng.random(encoded.shape + (q.b,)) < q.p).astype(np.uint8)
        bits = np.concatenate([unary, noise], axis=-1)  # (..., n, coords, g + b)
        bits = np.moveaxis(bits, -3, -2)  # (..., coords, n, g + b)
        bits = bits.reshape(bits.shape[:-2] + (q.users * (q.g + q.b),))
        return rng.permuted(bits, axis=-1)

    def variance(self, data: Any) -> np.ndarray:
        """Exact variance of each coordinate of the estimate for these inputs (flattened layout)."""
        flat, _ = self._flatten(data)
        q = self.parameters
        scaled = (flat + q.bound) * (q.g / (2.0 * q.bound))
        frac = scaled - np.floor(scaled)
        rounding = (frac * (1.0 - frac)).sum(axis=-2)
        return q.scale**2 * (rounding + q.noise_trials * q.p * (1.0 - q.p))


def encode_values(values: np.ndarray, g: Any, bound: float, rng: np.random.Generator) -> np.ndarray:
    """The randomizer's encodings ``⌊u⌋ + Ber(u − ⌊u⌋)``, ``u = (v + B)·g/(2B)`` clipped to ``[0, g]``.

    ``g`` is the precision, a number or an array broadcasting against ``values`` (one per user).
    """
    scaled = np.clip((values + bound) * (g / (2.0 * bound)), 0.0, g)
    floor = np.floor(scaled)
    return floor + (rng.random(scaled.shape) < scaled - floor)


def analyze_count(count: Any, g: Any, trials: Any, p: Any, users: Any, bound: float) -> Any:
    """The analyzer ``(2B/g)·(count − n·b·p) − n·B`` (re-centred by ``n·B``, one shift per user)."""
    return (2.0 * bound / g) * (count - trials * p) - users * bound


def simulate_group_sums(
    values: np.ndarray,
    groups: np.ndarray,
    g: np.ndarray,
    b: np.ndarray,
    p: np.ndarray,
    bound: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """One run of the scalar protocol per group, all groups at once (disjoint users).

    User ``i`` holds ``values[i] ∈ [−bound, bound]`` and belongs to group ``groups[i]``; group ``k``
    of ``n_k`` users runs :class:`BinomialSumMechanism` with precision ``g[k]``, ``b[k]`` noise bits
    per user and bit probability ``p[k]``, so the analyzer sees ``C_k = Σ x̂_i + Bin(n_k b_k, p_k)``
    and returns :func:`analyze_count` of it (the law of :meth:`BinomialSumMechanism.simulate` for
    each group; no loop over groups or users).  Empty groups give 0.  Inputs are the caller's to
    validate (the mechanism's own checks are per batch).
    """
    counts = np.bincount(groups, minlength=g.size)
    encoded = encode_values(values, g[groups], bound, rng)
    trials = counts * b
    ones = np.bincount(groups, weights=encoded, minlength=g.size) + rng.binomial(trials, p)
    return np.where(counts > 0, analyze_count(ones, g, trials, p, counts, bound), 0.0)


# --------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class BinomialSumCalibration:
    """Result of :func:`calibrate_binomial_sum`."""

    parameters: BitSumParameters
    certificate: Certificate
    method: str

    @property
    def g(self) -> int:
        return self.parameters.g

    @property
    def b(self) -> int:
        return self.parameters.b

    @property
    def p(self) -> float:
        return self.parameters.p

    @property
    def noise_std(self) -> float:
        return self.parameters.noise_std

    def mechanism(self, shape: str | None = None) -> BinomialSumMechanism:
        """The mechanism (for ``"vector+matrix"`` pass ``shape="vector"`` or ``"symmetric-matrix"``)."""
        parameters = self.parameters
        if shape is not None and shape != parameters.shape:
            parameters = BitSumParameters(**{**parameters.to_dict(), "shape": _check_shape(shape)})
        return BinomialSumMechanism(parameters, self.certificate)


def _paper_range(epsilon: float, delta: float, eps_max: float, inclusive: bool, basis: str) -> None:
    if not (epsilon <= eps_max if inclusive else epsilon < eps_max):
        rel = "<=" if inclusive else "<"
        raise PreconditionFailed(f"{basis} requires 0 < epsilon {rel} {eps_max:g}, got epsilon={epsilon!r}")
    if not 0.0 < delta < 0.5:
        raise PreconditionFailed(f"{basis} requires 0 < delta < 1/2, got delta={delta!r}")


def paper_parameters(
    epsilon: float, delta: float, users: int, dimension: int = 1, bound: float = 1.0, shape: str = "vector"
) -> tuple[BitSumParameters, str]:
    """The theorem parameters ``(g, b, p)`` and the theorem they come from.

    * scalar (``shape="vector"``, ``d = 1``): Li, Zhou & Ji 2022, eq. 60 — ``g = ⌈B√n⌉``,
      ``b = ⌈180 g² ln(2/δ)/((ε/2)² n)⌉``, ``p = 90 g² ln(2/δ)/(b (ε/2)² n)``; Thm C.6 (ε < 30,
      δ < 1/2).  Eq. 60 is partly illegible in the published text; this is the reading followed
      (docs/PAPER_NOTES.md, PN-LZJ-4).
    * vector (``d > 1``): Li, Zhou & Ji 2022, Alg. 2 — ``ε̂ = ε/(18√ln(2/δ))``,
      ``g = ⌈max{ε̂√n/(6√(5 ln(4d/δ))), √d, 10}⌉`` (integer g, docs/PAPER_NOTES.md, PN-LZJ-3),
      ``b = ⌈180 g² ln(4d/δ)/(ε̂² n)⌉``, ``p = 90 g² ln(4d/δ)/(b ε̂² n)``; Thm 4.6 (ε < 15, δ < 1/2).
    * symmetric matrix or vector+matrix: Chowdhury & Zhou 2022, P_Vec — ``p = 1/4``, ``g = ⌈max{2√n, d, 4}⌉``,
      ``b = ⌈24·10⁴ g² ln²(4(d²+1)/δ)/(ε² n)⌉``; Thm 3.5 = C.1 (ε <= 15, δ < 1/2).
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    users = _users(users)
    dimension = check.positive_int("dimension", dimension)
    bound = check.positive_finite("bound", bound)
    shape = _check_shape(shape)
    if shape == "vector" and dimension == 1:
        _paper_range(epsilon, delta, 30.0, False, ALG4_BASIS)
        if not math.isfinite(bound * math.sqrt(users)):  # g = ⌈B√n⌉ beyond every float: b with it
            _refuse_too_many_bits(users, math.inf, math.inf, ALG4_BASIS, epsilon, bound, dimension)
        g = math.ceil(bound * math.sqrt(users))
        a0 = _quotient(180.0 * g * g * math.log(2.0 / delta), (epsilon / 2.0) ** 2 * users)
        _refuse_too_many_bits(users, a0, g, ALG4_BASIS, epsilon, bound, dimension)
        b = math.ceil(a0)
        p = (a0 / 2.0) / b
        basis = ALG4_BASIS
    elif shape == "vector":
        _paper_range(epsilon, delta, 15.0, False, ALG2_BASIS)
        log_term = math.log(4.0 * dimension / delta)
        eps_hat = epsilon / (18.0 * math.sqrt(math.log(2.0 / delta)))
        g = math.ceil(
            max(eps_hat * math.sqrt(users) / (6.0 * math.sqrt(5.0 * log_term)), math.sqrt(dimension), 10)
        )
        a0 = _quotient(180.0 * g * g * log_term, eps_hat**2 * users)
        _refuse_too_many_bits(users, a0, g, ALG2_BASIS, epsilon, bound, dimension)
        b = math.ceil(a0)
        p = (a0 / 2.0) / b
        basis = ALG2_BASIS
    else:
        _paper_range(epsilon, delta, 15.0, True, PVEC_BASIS)
        g = math.ceil(max(2.0 * math.sqrt(users), dimension, 4))
        bits = _quotient(24e4 * g * g * math.log(4.0 * (dimension**2 + 1) / delta) ** 2, epsilon**2 * users)
        _refuse_too_many_bits(users, bits, g, PVEC_BASIS, epsilon, bound, dimension)
        b = math.ceil(bits)
        p = 0.25
        basis = PVEC_BASIS
    if p >= 1.0:  # cannot happen for the ranges above; kept as a guard on the theorem's algebra
        raise PreconditionFailed(f"{basis}: p = {p} is not a probability")
    _refuse_too_many_bits(users, b, g, basis, epsilon, bound, dimension)
    return BitSumParameters(g, b, p, users, dimension, bound, shape), basis


def _quotient(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` of positive numbers, ``inf`` where the denominator (a power of a tiny
    epsilon) underflowed to 0: refused as too many noise bits, never a division by zero."""
    return numerator / denominator if denominator > 0.0 else math.inf


def _refuse_too_many_bits(
    users: int, b: float, g: float, basis: str, epsilon: float, bound: float, dimension: int
) -> None:
    """Refuse theorem parameters with more than ``MAX_NOISE_BITS`` noise bits (``b`` may be the
    real number before rounding up, possibly infinite: refused before any integer is formed)."""
    if users * b <= MAX_NOISE_BITS:  # b grows with g^2 / epsilon^2, g with the bound (scalar) or d
        return
    named = "epsilon/bound" if basis == ALG4_BASIS else "epsilon/dimension"
    raise InvalidParameter(
        named,
        (epsilon, bound if basis == ALG4_BASIS else dimension),
        f"values whose theorem parameters need users * b <= {MAX_NOISE_BITS:.0e} noise bits "
        f"({users * b:.3g} here, g = {g}): a larger epsilon, or "
        + ("a smaller bound" if basis == ALG4_BASIS else "a smaller dimension"),
    )


def _users(users: object) -> int:
    """A number of users: every user sends at least one noise bit, so at most ``MAX_NOISE_BITS``."""
    count = check.positive_int("users", users)
    if count > MAX_NOISE_BITS:
        raise InvalidParameter("users", users, f"at most {MAX_NOISE_BITS:.0e} users (users * b <= 1e+13)")
    return count


def default_precision(users: int) -> int:
    """``g = max(4, ⌈√n⌉)``: the rounding variance of the sum is at most ``B²`` (``n (2B/g)²/4``)."""
    return max(4, math.isqrt(users - 1) + 1 if users > 1 else 1)


def composed_interval(epsilon: float, coordinates: int, compositions: int) -> float:
    """PLD grid for ``compositions`` runs of ``coordinates`` coordinates: ``1e-4``, finer (down to
    ``1e-6``) so that the upward rounding of every composed loss adds at most about ``ε/100`` in all."""
    return max(1e-6, min(1e-4, 0.01 * max(epsilon, 1e-2) / (coordinates * compositions)))


def least_noise_bits(
    epsilon: float,
    delta: float,
    template: BitSumParameters,
    compositions: int = 1,
    interval: float | None = None,
) -> int:
    """Least ``b`` for which ``compositions`` runs of ``template`` (with that ``b``) have ``δ(ε) <= delta``.

    One run (``compositions = 1``) is accounted exactly (:class:`BinomialSumProfile`); several runs (a
    returning user's batches, adaptively composed) by the ``compositions``-fold self-composition of the
    run's pessimistic PLD (needs :attr:`BinomialSumProfile.has_dominating_pair`), composed with the
    proven round-off bound of :func:`dpcert.theory.pld.pld_self_composed_delta_for` on
    the grid ``interval`` (default :func:`composed_interval`).  Monotone in ``b``: one more noise bit
    per coordinate is independent noise added to each count, a post-processing of every run.
    """
    users, g, p, coordinates = template.users, template.g, template.p, template.coordinates
    layout = template.to_dict()
    compositions = check.positive_int("compositions", compositions)
    if compositions > 1:
        if not BinomialSumProfile({**layout, "b": 1}).has_dominating_pair:
            raise InvalidParameter(
                "p",
                p,
                "1/2 with norm='entry' to compose runs by their PLD (other settings: compose certificates)",
            )
        grid = composed_interval(epsilon, coordinates, compositions) if interval is None else interval
        grid = check.positive_finite("interval", grid)

    def valid(b: int) -> bool:
        profile = BinomialSumProfile({**layout, "b": b})
        if compositions == 1:
            return profile.meets(epsilon, delta)
        ((single, coordinates),) = profile.privacy_loss_parts(grid)
        return pld_self_composed_delta_for(single, coordinates * compositions, epsilon) <= delta

    if template.norm == "l2" and coordinates > 1:  # a starting guess only: Gaussian with the l2 shift
        shift = g * math.sqrt(len(template.l2_groups)) + math.sqrt(coordinates)
        sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity=shift)
    else:
        sigma = analytic_gaussian_sigma(
            epsilon, delta, sensitivity=float(g), compositions=coordinates * compositions
        )
    guess = max(1, math.ceil(sigma**2 / (users * p * (1.0 - p))))
    if guess > 2 * (MAX_CALIBRATED_NOISE_BITS // users):  # refused before any (large) exact evaluation
        raise InvalidParameter(
            "epsilon",
            epsilon,
            f"an epsilon reachable with users * b <= {MAX_CALIBRATED_NOISE_BITS:.0e} noise bits (about "
            f"{guess * users:.2g} are needed here): a larger epsilon or delta, or more users",
        )
    # The Gaussian guess is usually within a few per cent: bracket with steps of about 3 % around it
    ceiling = MAX_CALIBRATED_NOISE_BITS // users
    start = min(guess, ceiling)
    bits = least_valid_integer(valid, start, below=0, step=max(1, start // 32), ceiling=ceiling)
    if bits is None:
        raise InvalidParameter(
            "epsilon",
            epsilon,
            f"an epsilon reachable with users * b <= {MAX_CALIBRATED_NOISE_BITS:.0e} noise bits at "
            f"delta = {delta:g}: a larger epsilon or delta, or more users",
        )
    return bits


L2_PATTERN_LIMIT = 150
"""The most ℓ2 shift patterns the exact calibration enumerates at its default precision."""


def exact_default_precision(
    users: int, dimension: int, bound: float = 1.0, shape: str = "vector", norm: str = "entry"
) -> int:
    """The precision g of :func:`calibrate_binomial_sum` with ``method="exact"`` and no ``g`` given:
    :func:`default_precision`, lowered under the ℓ2 norm (more than one coordinate) to the largest g
    with at most :data:`L2_PATTERN_LIMIT` shift patterns."""
    g = default_precision(users)
    if norm == "l2" and coordinate_count(dimension, shape) > 1:
        groups = BitSumParameters(g, 1, 0.5, users, dimension, bound, shape).l2_groups
        g = _largest_precision_with_few_patterns(groups, g, L2_PATTERN_LIMIT)
    return g


def _largest_precision_with_few_patterns(groups: tuple[int, ...], ceiling: int, limit: int) -> int:
    """Bisection for a large ``g <= ceiling`` with at most ``limit`` ℓ2 shift patterns (``g = 1`` has one).

    The pattern count grows with ``g``; should it not be monotone somewhere, the ``g`` returned
    still has at most ``limit`` patterns, it may only not be the largest such precision.
    """
    # the least precision with too many patterns, searched in (1, ceiling]: g = 1 has one pattern
    too_many = least_valid_integer(
        lambda g: exact.l2_pattern_count(groups, g, limit) is None,
        ceiling,
        below=1,
        step=max(1, ceiling - 1),
        ceiling=ceiling,
    )
    return ceiling if too_many is None else too_many - 1


def calibrate_binomial_sum(
    epsilon: float,
    delta: float,
    *,
    users: int,
    dimension: int = 1,
    bound: float = 1.0,
    shape: str = "vector",
    method: str = "exact",
    g: int | None = None,
    p: float = 0.5,
    norm: str = "entry",
) -> BinomialSumCalibration:
    """Parameters ``(g, b, p)`` for a sum over ``users`` meeting (ε, δ), with their certificate.

    Parameters
    ----------
    epsilon, delta
        Target shuffle-DP guarantee of one run (replace-one neighbours).
    users, dimension, bound, shape
        See :class:`BitSumParameters`.
    method
        ``"exact"``: least ``b`` by exact accounting for the given (or default) ``g`` and ``p``;
        ``"paper"``: the theorem parameters of :func:`paper_parameters`, their claim re-verified by
        exact accounting.
    g, p
        Precision and bit probability for ``method="exact"`` (default ``max(4, ⌈√n⌉)`` and 1/2).
    norm
        ``"entry"`` or ``"l2"`` (see :class:`BitSumParameters`; exact method only).  With ``"l2"`` the
        default ``g`` is lowered if needed so that at most 150 shift patterns are enumerated
        (:func:`exact_default_precision`).
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    users = _users(users)
    dimension = check.positive_int("dimension", dimension)
    shape = _check_shape(shape)
    if method == "paper":
        parameters, basis = paper_parameters(epsilon, delta, users, dimension, bound, shape)
        try:
            certificate = binomial_sum_certificate(parameters, epsilon=epsilon, delta=delta, basis=basis)
        except CertificateMismatch as exc:
            raise PreconditionFailed(
                f"{basis}: the theorem's claim could not be confirmed by exact accounting ({exc})"
            ) from exc
        return BinomialSumCalibration(parameters, certificate, method)
    if method != "exact":
        raise InvalidParameter("method", method, "one of " + ", ".join(METHODS))
    if norm not in NORMS:
        raise InvalidParameter("norm", norm, "one of " + ", ".join(NORMS))
    if g is None:
        g = exact_default_precision(users, dimension, bound, shape, norm)
    g = check.positive_int("g", g)
    p = check.probability("p", p, open_low=True, open_high=True)
    template = BitSumParameters(g, 1, p, users, dimension, bound, shape, norm)  # validates the combination
    b = least_noise_bits(epsilon, delta, template)
    parameters = BitSumParameters(g, b, p, users, dimension, bound, shape, norm)
    certificate = binomial_sum_certificate(parameters, epsilon=epsilon, delta=delta)
    return BinomialSumCalibration(parameters, certificate, method)
