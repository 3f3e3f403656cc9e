"""Amplification by shuffling: clone reductions, exact shuffled randomized response, fast inverse.

API for bandit algorithms
-------------------------
``shuffled_epsilon(delta, epsilon0, users, delta0=0, method=...)`` is the ε of the shuffled output of
``users`` independent (ε0, δ0)-LDP reports; ``shuffled_delta(epsilon, ...)`` its δ(ε);
``largest_local_epsilon(epsilon, delta, users, method=...)`` the largest ε0 of a pure-LDP randomizer
whose shuffled protocol meets (ε, δ); the checkable certificate is
:func:`dpcert.mechanisms.shuffle.amplification.amplification_certificate`.
``method="closed-form"`` is Lemma B.4 of Chowdhury & Zhou 2022 (FMT Thm 3.1 / 3.8); ``"numeric"`` the tightest
proven numeric bound for the declared ``randomizer`` (below).  Every function also takes the
keyword arguments ``randomizer`` (``"generic"``, ``"binary-rr"``, ``"k-rr"``, ``"matrix"``),
``categories`` and ``matrix``.

Closed form (Chowdhury & Zhou 2022, Lemma B.4 = FMT20 Thm 3.1 and, for δ0 > 0, Thm 3.8).  For any
``δ' ∈ (0, 1]`` with the precondition ``ε0 <= ln(n / (16 ln(2/δ')))`` (checked, never assumed), the shuffled
protocol is (ε̃, δ̃)-DP with

    ε̃ = ln(1 + (e^{ε0} − 1)/(e^{ε0} + 1) · (8 √(e^{ε0} ln(4/δ'))/√n + 8 e^{ε0}/n)),
    δ̃ = δ' + (e^{ε̃} + 1)(1 + e^{−ε0}/2) · n · δ0.

Clone pairs.  For a clone probability ``c`` let ``C ~ Bin(n − 1, c)``, ``A ~ Bin(C, 1/2)``,
``Δ ~ Bern(e^{ε0}/(e^{ε0} + 1))`` and ``P = (A + Δ, C − A + 1 − Δ)``, ``Q = (A + 1 − Δ, C − A + Δ)``.
``C`` is common to both, so ``D_{e^ε}(P ‖ Q) = E_C[D_{e^ε}(P_C ‖ Q_C)]``; ``Q_c`` is the reflection
``k ↦ c + 1 − k`` of ``P_c``, so both directions are equal; ``P_c/Q_c`` increases in ``k``, so the
optimal set is ``{k >= k*}`` and each term is a difference of binomial tails.  Evaluated exactly up
to a Chernoff-bounded tail of ``C`` (counted in full) and a relative allowance of the optimal set's
mass for the rounding of the binomial PMF and tails (``1e-10`` for FMT20's pair, ``1e-8``
otherwise); the clone probability is rounded down and the victim's bias up (both only enlarge δ,
see below).

* Generic ε0-LDP randomizer (FMT20 Thm 3.2): ``c = e^{−ε0}``.  Proof: every ``R(x_i)`` is at least
  ``e^{−ε0} max(R(x1), R(x1'))``, so ``R(x_i) = (c/2) Q1 + (c/2) Q0 + (1 − c) LO_i`` with
  ``Q1 = (e^{ε0} R(x1) − R(x1'))/(e^{ε0} − 1)``, ``Q0`` symmetric, and ``R(x1) = a Q1 + (1 − a) Q0``,
  ``a = e^{ε0}/(e^{ε0} + 1)``; the shuffled view is a post-processing of the pair (the non-clones
  are a uniform subset of the others, independent of the victim's input).
* Stronger clone (Feldman, McMillan & Talwar 2023, Thm 3.1 as restricted by its errata; the
  "general mechanisms" row of Wang et al. 2024, Lemma 4.5 / Thm 4.8): ``c = 2/(e^{ε0} + 1)``.  The
  same proof goes through (``Q1 + Q0 = R(x1) + R(x1')``) whenever ``R(x) >= (R(x1) +
  R(x1'))/(e^{ε0} + 1)`` for every input ``x`` and distinct inputs ``x1, x1'`` (the *clone
  condition*).  Binary and k-ary randomized response satisfy it (with equality on ``x1``, ``x1'``),
  so ``randomizer="binary-rr"`` and ``"k-rr"`` use it.  A general ε0-LDP randomizer need not (take
  ``R(x1) = R(x1')`` and ``R(x3) = e^{−ε0} R(x1)`` on one output), and the published proofs for the
  general case do not hold: FMT23's errata restricts its Thm 3.1 to a class of randomizers, and Wang
  et al.'s Lemma 4.5 re-inserts the victim's common part with one probability although its
  posterior differs between the two hypotheses.  Exact
  enumeration exhibits ε0-LDP randomizers (and k-ary RR with k >= 4) whose shuffled δ exceeds Wang
  et al.'s pair at their own variation parameter (tests/test_amplification_clone.py).  So the
  generic ``"numeric"`` bound stays FMT20 Thm 3.2.
* A randomizer stated by its matrix (``randomizer="matrix"``): ``c = c(R)``, the largest clone
  probability for which the same decomposition holds for that matrix,
  ``min_y 2 min_x R(x, y)/(sum of the two largest R(·, y))``, between ``e^{−ε0}`` and ``2/(e^{ε0} + 1)``
  (:mod:`dpcert.theory.randomizer_matrix`); certificates store the rows and recompute ``c``.
* A smaller clone probability or a larger victim bias is also a valid decomposition (the leftover
  ``LO_i`` stays a distribution; ``Q1``, ``Q0`` stay non-negative), so rounding them that way is safe.

Exact binary randomized response (``randomizer="binary-rr"``, ``users <= BINARY_RR_EXACT_MAX_USERS``).
The shuffled view of binary RR is the count of ones.  With ``m`` of the other users holding 1 it is
``N_m + Y`` where ``N_m = Bin(m, 1 − f) ⊛ Bin(n − 1 − m, f)``, ``f = 1/(e^{ε0} + 1)`` and ``Y`` is the
victim's report; δ(ε) is the maximum over ``m`` of the hockey-stick divergence between victim 0 and
victim 1 (the reverse direction at ``m`` is the forward one at ``n − 1 − m``, by the reflection
``k ↦ n − k``).  Evaluated by direct convolution of the two binomial windows (tails outside counted
in full) with the same relative allowance.  Above the size limit the stronger clone bound is used.

For δ0 > 0 (generic randomizer only) the term ``(e^ε + 1)(1 + e^{−ε0}/2)·n·δ0`` of FMT20 Thm 3.8 is
added: its proof (replace each (ε0, δ0) randomizer by an ε0 one at total-variation cost, Lemma 3.7)
holds for any valid (ε, δ) of the ε0-DP shuffle, so it applies to the numeric bound as well.

In every case the protocol is also (ε0, δ0)-DP (the shuffle is post-processing of the reports).

Inverse.  :func:`largest_local_epsilon` finds the root in ε0 of ``shuffled_delta(ε, ε0) − δ`` (one
monotone root search on the forward bound, Brent's method) and re-checks the returned point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert._numerics import largest_valid, smallest_valid
from dpcert.errors import InvalidParameter, PreconditionFailed
from dpcert.theory.binomial import binomial_window, log_binomial_pmf
from dpcert.theory.randomizer_matrix import RandomizerMatrix, randomizer_matrix

METHODS = ("closed-form", "numeric")
RANDOMIZERS = ("generic", "binary-rr", "k-rr", "matrix")
BINARY_RR_EXACT_MAX_USERS = 1000
CLOSED_FORM_BASIS = (
    "Feldman, McMillan & Talwar 2020, Thm 3.1/3.8 (Chowdhury & Zhou 2022, Lemma B.4), closed form"
)
NUMERIC_BASIS = "Feldman, McMillan & Talwar 2020, Thm 3.2 (+ Thm 3.8 for delta0 > 0), evaluated exactly"
STRONGER_CLONE_BASIS = (
    "stronger clone pair, C ~ Bin(n-1, 2/(e^eps0+1)) (Feldman, McMillan & Talwar 2023, Thm 3.1 for "
    "randomizers meeting the clone condition; Wang et al. 2024, Thm 4.8), evaluated exactly"
)
MATRIX_BASIS = (
    "clone pair with C ~ Bin(n-1, c(R)), c(R) the clone probability of the stated randomizer matrix "
    "(Feldman, McMillan & Talwar 2020, Thm 3.2 argument; dpcert.theory.randomizer_matrix), "
    "evaluated exactly"
)
BINARY_RR_BASIS = (
    "exact shuffled binary randomized response (count of ones, worst case over the other users' bits)"
)
_RELATIVE_SLACK = 1e-10  # FMT20 pair (unchanged allowance)
_PAIR_SLACK = 1e-8  # stronger clone pair and exact binary RR: PMF/tail rounding allowance


def check_method(method: str) -> str:
    if method not in METHODS:
        raise InvalidParameter("method", method, "one of " + ", ".join(METHODS))
    return method


def check_randomizer(randomizer: str, categories: object, method: str, delta0: float) -> tuple[str, int]:
    """Validated ``(randomizer, categories)``; k-ary RR with two categories is binary RR."""
    if randomizer not in RANDOMIZERS:
        raise InvalidParameter("randomizer", randomizer, "one of " + ", ".join(RANDOMIZERS))
    if randomizer in ("generic", "matrix"):
        return randomizer, 2
    if method != "numeric":
        raise InvalidParameter("method", method, f"numeric (the only method for randomizer {randomizer})")
    if delta0 != 0.0:
        raise InvalidParameter("delta0", delta0, f"0 (randomizer {randomizer} is pure epsilon0-LDP)")
    if randomizer == "binary-rr":
        if categories not in (2, None):
            raise InvalidParameter("categories", categories, "2 for randomizer binary-rr")
        return randomizer, 2
    k = check.positive_int("categories", categories, minimum=2)
    return ("binary-rr", 2) if k == 2 else ("k-rr", k)


def check_matrix(
    randomizer: str, matrix: object, epsilon0: float, method: str, delta0: float
) -> RandomizerMatrix | None:
    """The validated matrix of ``randomizer="matrix"`` (declared ``epsilon0`` checked against it)."""
    if randomizer != "matrix":
        if matrix is not None:
            raise InvalidParameter("matrix", "(given)", 'only with randomizer="matrix"')
        return None
    if matrix is None:
        raise InvalidParameter("matrix", None, 'a randomizer matrix (rows = inputs) for randomizer="matrix"')
    if method != "numeric":
        raise InvalidParameter("method", method, "numeric (the only method for randomizer matrix)")
    if delta0 != 0.0:
        raise InvalidParameter("delta0", delta0, "0 (a randomizer matrix is pure epsilon0-LDP)")
    return randomizer_matrix(matrix, epsilon0)


# --------------------------------------------------------------------------- closed form
def closed_form_precondition(epsilon0: float, users: int, delta_prime: float) -> bool:
    """``ε0 <= ln(n / (16 ln(2/δ')))`` (Chowdhury & Zhou 2022, Lemma B.4)."""
    if not 0.0 < delta_prime <= 1.0:
        return False
    return epsilon0 <= math.log(users / (16.0 * math.log(2.0 / delta_prime)))


def closed_form_epsilon(epsilon0: float, users: int, delta_prime: float) -> float:
    """ε̃ of Chowdhury & Zhou 2022, Lemma B.4 (FMT Thm 3.1).

    Raises :class:`PreconditionFailed` outside its range.
    """
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    users = check.positive_int("users", users)
    delta_prime = check.probability("delta_prime", delta_prime, open_low=True)
    if not closed_form_precondition(epsilon0, users, delta_prime):
        raise PreconditionFailed(
            f"amplification closed form (Chowdhury & Zhou 2022, Lemma B.4) needs "
            f"epsilon0 <= ln(n / (16 ln(2/delta'))): "
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


def closed_form_delta(epsilon: float, epsilon0: float, users: int, delta0: float) -> float:
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


# --------------------------------------------------------------------------- clone pairs
def _victim_bias(epsilon0: float) -> float:
    """``e^{ε0}/(e^{ε0} + 1)`` rounded up (a larger bias is also a valid decomposition)."""
    return min(1.0, (1.0 / (1.0 + math.exp(-epsilon0))) * (1.0 + 4e-16))


def clone_pair_delta(
    epsilon: float, epsilon0: float, users: int, clone_probability: float, *, slack: float = _PAIR_SLACK
) -> float:
    """``D_{e^ε}(P ‖ Q)`` of the clone pair with ``C ~ Bin(users − 1, clone_probability)`` (module doc).

    Exact up to the Chernoff-bounded tail of ``C`` (added in full) and ``slack`` times the mass of
    the optimal set (added).  ``0`` for ``ε >= ε0`` (the pair is then ε-indistinguishable).
    """
    from scipy import special

    epsilon = check.nonnegative_finite("epsilon", epsilon)
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    users = check.positive_int("users", users)
    clone_probability = check.probability("clone_probability", clone_probability)
    if epsilon >= epsilon0:
        return 0.0
    alpha = _victim_bias(epsilon0)
    if users == 1 or clone_probability == 0.0:
        clones = np.array([0])
        weights = np.array([1.0])
        dropped = 0.0
    else:
        lo, hi, dropped = binomial_window(users - 1, clone_probability)
        clones = np.arange(lo, hi + 1)
        weights = np.exp(log_binomial_pmf(clones, users - 1, clone_probability))
    growth = math.exp(epsilon)
    rho = (growth * alpha - (1.0 - alpha)) / (alpha - growth * (1.0 - alpha))
    centre = np.floor(rho * (clones + 1) / (1.0 + rho)).astype(np.int64) + 1
    best = np.zeros(clones.shape)
    upper_mass = np.zeros(clones.shape)
    # the optimal threshold and its neighbours: the float error of rho (c + 1)/(1 + rho) is below
    # 1e-9, so the floor is off by at most one
    offsets = range(-1, 2)
    # T(j) = P(A >= j) for j = centre - 2 .. centre + 1 (all the candidates need), one call;
    # special.bdtrc(j - 1, c, 1/2) = P(A > j - 1), clipped so that T = 1 below 1 and 0 above c
    levels = centre[:, None] - 2 + np.arange(len(offsets) + 1)
    tails = special.bdtrc(np.clip(levels - 1, -1, clones[:, None]), clones[:, None], 0.5)
    for index in range(len(offsets)):
        at_least_k_minus_1 = tails[:, index]  # P(A >= k - 1) with k = centre + offset
        at_least_k = tails[:, index + 1]  # P(A >= k)
        p_set = alpha * at_least_k_minus_1 + (1.0 - alpha) * at_least_k
        q_set = alpha * at_least_k + (1.0 - alpha) * at_least_k_minus_1
        value = p_set - growth * q_set
        better = value > best
        best = np.where(better, value, best)
        upper_mass = np.where(better, p_set, upper_mass)
    total = float(weights @ best) + slack * float(weights @ upper_mass) + dropped
    return min(1.0, total)


def numeric_delta(epsilon: float, epsilon0: float, users: int) -> float:
    """δ(ε) of the shuffled output of ``users`` ε0-DP reports by FMT20 Thm 3.2, evaluated exactly."""
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    clone = math.exp(-epsilon0) * (1.0 - 4e-16)  # rounded down: a valid decomposition
    return clone_pair_delta(epsilon, epsilon0, users, clone, slack=_RELATIVE_SLACK)


def stronger_clone_delta(epsilon: float, epsilon0: float, users: int) -> float:
    """δ(ε) of the stronger clone pair, ``C ~ Bin(n − 1, 2/(e^{ε0} + 1))`` (FMT23 Thm 3.1, Wang et al.
    2024 Thm 4.8 with the general-mechanism parameters).

    Valid only for randomizers meeting the clone condition ``R(x) >= (R(x1) + R(x1'))/(e^{ε0} + 1)``
    (binary and k-ary randomized response do); see the module docstring.
    """
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    clone = 2.0 / (math.exp(epsilon0) + 1.0) * (1.0 - 4e-16)  # rounded down: a valid decomposition
    return clone_pair_delta(epsilon, epsilon0, users, min(1.0, clone))


# --------------------------------------------------------------------------- exact binary RR
_NEGLIGIBLE_PMF = 1e-30  # binomial PMF entries below this are dropped and their sum added in full


def _binomial_pmf_rows(trials: np.ndarray, p: float, width: int) -> np.ndarray:
    """``P(Bin(trials[i], p) = j)`` for ``j < width`` (rows), by log-gamma.

    For ``trials < 10^4`` every log-gamma term is below ``10^5`` in size, so the PMF's relative
    error is below ``10^-10``, inside the ``1e-8`` allowance.
    """
    from scipy import special

    j = np.arange(width)[None, :]
    m = trials[:, None].astype(float)
    inside = j <= m
    jj = np.where(inside, j, 0)
    log_pmf = (
        special.gammaln(m + 1.0)
        - special.gammaln(jj + 1.0)
        - special.gammaln(m - jj + 1.0)
        + special.xlogy(jj, p)
        + special.xlog1py(m - jj, -p)
    )
    return np.where(inside, np.exp(log_pmf), 0.0)


@lru_cache(maxsize=4)
def _binary_rr_others(epsilon0: float, users: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Laws of the other users' count of ones, one row per number ``m`` of them holding 1.

    Returns ``(rows, dropped, flip)``: ``rows[m]`` is ``N_m`` on the window of its two factors' PMF
    entries above ``1e-30`` (zero padded; the offset does not matter for the hockey-stick
    divergence), ``dropped[m]`` the summed mass of the entries left out.  Read-only (cached).
    """
    flip = 1.0 / (math.exp(epsilon0) + 1.0)
    holding_one = np.arange(users)
    ones = _binomial_pmf_rows(holding_one, 1.0 - flip, users)  # Bin(m, 1 - f)
    zeros = _binomial_pmf_rows(users - 1 - holding_one, flip, users)  # Bin(n - 1 - m, f)
    windows: list[list[np.ndarray]] = [[], []]
    dropped = np.zeros(users)
    for m in range(users):
        for side, row in enumerate((ones[m], zeros[m])):
            large = np.flatnonzero(row >= _NEGLIGIBLE_PMF)
            windows[side].append(row[large[0] : large[-1] + 1])
            dropped[m] += row[: large[0]].sum() + row[large[-1] + 1 :].sum()  # the entries left out
    dropped *= 1.0 + 1e-6  # summation rounding of the left-out entries
    # every m's two windows, zero padded, convolved at once in fixed order (the zeros add nothing)
    padded = []
    for side_windows in windows:
        block = np.zeros((users, max(w.size for w in side_windows)))
        for m, window in enumerate(side_windows):
            block[m, : window.size] = window
        padded.append(block)
    laws = fixed_order.convolve(padded[0], padded[1])
    rows = np.zeros((users, laws.shape[1] + 1))
    rows[:, : laws.shape[1]] = laws
    rows.setflags(write=False)
    dropped.setflags(write=False)
    return rows, dropped, flip


def binary_rr_delta(epsilon: float, epsilon0: float, users: int) -> float:
    """Exact δ(ε) of ``users`` shuffled binary randomized-response reports (worst case over data).

    The view is the count of ones; the maximum over the number ``m`` of other users holding 1 of
    ``Σ_k (P_m(k) − e^ε Q_m(k))_+`` (module docstring), plus the windows' dropped tails and a
    relative allowance of ``1e-8`` of the optimal set's mass.  ``users`` is limited to
    ``BINARY_RR_EXACT_MAX_USERS`` (the cost grows as ``users^2``).
    """
    epsilon = check.nonnegative_finite("epsilon", epsilon)
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    users = check.positive_int("users", users)
    if users > BINARY_RR_EXACT_MAX_USERS:
        raise InvalidParameter(
            "users", users, f"at most {BINARY_RR_EXACT_MAX_USERS} for the exact binary randomized response"
        )
    if epsilon >= epsilon0:
        return 0.0
    rows, dropped, flip = _binary_rr_others(epsilon0, users)
    shifted = np.roll(rows, 1, axis=1)  # N(k − 1); the last column of rows is zero padding
    upper = (1.0 - flip) * rows + flip * shifted  # victim holds 0: P(count of ones = k)
    lower = flip * rows + (1.0 - flip) * shifted  # victim holds 1
    difference = upper - math.exp(epsilon) * lower
    positive = difference > 0.0
    value = (
        np.where(positive, difference, 0.0).sum(axis=1)
        + _PAIR_SLACK * np.where(positive, upper, 0.0).sum(axis=1)
        + dropped
    )
    return min(1.0, float(value.max()))


# --------------------------------------------------------------------------- profile and API
def _amplified_delta(
    epsilon: float,
    epsilon0: float,
    users: int,
    delta0: float,
    method: str,
    randomizer: str,
    stated: RandomizerMatrix | None = None,
) -> float:
    if stated is not None:
        return clone_pair_delta(epsilon, stated.epsilon0, users, stated.clone_probability)
    if randomizer == "binary-rr" and users <= BINARY_RR_EXACT_MAX_USERS:
        return binary_rr_delta(epsilon, epsilon0, users)
    if randomizer != "generic":
        return stronger_clone_delta(epsilon, epsilon0, users)
    if method == "numeric":
        return numeric_delta(epsilon, epsilon0, users) + approximate_term(epsilon, epsilon0, delta0, users)
    return closed_form_delta(epsilon, epsilon0, users, delta0)


def shuffled_delta(
    epsilon: float,
    epsilon0: float,
    users: int,
    delta0: float = 0.0,
    method: str = "numeric",
    *,
    randomizer: str = "generic",
    categories: int | None = None,
    matrix: object = None,
) -> float:
    """δ(ε) of the shuffled protocol of ``users`` (ε0, δ0)-LDP reports (replace-one, shuffler's view).

    ``randomizer``: ``"generic"`` (any (ε0, δ0)-LDP randomizer), ``"binary-rr"`` (exact up to
    ``BINARY_RR_EXACT_MAX_USERS`` users, then the stronger clone bound), ``"k-rr"`` with
    ``categories`` values (stronger clone bound) or ``"matrix"`` with the randomizer's ``matrix`` (rows
    = inputs; the clone pair at the matrix's own clone probability,
    :mod:`dpcert.theory.randomizer_matrix`); all but the first need ``method="numeric"``, ``δ0 = 0``.
    """
    epsilon = check.nonnegative_finite("epsilon", epsilon)
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    delta0 = check.delta(delta0, "delta0")
    users = check.positive_int("users", users)
    check_method(method)
    randomizer, _ = check_randomizer(randomizer, categories, method, delta0)
    stated = check_matrix(randomizer, matrix, epsilon0, method, delta0)
    if stated is not None:
        epsilon0 = stated.epsilon0  # the declared level, or the matrix's own if a hair above it
    local = delta0 if epsilon >= epsilon0 else 1.0
    if local <= delta0 and epsilon >= epsilon0:
        return min(1.0, local)
    return min(1.0, local, _amplified_delta(epsilon, epsilon0, users, delta0, method, randomizer, stated))


def _least_epsilon(delta_of: Callable[[float], float], target: float, ceiling: float) -> float:
    """Least ε in ``[0, ceiling]`` with ``delta_of(ε) <= target`` (rounded up); ``delta_of`` is
    non-increasing and ``delta_of(ceiling) <= target``.  The root is searched on ``ln δ``, which is
    close to linear in ε, so Brent's method needs few evaluations; the result is re-checked."""
    if target <= 0.0:
        return ceiling
    log_target = math.log(target)
    return smallest_valid(
        lambda e: math.log(max(delta_of(e), 1e-300)) - log_target,
        0.0,
        ceiling,
        grow=False,
        xtol_relative=1e-9,
    )


def numeric_epsilon(delta: float, epsilon0: float, users: int, delta0: float = 0.0) -> float:
    """Least ε (rounded up) with :func:`numeric_delta` ``+ (e^ε+1)(1+e^{−ε0}/2)nδ0 <= delta``.

    Also at most ε0 when ``delta >= delta0`` (the reports themselves are (ε0, δ0)-DP); ``inf`` if
    neither bound reaches ``delta``.  With δ0 > 0 the sum is not monotone: ``numeric_delta`` falls
    and the δ0 term grows with ε.  Both are convex in ``e^ε`` (a hockey-stick divergence is a supremum
    of functions affine in ``e^ε``; the δ0 term is affine in it), so the sum is unimodal: its
    minimiser on ``[0, ε0]`` is located and the least valid ε searched on the falling branch before
    it.  Whatever the search finds is re-checked as evaluated (only tightness rests on unimodality).
    """
    best = epsilon0 if delta >= delta0 else math.inf
    if delta0 == 0.0:
        if numeric_delta(epsilon0, epsilon0, users) <= delta:
            best = min(best, _least_epsilon(lambda e: numeric_delta(e, epsilon0, users), delta, epsilon0))
        return best

    def total(e: float) -> float:
        return numeric_delta(e, epsilon0, users) + approximate_term(e, epsilon0, delta0, users)

    from scipy.optimize import minimize_scalar

    lowest = minimize_scalar(total, bounds=(0.0, epsilon0), method="bounded", options={"xatol": 1e-6})
    turning = float(lowest.x)
    if total(turning) > delta:
        return best
    found = smallest_valid(lambda e: total(e) - delta, 0.0, turning, grow=False)
    if math.isfinite(found) and total(found) <= delta:
        best = min(best, found)
    return best


def shuffled_epsilon(
    delta: float,
    epsilon0: float,
    users: int,
    delta0: float = 0.0,
    method: str = "numeric",
    *,
    randomizer: str = "generic",
    categories: int | None = None,
    matrix: object = None,
) -> float:
    """Least ε with :func:`shuffled_delta` ``<= delta`` (rounded up); ``inf`` if none."""
    delta = check.delta(delta)
    epsilon0 = check.nonnegative_finite("epsilon0", epsilon0)
    delta0 = check.delta(delta0, "delta0")
    users = check.positive_int("users", users)
    check_method(method)
    randomizer, _ = check_randomizer(randomizer, categories, method, delta0)
    stated = check_matrix(randomizer, matrix, epsilon0, method, delta0)
    if stated is not None:
        epsilon0 = stated.epsilon0
    if randomizer != "generic":
        return _least_epsilon(
            lambda e: _amplified_delta(e, epsilon0, users, 0.0, method, randomizer, stated), delta, epsilon0
        )
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


_LARGEST_EPSILON0 = 64.0  # search ceiling for the local epsilon0


def largest_local_epsilon(
    epsilon: float,
    delta: float,
    users: int,
    method: str = "numeric",
    delta0: float = 0.0,
    *,
    randomizer: str = "generic",
    categories: int | None = None,
) -> float:
    """Largest ε0 (rounded down) whose shuffled protocol is (ε, δ)-DP; 0 if none is positive.

    One monotone root search in ε0 on the forward bound ``shuffled_delta(ε, ε0) − δ`` (bracketed by
    doubling, then Brent's method); the returned point is re-checked and moved down until it holds.
    The search is capped at ε0 = 64.
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    users = check.positive_int("users", users)
    check_method(method)
    delta0 = check.delta(delta0, "delta0")
    randomizer, categories = check_randomizer(randomizer, categories, method, delta0)
    if randomizer == "matrix":
        raise InvalidParameter(
            "randomizer", randomizer, "generic, binary-rr or k-rr (a stated matrix fixes its own epsilon0)"
        )

    def excess(epsilon0: float) -> float:
        # aim a hair below epsilon, so that shuffled_epsilon (rounded up by at most 1e-9 epsilon0)
        # also returns at most epsilon at the answer
        target = epsilon - 2e-9 * max(epsilon, epsilon0)
        return (
            shuffled_delta(
                target, epsilon0, users, delta0, method, randomizer=randomizer, categories=categories
            )
            - delta
        )

    if excess(0.0) > 0.0:
        return 0.0
    return largest_valid(excess, 0.0, max(2.0 * epsilon, 1.0), ceiling=_LARGEST_EPSILON0)


def certificate_basis(method: str, randomizer: str, users: int) -> str:
    """The basis string of the bound :func:`shuffled_delta` evaluates for these settings."""
    if randomizer == "matrix":
        return MATRIX_BASIS
    if randomizer == "binary-rr" and users <= BINARY_RR_EXACT_MAX_USERS:
        return BINARY_RR_BASIS
    if randomizer != "generic":
        return STRONGER_CLONE_BASIS
    return NUMERIC_BASIS if method == "numeric" else CLOSED_FORM_BASIS
