"""Noise for the LinUCB family of Chowdhury & Zhou 2022: the papers' calibrations and tight ones.

``calibrate`` returns, for one algorithm at a claimed per-user (ε, δ), the privatizer's noise and the
certificate it earns: ``paper`` follows the theorems (Chowdhury & Zhou 2022, Prop. F.1, Thm 3.2 / E.3,
Thm 3.5 and the advanced-composition split of Thm E.2), ``tight`` the least noise by exact accounting.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from dpcert import _json, provenance
from dpcert import _validation as check
from dpcert.accounting.composition import compose_counts
from dpcert.accounting.returning_users import paper_split, split_budget
from dpcert.bandits.algorithms.linucb import (
    ALGORITHMS,
    JOINT_SENSITIVITY,
    TRUST,
)
from dpcert.bandits.algorithms.linucb_privatizers import (
    BatchSizeChoice,
    Calibrated,
    ContinualPrivatizer,
    LocalGaussianRandomizer,
    NoPrivacy,
    ShuffleVectorSum,
    TreeGaussian,
    tree_levels,
)
from dpcert.bandits.calibration.common import earned_gaussian_certificate, paper_gaussian_sigma, with_notes
from dpcert.bandits.privatizers import Calibration, calibration_of
from dpcert.certificates import Certificate, Guarantee, Neighbouring
from dpcert.errors import DPCertError, InvalidParameter, PreconditionFailed
from dpcert.mechanisms.shuffle import binomial_sum
from dpcert.mechanisms.shuffle.binomial_sum import (
    NOTES,
    PLD_NOTE,
    BinomialSumCalibration,
    BinomialSumProfile,
    BitSumParameters,
    binomial_sum_certificate,
    calibrate_binomial_sum,
    composed_interval,
    default_precision,
    least_noise_bits,
)
from dpcert.mechanisms.shuffle.pamp import PAmpCalibration, calibrate_pamp, pamp_paper_sigma
from dpcert.profiles import PrivacyLossParts
from dpcert.session import meets_target
from dpcert.theory.gaussian import analytic_gaussian_sigma


def _nearest_divisor(horizon: int, value: float) -> int:
    """The divisor of ``horizon`` nearest to ``value`` (the smaller one on a tie)."""
    divisors = [k for k in range(1, math.isqrt(horizon) + 1) if horizon % k == 0]
    divisors += [horizon // k for k in divisors]
    return min(sorted(set(divisors)), key=lambda k: abs(k - value))


def corollary_batch_size(
    algorithm: str,
    *,
    horizon: int,
    dimension: int,
    epsilon: float | None,
    delta: float | None,
    participations: int = 1,
) -> BatchSizeChoice:
    """The batch size of Chowdhury & Zhou 2022's utility-targeted corollaries (``--option batch_size=auto``).

    ==================  ===============  ==============================================================
    algorithm           users            B (every hidden constant 1; T horizon, d dimension)
    ==================  ===============  ==============================================================
    ``linucb-sdp-amp``  unique           Cor. B.2: d^(-1/5) ε^(-2/5) T^(3/5) ln^(1/5)(T/δ) ln^(1/5)(2/δ)
    ``linucb-sdp-amp``  returning        Cor. E.4: d^(-1/6) ε^(-1/3) T^(2/3) ln^(1/2)(T/δ)
    ``linucb-sdp-vec``  unique           Cor. C.2: d^(-1/5) ε^(-2/5) T^(3/5) ln^(2/5)(d²/δ)
    ``linucb-sdp-vec``  returning        Cor. E.6: d^(-1/6) ε^(-1/3) T^(2/3) ln^(1/2)(T d²/δ)
    ``linucb-ldp``      either           Cor. B.3 (the Gaussian local randomizer of Prop. F.1):
                                         d^(-1/4) T^(3/4) ε^(-1/2) ln^(1/4)(1/δ)
    ``linucb-jdp``      either           Prop. F.3 balanced (dB against √T d^(3/4) ln^(1/4)(1/δ)/√ε,
                                         Remark F.4: B = O(√T)): d^(-1/4) T^(1/2) ε^(-1/2) ln^(1/4)(1/δ)
    ==================  ===============  ==============================================================

    ``participations > 1`` (returning users) selects Cor. E.4 / E.6 for the shuffle protocols; the
    local and central rules have no returning-user corollary and are used as they are.  Only the batch
    size is chosen here; the noise is then calibrated for it as usual.
    """
    if algorithm not in ALGORITHMS or algorithm == "linucb":
        raise InvalidParameter(
            "batch_size",
            "auto",
            "an integer >= 1 for linucb ('auto' follows the private algorithms' corollaries)",
        )
    horizon = check.positive_int("horizon", horizon)
    d = check.positive_int("dimension", dimension)
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    participations = check.positive_int("participations", participations)
    t = float(horizon)
    returning = participations > 1
    if algorithm == "linucb-sdp-amp" and not returning:
        rule, formula = (
            "Chowdhury & Zhou 2022, Cor. B.2",
            "d^(-1/5) eps^(-2/5) T^(3/5) ln^(1/5)(T/delta) ln^(1/5)(2/delta)",
        )
        value = d**-0.2 * epsilon**-0.4 * t**0.6 * math.log(t / delta) ** 0.2 * math.log(2 / delta) ** 0.2
    elif algorithm == "linucb-sdp-amp":
        rule, formula = "Chowdhury & Zhou 2022, Cor. E.4", "d^(-1/6) eps^(-1/3) T^(2/3) ln^(1/2)(T/delta)"
        value = d ** (-1 / 6) * epsilon ** (-1 / 3) * t ** (2 / 3) * math.log(t / delta) ** 0.5
    elif algorithm == "linucb-sdp-vec" and not returning:
        rule, formula = "Chowdhury & Zhou 2022, Cor. C.2", "d^(-1/5) eps^(-2/5) T^(3/5) ln^(2/5)(d^2/delta)"
        value = d**-0.2 * epsilon**-0.4 * t**0.6 * math.log(d * d / delta) ** 0.4
    elif algorithm == "linucb-sdp-vec":
        rule, formula = "Chowdhury & Zhou 2022, Cor. E.6", "d^(-1/6) eps^(-1/3) T^(2/3) ln^(1/2)(T d^2/delta)"
        value = d ** (-1 / 6) * epsilon ** (-1 / 3) * t ** (2 / 3) * math.log(t * d * d / delta) ** 0.5
    elif algorithm == "linucb-ldp":
        rule = "Chowdhury & Zhou 2022, Cor. B.3 (noise of Prop. F.1)"
        formula = "d^(-1/4) T^(3/4) eps^(-1/2) ln^(1/4)(1/delta)"
        value = d**-0.25 * t**0.75 * epsilon**-0.5 * math.log(1 / delta) ** 0.25
    else:
        rule = "Chowdhury & Zhou 2022, Prop. F.3 and Remark F.4 (dB balanced against the privacy term)"
        formula = "d^(-1/4) T^(1/2) eps^(-1/2) ln^(1/4)(1/delta)"
        value = d**-0.25 * t**0.5 * epsilon**-0.5 * math.log(1 / delta) ** 0.25
    if algorithm in ("linucb-sdp-amp", "linucb-sdp-vec"):
        size = _nearest_divisor(horizon, value)
    else:
        size = min(horizon, max(1, round(value)))
    return BatchSizeChoice(algorithm, size, value, rule, formula)


def classical_pair_sigma(epsilon: float, delta: float) -> float:
    """``4 √(2 ln(2.5/δ)) / ε``: classical Gaussian (Dwork & Roth 2014, Thm A.1) on the vector and the matrix,
    each with sensitivity 2 and budget (ε/2, δ/2) (Chowdhury & Zhou 2022, proofs of Thm B.1 and Prop. F.1)."""
    return paper_gaussian_sigma(epsilon / 2.0, delta / 2.0, 2.0)


def _amplified_pamp(
    epsilon: float, delta: float, batch_size: int, dimension: int, calibration: str
) -> PAmpCalibration | None:
    """P_Amp calibrated through amplification by shuffling, or ``None`` where that is not possible.

    ``tight``: least σ by the numeric bound of Feldman, McMillan & Talwar 2020, Thm 3.2
    (:func:`~dpcert.mechanisms.shuffle.pamp.calibrate_pamp`), each user's pair of messages at the joint
    sensitivity 3/√2 of ``(φy, upper(φφᵀ))`` (:func:`~dpcert.bandits.algorithms.linucb.joint_sensitivity`);
    ``paper``: Thm 3.2 = B.1 with Lemma B.4, whose preconditions (ε0 <= 1, B >= 16 e^ε0 ln(4/δ)) are checked.
    """
    method = "numeric" if calibration == "tight" else "paper"
    try:
        return calibrate_pamp(
            epsilon, delta, users=batch_size, dimension=dimension, method=method,
            sensitivity=JOINT_SENSITIVITY,
        )  # fmt: skip
    except PreconditionFailed:
        return None


def reported_name(calibration: Calibration) -> str:
    """How results name a LinUCB calibration: ``"paper"``, or ``"tight"`` for least noise (one of
    :data:`~dpcert.bandits.algorithms.linucb.CALIBRATIONS`)."""
    return "paper" if calibration is Calibration.PAPER else "tight"


def calibrate(
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
    bit_sum: Mapping[str, Any] | None = None,
) -> Calibrated:
    """Noise for ``algorithm`` at the claimed (ε, δ) and the certificate that noise earns per user.

    ``batch_size="auto"`` takes B from the paper's utility-targeted corollary
    (:func:`corollary_batch_size`); the choice is kept in ``batch_rule`` and stated in the
    certificates' notes.  The other parameters are those of :func:`calibrate_fixed_batch`.
    """
    calibration = calibration_of(calibration)
    if batch_size != "auto":
        return calibrate_fixed_batch(
            algorithm, epsilon=epsilon, delta=delta, horizon=horizon,
            batch_size=check.positive_int("batch_size", batch_size), dimension=dimension,
            calibration=calibration, participations=participations, sigma=sigma, bit_sum=bit_sum,
        )  # fmt: skip
    if algorithm in ALGORITHMS and algorithm != "linucb":
        epsilon, delta = check.epsilon(epsilon), check.positive_delta(delta)
    choice = corollary_batch_size(
        algorithm, horizon=horizon, dimension=dimension, epsilon=epsilon, delta=delta,
        participations=participations,
    )  # fmt: skip
    result = calibrate_fixed_batch(
        algorithm, epsilon=epsilon, delta=delta, horizon=horizon, batch_size=choice.batch_size,
        dimension=dimension, calibration=calibration, participations=participations, sigma=sigma,
        bit_sum=bit_sum,
    )  # fmt: skip
    same = result.batch_certificate is result.certificate
    batch_certificate = with_notes(result.batch_certificate, choice.note())
    return replace(
        result,
        certificate=batch_certificate if same else with_notes(result.certificate, choice.note()),
        batch_certificate=batch_certificate,
        noise={**result.noise, "batch_size": choice.batch_size},
        batch_rule=choice,
    )


def calibrate_fixed_batch(
    algorithm: str,
    *,
    epsilon: float | None,
    delta: float | None,
    horizon: int,
    batch_size: int,
    dimension: int,
    calibration: Calibration | str = Calibration.LEAST_NOISE,
    participations: int = 1,
    sigma: float | None = None,
    bit_sum: Mapping[str, Any] | None = None,
) -> Calibrated:
    """Noise for ``algorithm`` at the claimed (ε, δ) and the certificate that noise earns per user.

    Parameters
    ----------
    calibration
        ``Calibration.PAPER``: the theorem's noise (Chowdhury & Zhou 2022, Prop. F.1 for LDP; the classical
        split on the tree for JDP; Thm 3.2 / E.3 for P_Amp; Thm 3.5 for P_Vec), preconditions checked and
        reported in the certificate's notes.  ``Calibration.LEAST_NOISE`` (reported as ``"tight"``, its
        former name, still accepted for one release with a DeprecationWarning): the least Gaussian noise
        meeting (ε, δ) by the exact profile of the joint release (sensitivity 3/√2), composed exactly over a
        user's participations; for P_Amp the smaller of that and the amplification-by-shuffling calibration
        (Feldman, McMillan & Talwar 2020, numeric bound, unique users); for P_Vec the least noise bits by
        exact accounting of the binomial counts.
    participations
        Batches (rounds for B = 1) in which one user may appear, at most once per batch (Chowdhury & Zhou
        2022, §4, Assumption 4.1).  ``paper`` splits the budget by advanced composition (Thm E.2); ``tight``
        composes the Gaussian releases exactly (μ adds in quadrature); for P_Vec ``paper`` calibrates each
        batch by Thm 3.5 at that split and ``tight`` finds the least noise bits whose M-fold composition
        (pessimistic PLD of the batch's dominating pair) meets (ε, δ).
    sigma
        A user-chosen noise level (per user, or per tree node for JDP) replacing the calibration; the
        certificate then reports what it guarantees.  Not for P_Vec.
    bit_sum
        P_Vec only: user-chosen ``{"g": …, "b": …, "p": …}`` (precision, noise bits per user and entry,
        bit probability) replacing the calibration; the certificate then reports what they guarantee.
    """
    if algorithm not in ALGORITHMS:
        raise InvalidParameter("algorithm", algorithm, "one of " + ", ".join(ALGORITHMS))
    if algorithm == "linucb":
        return Calibrated(algorithm, NoPrivacy(), None, None, True, "none")
    calibration = reported_name(calibration_of(calibration))
    epsilon = check.epsilon(epsilon)
    delta = check.positive_delta(delta)
    horizon = check.positive_int("horizon", horizon)
    batch_size = check.positive_int("batch_size", batch_size)
    participations = check.positive_int("participations", participations)
    trust = TRUST[algorithm]
    claim = Guarantee(epsilon, delta)
    sens = JOINT_SENSITIVITY
    notes: list[str] = [
        "sensitivity 3/sqrt(2) of the joint release (phi*y, upper(phi phi^T)) for ||phi|| <= 1, |y| <= 1; "
        "rewards are clipped to [-1, 1] before release"
    ]
    if participations > 1:
        notes.append(
            f"returning users: each user in at most {participations} batches, at most once per batch"
        )

    if algorithm == "linucb-sdp-vec":
        if sigma is not None:
            raise InvalidParameter("sigma", sigma, "None for linucb-sdp-vec (give bit_sum g, b, p instead)")
        return _calibrate_vec(claim, batch_size, dimension, calibration, participations, horizon, bit_sum)
    if bit_sum is not None:
        raise InvalidParameter("bit_sum", dict(bit_sum), "None except for linucb-sdp-vec (use sigma)")

    levels = tree_levels(horizon, batch_size) if algorithm == "linucb-jdp" else 1
    if algorithm == "linucb-jdp":
        # one user's P rounds may share a node: node sensitivity up to P·Δ on each of the L levels
        node_sensitivity, compositions = sens * participations, levels
        notes.append(
            f"tree aggregation over the batches (Chowdhury & Zhou 2022, Prop. F.3): each batch's data in "
            f"{levels} nodes (one per level)"
        )
    else:
        node_sensitivity, compositions = sens, participations
    if sigma is not None:
        noise = check.positive_finite("sigma", sigma)
        notes.append("user-supplied noise level")
    elif calibration == "tight":
        noise = analytic_gaussian_sigma(epsilon, delta, node_sensitivity, compositions)
        notes.append(
            "least noise by the exact Gaussian profile (Balle & Wang 2018, Thm 8), exact composition"
        )
    else:
        # Chowdhury & Zhou 2022, Thm E.2 per-batch budget (Dwork & Roth 2014, Cor 3.21, k = M,
        # δ' = δ/2); unchanged for M = 1
        eps_m, delta_m = (epsilon, delta) if participations == 1 else paper_split(claim, participations)
        if participations > 1:
            notes.append(
                f"paper split (Chowdhury & Zhou 2022, Thm E.2): per-batch (epsilon, delta) = "
                f"({eps_m:.6g}, {delta_m:.3g})"
            )
        if algorithm == "linucb-ldp":
            noise = classical_pair_sigma(eps_m, delta_m)
            notes.append(
                "paper noise: Chowdhury & Zhou 2022, Prop. F.1, sigma = 4 sqrt(2 ln(2.5/delta0)) / epsilon0"
            )
        elif algorithm == "linucb-jdp":
            noise = participations * math.sqrt(levels) * classical_pair_sigma(epsilon, delta)
            notes.append(
                "paper-style noise (Chowdhury & Zhou 2022 give no formula for their JDP baseline): "
                "the classical Gaussian of Prop. F.1 on each of the L tree levels, i.e. sensitivity "
                "2 sqrt(L) for the vector and the matrix with (epsilon/2, delta/2) each "
                "(Shariff & Sheffet 2018 construction); variance "
                "times M0^2 for returning users (Chowdhury & Zhou 2022, Prop. 4.3)"
            )
        else:
            noise = pamp_paper_sigma(eps_m, delta_m, batch_size)
            eps0 = eps_m * math.sqrt(batch_size / math.log(2.0 / delta_m))
            fmt_ok = (
                eps0 <= math.log(batch_size / (16.0 * math.log(4.0 / delta_m))) if batch_size > 1 else False
            )
            notes.append(
                "paper noise: Chowdhury & Zhou 2022, Thm 3.2 (Thm E.3 for returning users), "
                f"local epsilon0 = {eps0:.4g}"
            )
            if eps0 > 1.0:
                notes.append(
                    f"precondition of Thm 3.2 fails: epsilon0 = {eps0:.4g} > 1 "
                    "(needs epsilon <= sqrt(ln(2/delta)/B))"
                )
            if not fmt_ok:
                notes.append(
                    "amplification precondition fails (Feldman, McMillan & Talwar 2020, Thm 3.8): "
                    "needs B >= 16 e^epsilon0 ln(4/delta) = "
                    f"{16 * math.exp(eps0) * math.log(4 / delta_m):.4g}"
                )
    amplified = None
    if algorithm == "linucb-sdp-amp":
        # a short last batch is shuffled with fewer users: amplification is accounted with the smallest
        # batch actually shuffled (one user alone gets no amplification, only her local guarantee)
        smallest = horizon - (math.ceil(horizon / batch_size) - 1) * batch_size
        if smallest < batch_size:
            notes.append(f"the last batch holds {smallest} users: amplification is accounted for {smallest}")
        if participations == 1 and sigma is None:
            amplified = _amplified_pamp(epsilon, delta, smallest, dimension, calibration)
        if amplified is not None and calibration == "tight" and amplified.sigma < noise:
            return Calibrated(
                algorithm,
                LocalGaussianRandomizer(amplified.sigma),
                amplified.certificate,
                claim,
                meets_target(amplified.certificate, claim),
                calibration,
                {"sigma": amplified.sigma, "epsilon0": amplified.epsilon0, "delta0": amplified.delta0},
                amplified.certificate,
            )
        if amplified is not None and calibration == "tight":
            notes.append(
                "amplification by shuffling (Feldman, McMillan & Talwar 2020, numeric bound) would need "
                f"sigma = {amplified.sigma:.4g} > {noise:.4g}: the local calibration is used"
            )
        notes.append(
            "certified: the exact local guarantee of each user's messages, which the shuffled view inherits "
            "(post-processing)"
        )
    if algorithm == "linucb-jdp" and participations > 1:
        notes.append(
            f"per-participation charge: sensitivity sqrt({participations}) x 3/sqrt(2) on each of the "
            f"{levels} levels, so that {participations} charges compose to the node sensitivity "
            f"{participations} x 3/sqrt(2) of rounds sharing a node"
        )
    charge, _ = earned_gaussian_certificate(
        noise,
        epsilon,
        delta,
        sensitivity=node_sensitivity / math.sqrt(participations) if algorithm == "linucb-jdp" else sens,
        compositions=levels if algorithm == "linucb-jdp" else 1,
        trust_model=trust,
        neighbouring=Neighbouring.REPLACE_ONE,
        notes=tuple(notes),
    )
    certificate = charge if participations == 1 else compose_counts([(charge, participations)], delta=delta)
    met = meets_target(certificate, claim)
    privatizer: ContinualPrivatizer = (
        TreeGaussian(noise, horizon, batch_size=batch_size)
        if algorithm == "linucb-jdp"
        else LocalGaussianRandomizer(noise)
    )
    if amplified is not None and not met and meets_target(amplified.certificate, claim):
        # the paper's σ meets the claim through Lemma B.4 although not locally
        return Calibrated(
            algorithm, privatizer, amplified.certificate, claim, True, calibration, {"sigma": noise},
            amplified.certificate,
        )  # fmt: skip
    return Calibrated(algorithm, privatizer, certificate, claim, met, calibration, {"sigma": noise}, charge)


CACHE_ENV = "DPCERT_CACHE_DIR"
dpcert_version = provenance.version("dpcert")  # the installed dpcert: part of every disk cache key


def calibration_cache_dir() -> Path | None:
    """Directory of the on-disk calibration cache.

    ``$DPCERT_CACHE_DIR``, else ``$XDG_CACHE_HOME/dpcert``, else ``~/.cache/dpcert``; ``None`` (no disk
    cache) when ``DPCERT_CACHE_DIR`` is set to the empty string.
    """
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dpcert"


def _cache_path(directory: Path, key: Mapping[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return directory / f"calibration-{digest}.json"


def _rule_parameters(key: Mapping[str, Any], b: int) -> tuple[BitSumParameters, str]:
    """The parameters :func:`calibrate_binomial_sum` returns for the calibration of ``key`` if its noise
    bits are ``b``, and the basis its certificate states.

    ``paper``: Thm 3.5's (g, b, p) (:func:`~dpcert.mechanisms.shuffle.binomial_sum.paper_parameters`,
    ``b`` included); ``tight``: p = 1/2, ℓ2 norm, the exact calibration's default precision
    (:func:`~dpcert.mechanisms.shuffle.binomial_sum.exact_default_precision`), and ``b`` the only free
    parameter.  Raises for a ``b`` that is not a valid number of noise bits.
    """
    users, dimension, shape = key["users"], key["dimension"], "vector+matrix"
    if key["calibration"] == "paper":
        return binomial_sum.paper_parameters(key["epsilon"], key["delta"], users, dimension, 1.0, shape)
    precision = binomial_sum.exact_default_precision(users, dimension, 1.0, shape, "l2")
    return BitSumParameters(precision, b, 0.5, users, dimension, 1.0, shape, "l2"), binomial_sum.EXACT_BASIS


def _read_cached_bit_sum(path: Path, key: Mapping[str, Any]) -> BinomialSumCalibration | None:
    """The cached calibration if the file holds this key and passes the checks below, else ``None``.

    The entry's noise bits ``b`` are the only value taken from the file.  The parameters must be those
    the calibration's rule gives with that ``b`` (:func:`_rule_parameters`), and the certificate is
    built again from them exactly as :func:`calibrate_binomial_sum` builds it
    (:func:`binomial_sum_certificate` at the key's (ε, δ)), which evaluates the exact profile once, at
    that point, and raises if the claim does not hold there; the stored certificate must equal it.
    For ``tight`` the stored ``b`` must also be the least (the search's result): with ``b − 1`` noise
    bits the claim must fail, a second evaluation of the exact profile (the monotone search of
    :func:`~dpcert.mechanisms.shuffle.binomial_sum.least_noise_bits` ends exactly there).  A ``paper``
    entry's ``b`` is fixed by Thm 3.5.  So a file whose ``b`` was lowered fails the first evaluation and
    one whose ``b`` was raised the second: what is served never depends on the file's contents beyond
    what a fresh calibration computes.  Anything else (missing, corrupt, tampered, other version) is a
    miss.
    """
    try:
        entry = _json.loads(path.read_text(), what=str(path))
        if entry.get("key") != key or entry.get("method") != (
            "paper" if key["calibration"] == "paper" else "exact"
        ):
            return None
        stored = BitSumParameters(**entry["parameters"])
        parameters, basis = _rule_parameters(key, stored.b)
        if stored != parameters:
            return None
        stored_certificate = _json.loads(entry["certificate"], what=str(path))
        certificate = binomial_sum_certificate(
            parameters, epsilon=key["epsilon"], delta=key["delta"], basis=basis
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError, DPCertError):
        return None
    if stored_certificate != certificate.to_dict():
        return None
    if key["calibration"] != "paper" and parameters.b > 1:
        fewer = BinomialSumProfile({**parameters.to_dict(), "b": parameters.b - 1})
        if fewer.meets(key["epsilon"], key["delta"]):
            return None  # not the least b: a raised entry
    return BinomialSumCalibration(parameters, certificate, entry["method"])


def _write_cached_bit_sum(path: Path, key: Mapping[str, Any], result: BinomialSumCalibration) -> None:
    """Store a calibration (atomic replace); an unwritable cache directory is not an error."""
    entry = {
        "key": dict(key),
        "parameters": dataclasses.asdict(result.parameters),
        "certificate": result.certificate.to_json(),
        "method": result.method,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(entry, indent=1))
        os.replace(temporary, path)
    except OSError:
        return


CACHE_FORMAT = 3  # 3: the JDP tree is built over batches
"""Layout of a disk cache entry; raised whenever what an entry stores changes meaning."""


def _cache_basis() -> dict[str, Any]:
    """What a cached certificate's text depends on besides the arguments: the cache format and the
    basis and notes texts of :mod:`dpcert.mechanisms.shuffle.binomial_sum`.  Part of every cache key, so an
    entry written with other texts (e.g. before certificates cited papers by author and year) is a miss.
    """
    return {
        "format": CACHE_FORMAT,
        "bases": [binomial_sum.EXACT_BASIS, binomial_sum.EXACT_L2_BASIS, binomial_sum.PVEC_BASIS],
        "notes": [*binomial_sum.NOTES, binomial_sum.L2_NOTE],
    }


@functools.lru_cache(maxsize=32)
def _bit_sum_calibration(
    epsilon: float, delta: float, batch_size: int, dimension: int, calibration: str
) -> BinomialSumCalibration:
    """Bit-sum parameters for P_Vec, cached in memory and on disk (the exact ℓ2 search takes seconds).

    The disk entry is keyed by a hash of every argument, the dpcert version and the cache basis
    (:func:`_cache_basis`: format and certificate texts), and is used only if its parameters follow
    the calibration's rule, its certificate holds at the certified point and, for ``tight``, fails
    with one noise bit fewer (two evaluations of the exact profile, see :func:`_read_cached_bit_sum`);
    a hit runs no search.
    """
    key = {
        "function": "calibrate_binomial_sum",
        "version": dpcert_version,
        "basis": _cache_basis(),
        "epsilon": epsilon,
        "delta": delta,
        "users": batch_size,
        "dimension": dimension,
        "calibration": calibration,
    }
    directory = calibration_cache_dir()
    path = None if directory is None else _cache_path(directory, key)
    if path is not None:
        cached = _read_cached_bit_sum(path, key)
        if cached is not None:
            return cached
    result = calibrate_binomial_sum(
        epsilon,
        delta,
        users=batch_size,
        dimension=dimension,
        bound=1.0,
        shape="vector+matrix",
        method="paper" if calibration == "paper" else "exact",
        norm="entry" if calibration == "paper" else "l2",
    )
    if path is not None:
        _write_cached_bit_sum(path, key, result)
    return result


BIT_SUM_KEYS = ("g", "b", "p")


RETURNING_VEC_NOTE = (
    "returning users: the user-level guarantee is the adaptive composition of one batch's bit-sum "
    "certificate over the user's batches (compose 'best'; with p = 1/2 this includes the pessimistic "
    "PLD of the batch's dominating pair, self-composed)"
)


def _supplied_bit_sum(bit_sum: Mapping[str, Any], batch_size: int, dimension: int) -> BitSumParameters:
    """User-chosen (g, b, p) for one full batch; ``g`` defaults to ``max(4, ⌈√B⌉)`` and ``p`` to 1/2."""
    if not isinstance(bit_sum, Mapping):
        raise InvalidParameter("bit_sum", bit_sum, "a mapping with keys among g, b, p")
    unknown = sorted(set(bit_sum) - set(BIT_SUM_KEYS))
    if unknown:
        raise InvalidParameter("bit_sum", unknown, "keys among g, b, p")
    if bit_sum.get("b") is None:
        raise InvalidParameter("b", None, "an integer >= 1 (noise bits per user and entry)")
    return BitSumParameters(
        bit_sum.get("g", default_precision(batch_size)),
        bit_sum["b"],
        bit_sum.get("p", 0.5),
        batch_size,
        dimension,
        1.0,
        "vector+matrix",
    )


def _user_level(batch: Certificate, count: int, delta: float, interval: float) -> Certificate:
    """A returning user's guarantee: the adaptive composition of ``count`` participations' charges."""
    total = compose_counts(
        [(batch, count)], method="best", delta=delta, value_discretization_interval=interval
    )
    pld_note = (PLD_NOTE,) if isinstance(batch.profile, PrivacyLossParts) else ()
    return with_notes(total, RETURNING_VEC_NOTE, *pld_note)


@functools.lru_cache(maxsize=16)
def _tight_returning_vec(
    epsilon: float, delta: float, batch_size: int, dimension: int, participations: int
) -> tuple[BitSumParameters, Certificate]:
    """Least b (p = 1/2, g = max(4, ⌈√B⌉)) whose ``participations``-fold composition meets (ε, δ).

    The batch certificate is stated at the paper's per-batch δ_m = δ/(2M) (any point of its profile
    is valid; the composition uses the whole PLD).
    """
    template = BitSumParameters(
        default_precision(batch_size), 1, 0.5, batch_size, dimension, 1.0, "vector+matrix"
    )
    b = least_noise_bits(epsilon, delta, template, compositions=participations)
    parameters = replace(template, b=b)
    batch = binomial_sum_certificate(
        parameters,
        delta=delta / (2.0 * participations),
        notes=NOTES
        + (
            f"tight returning-user split: least b whose {participations}-fold PLD composition "
            f"meets ({epsilon:g}, {delta:g})",
        ),
    )
    return parameters, batch


LOCAL_EPSILON_PROBE = 50.0
"""ε at which a P_Vec user's local δ is reported when no finite ε reaches the claim's δ."""


@functools.lru_cache(maxsize=32)
def pvec_local_guarantee(
    parameters: BitSumParameters, epsilon: float, delta: float
) -> tuple[float | None, str]:
    """What one user's P_Vec messages alone guarantee against the analyzer (no shuffling), and a note.

    A user's messages are, per label, ``x̂ + Bin(b, p)`` ones among ``g + b`` bits (sent in random
    order, Chowdhury & Zhou 2022, footnote 9): the bit-sum protocol with a batch of ``n = 1``.  Its
    exact profile (:func:`~dpcert.mechanisms.shuffle.binomial_sum.binomial_sum_certificate` with
    ``users=1``) gives the local ε0 at ``delta``.  With ``b < g`` the counts of an entry at −1 and at
    +1 have disjoint supports ({0..b} against {g..g+b}): no local guarantee at all (δ = 1 at every ε).
    Returns ``(ε0 or None, note)``; the note compares ε0 with the O(ε√B, δ)-LDP of the paper's
    Remark 3.7 and Cor. C.2 (constants omitted there) for the batch's shuffle budget ``epsilon``.
    """
    batch = parameters.users
    single = replace(parameters, users=1)
    prefix = (
        "implied local guarantee (each user's messages alone, seen by the analyzer without shuffling; "
        f"the bit-sum protocol with n = 1 at g = {single.g}, b = {single.b}, p = {single.p:g})"
    )
    if single.b < single.g:
        return None, (
            f"{prefix}: none, since b = {single.b} noise bits < g = {single.g}: a user's count of ones "
            "for an entry at -1 and at +1 has disjoint supports, so her messages alone reveal it "
            "(delta = 1 at every epsilon); the batch's guarantee rests on the shuffler"
        )
    try:
        epsilon0 = binomial_sum_certificate(single, delta=delta).epsilon
    except InvalidParameter:  # delta below what the single user's counts can reach at any epsilon
        floor = BinomialSumProfile(single.to_dict()).delta_for(LOCAL_EPSILON_PROBE)
        return None, (
            f"{prefix}: none at delta = {delta:.3g}, since with b = {single.b} noise bits against "
            f"g = {single.g} a user's counts of ones for an entry at -1 and at +1 barely overlap "
            f"(delta = {floor:.3g} even at epsilon = {LOCAL_EPSILON_PROBE:g}); the batch's guarantee "
            "rests on the shuffler"
        )
    return epsilon0, (
        f"{prefix}: ({epsilon0:.4g}, {delta:.3g})-LDP per batch; "
        f"Chowdhury & Zhou 2022, Remark 3.7 and Cor. C.2 state O(epsilon sqrt(B), delta)-LDP, "
        f"i.e. epsilon sqrt(B) = {epsilon * math.sqrt(batch):.4g} for B = {batch}"
    )


def _calibrate_vec(
    claim: Guarantee,
    batch_size: int,
    dimension: int,
    calibration: str,
    participations: int,
    horizon: int,
    bit_sum: Mapping[str, Any] | None = None,
) -> Calibrated:
    """P_Vec through :mod:`dpcert.mechanisms.shuffle.binomial_sum` (shape vector+matrix); full batches only.

    Unique users: ``paper`` is Thm 3.5's (g, b, p = 1/4), the claim confirmed by exact accounting of the
    binomial counts; ``tight`` is p = 1/2, g = max(4, ⌈√B⌉) and the least b by that accounting, using
    that each user's vector part has ℓ2 norm ≤ 1 and her matrix part Frobenius norm ≤ 1 (``norm="l2"``).

    Returning users (Chowdhury & Zhou 2022, §4, Thm E.5), each in at most M batches: ``paper``
    calibrates each batch by Thm 3.5 at the split (ε_m, δ_m) = (ε/(2√(2M ln(2/δ))), δ/(2M)) of Thm E.2
    (:func:`dpcert.accounting.returning_users.split_budget`); ``tight`` takes p = 1/2 and the least b
    whose M-fold composition, by the batch's pessimistic PLD, meets (ε, δ).  Either way the run's
    certificate is the user-level composition of the batch certificate (compose ``best``), i.e. what
    the noise actually earns.

    ``bit_sum`` (user-chosen g, b, p) replaces the calibration; the certificate reports what holds.
    """
    if horizon % batch_size:
        raise InvalidParameter(
            "horizon", horizon, f"a multiple of batch_size={batch_size} for linucb-sdp-vec (no partial batch)"
        )
    notes: list[str] = []
    if bit_sum is not None:
        q = _supplied_bit_sum(bit_sum, batch_size, dimension)
        delta_batch = claim.delta if participations == 1 else claim.delta / (2.0 * participations)
        try:
            batch = binomial_sum_certificate(q, delta=delta_batch, notes=NOTES + ("user-supplied (g, b, p)",))
        except InvalidParameter as exc:
            raise InvalidParameter(
                "b", q.b, f"enough noise bits for a finite epsilon at delta = {delta_batch:g}"
            ) from exc
        notes.append("user-supplied (g, b, p)")
    elif participations == 1:
        result = _bit_sum_calibration(claim.epsilon, claim.delta, batch_size, dimension, calibration)
        q, batch = result.parameters, result.certificate
    elif calibration == "paper":
        split = split_budget(claim, participations)
        eps_m, delta_m = split.paper.epsilon, split.paper.delta
        result = _bit_sum_calibration(eps_m, delta_m, batch_size, dimension, "paper")
        q, batch = result.parameters, result.certificate
        advanced = split.paper.total_certificate.epsilon
        notes.append(
            "paper split (Chowdhury & Zhou 2022, Thm E.2): per-batch (epsilon, delta) = "
            f"({eps_m:.6g}, {delta_m:.3g}); "
            f"advanced composition (Dwork & Roth 2014, Thm 3.20) gives epsilon = {advanced:.6g}"
            + ("" if split.paper_meets_target else " > the claim")
        )
    else:
        q, batch = _tight_returning_vec(claim.epsilon, claim.delta, batch_size, dimension, participations)
    # per batch: the claim itself, or the paper's split of Thm E.2 for returning users
    eps_m, delta_m = (
        (claim.epsilon, claim.delta) if participations == 1 else paper_split(claim, participations)
    )
    local_epsilon, local_note = pvec_local_guarantee(q, eps_m, delta_m)
    batch = with_notes(batch, local_note)
    noise = {"g": q.g, "b": q.b, "p": q.p}
    privatizer = ShuffleVectorSum(q, batch)
    if participations == 1:
        met = meets_target(batch, claim)
        return Calibrated(
            "linucb-sdp-vec", privatizer, batch, claim, met, calibration, noise, batch,
            local_epsilon=local_epsilon,
        )  # fmt: skip
    interval = composed_interval(claim.epsilon, q.coordinates, participations)
    certificate = _user_level(batch, participations, claim.delta, interval)
    if notes:
        certificate = with_notes(certificate, *notes)
    met = meets_target(certificate, claim)
    return Calibrated(
        "linucb-sdp-vec", privatizer, certificate, claim, met, calibration, noise, batch, interval,
        local_epsilon=local_epsilon,
    )  # fmt: skip
