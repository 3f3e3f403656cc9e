"""DP-SGD: the least noise multiplier for a target (ε, δ), and the (ε, δ) of a given one.

A DP-SGD run (Abadi et al. 2016) takes ``steps`` gradient steps; each adds N(0, (z Δ)²) noise to the
sum of the batch's clipped per-example gradients, where z is the *noise multiplier* and Δ the ℓ2
sensitivity of that sum under the neighbouring relation of the sampling scheme:

* ``sampling="poisson"``: every record joins each batch independently with probability q (expected
  batch size q N).  Accounted under add/remove by
  :func:`~dpcert.mechanisms.subsampled_gaussian.poisson_sampled_gaussian_certificate`, where gradients
  clipped to norm C give Δ = C.
* ``sampling="shuffle"``: each batch is B records drawn uniformly without replacement from the N
  records, independently at every step (fixed batch size, the dataset size public).  Accounted by
  :func:`~dpcert.mechanisms.sampled_without_replacement.sampled_without_replacement_certificate`
  under replace-one, where gradients clipped to norm C give Δ = 2C.  This is *not* the accounting of
  a pipeline that permutes the data once per epoch and walks through disjoint batches: that scheme
  can lose more privacy than the scheme accounted here (Chua et al. 2024), and no certificate of
  dpcert covers it.

The schedule is given by exactly one of ``sampling_probability`` q or ``batch_size`` B with
``dataset_size`` N (then q = B / N), and exactly one of ``steps`` or ``epochs``: an epoch is
⌈N / B⌉ steps when B and N are given, else ⌈1 / q⌉ steps (1 / q evaluated in double precision).

:func:`calibrate_dp_sgd` searches the noise multiplier with the project's one calibration search
(:func:`~dpcert._numerics.least_noise`, Brent's method on log δ(ε) against z, started
from the central-limit estimate of Bu, Dong, Long & Su 2020, or, where a record is rarely sampled
at all, from the single-step estimate of :func:`rare_sampling_guess`), stops once the least valid
z is located to a relative 1e-4, and returns a z whose certificate is re-derived and verified.

Poisson-sampled runs are accounted at the PLD value discretisation interval of
:func:`poisson_interval`: the default 1e-4, except at small noise multipliers where one step's PLD
would span more than ``SLOW_SPAN_POINTS`` grid points (a coarser pessimistic grid, still a proven
upper bound, recorded in the certificate's parameters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpcert import _validation as check
from dpcert._numerics import least_noise, ratio_rounded_up
from dpcert.certificates import Certificate
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.sampled_without_replacement import sampled_without_replacement_certificate
from dpcert.mechanisms.subsampled_gaussian import (
    DEFAULT_INTERVAL,
    TAIL_STANDARD_DEVIATIONS,
    effective_interval,
    poisson_sampled_gaussian_certificate,
)
from dpcert.profiles import profile_for
from dpcert.theory.gaussian import analytic_gaussian_sigma

SAMPLINGS = ("poisson", "shuffle")
MAX_STEPS = 10**7
"""Most steps a DP-SGD certificate accounts (the limit of the underlying certificates)."""
MAX_NOISE_MULTIPLIER = 1e6
"""Largest noise multiplier the calibration considers; a target no z up to it meets is refused."""
RELATIVE_TOLERANCE = 1e-4
"""The search stops once the least valid z is located to this relative precision; the returned z is
valid as evaluated and at most about five times this above the least valid one (the final nudge
steps by 1e-4, then 4e-4)."""
BRACKET_RATIO = 1.1
"""First bracket [g / 1.1, g] or [g, 1.1 g] around the starting guess g (widened when it misses)."""
_LOG_OF_ZERO = math.log(5e-324) - 1.0  # below log δ for every positive δ
SLOW_SPAN_POINTS = 2**19
"""A Poisson-sampled step whose PLD would span more points than this at the default interval of
:mod:`~dpcert.mechanisms.subsampled_gaussian` (noise multipliers below about 0.2 where the composed
loss is narrow) is accounted on a coarser grid: see :func:`poisson_interval`."""
COARSE_SPAN_POINTS = 2**16
"""Most points a single step's PLD spans on the coarser grid of :func:`poisson_interval`."""


@dataclass(frozen=True)
class DPSGDSchedule:
    """How often and how a DP-SGD run samples: the inputs its accounting depends on.

    ``batch_size`` and ``dataset_size`` are ``None`` when only ``sampling_probability`` was given
    (Poisson sampling only).
    """

    sampling: str
    sampling_probability: float
    steps: int
    batch_size: int | None = None
    dataset_size: int | None = None


@dataclass(frozen=True)
class DPSGDSearch:
    """What the calibration search did.

    ``evaluations`` distinct noise multipliers were accounted, starting from ``initial_guess``;
    ``largest_failing`` is the largest of them whose profile misses the target (a lower bound on the
    least valid z as evaluated, ``None`` if every one met it); ``relative_tolerance`` is where the
    search stopped.
    """

    evaluations: int
    initial_guess: float
    largest_failing: float | None
    relative_tolerance: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "evaluations": self.evaluations,
            "initial_guess": self.initial_guess,
            "largest_failing": self.largest_failing,
            "relative_tolerance": self.relative_tolerance,
        }


@dataclass(frozen=True)
class DPSGDCalibration:
    """Result of :func:`calibrate_dp_sgd`: the noise multiplier z and the certificate it earns.

    The Gaussian noise added to each batch's gradient sum has standard deviation ``sigma`` = z Δ.
    """

    noise_multiplier: float
    sigma: float
    schedule: DPSGDSchedule
    certificate: Certificate
    search: DPSGDSearch

    @property
    def sampling_probability(self) -> float:
        return self.schedule.sampling_probability

    @property
    def steps(self) -> int:
        return self.schedule.steps


def dp_sgd_schedule(
    *,
    steps: int | None = None,
    epochs: int | None = None,
    sampling_probability: float | None = None,
    batch_size: int | None = None,
    dataset_size: int | None = None,
    sampling: str = "poisson",
) -> DPSGDSchedule:
    """Validate a DP-SGD schedule and resolve q and the number of steps (rules in the module doc)."""
    if sampling not in SAMPLINGS:
        raise InvalidParameter("sampling", sampling, "one of " + ", ".join(SAMPLINGS))
    if sampling_probability is not None and (batch_size is not None or dataset_size is not None):
        raise InvalidParameter(
            "sampling_probability",
            sampling_probability,
            "exactly one of sampling_probability or batch_size with dataset_size",
        )
    if sampling_probability is not None:
        if sampling == "shuffle":
            raise InvalidParameter(
                "sampling_probability",
                sampling_probability,
                "only with sampling='poisson' (shuffle needs batch_size and dataset_size)",
            )
        q = check.probability("sampling_probability", sampling_probability, open_low=True)
        per_epoch = math.ceil(1.0 / q)
    else:
        if batch_size is None and dataset_size is None:
            raise InvalidParameter(
                "sampling_probability",
                None,
                "exactly one of sampling_probability or batch_size with dataset_size",
            )
        if batch_size is None:
            raise InvalidParameter("batch_size", None, "an integer >= 1 together with dataset_size")
        if dataset_size is None:
            raise InvalidParameter("dataset_size", None, "an integer >= 1 together with batch_size")
        batch_size = check.positive_int("batch_size", batch_size)
        dataset_size = check.positive_int("dataset_size", dataset_size)
        if batch_size > dataset_size:
            raise InvalidParameter(
                "batch_size", batch_size, f"1 <= batch_size <= dataset_size = {dataset_size}"
            )
        q = batch_size / dataset_size
        per_epoch = -(-dataset_size // batch_size)
    if (steps is None) == (epochs is None):
        raise InvalidParameter("steps", steps, "exactly one of steps or epochs")
    if steps is not None:
        steps = check.positive_int("steps", steps)
        if steps > MAX_STEPS:
            raise InvalidParameter("steps", steps, f"1 <= steps <= {MAX_STEPS:.0e}")
    else:
        epochs = check.positive_int("epochs", epochs)
        steps = epochs * per_epoch
        if steps > MAX_STEPS:
            raise InvalidParameter(
                "epochs", epochs, f"epochs x {per_epoch} steps per epoch <= {MAX_STEPS:.0e} steps"
            )
    return DPSGDSchedule(sampling, q, steps, batch_size, dataset_size)


def _noise_sigma(noise_multiplier: float, sensitivity: float) -> float:
    sigma = noise_multiplier * sensitivity
    if not 0.0 < sigma < math.inf:
        raise InvalidParameter(
            "sensitivity", sensitivity, "a value with 0 < noise_multiplier * sensitivity < inf"
        )
    return sigma


def poisson_interval(
    sigma: float, sampling_probability: float, steps: int, sensitivity: float = 1.0
) -> float:
    """The value discretisation interval of the PLD that accounts Poisson-sampled DP-SGD.

    One step's PLD (remove direction, the wider) spans the losses from ln(1 − q) up to
    ln(1 − q + q exp(t d + d²/2)), d = Δ/σ and t = ``TAIL_STANDARD_DEVIATIONS`` (its construction in
    :mod:`~dpcert.mechanisms.subsampled_gaussian`), on the grid of
    :func:`~dpcert.mechanisms.subsampled_gaussian.effective_interval` at the default interval 1e-4.
    Where the span holds at most ``SLOW_SPAN_POINTS`` points of that grid, the default 1e-4 is
    returned (the accounting is unchanged).  Beyond, the span is so wide that each evaluation takes
    seconds (it grows as d²/2: about 89, i.e. 891,000 points, at z = 0.15 and q = 2e-6, where the
    composed loss is too narrow for that grid to be coarsened), and the interval is 1e-4 · 2^k for the
    least k at which the span holds at most ``COARSE_SPAN_POINTS`` points.  Every interval gives a
    pessimistic discretisation, hence a proven upper bound on δ(ε) (Doroshenko et al. 2022): the
    choice affects tightness and cost only.  It depends on the certificate's parameters alone, so that
    a certificate re-derived from them is the same.
    """
    sigma = check.positive_finite("sigma", sigma)
    q = check.probability("sampling_probability", sampling_probability, open_low=True)
    steps = check.positive_int("steps", steps)
    d = ratio_rounded_up(check.positive_finite("sensitivity", sensitivity), sigma)
    exponent = TAIL_STANDARD_DEVIATIONS * d + 0.5 * d * d
    if q < 1.0:
        bottom = math.log1p(-q)
        high = math.log(q) + exponent
        top = max(bottom, high) + math.log1p(math.exp(-abs(high - bottom)))
    else:
        bottom, top = -exponent, exponent  # the losses z d − d²/2 for z in [−t, d + t]
    span = top - bottom
    if not math.isfinite(span) or not span / DEFAULT_INTERVAL > SLOW_SPAN_POINTS:
        return DEFAULT_INTERVAL  # (an infinite span is refused by the profile itself)
    if not span / effective_interval(d, q, steps, DEFAULT_INTERVAL) > SLOW_SPAN_POINTS:
        return DEFAULT_INTERVAL
    k = max(0, math.ceil(math.log2(span / (DEFAULT_INTERVAL * COARSE_SPAN_POINTS))))
    return DEFAULT_INTERVAL * 2.0**k


def _profile_parameters(schedule: DPSGDSchedule, sigma: float, sensitivity: float) -> tuple[str, dict]:
    """The registered mechanism and parameters that account ``schedule`` at noise ``sigma``."""
    if schedule.sampling == "poisson":
        return "poisson-sampled-gaussian", {
            "sigma": sigma,
            "sampling_probability": schedule.sampling_probability,
            "steps": schedule.steps,
            "sensitivity": sensitivity,
            "value_discretization_interval": poisson_interval(
                sigma, schedule.sampling_probability, schedule.steps, sensitivity
            ),
        }
    return "sampled-without-replacement-gaussian", {
        "sigma": sigma,
        "sample_size": schedule.batch_size,
        "dataset_size": schedule.dataset_size,
        "steps": schedule.steps,
        "sensitivity": sensitivity,
    }


def _certificate(
    schedule: DPSGDSchedule,
    sigma: float,
    sensitivity: float,
    epsilon: float | None,
    delta: float | None,
) -> Certificate:
    if schedule.sampling == "poisson":
        return poisson_sampled_gaussian_certificate(
            sigma,
            schedule.sampling_probability,
            schedule.steps,
            delta=delta,
            epsilon=epsilon,
            sensitivity=sensitivity,
            value_discretization_interval=poisson_interval(
                sigma, schedule.sampling_probability, schedule.steps, sensitivity
            ),
        )
    assert schedule.batch_size is not None and schedule.dataset_size is not None
    return sampled_without_replacement_certificate(
        sigma,
        schedule.batch_size,
        schedule.dataset_size,
        schedule.steps,
        delta=delta,
        epsilon=epsilon,
        sensitivity=sensitivity,
    )


def dp_sgd_certificate(
    noise_multiplier: float,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    steps: int | None = None,
    epochs: int | None = None,
    sampling_probability: float | None = None,
    batch_size: int | None = None,
    dataset_size: int | None = None,
    sampling: str = "poisson",
    sensitivity: float = 1.0,
) -> Certificate:
    """Certificate of a DP-SGD run with noise multiplier z at a point of its profile.

    Give ``delta`` (the least ε is computed), ``epsilon`` (the least δ) or both (claimed, then
    verified).  The schedule arguments are those of :func:`dp_sgd_schedule`.
    """
    noise_multiplier = check.positive_finite("noise_multiplier", noise_multiplier)
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    if epsilon is not None:
        epsilon = check.nonnegative_finite("epsilon", epsilon)
    if delta is not None:
        delta = check.delta(delta)
    if epsilon is None and delta is None:
        raise InvalidParameter("delta", None, "at least one of epsilon, delta")
    schedule = dp_sgd_schedule(
        steps=steps,
        epochs=epochs,
        sampling_probability=sampling_probability,
        batch_size=batch_size,
        dataset_size=dataset_size,
        sampling=sampling,
    )
    sigma = _noise_sigma(noise_multiplier, sensitivity)
    try:
        return _certificate(schedule, sigma, sensitivity, epsilon, delta)
    except InvalidParameter as error:
        if error.name != "sigma":
            raise
        raise InvalidParameter(
            "noise_multiplier", noise_multiplier, f"a larger noise multiplier ({error.allowed})"
        ) from None


def central_limit_guess(epsilon: float, delta: float, sampling_probability: float, steps: int) -> float:
    """The noise multiplier at which the central-limit approximation meets (ε, δ) — a starting guess.

    ``steps`` Poisson-subsampled Gaussian steps are close to μ-GDP with
    μ = q √(T (exp(1/z²) − 1)) (Dong, Roth & Su 2019; Bu, Dong, Long & Su 2020), and μ-GDP is
    (ε, δ)-DP exactly when the Gaussian mechanism of noise 1/μ is (Balle & Wang 2018).  The
    approximation is neither an upper nor a lower bound; it only starts the search.
    """
    mu = 1.0 / analytic_gaussian_sigma(epsilon, delta)
    return 1.0 / math.sqrt(math.log1p(mu * mu / (sampling_probability**2 * steps)))


def rare_sampling_guess(epsilon: float, delta: float, sampling_probability: float, steps: int) -> float:
    """The noise multiplier at which ``steps`` times one step's δ(ε) meets δ — a starting guess.

    One Poisson-subsampled Gaussian step at noise z loses, in the remove direction of its dominating
    pair, exactly δ₁(ε) = q δ_G(ε') with ε' = ln(1 + (e^ε − 1)/q), δ_G the profile of the Gaussian
    mechanism of noise z (Balle, Barthe & Gaboardi 2018).  Where a record is rarely sampled at all
    (steps × q small), the run loses about ``steps`` times that, and steps × q δ_G(ε') = δ is solved
    exactly (Balle & Wang 2018); that needs steps × q > δ.  The approximation is neither an upper nor
    a lower bound; it only starts the search (:func:`calibrate_dp_sgd` uses it where
    (steps × q)² <= δ, i.e. a record is sampled twice with probability at most about δ / 2).
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    q = check.probability("sampling_probability", sampling_probability, open_low=True)
    steps = check.positive_int("steps", steps)
    if not steps * q > delta:
        raise InvalidParameter("sampling_probability", q, f"steps x q > delta = {delta:g}")
    if epsilon > 700.0:  # e^ε overflows; ln(1 + (e^ε − 1)/q) = ε − ln q to far below a guess's accuracy
        amplified = epsilon - math.log(q)
    else:
        amplified = math.log1p(math.expm1(epsilon) / q)
    return analytic_gaussian_sigma(amplified, delta / (steps * q))


def calibrate_dp_sgd(
    *,
    epsilon: float,
    delta: float,
    steps: int | None = None,
    epochs: int | None = None,
    sampling_probability: float | None = None,
    batch_size: int | None = None,
    dataset_size: int | None = None,
    sampling: str = "poisson",
    sensitivity: float = 1.0,
) -> DPSGDCalibration:
    """The least noise multiplier z whose DP-SGD run is (ε, δ)-DP by its certificate.

    Parameters
    ----------
    epsilon, delta
        Target guarantee of the whole run (ε > 0, 0 < δ < 1).
    steps, epochs
        Exactly one: the number of steps, or of epochs (see the module doc for the steps per epoch).
    sampling_probability, batch_size, dataset_size
        Exactly one of q, or B with N.
    sampling
        ``"poisson"`` (add/remove) or ``"shuffle"`` (fixed-size batches drawn without replacement
        at every step, replace-one; needs B and N).
    sensitivity
        ℓ2 sensitivity Δ of the batch's gradient sum under that relation (C for Poisson, 2C for
        shuffle, with gradients clipped to norm C); the noise standard deviation is z Δ.

    Notes
    -----
    The returned z meets the target (its certificate is re-derived and verified) and lies within a
    relative ~5e-4 of the least z that meets it as evaluated; ``search.largest_failing`` is an
    evaluated z just below it that does not.
    """
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    sensitivity = check.positive_finite("sensitivity", sensitivity)
    schedule = dp_sgd_schedule(
        steps=steps,
        epochs=epochs,
        sampling_probability=sampling_probability,
        batch_size=batch_size,
        dataset_size=dataset_size,
        sampling=sampling,
    )
    _noise_sigma(MAX_NOISE_MULTIPLIER, sensitivity)  # the whole search range has a finite sigma
    name = "sampling_probability" if sampling_probability is not None else "batch_size"
    given = sampling_probability if sampling_probability is not None else batch_size
    if schedule.steps * schedule.sampling_probability <= delta:
        # a user's example enters some batch with probability at most k q; otherwise both neighbours'
        # runs have the same distribution: every noise multiplier (and no noise) is (0, k q)-DP, so there
        # is no least one, and the search would evaluate ever smaller noise without end
        raise InvalidParameter(
            name,
            given,
            f"steps x q > delta, i.e. q > {delta / schedule.steps:.6g} here (at steps x q <= delta every "
            "run, even without noise, is (0, steps x q)-DP: nothing to calibrate)",
        )
    q = schedule.sampling_probability
    if q < 1.0 and -math.expm1(schedule.steps * math.log1p(-q)) <= delta:
        # the same, exactly: the example enters some batch with probability 1 − (1 − q)^k, below k q by
        # about (k q)² / 2; where that is at most δ, every run is (0, δ)-DP
        least = -math.expm1(math.log1p(-delta) / schedule.steps)
        raise InvalidParameter(
            name,
            given,
            f"1 - (1 - q)^steps > delta, i.e. q > {least:.10g} here (a user's example enters some batch "
            "with probability 1 - (1 - q)^steps; where that is at most delta, every run, even without "
            "noise, is (0, delta)-DP: nothing to calibrate)",
        )
    log_target = math.log(delta)
    evaluated: dict[float, float] = {}  # noise multiplier -> log δ(ε), for this search only

    def log_excess(z: float) -> float:
        """log δ(ε) − log δ_target: positive exactly when z misses the target (δ compared unlogged)."""
        if z > MAX_NOISE_MULTIPLIER:
            return math.inf
        if z not in evaluated:
            try:
                mechanism, parameters = _profile_parameters(schedule, z * sensitivity, sensitivity)
                value = float(profile_for(mechanism, parameters).delta_for(epsilon))
            except InvalidParameter as error:
                if error.name != "sigma":
                    raise
                value = 1.0  # noise too small to account (one step's loss beyond the floats): a miss
            excess = (math.log(value) if value > 0.0 else _LOG_OF_ZERO) - log_target
            if value > delta:
                excess = max(excess, math.ulp(0.0))  # a miss stays a miss after rounding the logs
            elif excess > 0.0:
                excess = 0.0
            evaluated[z] = excess
        return evaluated[z]

    if schedule.sampling == "poisson" and (schedule.steps * schedule.sampling_probability) ** 2 <= delta:
        guess = rare_sampling_guess(epsilon, delta, schedule.sampling_probability, schedule.steps)
    else:
        # a replace-one neighbour is a removal and an addition: the guess doubles q for shuffled batches
        doubling = 2.0 if schedule.sampling == "shuffle" else 1.0
        guess = central_limit_guess(epsilon, delta, doubling * schedule.sampling_probability, schedule.steps)
    guess = min(max(guess, 1e-3), MAX_NOISE_MULTIPLIER)
    z = least_noise(log_excess, 0.0, guess, ratio=BRACKET_RATIO, relative_tolerance=RELATIVE_TOLERANCE)
    if not z <= MAX_NOISE_MULTIPLIER:
        raise InvalidParameter(
            "epsilon",
            epsilon,
            f"a target (epsilon, delta) that some noise multiplier up to {MAX_NOISE_MULTIPLIER:g} meets",
        )
    sigma = z * sensitivity
    certificate = _certificate(schedule, sigma, sensitivity, epsilon, delta)  # verified on creation
    failing = [x for x, excess in evaluated.items() if excess > 0.0 and x < z]
    search = DPSGDSearch(
        evaluations=len(evaluated),
        initial_guess=guess,
        largest_failing=max(failing) if failing else None,
        relative_tolerance=RELATIVE_TOLERANCE,
    )
    return DPSGDCalibration(z, sigma, schedule, certificate, search)
