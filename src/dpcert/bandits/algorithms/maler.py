"""Maler, a universal online convex optimisation learner, and its anytime (doubling) variant.

Wang, Lu & Zhang (2019), "Adaptivity and Optimality: A Universal Algorithm for Online Convex
Optimization", UAI 2019 (Algorithms 1-4).  Maler runs, side by side, one convex expert (OGD),
``k + 1`` exp-concave experts (online Newton step) and ``k + 1`` strongly convex experts (OGD with
``1/(λt)`` steps), one of each kind per learning rate ``η_i = 2^{-i}/(5 D G)``, ``i = 0..k``,
``k = ⌈½ log₂ T⌉``, and combines them with *tilted* exponential weights: the prediction is the
``π η``-weighted mean of the experts' points and each weight is multiplied by ``exp(-surrogate loss)``
(Algorithm 1).  It only uses the gradient ``g_t`` at the point it played.  Guarantees (Theorems 1-3):
``O(G D √T)`` regret for convex losses, ``O(d log T / α)`` for α-exp-concave and
``O((G²/λ) log T)`` for λ-strongly convex losses, without knowing which case holds.

Here ``D`` is the diameter of the domain ``Ω = {‖θ‖ ≤ radius}`` (``D = 2·radius``) and ``G`` bounds
every gradient (``‖g_t‖ ≤ G``; the LDP linear bandit guarantees it by clipping the de-biased
gradient, docs/PAPER_NOTES.md, PN-IRL-3).

Every learner here is vectorised over independent *runs* (rows) and follows one narrow protocol,
that of the online learner of :mod:`dpcert.bandits.algorithms.ldp_linear`:

* ``predict()`` returns the current points θ_t, shape ``(runs, d)``;
* ``update(gradient, rows=None)`` takes ``g_t`` at those points (shape ``(runs, d)``) and advances the
  rows selected by the boolean mask ``rows`` (all rows if None; the others are left untouched, as a base
  learner of the combiner is updated only in the runs that chose it);
* ``update_from_release(noisy_x, noisy_y, sigma, rows=None)`` does the same from the users' releases,
  with the clipped de-biased gradient ``clip_G(2x̃(⟨x̃, θ_t⟩ − ỹ) − 2σ²θ_t)`` of the loss of Improved-rate
  LDP linear bandits.

:class:`Maler` is told the horizon T; :class:`AnytimeMaler` is the doubling trick: epochs of length
``2^j`` (j = 0, 1, ...), each a fresh Maler told ``T_j = 2^j``, restarted per run.
:class:`OnlineGradientDescent` is the projected-OGD learner the bandit engine used so far, with the
same protocol, so that an engine can switch ``learner=maler|ogd``.
"""

from __future__ import annotations

import math

import numpy as np

from dpcert import _fixed_order as fixed_order
from dpcert import _validation as check
from dpcert.errors import InvalidParameter

ONS_GRADIENT_FACTOR = 7.0 / 25.0  # G^ℓ = 7/(25 D): gradient bound of the exp-concave surrogate (Lemma 2)
GRADIENT_SLACK = 1e-9  # relative tolerance on ‖g‖ ≤ G (floating-point clipping)
PROJECTION_ITERATIONS = 12  # safeguarded Newton steps of the ONS generalised projection


def expert_count(horizon: int) -> int:
    """``k + 1`` learning rates per expert family, ``k = ⌈½ log₂ T⌉`` (Wang et al. 2019, Alg. 1)."""
    return math.ceil(0.5 * math.log2(horizon)) + 1 if horizon > 1 else 1


def project_ball(points: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection of each row (last axis) onto ``{‖θ‖ ≤ radius}``."""
    norms = fixed_order.norm(points)[..., None]
    return points * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def debiased_gradient(
    noisy_x: np.ndarray, noisy_y: np.ndarray, theta: np.ndarray, sigma: float
) -> np.ndarray:
    """``g = 2 x̃ (⟨x̃, θ⟩ − ỹ) − 2 Σ θ``, the gradient of ``l_t`` at θ (§2.2); batch axes leading."""
    residual = fixed_order.dot(noisy_x, theta) - noisy_y
    return 2.0 * noisy_x * residual[..., None] - 2.0 * sigma**2 * theta


def clip_norm(vectors: np.ndarray, bound: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``g · min(1, G/‖g‖)`` row-wise (G a scalar or one per row), and whether each row was clipped."""
    norms = fixed_order.norm(vectors)
    bound = np.broadcast_to(np.asarray(bound, dtype=float), norms.shape)
    factor = np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    return vectors * factor[..., None], norms > bound


def project_ball_norm(points: np.ndarray, matrices: np.ndarray, radius: float) -> np.ndarray:
    """Generalised projection ``argmin_{‖z‖ ≤ radius} (z − y)ᵀ P (z − y)`` for each row (ONS, Alg. 3).

    Rows inside the ball are returned unchanged.  Otherwise the KKT condition gives
    ``z(ν) = (P + νI)^{-1} P y`` with ``‖z(ν)‖ = radius``; in the eigenbasis of P,
    ``‖z(ν)‖² = Σ_i (λ_i c_i / (λ_i + ν))²`` is decreasing in ν, solved by Newton steps on
    ``1/radius − 1/‖z(ν)‖`` safeguarded by bisection on ``[0, λ_max ‖y‖ / radius]`` (the upper end is
    always feasible; the feasible end of the final bracket is returned).

    Parameters
    ----------
    points : (m, d) array, the unprojected points y.
    matrices : (m, d, d) symmetric positive definite P.
    radius : the ball's radius.
    """
    norms = fixed_order.norm(points)
    outside = norms > radius
    if not outside.any():
        return points
    result = points.copy()
    values, vectors = fixed_order.symmetric_eigh(matrices[outside])
    coords = fixed_order.matvec(np.swapaxes(vectors, -1, -2), points[outside])
    weighted = values * coords
    low = np.zeros(int(outside.sum()))
    high = values.max(axis=1) * norms[outside] / radius
    nu = low.copy()
    for _ in range(PROJECTION_ITERATIONS):
        shifted = values + nu[:, None]
        size = np.sqrt(np.sum((weighted / shifted) ** 2, axis=1))
        too_big = size > radius
        low = np.where(too_big, nu, low)
        high = np.where(too_big, high, nu)
        # Newton step on 1/radius − 1/‖z(ν)‖ (Moré & Sorensen 1983), kept inside the bracket
        slope = -np.sum(weighted**2 / shifted**3, axis=1) / size**3
        newton = nu - (1.0 / radius - 1.0 / size) / slope
        inside = (newton > low) & (newton < high)
        nu = np.where(inside, newton, 0.5 * (low + high))
    high = np.where(np.sqrt(np.sum((weighted / (values + nu[:, None])) ** 2, axis=1)) <= radius, nu, high)
    projected = fixed_order.matvec(vectors, weighted / (values + high[:, None]))
    result[outside] = project_ball(projected, radius)  # guards the last rounding error only
    return result


def _logsumexp(values: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return np.squeeze(top, axis=axis) + np.log(np.sum(np.exp(values - top), axis=axis))


class _Protocol:
    """Shared validation and the release-to-gradient step of the learner protocol."""

    runs: int
    dimension: int
    radius: float
    gradient_bound: float

    def _check_gradient(self, gradient: object) -> np.ndarray:
        array = check.finite_array("gradient", gradient)
        if array.shape != (self.runs, self.dimension):
            raise InvalidParameter(
                "gradient",
                f"<array of shape {array.shape}>",
                f"shape (runs, d) = ({self.runs}, {self.dimension})",
            )
        if np.any(fixed_order.norm(array) > self.gradient_bound * (1.0 + GRADIENT_SLACK)):
            raise InvalidParameter(
                "gradient",
                f"<array with norm up to {fixed_order.norm(array).max():.6g}>",
                f"every row with Euclidean norm <= gradient_bound = {self.gradient_bound:g} (clip first)",
            )
        return array

    def _check_rows(self, rows: object) -> np.ndarray:
        if rows is None:
            return np.ones(self.runs, dtype=bool)
        mask = np.asarray(rows)
        if mask.dtype != bool or mask.shape != (self.runs,):
            raise InvalidParameter(
                "rows",
                f"<{mask.dtype} array of shape {mask.shape}>",
                f"None or a boolean mask of shape ({self.runs},)",
            )
        return mask

    def predict(self) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def update(self, gradient: np.ndarray, rows: np.ndarray | None = None) -> None:  # pragma: no cover
        raise NotImplementedError

    def update_from_release(
        self, noisy_x: np.ndarray, noisy_y: np.ndarray, sigma: float, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """Update on the clipped de-biased squared-loss gradient of the releases ``(x̃, ỹ)`` (Improved-rate
        LDP linear bandits, §2.2).

        ``g = clip_G(2 x̃ (⟨x̃, θ_t⟩ − ỹ) − 2σ² θ_t)`` at the current points θ_t = ``predict()``; returns
        the boolean mask of rows whose gradient was clipped.
        """
        sigma = check.nonnegative_finite("sigma", sigma)
        noisy_x = check.finite_array("noisy_x", noisy_x)
        noisy_y = check.finite_array("noisy_y", noisy_y)
        if noisy_x.shape != (self.runs, self.dimension) or noisy_y.shape != (self.runs,):
            raise InvalidParameter(
                "noisy_x",
                f"<shapes {noisy_x.shape}, {noisy_y.shape}>",
                f"noisy_x ({self.runs}, {self.dimension}) and noisy_y ({self.runs},)",
            )
        gradient, clipped = clip_norm(
            debiased_gradient(noisy_x, noisy_y, self.predict(), sigma), self.gradient_bound
        )
        self.update(gradient, rows)
        return clipped


def _common(dimension: int, runs: int, radius: float, gradient_bound: float) -> tuple[int, int, float, float]:
    return (
        check.positive_int("dimension", dimension),
        check.positive_int("runs", runs),
        check.positive_finite("radius", radius),
        check.positive_finite("gradient_bound", gradient_bound),
    )


class Maler(_Protocol):
    """Maler (Wang, Lu & Zhang 2019, Algorithm 1 with expert Algorithms 2-4), told the horizon T.

    Parameters
    ----------
    dimension : d.
    horizon : T, the number of updates each run will receive (sets ``η^c = 1/(2GD√T)`` and k).
    radius : the domain is ``{‖θ‖ ≤ radius}``, diameter ``D = 2·radius``.
    gradient_bound : G with ``‖g_t‖ ≤ G`` for every update (checked).
    runs : number of independent rows updated in parallel.

    Notes
    -----
    Priors ``π^c = 1/3`` and ``π^{η_i,ℓ} = π^{η_i,s} = (1 + 1/(k+1)) / (3(i+1)(i+2))`` (each family sums
    to 1/3).  Surrogate losses at an expert point x, with θ_t the played point:
    ``c_t(x) = −η^c⟨g, θ_t − x⟩ + (η^c G D)²``, ``ℓ_t^η(x) = −η⟨g, θ_t − x⟩ + η²⟨g, θ_t − x⟩²``,
    ``s_t^η(x) = −η⟨g, θ_t − x⟩ + η² G² ‖θ_t − x‖²`` (eqs. 4-6).  Experts: OGD on c with step
    ``D/(η^c G √t)``; ONS on ℓ with ``β = ½ min{1/(4 G^ℓ D), 1}``, ``G^ℓ = 7/(25D)``, ``P_1 = I/(β²D²)``;
    OGD on s with step ``1/(2η²G² t)``.  All experts start at 0.  Rows may carry different horizons
    internally (used by :class:`AnytimeMaler`); experts beyond a row's k have zero weight.
    """

    # expert state per row and expert column, set by _grow (one column per learning rate)
    x_ons: np.ndarray  # (runs, k + 1, d)
    x_strong: np.ndarray  # (runs, k + 1, d)
    ons_matrix: np.ndarray  # (runs, k + 1, d, d)
    ons_inverse: np.ndarray  # (runs, k + 1, d, d)
    log_w_ons: np.ndarray  # (runs, k + 1)
    log_w_strong: np.ndarray  # (runs, k + 1)

    def __init__(
        self, dimension: int, horizon: int, *, radius: float = 1.0, gradient_bound: float, runs: int = 1
    ) -> None:
        self.dimension, self.runs, self.radius, self.gradient_bound = _common(
            dimension, runs, radius, gradient_bound
        )
        horizon = check.positive_int("horizon", horizon)
        self.diameter = 2.0 * self.radius
        self.beta = 0.5 * min(1.0 / (4.0 * ONS_GRADIENT_FACTOR), 1.0)  # G^ℓ D = 7/25
        self._capacity = 0
        self.horizons = np.full(self.runs, horizon, dtype=np.int64)
        self.rounds = np.zeros(self.runs, dtype=np.int64)
        self._grow(expert_count(horizon))
        self._reset(np.ones(self.runs, dtype=bool), self.horizons)

    # ------------------------------------------------------------------ state
    @property
    def rates(self) -> np.ndarray:
        """``η_i = 2^{-i}/(5 D G)`` for the allocated experts."""
        return 2.0 ** -np.arange(self._capacity) / (5.0 * self.diameter * self.gradient_bound)

    def _grow(self, capacity: int) -> None:
        """Allocate expert slots up to ``capacity`` per family (new slots start with zero weight)."""
        extra = capacity - self._capacity
        if extra <= 0:
            return
        r, d = self.runs, self.dimension
        p0 = np.eye(d) / (self.beta * self.diameter) ** 2
        new = {
            "x_ons": np.zeros((r, extra, d)),
            "x_strong": np.zeros((r, extra, d)),
            "ons_matrix": np.broadcast_to(p0, (r, extra, d, d)).copy(),
            "ons_inverse": np.broadcast_to(np.diag(1.0 / np.diag(p0)), (r, extra, d, d)).copy(),
            "log_w_ons": np.full((r, extra), -np.inf),
            "log_w_strong": np.full((r, extra), -np.inf),
        }
        for name, block in new.items():
            if self._capacity == 0:
                setattr(self, name, block)
            else:
                setattr(self, name, np.concatenate([getattr(self, name), block], axis=1))
        self._capacity = capacity

    def _reset(self, rows: np.ndarray, horizons: np.ndarray) -> None:
        """Fresh Maler state for the masked rows, told ``horizons[rows]``."""
        self._grow(int(max(expert_count(int(h)) for h in np.unique(horizons[rows]))) if rows.any() else 0)
        d = self.dimension
        self.horizons = np.where(rows, horizons, self.horizons)
        self.rounds = np.where(rows, 0, self.rounds)
        counts = np.array([expert_count(int(h)) for h in self.horizons])
        index = np.arange(self._capacity)
        scale = 1.0 + 1.0 / counts  # C₀ = 1 + 1/(k+1)
        prior = scale[:, None] / (3.0 * (index + 1.0) * (index + 2.0))
        log_prior = np.where(index[None, :] < counts[:, None], np.log(prior), -np.inf)
        if not hasattr(self, "x_convex"):
            self.x_convex = np.zeros((self.runs, d))
            self.log_w_convex = np.zeros(self.runs)
        p0 = np.eye(d) / (self.beta * self.diameter) ** 2
        self.x_convex[rows] = 0.0
        self.log_w_convex[rows] = math.log(1.0 / 3.0)
        self.x_ons[rows] = 0.0
        self.x_strong[rows] = 0.0
        self.ons_matrix[rows] = p0
        self.ons_inverse[rows] = np.diag(1.0 / np.diag(p0))  # P₀ is diagonal
        self.log_w_ons[rows] = log_prior[rows]
        self.log_w_strong[rows] = log_prior[rows]

    @property
    def convex_rate(self) -> np.ndarray:
        """``η^c = 1/(2 G D √T)`` per row."""
        return 1.0 / (2.0 * self.gradient_bound * self.diameter * np.sqrt(self.horizons))

    def weights(self) -> np.ndarray:
        """Normalised meta weights per row, columns ``[convex, ons_0..ons_k, strong_0..strong_k]``."""
        logs = np.concatenate([self.log_w_convex[:, None], self.log_w_ons, self.log_w_strong], axis=1)
        return np.exp(logs - _logsumexp(logs, axis=1)[:, None])

    # ------------------------------------------------------------------ protocol
    def predict(self) -> np.ndarray:
        """θ_t = Σ π_j η_j x_j / Σ π_j η_j (tilted weights, Alg. 1 line 4), shape ``(runs, d)``."""
        rates = np.log(self.rates)
        logs = np.concatenate(
            [
                (self.log_w_convex + np.log(self.convex_rate))[:, None],
                self.log_w_ons + rates,
                self.log_w_strong + rates,
            ],
            axis=1,
        )
        mix = np.exp(logs - _logsumexp(logs, axis=1)[:, None])
        points = np.concatenate([self.x_convex[:, None, :], self.x_ons, self.x_strong], axis=1)
        return fixed_order.matvec(np.swapaxes(points, -1, -2), mix)

    def update(self, gradient: np.ndarray, rows: np.ndarray | None = None) -> None:
        """One round of Maler for the masked rows, with ``gradient`` = g_t at ``predict()``."""
        g = self._check_gradient(gradient)
        mask = self._check_rows(rows)
        if not mask.any():
            return
        self._step(g, mask)

    def _step(self, g: np.ndarray, mask: np.ndarray) -> None:
        G, D = self.gradient_bound, self.diameter
        theta = self.predict()
        t = (self.rounds + 1).astype(float)
        eta = self.rates[None, :]
        eta_c = self.convex_rate
        # surrogate losses at each expert's own point (eqs. 4-6)
        u_c = fixed_order.dot(g, theta - self.x_convex)
        u_l = fixed_order.dot(g[:, None, :], theta[:, None, :] - self.x_ons)
        diff_s = theta[:, None, :] - self.x_strong
        u_s = fixed_order.dot(g[:, None, :], diff_s)
        loss_c = -eta_c * u_c + (eta_c * G * D) ** 2
        loss_l = -eta * u_l + (eta * u_l) ** 2
        loss_s = -eta * u_s + eta**2 * G**2 * np.sum(diff_s**2, axis=2)
        log_c = self.log_w_convex - loss_c
        log_l = self.log_w_ons - loss_l
        log_s = self.log_w_strong - loss_s
        total = _logsumexp(np.concatenate([log_c[:, None], log_l, log_s], axis=1), axis=1)
        # convex expert: OGD on c_t, step D/(η^c G √t) on ∇c = η^c g
        x_c = project_ball(self.x_convex - (D / (G * np.sqrt(t)))[:, None] * g, self.radius)
        # exp-concave experts: ONS on ℓ_t, ∇ℓ = η g + 2η²⟨g, x − θ⟩ g = η(1 − 2η u) g
        grad_l = (eta * (1.0 - 2.0 * eta * u_l))[:, :, None] * g[:, None, :]
        matrix = self.ons_matrix + grad_l[:, :, :, None] * grad_l[:, :, None, :]
        inv_g = fixed_order.matvec(self.ons_inverse, grad_l)
        inverse = (
            self.ons_inverse
            - inv_g[:, :, :, None]
            * inv_g[:, :, None, :]
            / (1.0 + fixed_order.dot(grad_l, inv_g))[:, :, None, None]
        )  # Sherman-Morrison
        unprojected = self.x_ons - fixed_order.matvec(inverse, grad_l) / self.beta
        r, e, d = unprojected.shape
        x_l = project_ball_norm(
            unprojected.reshape(r * e, d), matrix.reshape(r * e, d, d), self.radius
        ).reshape(r, e, d)
        # strongly convex experts: OGD on s_t (2η²G²-strongly convex), step 1/(2η²G² t)
        grad_s = eta[:, :, None] * g[:, None, :] - 2.0 * (eta**2)[:, :, None] * G**2 * diff_s
        x_s = project_ball(
            self.x_strong - grad_s / (2.0 * eta**2 * G**2 * t[:, None])[:, :, None], self.radius
        )
        m1, m2, m3 = mask[:, None], mask[:, None, None], mask[:, None, None, None]
        self.log_w_convex = np.where(mask, log_c - total, self.log_w_convex)
        self.log_w_ons = np.where(m1, log_l - total[:, None], self.log_w_ons)
        self.log_w_strong = np.where(m1, log_s - total[:, None], self.log_w_strong)
        self.x_convex = np.where(m1, x_c, self.x_convex)
        self.x_ons = np.where(m2, x_l, self.x_ons)
        self.x_strong = np.where(m2, x_s, self.x_strong)
        self.ons_matrix = np.where(m3, matrix, self.ons_matrix)
        self.ons_inverse = np.where(m3, inverse, self.ons_inverse)
        self.rounds = np.where(mask, self.rounds + 1, self.rounds)


class AnytimeMaler(Maler):
    """Maler without a known horizon, by the doubling trick (Cesa-Bianchi & Lugosi 2006, §2.3).

    Each run restarts a fresh :class:`Maler` told ``T_j = 2^j`` after ``2^j`` updates of epoch j
    (j = 0, 1, 2, ...), so epoch j covers that run's updates ``2^j .. 2^{j+1} − 1``.  Regret is at most
    the sum of the epochs' regrets: ``O(√T)`` stays ``O(√T)``, an ``O(log T)`` bound becomes
    ``O(log² T)`` (at most ``(log₂T/2 + 1)`` times the told-T bound).  Improved-rate LDP linear bandits
    restarts its whole Algorithm 1 the same way (its Algorithm 7; docs/PAPER_NOTES.md, PN-IRL-3).

    Parameters
    ----------
    dimension, radius, gradient_bound, runs : as for :class:`Maler`.
    """

    def __init__(self, dimension: int, *, radius: float = 1.0, gradient_bound: float, runs: int = 1) -> None:
        super().__init__(dimension, 1, radius=radius, gradient_bound=gradient_bound, runs=runs)

    def update(self, gradient: np.ndarray, rows: np.ndarray | None = None) -> None:
        """One round for the masked rows; rows that finish their epoch restart with twice the horizon."""
        g = self._check_gradient(gradient)
        mask = self._check_rows(rows)
        if not mask.any():
            return
        self._step(g, mask)
        done = mask & (self.rounds >= self.horizons)
        if done.any():
            self._reset(done, 2 * self.horizons)


class OnlineGradientDescent(_Protocol):
    """Projected online gradient descent, ``θ_{t+1} = Π_Ω(θ_t − η_t g_t)`` (Zinkevich 2003; Hazan 2016, §3.3).

    Parameters
    ----------
    dimension : d.
    radius : the domain ``{‖θ‖ ≤ radius}``, diameter ``D = 2·radius``.
    gradient_bound : G with ``‖g_t‖ ≤ G`` (checked).
    modulus : μ > 0 selects the strongly convex step ``η_t = 1/(μ t)`` (regret ``(G²/2μ)(1 + log T)``);
        None selects the convex step ``η_t = D/(G√t)`` (regret ``(3/2) G D √T``).
    runs : independent rows updated in parallel.
    """

    def __init__(
        self,
        dimension: int,
        *,
        radius: float = 1.0,
        gradient_bound: float,
        modulus: float | None = None,
        runs: int = 1,
    ) -> None:
        self.dimension, self.runs, self.radius, self.gradient_bound = _common(
            dimension, runs, radius, gradient_bound
        )
        self.modulus = None if modulus is None else check.positive_finite("modulus", modulus)
        self.points = np.zeros((self.runs, self.dimension))
        self.rounds = np.zeros(self.runs, dtype=np.int64)

    def predict(self) -> np.ndarray:
        """Current points θ_t, shape ``(runs, d)``."""
        return self.points.copy()

    def update(self, gradient: np.ndarray, rows: np.ndarray | None = None) -> None:
        """One projected step for the masked rows."""
        g = self._check_gradient(gradient)
        mask = self._check_rows(rows)
        t = (self.rounds + 1).astype(float)
        if self.modulus is None:
            step = 2.0 * self.radius / (self.gradient_bound * np.sqrt(t))
        else:
            step = 1.0 / (self.modulus * t)
        moved = project_ball(self.points - step[:, None] * g, self.radius)
        self.points = np.where(mask[:, None], moved, self.points)
        self.rounds = np.where(mask, self.rounds + 1, self.rounds)
