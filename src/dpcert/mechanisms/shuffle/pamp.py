"""Shuffle protocols from local randomizers, with amplified certificates; P_Amp of Chowdhury & Zhou 2022.

API for bandit algorithms
-------------------------
``calibrate_pamp(epsilon, delta, users=B, dimension=d, method=...)`` returns a :class:`PAmpCalibration`
with the Gaussian local randomizer's ``sigma``, its local (ε0, δ0) and the certificate of the shuffled
batch; ``.mechanism()`` is a :class:`GaussianShuffleSum` whose ``simulate(vectors, matrices, rng)`` takes
vectors ``(..., B, d)`` (ℓ2 norm <= 1) and symmetric matrices ``(..., B, d, d)`` (Frobenius norm <= 1)
with any leading repetition axes and returns the analyzer's noisy sums ``(..., d)`` and ``(..., d, d)``
(exact in distribution: the sum of B Gaussian messages is one Gaussian).  ``method="paper"`` is
Chowdhury & Zhou 2022, Thm 3.2 = B.1 (its preconditions are checked; the certificate states what Lemma
B.4 proves, O(ε, δ); docs/PAPER_NOTES.md, PN-CZ-5); ``"closed-form"`` and ``"numeric"``
return the least σ meeting (ε, δ) exactly with the closed form or FMT's numeric bound.

P_Amp (Chowdhury & Zhou 2022, Alg. 2–4): each user adds N(0, σ²) to every entry of ``φy`` and,
symmetrically, to every upper-triangle entry of ``φφᵀ``; the shuffler permutes the vector messages and,
independently, the matrix messages; the analyzer sums them.  One user's pair of messages is a Gaussian
mechanism of ℓ2-sensitivity ``2√2`` (vector difference <= 2, upper-triangle difference <= Frobenius <=
2), so its exact local profile is the analytic Gaussian one (Balle & Wang 2018, Thm 8).  Shuffling the
two lists separately is post-processing of shuffling the pairs, so amplification of the pair applies.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert._numerics import least_noise
from dpcert.certificates import Certificate, TrustModel
from dpcert.errors import InvalidParameter, PreconditionFailed
from dpcert.mechanisms.discrete_gaussian_l2 import DiscreteGaussianL2Profile
from dpcert.mechanisms.shuffle import amplification as shuffled_amplification
from dpcert.profiles import EVENT_LEVEL, SHUFFLE_OR_CENTRAL, ParameterSpec, register_profile
from dpcert.theory import amplification
from dpcert.theory.gaussian import gaussian_delta

PAMP_METHODS = ("paper", "closed-form", "numeric")
PAMP_SENSITIVITY = 2.0 * math.sqrt(2.0)
PAMP_PAPER_BASIS = (
    "Chowdhury & Zhou 2022, Thm 3.2 = B.1 with Lemma B.4 (Feldman, McMillan & Talwar 2020, Thm 3.8; "
    "docs/PAPER_NOTES.md, PN-CZ-5)"
)


@dataclass(frozen=True)
class ShuffleProtocol:
    """A one-round shuffle protocol ``(R, S, A)`` over a batch of users.

    Parameters
    ----------
    randomizer
        ``randomizer(values, rng)`` maps the batch's data, leading axis = users, to their messages
        (same leading axis); vectorised over users.
    analyzer
        ``analyzer(messages)`` maps the shuffled messages to the output.
    local_certificate
        The randomizer's (ε0, δ0)-LDP certificate (trust model ``local``).
    """

    randomizer: Callable[[np.ndarray, np.random.Generator], np.ndarray]
    analyzer: Callable[[np.ndarray], Any]
    local_certificate: Certificate

    def __post_init__(self) -> None:
        if self.local_certificate.trust_model is not TrustModel.LOCAL:
            raise InvalidParameter(
                "local_certificate",
                self.local_certificate.trust_model.value,
                "a certificate with trust model local",
            )

    def shuffle(self, messages: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random permutation of the messages (leading axis)."""
        return messages[check.generator(rng).permutation(len(messages))]

    def run(self, values: Any, rng: np.random.Generator) -> Any:
        rng = check.generator(rng)
        return self.analyzer(self.shuffle(np.asarray(self.randomizer(np.asarray(values), rng)), rng))

    def certificate(self, users: int, *, delta: float, method: str = "numeric") -> Certificate:
        """The amplified certificate of the shuffled view of ``users`` reports (least ε at ``delta``)."""
        return shuffled_amplification.amplification_certificate(
            self.local_certificate.epsilon,
            users,
            delta=delta,
            delta0=self.local_certificate.delta,
            method=method,
            extra_parameters={"local_mechanism": self.local_certificate.mechanism},
        )


# --------------------------------------------------------------------------- P_Amp
def pamp_paper_sigma(epsilon: float, delta: float, users: int) -> float:
    """σ = 4√(2 ln(2.5B/δ) ln(2/δ))/(ε√B) of Chowdhury & Zhou 2022, Thm 3.2 = B.1."""
    return (
        4.0
        * math.sqrt(2.0 * math.log(2.5 * users / delta) * math.log(2.0 / delta))
        / (epsilon * math.sqrt(users))
    )


def local_delta(epsilon0: float, sigma: float, sensitivity: float = PAMP_SENSITIVITY) -> float:
    """Exact δ0(ε0) of one user's P_Amp message pair (analytic Gaussian at ``sensitivity``, default 2√2)."""
    return gaussian_delta(epsilon0, sensitivity / sigma)


def permute_messages(messages: np.ndarray, axis: int, rng: np.random.Generator) -> np.ndarray:
    """Permute whole messages along ``axis`` (the users), independently for every leading index."""
    rng = check.generator(rng)
    lead = messages.shape[: axis + 1]
    order = np.argsort(rng.random(lead), axis=-1)
    order = order.reshape(lead + (1,) * (messages.ndim - axis - 1))
    return np.take_along_axis(messages, order, axis=axis)


class _LocallyCheckedAmplification(shuffled_amplification.AmplificationProfile):
    """An amplified profile that holds only if the local randomizer meets its stated (ε0, δ0):
    subclasses set ``local_holds`` from their own parameters; otherwise no guarantee (δ = 1)."""

    local_holds: bool = False

    def delta_for(self, epsilon: float) -> float:
        return super().delta_for(epsilon) if self.local_holds else 1.0

    def epsilon_for(self, delta: float) -> float:
        return super().epsilon_for(delta) if self.local_holds else math.inf


@register_profile(
    "pamp",
    parameters={
        **shuffled_amplification.AMPLIFICATION_PARAMETERS,
        "sigma": ParameterSpec("number"),
        "sensitivity": ParameterSpec("number", required=False),
    },
    trust_models=SHUFFLE_OR_CENTRAL,
    neighbourings=EVENT_LEVEL,
)
class PAmpProfile(_LocallyCheckedAmplification):
    """Amplified profile of P_Amp; the local (ε0, δ0) is re-derived from ``sigma`` (analytic Gaussian at
    ``sensitivity``, default ``2√2``) and, if it does not hold, no guarantee is given (δ = 1)."""

    def __init__(self, parameters: Any) -> None:
        super().__init__(parameters)
        sigma = check.positive_finite("sigma", parameters.get("sigma"))
        sensitivity = check.positive_finite("sensitivity", parameters.get("sensitivity", PAMP_SENSITIVITY))
        self.local_holds = gaussian_delta(self.epsilon0, sensitivity / sigma) <= self.delta0


@register_profile(
    "pamp-secure",
    parameters={
        **shuffled_amplification.AMPLIFICATION_PARAMETERS,
        "sigma": ParameterSpec("number"),
        "l2_sensitivity": ParameterSpec("number"),
        "coordinates": ParameterSpec("integer"),
        "granularity": ParameterSpec("number", required=False),
        "sampler": ParameterSpec("string", required=False, choices=("integer-exact",)),
    },
    trust_models=SHUFFLE_OR_CENTRAL,
    neighbourings=EVENT_LEVEL,
)
class SecurePAmpProfile(_LocallyCheckedAmplification):
    """Amplified profile of P_Amp with the integer-exact ℓ2 discrete Gaussian randomizer.

    ``sigma`` and ``l2_sensitivity`` are in grid steps (the rounded statistic's integer shift, as in
    :mod:`dpcert.mechanisms.discrete_gaussian_l2`); the local (ε0, δ0) is re-derived from them through
    that profile (zCDP, Canonne, Kamath & Steinke 2020, Thm 14 and Cor. 13) and, if it does not hold,
    no guarantee is given (δ = 1).  Amplification: Feldman, McMillan & Talwar 2020, Thm 3.2 and 3.8, valid
    for any (ε0, δ0)-LDP randomizer.
    """

    def __init__(self, parameters: Any) -> None:
        super().__init__(parameters)
        local = DiscreteGaussianL2Profile(
            {key: parameters.get(key) for key in ("sigma", "l2_sensitivity", "coordinates")}
        )
        self.local_holds = local.delta_for(self.epsilon0) <= self.delta0


def secure_pamp_certificate(
    sigma_steps: int,
    l2_sensitivity: float,
    coordinates: int,
    granularity: float,
    epsilon0: float,
    delta0: float,
    users: int,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    notes: tuple[str, ...] = (),
) -> Certificate:
    """Certificate of a shuffled batch of ``users`` secure P_Amp messages (:class:`SecurePAmpProfile`)."""
    return shuffled_amplification.amplification_certificate(
        epsilon0,
        users,
        epsilon=epsilon,
        delta=delta,
        delta0=delta0,
        method="numeric",
        mechanism="pamp-secure",
        extra_parameters={
            "sigma": float(sigma_steps),
            "l2_sensitivity": float(l2_sensitivity),
            "coordinates": int(coordinates),
            "granularity": float(granularity),
            "sampler": "integer-exact",
        },
        notes=tuple(notes)
        + ("local (epsilon0, delta0) re-derived from the integer-exact randomizer's l2 zCDP profile",),
    )


@dataclass(frozen=True)
class GaussianShuffleSum:
    """P_Amp for a batch of ``users``: Gaussian local randomizer, two shuffles, summing analyzer."""

    sigma: float
    users: int
    dimension: int
    certificate: Certificate

    def randomize(
        self, vectors: Any, matrices: Any, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every user's messages: ``vectors + N(0, σ²)``, ``matrices +`` symmetric N(0, σ²) noise."""
        rng = check.generator(rng)
        vectors, matrices = self._validate(vectors, matrices)
        noisy_vectors = vectors + rng.normal(0.0, self.sigma, size=vectors.shape)
        upper = rng.normal(0.0, self.sigma, size=matrices.shape)
        upper = np.triu(upper)
        noise = upper + np.swapaxes(np.triu(upper, 1), -1, -2)
        return noisy_vectors, matrices + noise

    def shuffle_vectors(self, messages: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Uniformly permute whole vector messages over the users' axis (``-2``), per repetition."""
        return permute_messages(messages, messages.ndim - 2, rng)

    def shuffle_matrices(self, messages: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Uniformly permute whole matrix messages over the users' axis (``-3``), independently."""
        return permute_messages(messages, messages.ndim - 3, rng)

    def simulate(
        self, vectors: Any, matrices: Any, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """The analyzer's sums, drawn exactly in distribution (one Gaussian per entry)."""
        rng = check.generator(rng)
        vectors, matrices = self._validate(vectors, matrices)
        scale = self.sigma * math.sqrt(self.users)
        vector_sum = vectors.sum(axis=-2) + rng.normal(
            0.0, scale, size=vectors.shape[:-2] + (self.dimension,)
        )
        upper = np.triu(rng.normal(0.0, scale, size=matrices.shape[:-3] + (self.dimension, self.dimension)))
        noise = upper + np.swapaxes(np.triu(upper, 1), -1, -2)
        return vector_sum, matrices.sum(axis=-3) + noise

    @property
    def noise_std(self) -> float:
        """Standard deviation of each entry of either sum, ``σ√B``."""
        return self.sigma * math.sqrt(self.users)

    def _validate(self, vectors: Any, matrices: Any) -> tuple[np.ndarray, np.ndarray]:
        vectors = check.finite_array("vectors", vectors)
        matrices = check.finite_array("matrices", matrices)
        d, n = self.dimension, self.users
        if vectors.shape[-2:] != (n, d):
            raise InvalidParameter("vectors", vectors.shape, f"shape (..., {n}, {d})")
        if matrices.shape[-3:] != (n, d, d):
            raise InvalidParameter("matrices", matrices.shape, f"shape (..., {n}, {d}, {d})")
        if np.any(np.linalg.norm(vectors, axis=-1) > 1.0 + 1e-12):
            raise InvalidParameter("vectors", "<norms above 1>", "l2 norm <= 1")
        if np.any(np.sqrt((matrices**2).sum(axis=(-1, -2))) > 1.0 + 1e-12):
            raise InvalidParameter("matrices", "<Frobenius norms above 1>", "Frobenius norm <= 1")
        if not np.allclose(matrices, np.swapaxes(matrices, -1, -2), rtol=0, atol=1e-12):
            raise InvalidParameter("matrices", "<non-symmetric>", "symmetric matrices")
        return vectors, matrices


@dataclass(frozen=True)
class PAmpCalibration:
    """Result of :func:`calibrate_pamp`."""

    sigma: float
    epsilon0: float
    delta0: float
    users: int
    dimension: int
    certificate: Certificate
    method: str

    def mechanism(self) -> GaussianShuffleSum:
        return GaussianShuffleSum(self.sigma, self.users, self.dimension, self.certificate)

    @property
    def noise_std(self) -> float:
        return self.sigma * math.sqrt(self.users)


def _pamp_certificate(
    sigma: float,
    epsilon0: float,
    delta0: float,
    users: int,
    method: str,
    *,
    epsilon=None,
    delta=None,
    sensitivity: float = PAMP_SENSITIVITY,
) -> Certificate:
    """Certificate of the shuffled P_Amp batch; the local (ε0, δ0) is re-checked from σ."""
    if local_delta(epsilon0, sigma, sensitivity) > delta0:
        raise PreconditionFailed(f"sigma={sigma!r} does not give the local ({epsilon0!r}, {delta0!r})-LDP")
    return shuffled_amplification.amplification_certificate(
        epsilon0,
        users,
        epsilon=epsilon,
        delta=delta,
        delta0=delta0,
        method=method,
        mechanism="pamp",
        extra_parameters={"sigma": sigma, "sensitivity": sensitivity},
        notes=("local (epsilon0, delta0) re-derived from sigma by the analytic Gaussian profile",),
    )


def local_target(epsilon: float, delta: float, users: int, method: str = "numeric") -> tuple[float, float]:
    """The local (ε0, δ0) a batch of ``users`` must meet for the shuffled batch to be (ε, δ)-DP.

    Half of δ for the amplification bound, half for the δ0 term of Feldman, McMillan & Talwar 2020,
    Thm 3.8, ``(e^ε + 1)(1 + e^{−ε0}/2) n δ0``; ε0 is the largest whose amplified ε is at most ε.
    Raises :class:`PreconditionFailed` when no ε0 > 0 reaches the target.
    """
    half = delta / 2.0 * (1.0 - 1e-9)  # each half slightly under delta/2: rounding stays on the safe side
    epsilon0 = amplification.largest_local_epsilon(epsilon, half, users, method)
    if epsilon0 <= 0.0:
        raise PreconditionFailed(
            f"no local epsilon0 > 0 reaches ({epsilon!r}, {delta!r}) with n={users} ({method})"
        )
    delta0 = half / ((math.exp(epsilon) + 1.0) * (1.0 + math.exp(-epsilon0) / 2.0) * users)
    return epsilon0, delta0


MAX_PAMP_USERS = 10**9
"""Most users of one P_Amp batch :func:`calibrate_pamp` calibrates: its amplification bound takes about
1 s at 10^9 users and 40 s at 10^13 (and overflows beyond)."""
MAX_PAMP_EPSILON = 600.0
"""Largest target ε :func:`calibrate_pamp` takes: the amplification bounds evaluate e^ε in floats (finite
up to ε ≈ 709); no batch needs a larger ε, whose local noise is a small fraction of the sensitivity."""


def calibrate_pamp(
    epsilon: float,
    delta: float,
    *,
    users: int,
    dimension: int,
    method: str = "numeric",
    sensitivity: float = PAMP_SENSITIVITY,
) -> PAmpCalibration:
    """σ of P_Amp's Gaussian local randomizer for a batch of ``users`` and target (ε, δ).

    ``method="paper"``: σ, ε0 = ε√(B/ln(2/δ)) and δ0 = δ/B of Chowdhury & Zhou 2022, Thm 3.2 = B.1; raises
    :class:`PreconditionFailed` unless ε0 <= 1 and Lemma B.4's precondition hold at δ' = δ/2; the
    certificate states Lemma B.4's (ε̃, δ̃), which is O(ε, δ) but larger than (ε, δ).
    ``"closed-form"`` / ``"numeric"``: half of δ for the amplification bound, half for the local
    δ0 term; the largest ε0 whose amplified ε is at most ε, then the least σ (analytic Gaussian)
    giving that (ε0, δ0); the certificate claims (ε, δ) and is verified.

    ``sensitivity``: ℓ2 sensitivity of one user's pair of messages, for ``"closed-form"`` and
    ``"numeric"`` (the paper's method keeps 2√2).  The default 2√2 holds for any vector and matrix within
    the norms :class:`GaussianShuffleSum` checks; a caller whose pairs have more structure may state less,
    e.g. 3/√2 for LinUCB's ``(φy, upper(φφᵀ))`` (:func:`dpcert.bandits.algorithms.linucb.joint_sensitivity`).
    """
    epsilon = check.epsilon(epsilon)
    if epsilon > MAX_PAMP_EPSILON:
        raise InvalidParameter(
            "epsilon",
            epsilon,
            f"0 < epsilon <= {MAX_PAMP_EPSILON:g} (e^epsilon of the amplification bound finite)",
        )
    delta = check.positive_delta(delta)
    users = check.positive_int("users", users)
    if users > MAX_PAMP_USERS:
        raise InvalidParameter("users", users, f"at most {MAX_PAMP_USERS:.0e} users in one batch")
    dimension = check.positive_int("dimension", dimension)
    if method not in PAMP_METHODS:
        raise InvalidParameter("method", method, "one of " + ", ".join(PAMP_METHODS))
    if method == "paper":
        epsilon0 = epsilon * math.sqrt(users / math.log(2.0 / delta))
        if epsilon0 > 1.0:
            raise PreconditionFailed(
                f"{PAMP_PAPER_BASIS} requires epsilon <= sqrt(ln(2/delta)/B) = "
                f"{math.sqrt(math.log(2.0 / delta) / users):.6g} (epsilon0 <= 1), got epsilon={epsilon!r}"
            )
        tilde_epsilon = amplification.closed_form_epsilon(epsilon0, users, delta / 2.0)  # checks precondition
        sigma = pamp_paper_sigma(epsilon, delta, users)
        delta0 = delta / users
        tilde_delta = delta / 2.0 + amplification.approximate_term(tilde_epsilon, epsilon0, delta0, users)
        certificate = _pamp_certificate(
            sigma,
            epsilon0,
            delta0,
            users,
            "closed-form",
            epsilon=tilde_epsilon,
            delta=tilde_delta * (1 + 1e-6),
        )
        return PAmpCalibration(sigma, epsilon0, delta0, users, dimension, certificate, method)
    epsilon0, delta0 = local_target(epsilon, delta, users, method)
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    guess = sensitivity * math.sqrt(2.0 * math.log(1.25 / delta0)) / epsilon0
    sigma = least_noise(lambda s: local_delta(epsilon0, s, sensitivity), delta0, guess)
    certificate = _pamp_certificate(
        sigma, epsilon0, delta0, users, method, epsilon=epsilon, delta=delta, sensitivity=sensitivity
    )
    return PAmpCalibration(sigma, epsilon0, delta0, users, dimension, certificate, method)
