"""Composition of certified mechanisms: ``compose(certificates, method=..., delta=...)``.

Every result is itself a re-verifiable :class:`~dpcert.certificates.Certificate`.  Lists of Gaussian
mechanisms compose *exactly* to one Gaussian mechanism and are returned as a ``"gaussian"``
certificate; every other composition is a ``"composition"`` certificate whose parameters hold the
component certificates (identical components stored once, with a count) and the method, so that
:meth:`Certificate.verify` re-derives the claim from them.

Methods
-------
``"basic"``
    Dwork & Roth 2014, Thm 3.16: (Σ ε_i, Σ δ_i).  The profile is that of the canonical
    (Σ ε_i, Σ δ_i) pair (Kairouz, Oh & Viswanath 2015, Thm 2.1), so other (ε, δ) points follow too.
``"advanced"``
    Dwork, Rothblum & Vadhan 2010; Dwork & Roth 2014, Thm 3.20, the exact expression
    ``ε' = sqrt(2k ln(1/δ')) ε + k ε (e^ε − 1)`` at ``δ' + k δ``.  The theorem is stated for k
    mechanisms that are each (ε, δ)-DP; for heterogeneous components it is applied with the largest
    ε_i and δ_i (each component is also (max ε_i, max δ_i)-DP), which is valid and conservative.
``"optimal"``
    Kairouz, Oh & Viswanath 2015, Thm 3.3: the exact privacy region of the k-fold adaptive
    composition of (ε, δ)-DP mechanisms.  Heterogeneous components are treated as above (largest ε_i
    and δ_i); the result is then valid but no longer optimal.
``"pld"``
    Privacy loss distributions: each distinct component's single-mechanism PLD is built once by
    ``dp_accounting.pld`` with pessimistic discretisation and truncation (an upper bound in exact
    arithmetic), and the composition by counts is computed by :mod:`dpcert.theory.pld`,
    which proves a bound on all floating-point round-off of its tilted FFT convolutions (Higham
    2002, Thm 24.2, made relative by exponential tilting at the saddle point) and adds it to δ.
    All Gaussian components are first merged exactly into one Gaussian.  A component uses, in
    order of preference: the :class:`PrivacyLossParts` protocol of its profile (its own pessimistic
    loss pmfs, taken as given: randomized response, Laplace, discrete Laplace, …), its Gaussian
    ``dp_accounting`` event (merged as above), or the pessimistic PLD of its claimed (ε, δ)
    (``from_privacy_parameters``); nested composition certificates are flattened.
``"rdp"``
    Rényi DP (Mironov 2017) through ``dp_accounting.rdp.RdpAccountant`` built for the components'
    common neighbouring relation (:class:`~dpcert.theory.rdp.RdpEventProfile`, the one
    RDP path of dpcert); only when every component has a ``dp_accounting`` event the accountant
    supports under that relation (for ``replace-one``: Gaussian, Laplace, randomized response,
    batches sampled without replacement, tree aggregation; for ``add/remove``: Gaussian, Laplace,
    Poisson-subsampled Gaussian).  A profile's event describes its dominating pair: a
    ``GaussianDpEvent(s)`` of a profile is the pair ``N(0, s²), N(1, s²)`` under either relation,
    which is how the RDP accountant reads it.
``"best"`` (default)
    The smallest ε among all methods applicable to the list, including, for lists of zCDP
    certificates (``zcdp``, ``discrete-gaussian-l2``), ρ added over the components (Bun & Steinke
    2016, Lemma 2.3).  Where a method is exact it is used
    alone: exact Gaussian composition when every component is Gaussian, and KOV optimal
    composition when all components are the same (ε, δ) guarantee known only by its claim (no
    valid method can go below it).  Components whose profile says more than their claimed point
    but that have no PLD are also tried at the points (ε_i(δ_i), δ_i) of their own profiles,
    δ_i = f δ / k for f in ``REPOINT_FRACTIONS``.  At δ = 0 the numerical accountants are only
    consulted when basic and optimal composition give no finite ε (for pure components basic
    composition is then exact).

Release times
-------------
A component stating a ``"release_time_failure"`` p_i (the fixed-work samplers of ``--secure``; see
:class:`~dpcert.certificates.ReleaseTimeProfile`) enters every method through its output alone: its
output profile, its output's event, and its output's δ at its claimed ε.  The composed view of
outputs and release times is within total variation p = Σ k_i p_i of the composed outputs followed by
delays that depend on nothing, so each result states p and its profile adds (1 + e^ε) p to the
composed outputs' δ(ε).  The default δ is then Σ k_i δ_i of the outputs plus that term at Σ k_i ε_i.

All numerical results are rounded toward more privacy loss: ε is nudged upward until the profile,
as evaluated, gives at most the target δ.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from dpcert import _validation as check
from dpcert._numerics import nudge_up_until_valid, smallest_valid, sum_rounded_up
from dpcert.certificates import (
    RELEASE_TIME_FAILURE,
    ApproximateDPProfile,
    Certificate,
    Guarantee,
    Neighbouring,
    ReleaseTimeProfile,
    TrustModel,
    timing_delta,
)
from dpcert.errors import CertificateFormatError, DPCertError, InvalidParameter
from dpcert.mechanisms.discrete_gaussian_l2 import SLACK as ZCDP_SLACK
from dpcert.mechanisms.discrete_gaussian_l2 import discrete_gaussian_l2_certificate
from dpcert.mechanisms.gaussian import ANALYTIC_BASIS, GaussianProfile
from dpcert.mechanisms.secure.timing import timing_note, with_timing
from dpcert.mechanisms.zcdp import zcdp_certificate
from dpcert.profiles import ALL_RELATIONS, ALL_TRUST_MODELS, ParameterSpec, PrivacyLossParts, register_profile
from dpcert.theory.pld import ComposedLossBound, LossPmf, LossPmfPair, compose_epsilon_bound, loss_pmfs
from dpcert.theory.rdp import RdpEventProfile
from dpcert.theory.rdp import rdp_supports as event_rdp_supports

METHODS = ("basic", "advanced", "optimal", "pld", "rdp")
ALL_METHODS = ("best",) + METHODS
DEFAULT_PLD_INTERVAL = 1e-4
# Under "best", black-box methods also try every component at the point δ_i = f δ / k of its own
# profile, for these fractions f of the target δ (k = number of mechanisms).
REPOINT_FRACTIONS = (0.1, 0.5, 0.9)

BASIS = {
    "basic": "Dwork & Roth 2014, Thm 3.16 (basic composition; sums exact, rounded up)",
    "advanced": "Dwork, Rothblum & Vadhan 2010; Dwork & Roth 2014, Thm 3.20 (advanced composition)",
    "optimal": "Kairouz, Oh & Viswanath 2015, Thm 3.3 (optimal composition, exact privacy region)",
    "pld": "privacy loss distribution via dp_accounting.pld (pessimistic discretisation)",
    "rdp": "Renyi DP (Mironov 2017) via dp_accounting.rdp.RdpAccountant",
}
GAUSSIAN_COMPOSITION_BASIS = (
    "Dong, Roth & Su 2019, Cor. 3.3 (Gaussian mechanisms compose to a Gaussian with "
    "mu = sqrt(sum mu_i^2)); " + ANALYTIC_BASIS
)
# Relative allowance added to the KOV hockey-stick sum for rounding in gammaln/logsumexp: each log
# term of magnitude at most L = ln k! + k (ε0 + ln(1 + e^ε0)) carries an absolute error of a few ulp
# of L, so the allowance is max(1e-9, 32 ulp(1) · L) (about 2e-11 · k for small ε0 and large k).
_KOV_RELATIVE_SLACK = 1e-9

# e^x overflows a double above about 709.78; advanced composition gives no finite ε beyond this.
_LARGEST_EXPONENT = 700.0

_STRENGTH = {TrustModel.LOCAL: 2, TrustModel.SHUFFLE: 1, TrustModel.CENTRAL: 0}


# --------------------------------------------------------------------------- components
@dataclass(frozen=True)
class Component:
    """A certificate repeated ``count`` times in a composition."""

    certificate: Certificate
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"certificate": self.certificate.to_dict(), "count": self.count}


def certificate_key(certificate: Certificate) -> str:
    """Content hash of a certificate (SHA-256 of its canonical JSON)."""
    return hashlib.sha256(certificate.to_json().encode()).hexdigest()


def group_components(pairs: Iterable[tuple[Certificate, int]]) -> tuple[Component, ...]:
    """Merge identical certificates (by content) and sort them into a canonical order."""
    counts: dict[str, int] = {}
    by_key: dict[str, Certificate] = {}
    # The same object repeated is hashed once; the object is kept alive so its id is not reused.
    key_of_object: dict[int, tuple[Certificate, str]] = {}
    for certificate, count in pairs:
        if not isinstance(certificate, Certificate):
            raise InvalidParameter("certificates", type(certificate).__name__, "dpcert.Certificate objects")
        count = check.positive_int("count", count)
        known = key_of_object.get(id(certificate))
        if known is None:
            known = key_of_object[id(certificate)] = (certificate, certificate_key(certificate))
        key = known[1]
        by_key[key] = certificate
        counts[key] = counts.get(key, 0) + count
    return tuple(Component(by_key[key], counts[key]) for key in sorted(by_key))


def _components_from_parameters(parameters: Mapping[str, Any]) -> tuple[Component, ...]:
    raw = parameters.get("components")
    if not raw:
        raise CertificateFormatError("a composition certificate needs a non-empty 'components' list")
    components = []
    for entry in raw:
        try:
            certificate = Certificate.from_dict(entry["certificate"])
            count = check.positive_int("count", entry["count"])
        except (KeyError, TypeError) as exc:
            raise CertificateFormatError(f"malformed composition component: {exc}") from exc
        components.append(Component(certificate, count))
    return tuple(components)


def _total_count(components: Sequence[Component]) -> int:
    return sum(c.count for c in components)


def output_claim(certificate: Certificate) -> tuple[float, float]:
    """(ε, δ) of the certificate's output alone: its claim, with δ the output profile's at the claimed
    ε when the certificate states a release-time failure (its claim then covers release times too)."""
    if certificate.release_time_failure == 0.0:
        return certificate.epsilon, certificate.delta
    return certificate.epsilon, certificate.output_profile.delta_for(certificate.epsilon)


def release_time_failure(components: Sequence[Component]) -> float:
    """p = Σ k_i p_i of the components' release-time failure probabilities, rounded up (at most 1)."""
    total = sum_rounded_up((c.certificate.release_time_failure, c.count) for c in components)
    return min(1.0, total)


def _worst_pair(components: Sequence[Component]) -> tuple[float, float]:
    """Largest output ε and δ over the components (each output is (max ε, max δ)-DP)."""
    claims = [output_claim(c.certificate) for c in components]
    return max(e for e, _ in claims), max(d for _, d in claims)


def _safe_epsilon(delta_for, delta: float, candidate: float) -> float:
    """``candidate`` nudged upward until ``delta_for(ε) <= delta`` as evaluated."""
    if not math.isfinite(candidate):
        return math.inf
    candidate = max(0.0, candidate)
    ceiling = max(1.0, 2.0 * candidate) + 1.0
    if delta_for(ceiling) > delta:
        return candidate if delta_for(candidate) <= delta else math.inf
    return nudge_up_until_valid(lambda e: delta_for(e) - delta, candidate, ceiling)


# --------------------------------------------------------------------------- advanced (Thm 3.20)
def advanced_epsilon(epsilon: float, delta_slack: float, k: int) -> float:
    """ε' = sqrt(2k ln(1/δ')) ε + k ε (e^ε − 1) of Dwork & Roth 2014, Thm 3.20 (no rounding)."""
    if epsilon > _LARGEST_EXPONENT:
        return math.inf
    return math.sqrt(2.0 * k * math.log(1.0 / delta_slack)) * epsilon + k * epsilon * math.expm1(epsilon)


class AdvancedCompositionProfile:
    """Profile implied by Thm 3.20 for k mechanisms each (ε0, δ0)-DP.

    For a target ε the least δ' with ε'(δ') <= ε is ``exp(−(ε − k ε0 (e^ε0 − 1))² / (2k ε0²))``
    whenever ε > k ε0 (e^ε0 − 1); the profile is then ``k δ0 + δ'`` (else 1, no claim).
    """

    def __init__(self, epsilon: float, delta: float, k: int) -> None:
        self.epsilon0 = epsilon
        self.delta0 = delta
        self.k = k
        self.drift = k * epsilon * math.expm1(epsilon) if epsilon <= _LARGEST_EXPONENT else math.inf

    def delta_for(self, epsilon: float) -> float:
        base = self.k * self.delta0
        if self.epsilon0 == 0.0:
            return min(1.0, base)
        if epsilon <= self.drift:
            return 1.0
        exponent = (epsilon - self.drift) ** 2 / (2.0 * self.k * self.epsilon0**2)
        slack = math.exp(-exponent) * (1.0 + 1e-12)  # rounding of the exponent, on the safe side
        return min(1.0, base + slack)

    def epsilon_for(self, delta: float) -> float:
        base = self.k * self.delta0
        if self.epsilon0 == 0.0:
            return 0.0 if delta >= base else math.inf
        slack = delta - base
        if slack <= 0.0:
            return math.inf
        return _safe_epsilon(self.delta_for, delta, advanced_epsilon(self.epsilon0, slack, self.k))


# --------------------------------------------------------------------------- optimal (KOV Thm 3.3)
def kov_delta(epsilon: float, epsilon0: float, delta0: float, k: int) -> float:
    """Exact δ(ε) of the k-fold composition of (ε0, δ0)-DP mechanisms (KOV 2015, Thm 3.3).

    The k-fold composition is dominated by the product of canonical pairs, whose hockey-stick
    divergence at ε is ``1 − (1 − δ0)^k (1 − H)`` with

        H = Σ_{ℓ : (k − 2ℓ) ε0 > ε} C(k, ℓ) (e^{(k−ℓ) ε0} − e^{ε + ℓ ε0}) / (1 + e^{ε0})^k;

    at ε = (k − 2i) ε0 this is the theorem's ``1 − (1 − δ)^k (1 − δ_i)``.  The sum is taken in log
    space (``gammaln``, ``logsumexp``) and a relative allowance for their rounding (at least 1e-9)
    is added so the value is never below the exact one.
    """
    from scipy.special import gammaln, logsumexp

    a = -math.expm1(k * math.log1p(-delta0)) if delta0 > 0.0 else 0.0
    if epsilon0 == 0.0:
        return a
    ell = np.arange(0, k + 1, dtype=float)
    losses = (k - 2.0 * ell) * epsilon0
    active = losses > epsilon
    if not np.any(active):
        return min(1.0, a)
    ell = ell[active]
    log_terms = (
        gammaln(k + 1.0)
        - gammaln(ell + 1.0)
        - gammaln(k - ell + 1.0)
        + (k - ell) * epsilon0
        - k * np.logaddexp(0.0, epsilon0)
        + np.log(-np.expm1(epsilon - losses[active]))
    )
    magnitude = float(gammaln(k + 1.0)) + k * (epsilon0 + float(np.logaddexp(0.0, epsilon0)))
    slack = max(_KOV_RELATIVE_SLACK, 32.0 * np.finfo(float).eps * magnitude)
    hockey = float(np.exp(logsumexp(log_terms))) * (1.0 + slack)
    return min(1.0, a + (1.0 - a) * hockey)


MAX_OPTIMAL_COUNT = 10**7
"""Most mechanisms optimal composition takes: it sums k + 1 binomial terms (arrays of k + 1 floats)."""


class OptimalCompositionProfile:
    """Exact profile of the k-fold composition of (ε0, δ0)-DP mechanisms (KOV 2015, Thm 3.3)."""

    def __init__(self, epsilon: float, delta: float, k: int) -> None:
        if k > MAX_OPTIMAL_COUNT:
            raise InvalidParameter(
                "method",
                "optimal",
                f"at most {MAX_OPTIMAL_COUNT} mechanisms for optimal composition (it sums k + 1 binomial "
                f"terms; {k} given): another method",
            )
        self.epsilon0 = epsilon
        self.delta0 = delta
        self.k = k

    def delta_for(self, epsilon: float) -> float:
        return kov_delta(epsilon, self.epsilon0, self.delta0, self.k)

    def epsilon_for(self, delta: float) -> float:
        top = self.k * self.epsilon0
        if self.delta_for(top) > delta:
            return math.inf
        return smallest_valid(lambda e: self.delta_for(e) - delta, 0.0, max(top, 1e-300), grow=False)


# --------------------------------------------------------------------------- PLD and RDP
class PLDCompositionProfile:
    """Profile of a composition from the product of pessimistic PLDs, with proven round-off.

    Each distinct component's single-mechanism PLD is built once by ``dp_accounting.pld``
    (pessimistic discretisation and truncation); the compositions (by counts) are performed by
    :mod:`dpcert.theory.pld`, which bounds every floating-point error of its FFT
    convolutions and adds the bound to δ (see that module for the proof).  Nested composition
    certificates are flattened into their components.
    """

    def __init__(self, components: Sequence[Component], interval: float) -> None:
        self.components = components
        self.interval = interval
        self._delta_cache: dict[float, float] = {}

    @cached_property
    def directions(self) -> tuple[ComposedLossBound, ...]:
        counts: dict[int, int] = {}
        plds: dict[int, Any] = {}
        for single, count in _single_plds(self.components, self.interval):
            counts[id(single)] = counts.get(id(single), 0) + count
            plds[id(single)] = single
        remove_parts, add_parts = [], []
        symmetric = True
        for key, count in counts.items():
            remove, add = _loss_pmfs_of(plds[key])
            remove_parts.append((remove, count))
            add_parts.append((remove if add is None else add, count))
            symmetric = symmetric and add is None
        if symmetric:
            return (ComposedLossBound(remove_parts),)
        return ComposedLossBound(remove_parts), ComposedLossBound(add_parts)

    def delta_for(self, epsilon: float) -> float:
        if epsilon not in self._delta_cache:
            self._delta_cache[epsilon] = max(d.delta_for(epsilon) for d in self.directions)
        return self._delta_cache[epsilon]

    def epsilon_for(self, delta: float) -> float:
        return compose_epsilon_bound(self.directions, delta)


def _single_plds(components: Sequence[Component], interval: float) -> list[tuple[Any, int]]:
    """``(single-mechanism PLD, count)`` pairs of the flattened components; PLDs built once each.

    All Gaussian mechanisms (noise multipliers ``s_i``, counts ``k_i``) are merged into one
    Gaussian with ``s = (Σ k_i / s_i²)^{-1/2}`` (exact: Dong, Roth & Su 2019, Cor. 3.3), ``s``
    rounded down (more privacy loss).
    """
    result: list[tuple[Any, int]] = []
    gaussian_terms: list[Fraction] = []
    _collect_plds(components, 1, interval, result, gaussian_terms)
    if gaussian_terms:
        precision = math.nextafter(float(sum(gaussian_terms, Fraction(0))), math.inf)
        sigma = 1.0 / math.sqrt(precision)
        for _ in range(4):
            sigma = math.nextafter(sigma, 0.0)
        result.append((_gaussian_pld(sigma, interval), 1))
    return result


def _collect_plds(
    components: Sequence[Component],
    multiplier: int,
    interval: float,
    result: list[tuple[Any, int]],
    gaussian_terms: list[Fraction],
) -> None:
    for component in components:
        certificate = component.certificate
        count = component.count * multiplier
        profile = certificate.output_profile
        if isinstance(profile, CompositionProfile):
            _collect_plds(profile.components, count, interval, result, gaussian_terms)
            continue
        if isinstance(profile, PrivacyLossParts):
            result.extend((single, inner * count) for single, inner in profile.privacy_loss_parts(interval))
            continue
        event = profile.dp_event()
        if event is not None and _collect_event(event, count, gaussian_terms):
            continue
        result.append((_privacy_parameters_pld(*output_claim(certificate), interval), count))


def _collect_event(event: Any, count: int, gaussian_terms: list[Fraction]) -> bool:
    """Add ``count`` runs of a (composition of) Gaussian event(s) to the merged Gaussian; False otherwise.

    Other mechanisms with a PLD of their own give it through :class:`PrivacyLossParts`.
    """
    from dp_accounting import dp_event

    gaussians: list[Fraction] = []
    pending: list[tuple[Any, int]] = [(event, count)]
    while pending:
        current, times = pending.pop()
        if isinstance(current, dp_event.SelfComposedDpEvent):
            pending.append((current.event, times * current.count))
        elif isinstance(current, dp_event.ComposedDpEvent):
            pending.extend((inner, times) for inner in current.events)
        elif isinstance(current, dp_event.GaussianDpEvent) and current.noise_multiplier > 0:
            gaussians.append(Fraction(times) / Fraction(current.noise_multiplier) ** 2)
        else:
            return False
    gaussian_terms.extend(gaussians)
    return True


# Largest grid a single-mechanism PLD may span (points); larger ones are refused before any work.
MAX_PLD_POINTS = 2**22


def _check_grid(loss_range: float, interval: float, what: str) -> None:
    if not loss_range / interval <= MAX_PLD_POINTS:
        raise InvalidParameter(
            "value_discretization_interval",
            interval,
            f"an interval above {loss_range / MAX_PLD_POINTS:.3g} for {what} (its privacy loss spans "
            f"{loss_range:.3g}; at most {MAX_PLD_POINTS} grid points), or another method",
        )


@lru_cache(maxsize=256)
def _gaussian_pld(standard_deviation: float, interval: float) -> Any:
    from dp_accounting.pld import privacy_loss_distribution as pld

    mu = 1.0 / standard_deviation
    # dp_accounting keeps losses within about mu^2/2 ± 10 mu (measured: ±395 at mu = 20); 20 mu is kept.
    _check_grid(mu * mu + 40.0 * mu, interval, "this Gaussian composition")

    return pld.from_gaussian_mechanism(
        standard_deviation=standard_deviation,
        pessimistic_estimate=True,
        value_discretization_interval=interval,
    )


@lru_cache(maxsize=256)
def _privacy_parameters_pld(epsilon: float, delta: float, interval: float) -> Any:
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    return pld.from_privacy_parameters(
        common.DifferentialPrivacyParameters(epsilon, delta), value_discretization_interval=interval
    )


_LOSS_PMF_CACHE_SIZE = 256


def clear_pld_cache() -> None:
    """Forget the memoised single-mechanism PLDs (e.g. to time a cold composition)."""
    for cached in (
        _gaussian_pld,
        _privacy_parameters_pld,
        _loss_pmfs_cached,
    ):
        cached.cache_clear()


@lru_cache(maxsize=_LOSS_PMF_CACHE_SIZE)
def _loss_pmfs_cached(single: Any) -> tuple[Any, Any]:
    return loss_pmfs(single)


def _loss_pmfs_of(single: Any) -> tuple[Any, Any]:
    """(remove, add or ``None`` if symmetric) of one part given by :class:`PrivacyLossParts`."""
    if isinstance(single, tuple) and len(single) == 2 and all(isinstance(x, LossPmf) for x in single):
        return single
    if isinstance(single, LossPmfPair):
        return single.remove, single.add
    try:
        return _loss_pmfs_cached(single)
    except TypeError:  # unhashable PLD object
        return loss_pmfs(single)


def _composed_event(components: Sequence[Component]) -> Any:
    """``ComposedDpEvent`` of the components' events, or ``None`` if one has no event."""
    from dp_accounting import dp_event

    events = []
    for component in components:
        event = component.certificate.output_profile.dp_event()
        if event is None:
            return None
        events.append(event if component.count == 1 else dp_event.SelfComposedDpEvent(event, component.count))
    return events[0] if len(events) == 1 else dp_event.ComposedDpEvent(events)


def rdp_supports(components: Sequence[Component]) -> bool:
    """True if dp_accounting's RDP accountant supports every component's event under their common
    neighbouring relation (the relation the accountant is built for)."""
    relations = {c.certificate.neighbouring for c in components}
    if len(relations) != 1:
        return False
    return event_rdp_supports(_composed_event(components), relations.pop())


class RDPCompositionProfile:
    """Profile from Rényi DP: :class:`~dpcert.theory.rdp.RdpEventProfile` of the composed
    event under the components' common relation (default orders; ε nudged up until the accountant's
    own δ(ε) confirms it)."""

    def __init__(self, components: Sequence[Component]) -> None:
        relation = _common_neighbouring(components)
        event = _composed_event(components)
        if not event_rdp_supports(event, relation):
            raise InvalidParameter(
                "method",
                "rdp",
                f"a list whose components all have dp_accounting events the RDP accountant supports "
                f"under {relation.value}",
            )
        self._rdp = RdpEventProfile(event, relation)

    def delta_for(self, epsilon: float) -> float:
        return self._rdp.delta_for(epsilon)

    def epsilon_for(self, delta: float) -> float:
        return self._rdp.epsilon_for(delta)


# --------------------------------------------------------------------------- the registered profile
@register_profile(
    "composition",
    parameters={
        "method": ParameterSpec("string"),
        "components": ParameterSpec("list"),
        "value_discretization_interval": ParameterSpec("number", required=False),
    },
    trust_models=ALL_TRUST_MODELS,
    neighbourings=ALL_RELATIONS,
)
class CompositionProfile:
    """Profile of the composed outputs of a composition certificate, re-derived from its components
    and method (the certificate's ``"release_time_failure"``, at least Σ k_i p_i of the components,
    adds the release-time term; see the module docstring).

    Parameters: ``method`` (one of ``basic``, ``advanced``, ``optimal``, ``pld``, ``rdp``),
    ``components`` (a list of ``{"certificate": {...}, "count": k}``; each component certificate is
    re-verified), and for ``pld`` the ``value_discretization_interval``.
    """

    def __init__(self, parameters: Mapping[str, Any], components: Sequence[Component] | None = None) -> None:
        method = parameters.get("method")
        if method not in METHODS:
            raise CertificateFormatError(f"unknown composition method {method!r}: expected one of {METHODS}")
        self.method = method
        # ``components`` (already verified) may be passed by compose() to avoid parsing them again.
        if components is None:
            components = _components_from_parameters(parameters)
        self.components = tuple(components)
        stated = parameters.get(RELEASE_TIME_FAILURE, 0.0)
        if stated < release_time_failure(self.components):
            raise CertificateFormatError(
                f"a composition certificate states {RELEASE_TIME_FAILURE} {stated!r}, below the "
                f"{release_time_failure(self.components)!r} its components add up to"
            )
        k = _total_count(self.components)
        if method == "basic":
            claims = [(output_claim(c.certificate), c.count) for c in self.components]
            epsilon = sum_rounded_up((e, count) for (e, _), count in claims)
            delta = min(1.0, sum_rounded_up((d, count) for (_, d), count in claims))
            self._inner: Any = _BasicTrivial()
            if delta < 1.0:
                self._inner = CanonicalPairProfile(epsilon, delta)
        elif method == "advanced":
            self._inner = AdvancedCompositionProfile(*_worst_pair(self.components), k)
        elif method == "optimal":
            self._inner = OptimalCompositionProfile(*_worst_pair(self.components), k)
        elif method == "pld":
            interval = check.positive_finite(
                "value_discretization_interval",
                parameters.get("value_discretization_interval", DEFAULT_PLD_INTERVAL),
            )
            self._inner = PLDCompositionProfile(self.components, interval)
        else:
            self._inner = RDPCompositionProfile(self.components)

    def delta_for(self, epsilon: float) -> float:
        return self._inner.delta_for(epsilon)

    def epsilon_for(self, delta: float) -> float:
        return self._inner.epsilon_for(delta)

    def check_labels(self, trust_model: TrustModel, neighbouring: Neighbouring) -> None:
        """A composition is protected against no stronger adversary than its weakest component, and
        refers to its components' common relation or, for a user's participations, to ``user-level``."""
        weakest = _weakest_trust_model(self.components)
        if _STRENGTH[TrustModel(trust_model)] > _STRENGTH[weakest]:
            raise CertificateFormatError(
                f"a composition cannot claim the {TrustModel(trust_model).value} trust model: a component "
                f"only holds in the {weakest.value} model"
            )
        relations = {c.certificate.neighbouring for c in self.components}
        if Neighbouring(neighbouring) is Neighbouring.USER_LEVEL and Neighbouring.USER_LEVEL not in relations:
            if len(relations) == 1:
                return  # the composed participations of one user
        if relations != {Neighbouring(neighbouring)}:
            raise CertificateFormatError(
                f"a composition cannot claim the {Neighbouring(neighbouring).value} relation: its components "
                f"are under {', '.join(sorted(r.value for r in relations))}"
            )

    def dp_event(self) -> Any:
        return _composed_event(self.components)


class CanonicalPairProfile:
    """Profile of the canonical (ε, δ) pair (KOV 2015, Thm 2.1), evaluated without overflow.

    ``δ(e) = δ + (1 − δ)(1 − e^{e − ε}) / (1 + e^{−ε})`` for ``0 <= e < ε`` and ``δ`` above; the
    inverse is ``ε + ln(1 − x)``, ``x = (δ' − δ)(1 + e^{−ε}) / (1 − δ)``, so any finite ε (even
    above the ≈ 709 where ``e^ε`` overflows) is handled.  The same values as
    :class:`~dpcert.certificates.ApproximateDPProfile` wherever that one is finite.
    """

    def __init__(self, epsilon: float, delta: float) -> None:
        self.epsilon = epsilon
        self.delta = delta

    def delta_for(self, epsilon: float) -> float:
        if epsilon >= self.epsilon:
            return self.delta
        excess = (1.0 - self.delta) * (-math.expm1(epsilon - self.epsilon)) / (1.0 + math.exp(-self.epsilon))
        return min(1.0, self.delta + excess * (1.0 + 1e-14))

    def epsilon_for(self, delta: float) -> float:
        if delta < self.delta:
            return math.inf
        if delta == self.delta:
            return self.epsilon
        fraction = (delta - self.delta) * (1.0 + math.exp(-self.epsilon)) / (1.0 - self.delta)
        if fraction >= 1.0:
            return 0.0
        candidate = max(0.0, self.epsilon + math.log1p(-fraction))
        while self.delta_for(candidate) > delta:  # guard against rounding on the optimistic side
            candidate = math.nextafter(candidate, math.inf)
        return min(candidate, self.epsilon)


class _BasicTrivial:
    """Basic composition when Σ δ_i >= 1: no claim at any ε."""

    def delta_for(self, epsilon: float) -> float:
        return 1.0

    def epsilon_for(self, delta: float) -> float:
        return math.inf


# --------------------------------------------------------------------------- compose
def _common_neighbouring(components: Sequence[Component]) -> Neighbouring:
    relations = {c.certificate.neighbouring for c in components}
    if len(relations) != 1:
        raise InvalidParameter(
            "certificates",
            sorted(r.value for r in relations),
            "certificates under one neighbouring relation (their guarantees cannot be composed otherwise)",
        )
    return relations.pop()


def _weakest_trust_model(components: Sequence[Component]) -> TrustModel:
    """The composed output is only protected against the weakest adversary model among the parts."""
    return min((c.certificate.trust_model for c in components), key=lambda t: _STRENGTH[t])


def _default_delta(components: Sequence[Component]) -> float:
    failure = release_time_failure(components)
    if failure == 0.0:
        total = math.fsum(c.certificate.delta * c.count for c in components)
    else:
        claims = [(output_claim(c.certificate), c.count) for c in components]
        epsilon = sum_rounded_up((e, count) for (e, _), count in claims)
        total = min(1.0, sum_rounded_up((d, count) for (_, d), count in claims))
        total = min(1.0, sum_rounded_up([(total, 1), (timing_delta(epsilon, failure), 1)]))
    if total >= 1.0:
        raise InvalidParameter(
            "delta", None, "0 <= delta < 1 (give it explicitly: the components' deltas sum to >= 1)"
        )
    return total


def _composition_certificate(
    components: Sequence[Component],
    method: str,
    delta: float,
    interval: float,
    notes: Sequence[str] = (),
) -> Certificate:
    parameters: dict[str, Any] = {"method": method, "components": [c.to_dict() for c in components]}
    if method == "pld":
        parameters["value_discretization_interval"] = interval
    failure = release_time_failure(components)
    if failure > 0.0:
        parameters[RELEASE_TIME_FAILURE] = failure
    output = CompositionProfile(parameters, components)
    profile: Any = ReleaseTimeProfile(output, failure) if failure > 0.0 else output
    epsilon = profile.epsilon_for(delta)
    if not math.isfinite(epsilon):
        raise InvalidParameter(
            "delta",
            delta,
            f"a delta at which {method} composition gives a finite epsilon "
            f"(e.g. above the sum of the components' deltas)",
        )
    method_notes = {
        "basic": "basic composition of the components' claimed (epsilon, delta)",
        "advanced": "Thm 3.20 with the largest component epsilon and delta (valid for heterogeneous lists)",
        "optimal": "KOV Thm 3.3 with the largest component epsilon and delta (exact if all are identical)",
        "pld": f"pessimistic PLD discretisation (interval {interval:g}) and tail truncation by "
        "dp_accounting (an upper bound in exact arithmetic); compositions by tilted FFT with a proven "
        "round-off bound added to delta (Higham 2002, Thm 24.2; dpcert.theory.pld), "
        "single-mechanism masses inflated by 2^-44 relative and 2^-48 absolute for their special "
        "functions; components without a dp_accounting event use the PLD of their claimed "
        "(epsilon, delta), components with their own PLD method are taken as given",
        "rdp": "RDP-to-DP conversion of dp_accounting (an upper bound)",
    }
    certificate = Certificate(
        "composition",
        Guarantee(epsilon, delta),
        _weakest_trust_model(components),
        _common_neighbouring(components),
        parameters,
        BASIS[method],
        (
            f"{_total_count(components)} mechanism(s) ({len(components)} distinct)",
            method_notes[method],
            "epsilon rounded up until the re-derived delta is at most the claimed delta",
            *((timing_note(epsilon, failure),) if failure > 0.0 else ()),
            *notes,
        ),
    )
    # The profile just computed is the one verify() would rebuild; reuse it instead of recomputing.
    certificate.__dict__["output_profile"] = output
    certificate.__dict__["profile"] = profile
    return certificate.verify()


def _with_release_times(certificate: Certificate, failure: float, delta: float) -> Certificate:
    """A composed outputs' ``certificate`` stating the components' release-time failure ``failure``,
    at the least ε where its profile with the term is within ``delta``."""
    return certificate if failure == 0.0 else with_timing(certificate, failure, keep_delta=True)


def _gaussian_composition(components: Sequence[Component], delta: float) -> Certificate:
    """Exact composition of Gaussian certificates: one Gaussian with μ = sqrt(Σ k_i Δ_i² / σ_i²)."""
    profiles = [GaussianProfile(c.certificate.parameters) for c in components]
    if len(components) == 1:
        only = profiles[0]
        parameters: dict[str, Any] = {
            "sigma": only.sigma,
            "sensitivity": only.sensitivity,
            "compositions": only.compositions * components[0].count,
        }
        notes: tuple[str, ...] = ()
    else:
        mu_squared = math.fsum(p.mu**2 * c.count for p, c in zip(profiles, components, strict=True))
        mu = math.sqrt(mu_squared)
        for _ in range(4):  # round mu up by a few ulp: more privacy loss, never less
            mu = math.nextafter(mu, math.inf)
        parameters = {"sigma": 1.0, "sensitivity": mu, "compositions": 1}
        notes = (
            f"{_total_count(components)} Gaussian mechanisms ({len(components)} distinct) as one Gaussian "
            "with sigma 1 and sensitivity mu = sqrt(sum k_i (Delta_i/sigma_i)^2), mu rounded up",
        )
    if _common_neighbouring(components) is Neighbouring.USER_LEVEL:  # a user's participations add up
        parameters["participations"] = sum(
            int(p.participations or 0) * c.count for p, c in zip(profiles, components, strict=True)
        )
    profile = GaussianProfile(parameters)
    epsilon = profile.epsilon_for(delta)
    if not math.isfinite(epsilon):
        raise InvalidParameter("delta", delta, "0 < delta < 1 for a composition of Gaussian mechanisms")
    return Certificate(
        "gaussian",
        Guarantee(epsilon, delta),
        _weakest_trust_model(components),
        _common_neighbouring(components),
        parameters,
        GAUSSIAN_COMPOSITION_BASIS,
        notes + ("exact composition (privacy loss distribution N(mu^2/2, mu^2))",),
    ).verify()


def _lacks_pld(component: Component) -> bool:
    """True if the component's PLD would come from its claimed (ε, δ) alone."""
    certificate = component.certificate
    if isinstance(certificate.output_profile, CompositionProfile):  # flattened into its components' PLDs
        return False
    if isinstance(certificate.output_profile, PrivacyLossParts):
        return False
    event = certificate.output_profile.dp_event()
    return event is None or not _collect_event(event, 1, [])


def _is_black_box(certificate: Certificate) -> bool:
    """True if the certificate is known only by its claimed (ε, δ) (profile of the canonical pair)."""
    profile = certificate.output_profile
    return type(profile) is ApproximateDPProfile and profile.dp_event() is None


def _identical_black_boxes(components: Sequence[Component]) -> bool:
    """All components claim one and the same (ε, δ) and are known only by that claim."""
    pairs = {
        (c.certificate.epsilon, c.certificate.delta, c.certificate.release_time_failure) for c in components
    }
    return len(pairs) == 1 and all(_is_black_box(c.certificate) for c in components)


def _richer_profile_without_pld(component: Component) -> bool:
    """The component has no PLD of its own but a profile beyond its claimed (ε, δ)."""
    return _lacks_pld(component) and not _is_black_box(component.certificate)


def _repointed(components: Sequence[Component], delta_each: float) -> tuple[Component, ...] | None:
    """The components claiming the point (ε_i(δ_i), δ_i) of their own profiles, δ_i = ``delta_each``.

    Every certificate is (ε, δ)-DP at each point of its profile, so basic, advanced and optimal
    composition may use any such point; ``None`` if a component has no finite ε there or if no
    component changes.
    """
    result = []
    changed = False
    for component in components:
        certificate = component.certificate
        if certificate.delta == delta_each:
            result.append(component)
            continue
        try:
            epsilon = certificate.epsilon_for(delta_each)
            if not math.isfinite(epsilon):
                return None
            moved = certificate.with_guarantee(Guarantee(epsilon, delta_each))
        except DPCertError:
            return None
        changed = changed or moved != certificate
        result.append(Component(moved, component.count))
    return tuple(result) if changed else None


def _applicable(method: str, components: Sequence[Component], delta: float) -> bool:
    if method == "rdp":
        return delta > 0.0 and rdp_supports(components)
    return True


ZCDP_SUM_NOTE = "zCDP composition: rho adds over the components (Bun & Steinke 2016, Lemma 2.3)"


def zcdp_composition(
    components: Any, delta: float, trust_model: TrustModel, neighbouring: Neighbouring
) -> Certificate | None:
    """The composition of zCDP-described certificates by adding ρ, or ``None`` if one is not.

    ``components`` have ``certificate`` and ``count``.  Copies of one ℓ2 discrete Gaussian (same σ,
    shift, coordinates and grid) merge into one such certificate with the compositions added (the
    sampler and grid stay on record); any other list of ``zcdp`` / ``discrete-gaussian-l2``
    certificates gives a ``zcdp`` certificate with the summed ρ.  Valid for adaptive composition
    (Bun & Steinke 2016, Lemma 2.3); no privacy-loss distribution is assumed.
    """
    kinds = {"zcdp", "discrete-gaussian-l2"}
    if not components or any(c.certificate.mechanism not in kinds for c in components):
        return None
    if delta <= 0.0:
        return None
    l2 = [c for c in components if c.certificate.mechanism == "discrete-gaussian-l2"]
    if len(l2) == len(components):
        shared = {
            tuple(
                sorted(
                    (k, v)
                    for k, v in c.certificate.parameters.items()
                    if k not in ("compositions", RELEASE_TIME_FAILURE)
                )
            )
            for c in components
        }
        if len(shared) == 1:
            parameters = dict(components[0].certificate.parameters)
            total = sum(c.count * int(c.certificate.parameters.get("compositions", 1)) for c in components)
            return discrete_gaussian_l2_certificate(
                parameters["sigma"],
                l2_sensitivity=parameters["l2_sensitivity"],
                coordinates=parameters["coordinates"],
                compositions=total,
                granularity=parameters.get("granularity"),
                delta=delta,
                trust_model=trust_model,
                neighbouring=neighbouring,
                notes=(ZCDP_SUM_NOTE,),
            )
    rho = math.fsum(c.count * c.certificate.output_profile.rho for c in components) * (1.0 + ZCDP_SLACK)
    return zcdp_certificate(
        rho, delta=delta, name="composition", trust_model=trust_model, neighbouring=neighbouring
    )


def compose_components(
    components: Sequence[Component],
    *,
    method: str = "best",
    delta: float | None = None,
    value_discretization_interval: float = DEFAULT_PLD_INTERVAL,
) -> Certificate:
    """Compose already-grouped components; see :func:`compose`."""
    if not components:
        raise InvalidParameter("certificates", [], "at least one certificate")
    if method not in ALL_METHODS:
        raise InvalidParameter("method", method, "one of " + ", ".join(ALL_METHODS))
    interval = check.positive_finite("value_discretization_interval", value_discretization_interval)
    _common_neighbouring(components)
    delta = _default_delta(components) if delta is None else check.delta(delta)
    failure = release_time_failure(components)
    all_gaussian = all(c.certificate.mechanism == "gaussian" for c in components)
    if method == "best" and all_gaussian:
        if failure > 0.0 and timing_delta(0.0, failure) >= delta:
            raise InvalidParameter("delta", delta, "a delta above the release-time term of the components")
        return _with_release_times(_gaussian_composition(components, delta), failure, delta)
    if method != "best":
        if method == "rdp" and not rdp_supports(components):
            raise InvalidParameter(
                "method",
                method,
                "basic, advanced, optimal or pld for this list (RDP needs dp_accounting events that "
                f"its accountant supports under {_common_neighbouring(components).value})",
            )
        return _composition_certificate(components, method, delta, interval)
    if _identical_black_boxes(components) and _total_count(components) <= MAX_OPTIMAL_COUNT:
        # KOV 2015, Thm 3.3 is exact for k identical (ε, δ) guarantees known only as such: the
        # k-fold product of canonical pairs is one such composition, so no valid method can give a
        # smaller ε and the others are not tried.
        return _composition_certificate(
            components,
            "optimal",
            delta,
            interval,
            (
                "best: optimal composition is exact for identical (epsilon, delta) guarantees; no other "
                "method can give a smaller valid epsilon",
            ),
        )
    results: dict[str, Certificate] = {}
    for candidate in METHODS:
        if not _applicable(candidate, components, delta):
            continue
        if delta == 0.0 and candidate in ("pld", "rdp") and results:
            # At δ = 0 basic composition of pure components is exact (the worst-case privacy losses
            # add up), so numerical accountants cannot improve on a finite basic/optimal result.
            continue
        try:
            results[candidate] = _composition_certificate(components, candidate, delta, interval)
        except (ValueError, OverflowError):  # InvalidParameter: no finite epsilon by this method
            continue
    if delta > 0.0 and any(_richer_profile_without_pld(c) for c in components):
        # Re-pointing only helps components whose profile says more than their claimed (ε, δ) and
        # which PLD cannot use directly; for claimed-only guarantees the canonical pair's PLD is
        # already the tightest description, so these passes are skipped.
        for fraction in REPOINT_FRACTIONS:
            repointed = _repointed(components, delta * fraction / _total_count(components))
            if repointed is None:
                continue
            note = f"components re-pointed on their own profiles at delta_i = {fraction:g} delta / k"
            for candidate in ("basic", "advanced", "optimal", "pld"):
                try:
                    results[f"{candidate} (delta_i = {fraction:g} delta/k)"] = _composition_certificate(
                        repointed, candidate, delta, interval, (note,)
                    )
                except (ValueError, OverflowError):
                    continue
    summed = zcdp_composition(
        components, delta, _weakest_trust_model(components), _common_neighbouring(components)
    )
    if summed is not None:
        try:
            results["zcdp"] = _with_release_times(summed, failure, delta)
        except ValueError:  # no room under delta for the release-time term at that epsilon
            pass
    if not results:
        raise InvalidParameter(
            "delta", delta, "a delta at which some composition method gives a finite epsilon"
        )
    order = list(results)
    best = min(results, key=lambda name: (results[name].epsilon, order.index(name)))
    comparison = "best of " + ", ".join(f"{name}: epsilon={c.epsilon:.6g}" for name, c in results.items())
    chosen = results[best]
    certificate = Certificate(
        chosen.mechanism,
        chosen.guarantee,
        chosen.trust_model,
        chosen.neighbouring,
        chosen.parameters,
        chosen.basis,
        chosen.notes + (comparison,),
    )
    certificate.__dict__["output_profile"] = chosen.output_profile  # same parameters, same profiles
    certificate.__dict__["profile"] = chosen.profile
    return certificate.verify()


def compose_counts(
    pairs: Iterable[tuple[Certificate, int]],
    *,
    method: str = "best",
    delta: float | None = None,
    value_discretization_interval: float = DEFAULT_PLD_INTERVAL,
) -> Certificate:
    """Compose ``(certificate, count)`` pairs (a certificate applied ``count`` times)."""
    return compose_components(
        group_components(pairs),
        method=method,
        delta=delta,
        value_discretization_interval=value_discretization_interval,
    )


def compose(
    certificates: Iterable[Certificate],
    method: str = "best",
    delta: float | None = None,
    *,
    value_discretization_interval: float = DEFAULT_PLD_INTERVAL,
) -> Certificate:
    """Certificate of the adaptive composition of the given mechanisms.

    Parameters
    ----------
    certificates
        The certificates of the composed mechanisms (identical ones are merged with a count).  All
        must refer to the same neighbouring relation; the result holds under the weakest trust model.
    method
        ``"best"`` (default), ``"basic"``, ``"advanced"``, ``"optimal"``, ``"pld"`` or ``"rdp"``
        (see the module docstring for theorems and applicability).
    delta
        Target δ of the composition; by default the sum of the components' δ.
    value_discretization_interval
        Discretisation of the privacy loss for ``"pld"`` (smaller is tighter and slower).

    Returns
    -------
    Certificate
        A ``"gaussian"`` certificate for an all-Gaussian list under ``"best"`` (exact), otherwise a
        ``"composition"`` certificate that re-derives its claim from the components.
    """
    if isinstance(certificates, Certificate):
        certificates = [certificates]
    if isinstance(certificates, (str, bytes)) or not isinstance(certificates, Iterable):
        raise InvalidParameter(
            "certificates", type(certificates).__name__, "an iterable of Certificate objects"
        )
    return compose_counts(
        ((certificate, 1) for certificate in certificates),
        method=method,
        delta=delta,
        value_discretization_interval=value_discretization_interval,
    )
