"""Noise and certificates of the secure (integer-exact) LinUCB privatizers.

:func:`calibrate_secure` is the ``secure=True`` counterpart of
:func:`dpcert.bandits.calibration.linucb.calibrate`, for ``linucb-ldp``, ``linucb-jdp`` and
``linucb-sdp-amp`` (:mod:`dpcert.bandits.algorithms.linucb_secure`).  P_Amp's users randomize exactly
as LDP-LinUCB's.  Its certificate is amplification by shuffling of that randomizer's local (ε0, δ0)
(Feldman, McMillan & Talwar 2020, Thm 3.2 and 3.8, valid for any (ε0, δ0)-LDP randomizer;
:class:`dpcert.mechanisms.shuffle.pamp.SecurePAmpProfile` re-derives (ε0, δ0) from the grid parameters)
where that needs less noise, else each user's local guarantee, which the shuffled view inherits (as the
float calibration does, e.g. at B = 20 in Chowdhury & Zhou 2022's Figure 1).  The local randomizer is
certified at the joint sensitivity 3/√2 of LDP-LinUCB, as in the float calibration.  The certificates
are those of the ℓ2 multivariate discrete Gaussian (:mod:`dpcert.mechanisms.discrete_gaussian_l2`):
zCDP with ρ adding exactly over a user's releases (L tree levels, P participations), converted to
(ε, δ) by CKS 2020, Cor. 13.
``tight``: the least whole number of grid steps σ meeting (ε, δ); ``paper``: the float calibration's
σ (Chowdhury & Zhou 2022, Prop. F.1; the classical split on the tree for JDP) rounded up to the
grid, certified for what it earns.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from dpcert import _validation as check
from dpcert.accounting.returning_users import paper_split
from dpcert.bandits.algorithms.linucb import (
    JOINT_SENSITIVITY,
    TRUST,
)
from dpcert.bandits.algorithms.linucb_privatizers import Calibrated, statistic_size, tree_levels
from dpcert.bandits.algorithms.linucb_secure import FINE_BITS, SecureLocalGaussian, SecureTreeGaussian
from dpcert.bandits.calibration.linucb import classical_pair_sigma, corollary_batch_size, reported_name
from dpcert.bandits.privatizers import Calibration, calibration_of
from dpcert.certificates import Certificate, Guarantee, Neighbouring
from dpcert.errors import InvalidParameter, PreconditionFailed
from dpcert.mechanisms.discrete_gaussian_l2 import (
    SLACK,
    discrete_gaussian_l2_certificate,
    least_l2_real_sigma,
    least_l2_sigma_units,
)
from dpcert.mechanisms.secure.noise import GAUSSIAN_GRID_BITS, MAX_GAUSSIAN_STEPS, Grid
from dpcert.mechanisms.secure.samplers import timing_failure
from dpcert.mechanisms.secure.timing import calibrated_with_timing, covering_release_time
from dpcert.mechanisms.shuffle.pamp import local_target, pamp_paper_sigma, secure_pamp_certificate
from dpcert.session import meets_target

SECURE_ALGORITHMS = ("linucb-ldp", "linucb-jdp", "linucb-sdp-amp")
REFUSED = {
    "linucb": "linucb adds no noise",
    "linucb-sdp-vec": "linucb-sdp-vec: its noise is already bits (binomial counts), with no floating point",
}


def check_secure_algorithm(algorithm: str) -> None:
    """Refuse ``secure=True`` for an algorithm without an integer-exact path, saying why."""
    if algorithm not in SECURE_ALGORITHMS:
        reason = REFUSED.get(algorithm, f"{algorithm} is not a LinUCB algorithm")
        allowed = f"false here ({reason}); secure runs: " + ", ".join(SECURE_ALGORITHMS)
        raise InvalidParameter("secure", True, allowed)


def _shift(grid: Grid, sensitivity: float, coordinates: int, participations: int, fine: bool) -> float:
    """Per-participation ℓ2 shift in grid steps: ``√P a + √m``, ``a = Δ/g (+ √m 2^-20 on the tree)``."""
    root = math.sqrt(coordinates)
    a = math.ldexp(sensitivity, -int(grid.exponent)) + (math.ldexp(root, -FINE_BITS) if fine else 0.0)
    return (math.sqrt(participations) * a + root) * (1.0 + SLACK)


def calibrate_secure(
    algorithm: str,
    *,
    epsilon: float | None,
    delta: float | None,
    horizon: int,
    batch_size: int | str,
    dimension: int,
    calibration: Calibration | str = Calibration.LEAST_NOISE,
    participations: int = 1,
    sigma: float | None = None,
) -> Calibrated:
    """Integer-exact noise for ``linucb-ldp`` / ``linucb-jdp`` / ``linucb-sdp-amp`` at the claimed (ε, δ).

    ``batch_size="auto"`` takes B from the paper's corollary as the float calibration does.
    ``sigma`` (real units, per user or per tree node) replaces the calibration; the certificate then
    states what it earns.  The run's ``batch_certificate`` (one participation's charge) is L (JDP) or
    one (LDP) release at the per-participation shift; ``certificate`` is the user's total, the
    exact zCDP sum over her P participations.
    """
    check_secure_algorithm(algorithm)
    calibration = reported_name(calibration_of(calibration))
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    horizon = check.positive_int("horizon", horizon)
    dimension = check.positive_int("dimension", dimension)
    participations = check.positive_int("participations", participations)
    if sigma is not None:
        sigma = check.positive_finite("sigma", sigma)
    batch_rule = None
    if batch_size == "auto":
        batch_rule = corollary_batch_size(
            algorithm, horizon=horizon, dimension=dimension, epsilon=epsilon, delta=delta,
            participations=participations,
        )  # fmt: skip
        batch_size = batch_rule.batch_size
    batch_size = check.positive_int("batch_size", batch_size)
    tree = algorithm == "linucb-jdp"
    levels = tree_levels(horizon, batch_size) if tree else 1
    coordinates = statistic_size(dimension)
    sens = JOINT_SENSITIVITY
    total_releases = levels * participations  # per user, each at the per-participation shift
    # only the tree puts several of a user's rounds into one release (a node): shift √P a + √m
    shared = participations if tree else 1
    notes: list[str] = [
        "sensitivity 3/sqrt(2) of the joint release (phi*y, upper(phi phi^T)) for ||phi|| <= 1, |y| <= 1; "
        "rewards are clipped to [-1, 1] before release",
        f"integer-exact discrete Gaussian on the grid; {coordinates} coordinates rounded: "
        "l2 shift Delta/g + sqrt(m) grid steps",
    ]
    if batch_rule is not None:
        notes.append(batch_rule.note())
    if tree:
        notes.append(
            f"tree aggregation over the batches (Chowdhury & Zhou 2022, Prop. F.3): each batch's data in "
            f"{levels} nodes; per-user rounding to g 2^-{FINE_BITS}, nodes rounded to g"
        )
    if participations > 1:
        notes.append(
            f"returning users: each user in at most {participations} batches, at most once per batch "
            "(zCDP adds over participations)"
        )
    if algorithm == "linucb-sdp-amp":
        notes.append(
            "P_Amp: each user's messages carry integer-exact noise as in LDP-LinUCB; certified by the local "
            "guarantee, which the shuffled view inherits"
        )
    if tree and participations > 1:
        notes.append(
            f"each participation charged at shift sqrt({participations}) a + sqrt(m) on every level, "
            "a = Delta/g + sqrt(m) 2^-20: rounds of one user may share a node"
        )
    if sigma is not None:
        reference = sigma
        notes.append("user-supplied noise level")
    elif calibration == "tight":
        reference = least_l2_real_sigma(epsilon, delta, math.sqrt(shared) * sens, total_releases)
    elif tree:
        reference = participations * math.sqrt(levels) * classical_pair_sigma(epsilon, delta)
        notes.append("paper-style noise of the float JDP calibration, rounded up to the grid")
    elif algorithm == "linucb-sdp-amp":
        split = (epsilon, delta) if participations == 1 else _paper_split(epsilon, delta, participations)
        reference = pamp_paper_sigma(*split, batch_size)
        notes.append(
            "paper noise: Chowdhury & Zhou 2022, Thm 3.2 (Thm E.3 for returning users), rounded up to the "
            "grid; certified locally, so the claim may not be met"
        )
    else:
        split = (epsilon, delta) if participations == 1 else _paper_split(epsilon, delta, participations)
        reference = classical_pair_sigma(*split)
        notes.append("paper noise: Chowdhury & Zhou 2022, Prop. F.1, rounded up to the grid")
    grid = Grid.finer_than(reference, GAUSSIAN_GRID_BITS)
    shift = _shift(grid, sens, coordinates, shared, tree)
    if sigma is None and calibration == "tight":
        units = least_l2_sigma_units(epsilon, delta, shift, total_releases)
        notes.append("least whole-step sigma for the target by zCDP (CKS 2020, Thm 14 and Cor. 13)")
    else:
        units = math.ceil(math.ldexp(reference, -int(grid.exponent)))
    _check_sampler_range(units, reference)
    claim = Guarantee(epsilon, delta)
    trust = TRUST[algorithm]

    def output_certificate(steps: int, releases: int) -> Certificate:
        common: dict[str, Any] = dict(
            l2_sensitivity=shift, coordinates=coordinates, compositions=releases,
            granularity=grid.granularity, trust_model=trust, neighbouring=Neighbouring.REPLACE_ONE,
            notes=tuple(notes),
        )  # fmt: skip
        exact = discrete_gaussian_l2_certificate(float(steps), delta=delta, **common)
        if exact.delta_for(epsilon) <= delta:
            return discrete_gaussian_l2_certificate(float(steps), epsilon=epsilon, delta=delta, **common)
        return exact

    if sigma is None and calibration == "tight":
        steps, _ = calibrated_with_timing(
            lambda s: output_certificate(int(s), total_releases), float(units),
            lambda s: release_failure(int(s), coordinates, total_releases), asked=True, keep_delta=True,
        )  # fmt: skip
        units = int(steps)
        _check_sampler_range(units, reference)

    def certificate_for(releases: int) -> Certificate:
        return covering_release_time(
            output_certificate(units, releases), release_failure(units, coordinates, releases)
        )

    charge = certificate_for(levels)
    certificate = charge if participations == 1 else certificate_for(total_releases)
    if algorithm == "linucb-sdp-amp" and participations == 1 and sigma is None and calibration == "tight":
        amplified = _secure_amplified(claim, horizon, batch_size, dimension, sens, tuple(notes[:2]))
        if (
            amplified is not None
            and amplified[0].real_sigma < units * grid.granularity
            and meets_target(amplified[1], claim)
        ):
            shuffled, certificate = amplified
            noise = {
                "sigma": shuffled.real_sigma,
                "sigma_steps": shuffled.sigma,
                "granularity": shuffled.grid.granularity,
                "sampler": "integer-exact",
                "epsilon0": certificate.parameters["epsilon0"],
                "delta0": certificate.parameters["delta0"],
            }
            if batch_rule is not None:
                noise["batch_size"] = batch_size
            return Calibrated(
                algorithm, shuffled, certificate, claim, meets_target(certificate, claim), calibration,
                noise, certificate, batch_rule=batch_rule,
            )  # fmt: skip
    if tree:
        privatizer: SecureTreeGaussian | SecureLocalGaussian = SecureTreeGaussian(
            grid, units, horizon, dimension, batch_size
        )
    else:
        privatizer = SecureLocalGaussian(grid, units, dimension)
    noise = {
        "sigma": privatizer.real_sigma,
        "sigma_steps": units,
        "granularity": grid.granularity,
        "sampler": "integer-exact",
    }
    if batch_rule is not None:
        noise["batch_size"] = batch_size
    return Calibrated(
        algorithm, privatizer, certificate, claim, meets_target(certificate, claim), calibration, noise,
        charge, batch_rule=batch_rule,
    )  # fmt: skip


def _secure_amplified(
    claim: Guarantee,
    horizon: int,
    batch_size: int,
    dimension: int,
    sensitivity: float,
    notes: tuple[str, ...],
) -> tuple[SecureLocalGaussian, Certificate] | None:
    """P_Amp with integer-exact noise, certified by amplification by shuffling, or ``None`` if impossible.

    The smallest batch actually shuffled (a short last batch) sets the amplification; its local target
    (ε0, δ0) is the float calibration's split
    (:func:`dpcert.mechanisms.shuffle.pamp.local_target`), met by the
    least whole-step σ of the ℓ2 discrete Gaussian at the per-user shift ``Δ/g + √m``.
    """
    smallest = horizon - (math.ceil(horizon / batch_size) - 1) * batch_size
    if smallest < 2:
        return None
    try:
        epsilon0, delta0 = local_target(claim.epsilon, claim.delta, smallest)
    except PreconditionFailed:
        return None
    coordinates = statistic_size(dimension)
    grid = Grid.finer_than(least_l2_real_sigma(epsilon0, delta0, sensitivity), GAUSSIAN_GRID_BITS)
    shift = _shift(grid, sensitivity, coordinates, 1, False)
    units = least_l2_sigma_units(epsilon0, delta0, shift)
    extra = (
        f"amplification by shuffling over the smallest batch shuffled ({smallest} users) of the local "
        f"({epsilon0:.4g}, {delta0:.3g})-LDP integer-exact randomizer (Feldman, McMillan & Talwar 2020, "
        "Thm 3.2 and 3.8)",
    )
    if units > MAX_GAUSSIAN_STEPS:
        return None
    certificate = secure_pamp_certificate(
        units, shift, coordinates, grid.granularity, epsilon0, delta0, smallest,
        epsilon=claim.epsilon, delta=claim.delta, notes=notes + extra,
    )  # fmt: skip
    # release times of the whole batch the user is shuffled in (every message, largest batch)
    certificate = covering_release_time(certificate, release_failure(units, coordinates, batch_size))
    return SecureLocalGaussian(grid, units, dimension), certificate


def _paper_split(epsilon: float, delta: float, participations: int) -> tuple[float, float]:
    return paper_split(Guarantee(epsilon, delta), participations)


def release_failure(units: int, coordinates: int, releases: int) -> float:
    """Bound on the probability that any of ``releases`` releases of ``coordinates`` integer-exact draws
    each (one user's message or one tree node) leaves the sampler's fixed-work path (union bound)."""
    return min(1.0, releases * timing_failure("discrete-gaussian", Fraction(units) ** 2, coordinates))


def _check_sampler_range(units: int, reference: float) -> None:
    """Refuse σ beyond the fixed-work range of the integer-exact sampler (its release-time bound)."""
    if units > MAX_GAUSSIAN_STEPS:
        raise InvalidParameter(
            "sigma",
            reference,
            f"at most 2^{MAX_GAUSSIAN_STEPS.bit_length() - 1} grid steps (sigma = {units} steps is beyond "
            "the range the fixed-work sampler covers)",
        )
