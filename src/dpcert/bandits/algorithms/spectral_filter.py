"""Robust least squares by spectral filtering (Charisopoulos, Esfandiari & Mirrokni 2023, §2.2).

Fixed-design least squares is reduced to robust mean estimation: with ``M = Σ_j a_j a_jᵀ`` and
``W = M^{-1/2}``, the points ``X_j = W a_j y_j`` satisfy ``θ_LS = M^{-1} Σ_j a_j y_j = n·W·mean_j X_j``
(the paper's Alg. 1 line 8 / eq. 13), so a robust estimate ``ŵ`` of the mean of the clean ``X_j`` gives
``θ̂ = n·W·ŵ``.  The mean is estimated by the randomized spectral filter (the paper's Alg. 2, after
Prasad et al. 2019, Thm 4 = the paper's Thm A.2): while the top eigenvalue of the empirical covariance
exceeds ``4λ``, remove one point drawn with probability proportional to its squared projection on the
top eigenvector.

Choices this module makes explicit (docs/PAPER_NOTES.md, PN-CEM-2 and PN-CEM-3):

* **The variance proxy λ comes from clean-side information** (PN-CEM-2, verified by a
  prototype): the printed ``λ = μ·mean(y²)`` computed on the *received* values lets an adversary inflate
  λ with huge values, the stopping test then passes at once and the estimate is plain least squares.
  :func:`robust_least_squares` therefore takes either an a-priori bound ``value_bound`` = Ȳ on the
  clean ``|y_j|`` (``λ = μ·Ȳ²``, PN-CEM-2 option (a)) or, by default, the trimmed estimate of option (b):
  ``λ = (2/(1−α))·μ·mean(y²)`` after dropping the largest ``τ``-fraction of ``y²``, with
  ``τ = min(1/2, α + sqrt(3α·log(1/δ)/n) + log(1/δ)/n)`` a Chernoff upper bound on the realised
  corrupted fraction (not ``2α``, which fails for small batches).
* ``variance="arm-moment"`` is a tighter clean-side λ.  In the whitened coordinates the clean covariance
  satisfies ``Σ_{G0} ⪯ (1/|G0|) Σ_{j∈G0} y_j² W a_j a_jᵀ W ⪯ (max_a m_a/|G0|)·W M W = (max_a m_a/|G0|)·I``,
  with ``m_a`` the mean of ``y²`` over the rows equal to arm ``a`` (``Σ_{G0} a aᵀ ⪯ M``).  The paper's
  bound (the paper's App. A.2, eq. 33) replaces ``max_a m_a`` by ``μ‖y‖²`` with ``μ = max ‖a‖²_{M^{-1}}``,
  which for a G-optimal design is ``≈ d·mean(y²)/n``: d times looser, so in-range corruptions that
  inflate the covariance up to ``4·2d`` times the clean level pass the stopping test.  λ is
  ``(2/(1−α))·max_a trimmed_a(y²)/n``, each arm's second moment Chernoff-trimmed as in option (b).
* The stopping constant 4 of Alg. 2 is the reconstructed reading (docs/PAPER_NOTES.md, PN-CEM-3) of the
  garbled "if © < 4X"; ``threshold_factor`` exposes it.
* A safeguard caps the number of removals at ``max_removed_fraction·n`` (proposed default
  ``2α + 0.05``, PN-CEM-3, at most 1/2); the theory removes ``O((n − |G0|) + log 1/δ)`` points w.h.p.
* ``removals_per_step = 1`` is the paper's filter; larger values draw several points per eigen
  decomposition without replacement (a speed-up that deviates from the paper; documented where used).

Filtering is data processing on already-privatized reports: it does not touch privacy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert.errors import InvalidParameter

DEFAULT_THRESHOLD_FACTOR = 4.0
VARIANCE_SOURCES = ("bound", "trimmed", "arm-moment")
ESTIMATORS = ("filter", "clip-only", "least-squares")
_EIGEN_FLOOR = 1e-12


@dataclass(frozen=True)
class FilterResult:
    """Output of :func:`spectral_filter`.

    Attributes
    ----------
    mean
        The robust mean estimate (mean of the kept points).
    kept
        Boolean mask over the input points.
    removed
        Number of removed points.
    top_eigenvalue
        Top eigenvalue of the kept points' covariance when the filter stopped.
    stopped_by
        ``"threshold"`` (top eigenvalue ≤ ``threshold_factor·λ``) or ``"removal cap"``.
    """

    mean: np.ndarray
    kept: np.ndarray
    removed: int
    top_eigenvalue: float
    stopped_by: str


def _top_direction(centred: np.ndarray) -> tuple[float, np.ndarray]:
    """Top eigenpair of the empirical covariance, in fixed order (the same on every CPU and BLAS)."""
    covariance = fixed_order.weighted_gram(centred) / centred.shape[0]
    values, vectors = fixed_order.symmetric_eigh(covariance)
    return float(values[-1]), vectors[:, -1]


def removal_probabilities(points: np.ndarray) -> tuple[float, np.ndarray]:
    """Top covariance eigenvalue of ``points`` and the filter's removal law ``τ_j / Σ τ`` (paper's Alg. 2).

    ``τ_j = ⟨v, X_j − mean⟩²`` with ``v`` the top unit eigenvector of the empirical covariance.
    """
    points = check.finite_array("points", points)
    centred = points - points.mean(axis=0)
    top, direction = _top_direction(centred)
    scores = fixed_order.matvec(centred, direction) ** 2
    total = scores.sum()
    if total <= 0.0:
        return top, np.full(points.shape[0], 1.0 / points.shape[0])
    return top, scores / total


def spectral_filter(
    points: np.ndarray,
    variance_bound: float,
    rng: np.random.Generator,
    *,
    threshold_factor: float = DEFAULT_THRESHOLD_FACTOR,
    max_removed_fraction: float = 0.5,
    removals_per_step: int = 1,
) -> FilterResult:
    """Randomized spectral filter for robust mean estimation (the paper's Alg. 2).

    Parameters
    ----------
    points
        Array of shape (n, d).
    variance_bound
        λ: an upper bound on the operator norm of the *clean* points' covariance (must not be computed
        from possibly corrupted points without trimming; see the module docstring).
    rng
        Source of the filter's randomness.
    threshold_factor
        Stop when the top eigenvalue is at most ``threshold_factor·λ`` (4 in Alg. 2).
    max_removed_fraction
        Safeguard: never remove more than this fraction of the points (in [0, 1)).
    removals_per_step
        Points drawn (without replacement, ∝ score) per eigendecomposition; 1 is the paper's filter.

    Returns
    -------
    FilterResult
    """
    points = check.finite_array("points", points)
    if points.ndim != 2 or points.shape[0] < 1:
        raise InvalidParameter("points", points.shape, "an array of shape (n, d) with n >= 1")
    variance_bound = check.nonnegative_finite("variance_bound", variance_bound)
    threshold_factor = check.positive_finite("threshold_factor", threshold_factor)
    max_removed_fraction = check.probability("max_removed_fraction", max_removed_fraction, open_high=True)
    removals_per_step = check.positive_int("removals_per_step", removals_per_step)
    rng = check.generator(rng)

    n = points.shape[0]
    cap = int(math.floor(max_removed_fraction * n))
    kept = np.ones(n, dtype=bool)
    removed = 0
    while True:
        index = np.flatnonzero(kept)
        subset = points[index]
        mean = subset.mean(axis=0)
        centred = subset - mean
        top, direction = _top_direction(centred)
        if top <= threshold_factor * variance_bound:
            return FilterResult(mean, kept, removed, top, "threshold")
        if removed >= cap or index.size <= 1:
            return FilterResult(mean, kept, removed, top, "removal cap")
        scores = fixed_order.matvec(centred, direction) ** 2
        total = scores.sum()
        probabilities = scores / total if total > 0.0 else None
        positive = int(np.count_nonzero(scores > 0.0)) if total > 0.0 else index.size
        draws = min(removals_per_step, cap - removed, positive)
        chosen = rng.choice(index.size, size=draws, replace=False, p=probabilities)
        kept[index[chosen]] = False
        removed += draws


@dataclass(frozen=True)
class RobustFit:
    """Output of :func:`robust_least_squares`.

    Attributes
    ----------
    theta
        The robust estimate ``θ̂ = n·W·ŵ`` (in the span of the design rows).
    least_squares
        The plain least-squares estimate on the same (clipped) values, for comparison.
    variance_bound
        The λ used by the filter.
    leverage
        μ = max over the reference arms of ``‖a‖²_{M^{-1}}``.
    filter
        The filter's result (kept mask, number removed, stopping reason).
    """

    theta: np.ndarray
    least_squares: np.ndarray
    variance_bound: float
    leverage: float
    filter: FilterResult


def _gram_roots(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``M^{+}`` and ``M^{+1/2}`` of ``M = rowsᵀ rows`` on the span of the rows (pseudo-inverses), from a
    fixed-order Jacobi eigen-decomposition (:mod:`dpcert._fixed_order`)."""
    gram = fixed_order.weighted_gram(rows)
    values, vectors = fixed_order.symmetric_eigh(gram)
    keep = values > _EIGEN_FLOOR * max(values[-1], 0.0)
    if not np.any(keep):
        raise InvalidParameter("rows", "<all-zero design>", "a design with at least one non-zero row")
    basis = vectors[:, keep]
    inverse = fixed_order.from_eigen(basis, 1.0 / values[keep])
    inverse_root = fixed_order.from_eigen(basis, 1.0 / np.sqrt(values[keep]))
    return inverse, inverse_root


def least_squares(rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Plain least squares ``M^{+} Σ_j a_j y_j`` (the minimum-norm solution)."""
    rows, values = _check_design(rows, values)
    inverse, _ = _gram_roots(rows)
    return fixed_order.matvec(inverse, fixed_order.weighted_sum(rows, values))


def chernoff_trim_fraction(alpha: float, n: int, failure_probability: float) -> float:
    """``τ = min(1/2, α + sqrt(3α·log(1/δ)/n) + log(1/δ)/n)``: a Chernoff upper bound on the realised
    fraction of corrupted points among ``n`` when each is corrupted independently w.p. α
    (PN-CEM-2 (b))."""
    log_term = math.log(1.0 / failure_probability)
    return min(0.5, alpha + math.sqrt(3.0 * alpha * log_term / n) + log_term / n)


def trimmed_second_moment(values: np.ndarray, trim_fraction: float) -> float:
    """Mean of ``y²`` after dropping the largest ``ceil(trim_fraction·n)`` of them."""
    squares = np.sort(np.asarray(values, dtype=float) ** 2)
    drop = int(math.ceil(trim_fraction * squares.size))
    kept = squares[: max(1, squares.size - drop)]
    return float(kept.mean())


def arm_second_moment(
    rows: np.ndarray, values: np.ndarray, alpha: float, failure_probability: float
) -> float:
    """``max_a trimmed_a(y²)``: the largest per-arm second moment of the values, each arm's ``y²`` trimmed
    by the Chernoff fraction :func:`chernoff_trim_fraction` for its own row count (rows are grouped by
    exact equality)."""
    _, groups = np.unique(rows, axis=0, return_inverse=True)
    groups = groups.reshape(-1)
    largest = 0.0
    for group in np.unique(groups):
        members = values[groups == group]
        trim = chernoff_trim_fraction(alpha, members.size, failure_probability)
        largest = max(largest, trimmed_second_moment(members, trim))
    return largest


def _check_design(rows: object, values: object) -> tuple[np.ndarray, np.ndarray]:
    rows = check.finite_array("rows", rows)
    values = check.finite_array("values", values)
    if rows.ndim != 2 or rows.shape[0] < 1:
        raise InvalidParameter("rows", rows.shape, "an array of shape (n, d) with n >= 1")
    if values.shape != (rows.shape[0],):
        raise InvalidParameter("values", values.shape, f"an array of shape ({rows.shape[0]},)")
    return rows, values


def robust_least_squares(
    rows: np.ndarray,
    values: np.ndarray,
    rng: np.random.Generator,
    *,
    alpha: float,
    value_bound: float | None = None,
    variance: str | None = None,
    failure_probability: float = 0.01,
    clip_values: bool = False,
    reference_arms: np.ndarray | None = None,
    threshold_factor: float = DEFAULT_THRESHOLD_FACTOR,
    max_removed_fraction: float | None = None,
    removals_per_step: int = 1,
) -> RobustFit:
    """Robust fixed-design least squares by spectral filtering (the paper's Alg. 2).

    Parameters
    ----------
    rows
        Design rows ``a_j``, shape (n, d) (repeated rows allowed).
    values
        Received values ``y_j``, shape (n,) (privatized and possibly corrupted).
    rng
        Source of the filter's randomness.
    alpha
        Upper bound on the corruption probability, ``0 <= alpha < 1/4`` (the paper's eq. 3).
    value_bound
        Ȳ, an a-priori high-probability bound on the clean ``|y_j|`` (used by ``variance="bound"`` and by
        ``clip_values``).
    variance
        Source of λ: ``"bound"`` (PN-CEM-2 option (a): ``λ = μ·Ȳ²``, needs ``value_bound``) or
        ``"trimmed"`` (option (b), the Chernoff-trimmed second moment) or ``"arm-moment"`` (the per-arm
        whitened bound of the module docstring: ``(2/(1−α))·max_a trimmed_a(y²)/n``).  Default:
        ``"bound"`` when ``value_bound`` is given, else ``"trimmed"``.  Either way λ never depends on the
        untrimmed corrupted sample (the printed eq. 13 does; see the module docstring).
    failure_probability
        δ of the Chernoff trim fraction, in (0, 1).
    clip_values
        Clip received values to ``[−Ȳ, Ȳ]`` before filtering (needs ``value_bound``); harmless for clean
        values when Ȳ is a high-probability bound, and it removes large-magnitude corruptions.
    reference_arms
        Arms over which μ = max ``‖a‖²_{M^{-1}}`` is taken (default: the design rows; in the bandit, the
        active arms).
    threshold_factor, max_removed_fraction, removals_per_step
        Filter controls, see :func:`spectral_filter`; ``max_removed_fraction`` defaults to
        ``min(1/2, max(2α + 0.05, 2τ))`` with τ the Chernoff trim fraction (PN-CEM-2 suggests
        ``2α + 0.05``; for small n the realised corrupted fraction can exceed it, and the randomized
        filter also removes some clean points, so the cap allows twice the high-probability count).

    Returns
    -------
    RobustFit
    """
    rows, values = _check_design(rows, values)
    alpha = check.nonnegative_finite("alpha", alpha)
    if alpha >= 0.25:
        raise InvalidParameter(
            "alpha", alpha, "0 <= alpha < 0.25 (Charisopoulos, Esfandiari & Mirrokni 2023, eq. 3)"
        )
    failure_probability = check.probability(
        "failure_probability", failure_probability, open_low=True, open_high=True
    )
    if value_bound is not None:
        value_bound = check.positive_finite("value_bound", value_bound)
    if variance is None:
        variance = "trimmed" if value_bound is None else "bound"
    if variance not in VARIANCE_SOURCES:
        raise InvalidParameter("variance", variance, "one of " + ", ".join(VARIANCE_SOURCES))
    if variance == "bound" and value_bound is None:
        raise InvalidParameter("value_bound", None, "a positive bound when variance='bound'")
    if clip_values:
        if value_bound is None:
            raise InvalidParameter("clip_values", True, "False unless value_bound is given")
        values = np.clip(values, -value_bound, value_bound)
    n = rows.shape[0]
    trim = chernoff_trim_fraction(alpha, n, failure_probability)
    if max_removed_fraction is None:
        # each filter step removes a corrupted point with probability >= 1/2 while the threshold is
        # exceeded (Prasad et al. 2019), so allow twice the Chernoff bound on the corrupted count
        max_removed_fraction = min(0.5, max(2.0 * alpha + 0.05, 2.0 * trim))

    inverse, inverse_root = _gram_roots(rows)
    arms = rows if reference_arms is None else check.finite_array("reference_arms", reference_arms)
    if arms.ndim != 2 or arms.shape[1] != rows.shape[1]:
        raise InvalidParameter("reference_arms", arms.shape, f"an array of shape (K, {rows.shape[1]})")
    leverage = float(np.max(fixed_order.dot(fixed_order.matmul(arms, inverse), arms)))

    if variance == "bound":
        assert value_bound is not None  # variance='bound' without a bound was refused above
        variance_bound = leverage * value_bound**2
    elif variance == "arm-moment":
        variance_bound = 2.0 / (1.0 - alpha) * arm_second_moment(rows, values, alpha, failure_probability) / n
    else:
        variance_bound = 2.0 / (1.0 - alpha) * leverage * trimmed_second_moment(values, trim)

    points = fixed_order.matmul(rows, inverse_root) * values[:, None]
    result = spectral_filter(
        points,
        variance_bound,
        rng,
        threshold_factor=threshold_factor,
        max_removed_fraction=max_removed_fraction,
        removals_per_step=removals_per_step,
    )
    theta = n * fixed_order.matvec(inverse_root, result.mean)
    plain = fixed_order.matvec(inverse, fixed_order.weighted_sum(rows, values))
    return RobustFit(theta, plain, variance_bound, leverage, result)


@dataclass(frozen=True)
class RobustEstimate:
    """Output of :func:`robust_estimate`.

    Attributes
    ----------
    theta
        The phase estimate of θ.
    estimator
        ``"filter"``, ``"clip-only"`` or ``"least-squares"``.
    removed
        Points removed by the filter (0 for the other estimators).
    clipped
        Received values changed by clipping to ``[−Ȳ, Ȳ]`` (0 for ``"least-squares"``).
    variance_bound
        The filter's λ (``None`` for the other estimators).
    """

    theta: np.ndarray
    estimator: str
    removed: int
    clipped: int
    variance_bound: float | None


def robust_estimate(
    design: np.ndarray,
    values: np.ndarray,
    rng: np.random.Generator,
    *,
    estimator: str = "filter",
    alpha: float = 0.0,
    value_bound: float | None = None,
    variance: str = "arm-moment",
    failure_probability: float = 0.01,
    reference_arms: np.ndarray | None = None,
    removals_per_step: int = 1,
) -> RobustEstimate:
    """One phase's estimate of θ from received values (the paper's Alg. 1 lines 6–8).

    Parameters
    ----------
    design
        Design rows ``a_j``, shape (n, d) (repeated rows allowed).
    values
        Received values ``y_j``, shape (n,).
    rng
        Source of the filter's randomness (unused by the other estimators).
    estimator
        ``"filter"``: clip to ``[−Ȳ, Ȳ]`` when ``value_bound`` is given, then the spectral-filter robust least
        squares (Alg. 2) with λ from ``variance``; ``"clip-only"``: clip to ``[−Ȳ, Ȳ]`` (needs
        ``value_bound``), then plain least squares; ``"least-squares"``: plain least squares on the values.
    alpha
        Corruption probability bound, ``0 <= alpha < 1/4`` (filter only).
    value_bound
        Ȳ, a high-probability bound on every clean ``|y_j|``.
    variance
        λ source for the filter (:func:`robust_least_squares`): ``"arm-moment"`` (default), ``"trimmed"`` or
        ``"bound"``.  ``"arm-moment"`` trims each arm's values separately, so it needs several rows per arm
        (M1); an arm with a single row (M2, or the first phases of M1) is not trimmed and a corrupted row
        there can inflate λ: clip (give ``value_bound``), which caps that inflation at ``2Ȳ²/((1−α)n)``, or
        use ``"trimmed"`` or ``"bound"``.
    failure_probability, reference_arms, removals_per_step
        As in :func:`robust_least_squares`.

    Returns
    -------
    RobustEstimate
    """
    design, values = _check_design(design, values)
    if estimator not in ESTIMATORS:
        raise InvalidParameter("estimator", estimator, "one of " + ", ".join(ESTIMATORS))
    if value_bound is not None:
        value_bound = check.positive_finite("value_bound", value_bound)
    if estimator == "least-squares":
        return RobustEstimate(least_squares(design, values), estimator, 0, 0, None)
    if estimator == "clip-only":
        if value_bound is None:
            raise InvalidParameter("value_bound", None, "a positive bound when estimator='clip-only'")
        clipped = np.clip(values, -value_bound, value_bound)
        changed = int(np.count_nonzero(clipped != values))
        return RobustEstimate(least_squares(design, clipped), estimator, 0, changed, None)
    changed = 0 if value_bound is None else int(np.count_nonzero(np.abs(values) > value_bound))
    fit = robust_least_squares(
        design,
        values,
        rng,
        alpha=alpha,
        value_bound=value_bound,
        variance=variance,
        failure_probability=failure_probability,
        clip_values=value_bound is not None,
        reference_arms=reference_arms,
        removals_per_step=removals_per_step,
    )
    return RobustEstimate(fit.theta, estimator, fit.filter.removed, changed, fit.variance_bound)
