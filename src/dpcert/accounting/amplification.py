"""Amplification by shuffling (Feldman, McMillan & Talwar 2020, "Hiding among the clones").

API for bandit algorithms
-------------------------
``shuffled_epsilon(delta, epsilon0, users, delta0=0, method=...)`` is the ε of the shuffled output of
``users`` independent (ε0, δ0)-LDP reports; ``shuffled_delta(epsilon, ...)`` its δ(ε);
``largest_local_epsilon(epsilon, delta, users, method=...)`` the largest ε0 of a pure-LDP randomizer
whose shuffled protocol meets (ε, δ); :func:`amplification_certificate` the checkable certificate.
``method="closed-form"`` is seed 002's Lemma B.4 (FMT Thm 3.1 / 3.8); ``"numeric"`` is FMT's
tighter Thm 3.2 evaluated exactly.

Closed form (seed 002, Lemma B.4 = FMT20 Thm 3.1 and, for δ0 > 0, Thm 3.8).  For any ``δ' ∈ (0, 1]``
with the precondition ``ε0 <= ln(n / (16 ln(2/δ')))`` (checked, never assumed), the shuffled
protocol is (ε̃, δ̃)-DP with

    ε̃ = ln(1 + (e^{ε0} − 1)/(e^{ε0} + 1) · (8 √(e^{ε0} ln(4/δ'))/√n + 8 e^{ε0}/n)),
    δ̃ = δ' + (e^{ε̃} + 1)(1 + e^{−ε0}/2) · n · δ0.

Numeric (FMT20 Thm 3.2).  For ε0-DP randomizers the shuffled output is (ε, δ)-DP whenever the pair
``P = (A + Δ, C − A + 1 − Δ)``, ``Q = (A + 1 − Δ, C − A + Δ)`` is, with ``C ~ Bin(n − 1, e^{−ε0})``,
``A ~ Bin(C, 1/2)``, ``Δ ~ Bern(e^{ε0}/(e^{ε0} + 1))``.  ``C`` is common to both, so the divergence is
``E_C[D_{e^ε}(P_C ‖ Q_C)]``; ``Q_c`` is the reflection ``k ↦ c + 1 − k`` of ``P_c`` (``A`` and
``C − A`` have the same law), so both directions are equal; ``P_c/Q_c`` is increasing in ``k``, so
the optimal set is ``{k >= k*}`` and each term is a difference of binomial tails.  Evaluated here
exactly up to a Chernoff-bounded tail of ``C`` (counted in full) and a relative allowance for
rounding.  For δ0 > 0 the term ``(e^ε + 1)(1 + e^{−ε0}/2)·n·δ0`` of Thm 3.8 is added: its proof
(replace each (ε0, δ0) randomizer by an ε0 one at total-variation cost, Lemma 3.7) holds for any valid
(ε, δ) of the ε0-DP shuffle, so it applies to the numeric bound as well.

In both cases the protocol is also (ε0, δ0)-DP (the shuffle is post-processing of the reports).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import stats

from dpcert import _validation as check
from dpcert._numerics import smallest_valid
from dpcert.accounting.binomial_accounting import binomial_window
from dpcert.certificates import (
    EVENT_LEVEL,
    SHUFFLE_OR_CENTRAL,
    Certificate,
    Neighbouring,
    ParameterSpec,
    TrustModel,
    point_on_profile,
    register_profile,
)
from dpcert.errors import InvalidParameter, PreconditionFailed

METHODS = ("closed-form", "numeric")
CLOSED_FORM_BASIS = "Feldman, McMillan & Talwar 2020, Thm 3.1/3.8 (seed 002 Lemma B.4), closed form"
NUMERIC_BASIS = "Feldman, McMillan & Talwar 2020, Thm 3.2 (+ Thm 3.8 for delta0 > 0), evaluated exactly"
_RELATIVE_SLACK = 1e-10


def _check_method(method: str) -> str:
    if method not in METHODS:
        raise InvalidParameter("method", method, "one of " + ", ".join(METHODS))
    return method


# --------------------------------------------------------------------------- closed form
def closed_form_precondition(epsilon0: float, users: int, delta_prime: float) -> bool:
    """``ε0 <= ln(n / (16 ln(2/δ')))`` (seed 002 Lemma B.4)."""
    if not 0.0 < delta_prime <= 1.0:
        return False
    return epsilon0 <= math.log(users / (16.0 * math.log(2.0 / delta_prime)))


def closed_form_epsilon(epsilon0: float, users: int, delta_prime: float) -> float:
    """ε̃ of seed 002 Lemma B.4 (FMT Thm 3.1); raises :class:`PreconditionFailed` outside its range."""
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    users = check.positive_int("users", users)
    delta_prime = check.probability("delta_prime", delta_prime, open_low=True)
    if not closed_form_precondition(epsilon0, users, delta_prime):
        raise PreconditionFailed(
            f"amplification closed form (seed 002 Lemma B.4) needs epsilon0 <= ln(n / (16 ln(2/delta'))): "
            f"epsilon0={epsilon0!r}, n={users}, delta'={delta_prime!r} "
            f"(largest allowed epsilon0 is {_largest_closed_form_epsilon0(users, delta_prime):.6g})"
        )
    e0 = math.exp(epsilon0)
    inner = 8.0 * math.sqrt(e0 * math.log(4.0 / delta_prime)) / math.sqrt(users) + 8.0 * e0 / users
    value = math.log1p(math.tanh(epsilon0 / 2.0) * inner)
    return math.nextafter(value, math.inf)  # one ulp toward more privacy loss


def _largest_closed_form_epsilon0(users: int, delta_prime: float) -> float:
    ratio = users / (16.0 * math.log(2.0 / delta_prime))
    return math.log(ratio) if ratio > 0 else -math.inf


def approximate_term(epsilon: float, epsilon0: float, delta0: float, users: int) -> float:
    """``(e^ε + 1)(1 + e^{−ε0}/2)·n·δ0``, the cost of δ0 > 0 (FMT Thm 3.8)."""
    if delta0 == 0.0:
        return 0.0
    return (math.exp(epsilon) + 1.0) * (1.0 + math.exp(-epsilon0) / 2.0) * users * delta0


def _closed_form_delta(epsilon: float, epsilon0: float, users: int, delta0: float) -> float:
    """Least δ̃ of the closed form at ε (search over δ'); 1 if no δ' qualifies."""
    lowest = 2.0 * math.exp(-users * math.exp(-epsilon0) / 16.0)  # precondition: δ' >= this
    lowest = max(lowest * (1.0 + 1e-9), 1e-300)  # just inside the precondition despite rounding
    if lowest > 1.0:
        return 1.0

    def excess(log_delta_prime: float) -> float:
        return closed_form_epsilon(epsilon0, users, math.exp(-log_delta_prime)) - epsilon

    # ε̃ decreases as δ' grows; search x = −ln δ' in [0, −ln lowest] for the largest valid x.
    high = -math.log(lowest)
    if excess(high) <= 0:
        delta_prime = lowest
    elif excess(0.0) > 0:
        return 1.0
    else:
        low = 0.0
        for _ in range(200):
            middle = (low + high) / 2.0
            if excess(middle) <= 0:
                low = middle
            else:
                high = middle
        delta_prime = math.exp(-low)
    tilde = closed_form_epsilon(epsilon0, users, delta_prime)
    return min(1.0, delta_prime + approximate_term(tilde, epsilon0, delta0, users))  # δ' checked as is


# --------------------------------------------------------------------------- numeric (FMT Thm 3.2)
def numeric_delta(epsilon: float, epsilon0: float, users: int) -> float:
    """δ(ε) of the shuffled output of ``users`` ε0-DP reports by FMT Thm 3.2, evaluated exactly."""
    epsilon = check.nonnegative_finite("epsilon", epsilon)
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    users = check.positive_int("users", users)
    if epsilon >= epsilon0:
        return 0.0
    alpha = 1.0 / (1.0 + math.exp(-epsilon0))  # e^{ε0}/(e^{ε0} + 1)
    if users == 1:
        clones = np.array([0])
        weights = np.array([1.0])
        dropped = 0.0
    else:
        lo, hi, dropped = binomial_window(users - 1, math.exp(-epsilon0))
        clones = np.arange(lo, hi + 1)
        weights = stats.binom.pmf(clones, users - 1, math.exp(-epsilon0))
    growth = math.exp(epsilon)
    rho = (growth * alpha - (1.0 - alpha)) / (alpha - growth * (1.0 - alpha))
    centre = np.floor(rho * (clones + 1) / (1.0 + rho)).astype(np.int64) + 1
    best = np.zeros(clones.shape)
    upper_mass = np.zeros(clones.shape)
    for offset in (-1, 0, 1):  # the optimal threshold and its neighbours (guards float rounding)
        k = np.clip(centre + offset, 0, clones + 2)
        at_least_k_minus_1 = stats.binom.sf(k - 2, clones, 0.5)
        at_least_k = stats.binom.sf(k - 1, clones, 0.5)
        p_set = alpha * at_least_k_minus_1 + (1.0 - alpha) * at_least_k
        q_set = alpha * at_least_k + (1.0 - alpha) * at_least_k_minus_1
        value = p_set - growth * q_set
        better = value > best
        best = np.where(better, value, best)
        upper_mass = np.where(better, p_set, upper_mass)
    total = float(weights @ best) + _RELATIVE_SLACK * float(weights @ upper_mass) + dropped
    return min(1.0, total)


def numeric_epsilon(delta: float, epsilon0: float, users: int, delta0: float = 0.0) -> float:
    """Least ε (rounded up) with :func:`numeric_delta` ``+ (e^ε+1)(1+e^{−ε0}/2)nδ0 <= delta``.

    Also at most ε0 when ``delta >= delta0`` (the reports themselves are (ε0, δ0)-DP); ``inf`` if
    neither bound reaches ``delta``.
    """
    best = epsilon0 if delta >= delta0 else math.inf
    ceiling = epsilon0
    for _ in range(2 if delta0 > 0 else 1):  # the δ0 term is evaluated at an upper bound of the answer
        budget = delta - approximate_term(ceiling, epsilon0, delta0, users)
        if budget <= 0.0:
            break
        ceiling = min(
            ceiling,
            smallest_valid(
                lambda e, b=budget: numeric_delta(e, epsilon0, users) - b,
                0.0,
                epsilon0,
                grow=False,
                xtol_relative=1e-9,
            ),
        )
    if numeric_delta(ceiling, epsilon0, users) + approximate_term(ceiling, epsilon0, delta0, users) <= delta:
        best = min(best, ceiling)
    return best


# --------------------------------------------------------------------------- profile and API
def shuffled_delta(
    epsilon: float, epsilon0: float, users: int, delta0: float = 0.0, method: str = "numeric"
) -> float:
    """δ(ε) of the shuffled protocol of ``users`` (ε0, δ0)-LDP reports (replace-one, shuffler's view)."""
    epsilon = check.nonnegative_finite("epsilon", epsilon)
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    delta0 = check.delta(delta0, "delta0")
    users = check.positive_int("users", users)
    _check_method(method)
    local = delta0 if epsilon >= epsilon0 else 1.0
    if method == "numeric":
        amplified = numeric_delta(epsilon, epsilon0, users) + approximate_term(
            epsilon, epsilon0, delta0, users
        )
    else:
        amplified = _closed_form_delta(epsilon, epsilon0, users, delta0)
    return min(1.0, local, amplified)


def shuffled_epsilon(
    delta: float, epsilon0: float, users: int, delta0: float = 0.0, method: str = "numeric"
) -> float:
    """Least ε with :func:`shuffled_delta` ``<= delta`` (rounded up); ``inf`` if none."""
    delta = check.delta(delta)
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    delta0 = check.delta(delta0, "delta0")
    users = check.positive_int("users", users)
    _check_method(method)
    if method == "numeric":
        return numeric_epsilon(delta, epsilon0, users, delta0)
    if delta0 == 0.0:
        delta_prime = delta * (1.0 - 1e-12)  # a hair below delta: the re-derived δ' stays <= delta
        if delta > 0 and closed_form_precondition(epsilon0, users, delta_prime):
            return min(epsilon0, closed_form_epsilon(epsilon0, users, delta_prime))
        return epsilon0
    if shuffled_delta(epsilon0, epsilon0, users, delta0, method) > delta:
        return math.inf

    def excess(e: float) -> float:
        return shuffled_delta(e, epsilon0, users, delta0, method) - delta

    return smallest_valid(excess, 0.0, epsilon0, grow=False)


def largest_local_epsilon(
    epsilon: float, delta: float, users: int, method: str = "numeric", delta0: float = 0.0
) -> float:
    """Largest ε0 (rounded down) whose shuffled protocol is (ε, δ)-DP; 0 if none is positive.

    The search assumes the bound grows with ε0 and always re-checks the returned point.
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    users = check.positive_int("users", users)
    _check_method(method)

    def ok(epsilon0: float) -> bool:
        return shuffled_epsilon(delta, epsilon0, users, delta0, method) <= epsilon

    low, high = 0.0, max(epsilon, 1.0)
    while ok(high):
        low, high = high, 2.0 * high
        if high > 60:
            break
    for _ in range(60):
        middle = (low + high) / 2.0
        if ok(middle):
            low = middle
        else:
            high = middle
    while low > 0 and not ok(low):
        low = math.nextafter(low, 0.0) * (1 - 1e-12)
    return low


AMPLIFICATION_PARAMETERS = {
    "epsilon0": ParameterSpec("number"),
    "delta0": ParameterSpec("number", required=False),
    "users": ParameterSpec("integer"),
    "method": ParameterSpec("string", required=False),
    "local_mechanism": ParameterSpec("string", required=False),
}


@register_profile(
    "shuffle-amplification",
    parameters=AMPLIFICATION_PARAMETERS,
    trust_models=SHUFFLE_OR_CENTRAL,
    neighbourings=EVENT_LEVEL,
)
class AmplificationProfile:
    """Profile of ``users`` shuffled (ε0, δ0)-LDP reports by the bound named in ``method``.

    Parameters: ``epsilon0``, ``delta0``, ``users``, ``method`` (``"closed-form"`` or ``"numeric"``).
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.epsilon0 = check.nonnegative_finite("epsilon0", parameters.get("epsilon0"))
        self.delta0 = check.delta(parameters.get("delta0", 0.0), "delta0")
        self.users = check.positive_int("users", parameters.get("users"))
        self.method = _check_method(parameters.get("method", "numeric"))

    def delta_for(self, epsilon: float) -> float:
        return shuffled_delta(epsilon, self.epsilon0, self.users, self.delta0, self.method)

    def epsilon_for(self, delta: float) -> float:
        return shuffled_epsilon(delta, self.epsilon0, self.users, self.delta0, self.method)

    def dp_event(self) -> Any:
        return None


def amplification_certificate(
    epsilon0: float,
    users: int,
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    delta0: float = 0.0,
    method: str = "numeric",
    extra_parameters: Mapping[str, Any] | None = None,
    mechanism: str = "shuffle-amplification",
    notes: tuple[str, ...] = (),
) -> Certificate:
    """Certificate of ``users`` shuffled (ε0, δ0)-LDP reports at ``delta`` (least ε) or ``epsilon``."""
    _check_method(method)
    parameters = {
        "epsilon0": check.nonnegative_finite("epsilon0", epsilon0),
        "delta0": check.delta(delta0, "delta0"),
        "users": check.positive_int("users", users),
        "method": method,
        **dict(extra_parameters or {}),
    }
    guarantee = point_on_profile(
        AmplificationProfile(parameters),
        epsilon,
        delta,
        reachable_delta="a delta this protocol can reach (larger)",
    )
    basis = NUMERIC_BASIS if method == "numeric" else CLOSED_FORM_BASIS
    notes = tuple(notes) + (
        "shuffle model, replace-one neighbours among a fixed number of users, each running an "
        "(epsilon0, delta0)-LDP randomizer with independent randomness; the shuffler hides the order",
        "numeric bound: tail of C ~ Bin(n-1, e^-eps0) outside a Chernoff window counted in full"
        if method == "numeric"
        else "closed form used only where its precondition holds (checked)",
    )
    return Certificate(
        mechanism,
        guarantee,
        TrustModel.SHUFFLE,
        Neighbouring.REPLACE_ONE,
        parameters,
        basis,
        notes,
    ).verify()
