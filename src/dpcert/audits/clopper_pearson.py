"""Clopper–Pearson limits of a binomial proportion, checked against the distribution they invert.

The limits of ``k`` successes in ``n`` trials at level α (Clopper & Pearson 1934) solve
``P(Bin(n, p) ≥ k) = I_p(k, n − k + 1) = α/2`` (lower) and ``P(Bin(n, p) ≤ k) = 1 − I_p(k + 1, n − k)
= α/2`` (upper), with the regularised incomplete beta function I.  statsmodels'
``proportion_confint(method="beta")`` computes them through SciPy's inverse of I, which can miss by far
at large ``n``: with SciPy 1.17, ``k = 1000`` of ``n = 2·10⁸`` gets the lower limit 7.6·10⁻⁶, above the
observed rate 5·10⁻⁶ (the true limit is 4.69·10⁻⁶), which would make an audit's lower bound on ε too
high.  Here every limit is checked against I itself (accurate there: it agrees with 40-digit
arithmetic to about 1e-14 relative), and a limit on the wrong side of the root is replaced by a
bisection on I, ended on the root's safe side (below it for a lower limit, above it for an upper).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_ROUNDING = 1e-12  # relative error allowed for the function values of a returned limit
_BISECTION_STEPS = 200


def clopper_pearson(successes: Any, trials: Any, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper limits of the two-sided (1 − ``alpha``) Clopper–Pearson interval (``alpha/2``
    in each tail), elementwise over ``successes`` and ``trials``; the lower limit of 0 successes is
    0 and the upper limit of ``trials`` successes is 1."""
    from scipy.special import betainc, betaincc
    from statsmodels.stats.proportion import proportion_confint  # heavy: imported on first use

    k, n = np.broadcast_arrays(np.asarray(successes, dtype=float), np.asarray(trials, dtype=float))
    shape = k.shape
    k, n = np.array(k).reshape(-1), np.array(n).reshape(-1)
    lower, upper = proportion_confint(k, n, alpha=alpha, method="beta")
    lower = np.array(np.nan_to_num(np.asarray(lower, dtype=float), nan=0.0), dtype=float).reshape(-1)
    upper = np.array(np.nan_to_num(np.asarray(upper, dtype=float), nan=1.0), dtype=float).reshape(-1)
    lower[k <= 0] = 0.0
    upper[k >= n] = 1.0
    tail = alpha / 2.0
    limit = tail * (1.0 + _ROUNDING)
    for index in np.flatnonzero(k > 0):
        kk, nn = float(k[index]), float(n[index])
        # lower limit p: P(Bin(n, p) >= k) = I_p(k, n − k + 1) must be at most α/2
        if not (0.0 <= lower[index] <= kk / nn and betainc(kk, nn - kk + 1.0, lower[index]) <= limit):
            below = lambda p, a=kk, b=nn - kk + 1.0: bool(betainc(a, b, p) <= limit)  # noqa: E731
            lower[index] = _bisect(below, 0.0, kk / nn)[0]
    for index in np.flatnonzero(k < n):
        kk, nn = float(k[index]), float(n[index])
        # upper limit p: P(Bin(n, p) <= k) = 1 − I_p(k + 1, n − k) must be at most α/2
        if not (kk / nn <= upper[index] <= 1.0 and betaincc(kk + 1.0, nn - kk, upper[index]) <= limit):
            below = lambda p, a=kk + 1.0, b=nn - kk: bool(betaincc(a, b, p) > limit)  # noqa: E731
            upper[index] = _bisect(below, kk / nn, 1.0)[1]
    return lower.reshape(shape), upper.reshape(shape)


def _bisect(below: Any, low: float, high: float) -> tuple[float, float]:
    """For a condition true at ``low``, false at ``high`` and monotone between (true below a root,
    false above it): adjacent points ``(last true, first false)`` to float resolution."""
    for _ in range(_BISECTION_STEPS):
        middle = 0.5 * (low + high)
        if middle <= low or middle >= high:
            break
        if below(middle):
            low = middle
        else:
            high = middle
    return low, high
