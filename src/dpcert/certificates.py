"""Privacy guarantees and certificates.

A :class:`Certificate` is a value that states what a mechanism guarantees (a :class:`Guarantee`),
to whom (:class:`TrustModel`), under which neighbouring relation (:class:`Neighbouring`), by which
theorem or computation (``basis``), with the parameters needed to re-derive the claim.  Its
*privacy profile* ``delta_for(epsilon)`` / ``epsilon_for(delta)`` is computed from those parameters by
the profile registered for the mechanism, and :meth:`Certificate.verify` checks the claim against it.

Profiles are registered by the modules that define mechanisms (see :mod:`dpcert.profiles`, which also
defines the :class:`TrustModel` and :class:`Neighbouring` labels a registration admits); the
generic ``"approximate-dp"`` profile below is the tightest profile implied by an (ε, δ) guarantee
alone: the profile of the canonical (ε, δ) randomized-response pair (Kairouz, Oh & Viswanath 2015,
Thm 2.1; Murtagh & Vadhan 2016).

A certificate read back is refused (:class:`~dpcert.errors.CertificateFormatError`, naming what is wrong)
for a duplicate key at any depth or a ``NaN`` (:mod:`dpcert._json`), an unknown member or parameter, and a
label its profile cannot support: a trust model, a neighbouring relation, or a parameter outside its
:class:`ParameterSpec` ``choices`` such as a continuous Gaussian labelled ``"sampler": "integer-exact"``.
A registered mechanism name is not replaced unless ``register_profile(..., force=True)``.

Every certificate may carry the parameter ``"release_time_failure"`` p (0 <= p <= 1): the mechanism's
release times are independent of its values and input except on an event of probability at most p (the
fixed-work samplers of :mod:`dpcert.mechanisms.secure.samplers`).  Its profile is then the output's profile
plus :func:`timing_delta` (ε, p) = (1 + e^ε) p (:class:`ReleaseTimeProfile`), so that the certificate also
holds for an observer of release times (a view within total variation p of an (ε, δ)-DP view is
(ε, δ + (1 + e^ε) p)-DP; Jin, McMurtry, Rubinstein & Ohrimenko 2022 on timing side channels).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

from dpcert import _json
from dpcert import _validation as check
from dpcert._notebook import html_table, markdown_table
from dpcert._numerics import UNIT_ROUNDOFF, nudge_up, nudge_up_until_valid, sum_rounded_up
from dpcert.errors import CertificateFormatError, CertificateMismatch, InvalidParameter
from dpcert.profiles import (
    ALL_RELATIONS,
    RELEASE_TIME_FAILURE,
    FormerBounds,
    LabelRules,
    Neighbouring,
    ParameterSpec,
    PrivacyProfile,
    TrustModel,
    register_profile,
    registration_for,
)
from dpcert.signatures import read_signature, sign_document

__all__ = [
    "FORMAT",
    "INTEGER_EXACT",
    "RELEASE_TIME_FAILURE",
    "SAMPLER_LABEL",
    "ApproximateDPProfile",
    "Certificate",
    "Guarantee",
    "Neighbouring",
    "TrustModel",
    "approximate_dp_certificate",
    "point_on_profile",
    "ReleaseTimeProfile",
    "timing_delta",
]

FORMAT = "dpcert.certificate/1"
_DOCUMENT_KEYS = frozenset(
    {
        "format",
        "mechanism",
        "guarantee",
        "trust_model",
        "neighbouring",
        "parameters",
        "basis",
        "notes",
        "signature",
    }
)
_GUARANTEE_KEYS = frozenset({"epsilon", "delta"})
SAMPLER_LABEL = "sampler"
INTEGER_EXACT = "integer-exact"


def timing_delta(epsilon: float, failure: float) -> float:
    """(1 + e^ε)·p rounded up: what release times can add to δ when the fixed-work path is left with
    probability p (a view within total variation p of an (ε, δ)-DP one is (ε, δ + (1 + e^ε) p)-DP)."""
    if failure <= 0.0:
        return 0.0
    if failure >= 1.0 or epsilon > 700.0:
        return 1.0
    return min(1.0, math.nextafter((1.0 + math.exp(epsilon)) * failure * (1.0 + 1e-12), math.inf))


class ReleaseTimeProfile:
    """The profile of a mechanism's (output, release time) view: the output's ``delta_for`` plus
    :func:`timing_delta` (ε, p), the sum rounded up; ``epsilon_for`` the least ε where that is <= δ.

    ``output`` is the profile of the output alone.  No ``dp_accounting`` event describes the sum, so
    :meth:`dp_event` is ``None``; composition adds the term of its components itself.
    """

    def __init__(self, output: PrivacyProfile, failure: float) -> None:
        self.output = output
        self.failure = failure

    def delta_for(self, epsilon: float) -> float:
        terms = [(self.output.delta_for(epsilon), 1), (timing_delta(epsilon, self.failure), 1)]
        return min(1.0, sum_rounded_up(terms))

    def epsilon_for(self, delta: float) -> float:
        if delta <= timing_delta(0.0, self.failure):
            return math.inf
        low = self.output.epsilon_for(delta)
        if not math.isfinite(low):
            return math.inf
        if self.delta_for(low) <= delta:
            return low
        ceiling = max(1.0, 2.0 * low)
        while self.delta_for(ceiling) > delta:
            if ceiling > 700.0 or timing_delta(ceiling, self.failure) >= delta:
                return math.inf
            ceiling *= 2.0
        return nudge_up_until_valid(lambda e: self.delta_for(e) - delta, low, ceiling)

    def dp_event(self) -> Any:
        return None


@dataclass(frozen=True)
class Guarantee:
    """An (ε, δ) differential-privacy guarantee with ``0 <= epsilon < inf`` and ``0 <= delta < 1``."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.nonnegative_finite("epsilon", self.epsilon))
        object.__setattr__(self, "delta", check.delta(self.delta))

    def covers(self, other: Guarantee) -> bool:
        """True if this guarantee is at least as strong as ``other`` (both ε and δ no larger)."""
        return self.epsilon <= other.epsilon and self.delta <= other.delta

    def to_dict(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "delta": self.delta}


def _freeze(value: Any) -> Any:
    """A deep, read-only copy of JSON-like data (dicts become mapping proxies, lists tuples)."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, Certificate):
        return value
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise InvalidParameter("parameters", value, "JSON-like values (numbers, strings, lists, dicts)")


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    if isinstance(value, Certificate):
        return value.to_dict()
    return copy.copy(value)


def _trust_model(value: TrustModel | str) -> TrustModel:
    try:
        return TrustModel(value)
    except ValueError:
        raise InvalidParameter(
            "trust_model", value, "one of " + ", ".join(t.value for t in TrustModel)
        ) from None


def _neighbouring(value: Neighbouring | str) -> Neighbouring:
    try:
        return Neighbouring(value)
    except ValueError:
        raise InvalidParameter(
            "neighbouring", value, "one of " + ", ".join(n.value for n in Neighbouring)
        ) from None


@dataclass(frozen=True, eq=False, init=False)
class Certificate:
    """An immutable, checkable statement of a mechanism's privacy.

    Parameters
    ----------
    mechanism
        Registered mechanism name (``"gaussian"``, ``"laplace"``, ``"approximate-dp"``, …).
    guarantee
        The claimed (ε, δ).
    trust_model
        Central, local or shuffle.
    neighbouring
        The neighbouring relation of the claim.
    parameters
        Everything needed to re-derive the claim (noise scale, sensitivity, number of
        compositions, …); JSON-like values only.
    basis
        The theorem or numerical method establishing the claim, e.g. ``"Balle & Wang 2018, Thm 8"``.
    notes
        Statements about conservative rounding or approximations made on the safe side.
    """

    # the defaults are the constructor's
    mechanism: str
    guarantee: Guarantee
    trust_model: TrustModel
    neighbouring: Neighbouring
    parameters: Mapping[str, Any]
    basis: str
    notes: tuple[str, ...]

    def __init__(
        self,
        mechanism: str,
        guarantee: Guarantee,
        trust_model: TrustModel | str = TrustModel.CENTRAL,
        neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
        parameters: Mapping[str, Any] | None = None,
        basis: str = "",
        notes: Iterable[str] = (),
    ) -> None:
        # labels are accepted as their string values and stored as the enums
        if not isinstance(mechanism, str) or not mechanism:
            raise InvalidParameter("mechanism", mechanism, "a non-empty string")
        if not isinstance(guarantee, Guarantee):
            raise InvalidParameter("guarantee", guarantee, "a dpcert.Guarantee")
        object.__setattr__(self, "mechanism", mechanism)
        object.__setattr__(self, "guarantee", guarantee)
        object.__setattr__(self, "trust_model", _trust_model(trust_model))
        object.__setattr__(self, "neighbouring", _neighbouring(neighbouring))
        object.__setattr__(self, "parameters", _freeze(dict(parameters or {})))
        object.__setattr__(self, "basis", basis)
        object.__setattr__(self, "notes", tuple(str(n) for n in notes))

    # ----------------------------------------------------------------- profile
    @cached_property
    def profile(self) -> PrivacyProfile:
        """The privacy profile re-derived from the parameters, after checking schema and labels.

        Raises :class:`CertificateFormatError` for an unknown, missing or wrongly typed parameter, and
        for a trust model or neighbouring relation the parameters cannot support.
        """
        output = self.output_profile
        failure = self.release_time_failure
        return ReleaseTimeProfile(output, failure) if failure > 0.0 else output

    @cached_property
    def output_profile(self) -> PrivacyProfile:
        """The profile of the output alone: :attr:`profile` without the release-time term (the same
        profile when the certificate has no ``"release_time_failure"``)."""
        registration = registration_for(self.mechanism)
        registration.check(self.mechanism, self.parameters, self.trust_model, self.neighbouring)
        profile = registration.factory(self.parameters)
        self._check_profile_labels(profile)
        return profile

    @property
    def release_time_failure(self) -> float:
        """The probability p that release times depend on the values or the input (0 if none stated)."""
        return float(self.parameters.get(RELEASE_TIME_FAILURE, 0.0))

    def _check_profile_labels(self, profile: PrivacyProfile) -> None:
        """Rules of the profile itself on the labels (e.g. a composition's weakest component)."""
        if isinstance(profile, LabelRules):
            profile.check_labels(self.trust_model, self.neighbouring)

    @property
    def epsilon(self) -> float:
        return self.guarantee.epsilon

    @property
    def delta(self) -> float:
        return self.guarantee.delta

    @property
    def sampler(self) -> str | None:
        """The noise sampler the profile itself vouches for: ``"float"``, ``"integer-exact"`` or ``None``.

        Decided by the registration, never by the certificate's own ``"sampler"`` label: a profile whose
        registration admits a single sampler value (``"float"`` for the continuous Gaussian and Laplace
        profiles, ``"integer-exact"`` for the discrete Gaussian ones) determines it, and a certificate
        labelled otherwise is refused.  Where the registration admits several values (the discrete
        Laplace profile is the same whichever sampler drew the noise) or none, the profile cannot tell
        and this is ``None``: a floating-point warning should then be given.
        """
        spec = registration_for(self.mechanism).parameters.get(SAMPLER_LABEL)
        if spec is None or spec.choices is None or len(spec.choices) != 1:
            return None
        return str(spec.choices[0])

    @property
    def integer_exact(self) -> bool:
        """True only if the profile implies the integer-exact sampler (see :attr:`sampler`)."""
        return self.sampler == INTEGER_EXACT

    def delta_for(self, epsilon: float) -> float:
        """Smallest δ for which the mechanism is (ε, δ)-DP, from its parameters (safe-side bound)."""
        return self.profile.delta_for(check.nonnegative_finite("epsilon", epsilon))

    def epsilon_for(self, delta: float) -> float:
        """Smallest ε for which the mechanism is (ε, δ)-DP (``inf`` if no finite ε works)."""
        return self.profile.epsilon_for(check.delta(delta))

    def verify(self) -> Certificate:
        """Re-derive the profile from the parameters; raise if the claimed guarantee does not hold.

        Returns the certificate itself so that ``Certificate.from_json(text).verify()`` chains.
        """
        # checked again here: a profile handed over by the code that computed it skips the property
        registration_for(self.mechanism).check(
            self.mechanism, self.parameters, self.trust_model, self.neighbouring
        )
        self._check_profile_labels(self.profile)
        proven = self.delta_for(self.guarantee.epsilon)
        if not proven <= self.guarantee.delta:
            proven = min(proven, self._former_delta_for(self.guarantee.epsilon))
        if not proven <= self.guarantee.delta:
            raise CertificateMismatch(
                f"{self.mechanism} certificate claims (epsilon={self.guarantee.epsilon!r}, "
                f"delta={self.guarantee.delta!r}) but its parameters only give "
                f"delta={proven!r} at that epsilon"
            )
        return self

    def _former_delta_for(self, epsilon: float) -> float:
        """The bound an earlier release computed for these parameters (:class:`FormerBounds`), with
        the release-time term; 1 when the profile has none."""
        output = self.output_profile
        if not isinstance(output, FormerBounds):
            return 1.0
        terms = [(output.former_delta_for(epsilon), 1), (timing_delta(epsilon, self.release_time_failure), 1)]
        return min(1.0, sum_rounded_up(terms))

    def to_dp_event(self) -> Any:
        """The ``dp_accounting.DpEvent`` describing this mechanism, or ``None`` if there is none."""
        return self.profile.dp_event()

    def with_guarantee(self, guarantee: Guarantee) -> Certificate:
        """The same mechanism claiming another (ε, δ) point of its profile (verified)."""
        return Certificate(
            self.mechanism,
            guarantee,
            self.trust_model,
            self.neighbouring,
            _thaw(self.parameters),
            self.basis,
            self.notes,
        ).verify()

    # ----------------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "mechanism": self.mechanism,
            "guarantee": self.guarantee.to_dict(),
            "trust_model": self.trust_model.value,
            "neighbouring": self.neighbouring.value,
            "parameters": _thaw(self.parameters),
            "basis": self.basis,
            "notes": list(self.notes),
        }

    def to_json(self, indent: int | None = None) -> str:
        """Serialise to JSON (floats written with full precision, so the round trip is exact)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Pickled as its JSON, read back (and re-verified) by :meth:`from_json`: results holding
        certificates cross process boundaries although the parameters are read-only mappings."""
        return (Certificate.from_json, (self.to_json(),))

    def sign(self, private_key: Any, *, signer: str = "") -> str:
        """This certificate as JSON signed with an Ed25519 ``private_key`` (see :mod:`dpcert.signatures`).

        ``signer`` names who signs.  Read it back with ``Certificate.from_json(text, public_key=...)``,
        which rejects a consistent forgery that :meth:`verify` alone would accept.
        """
        return json.dumps(sign_document(self.to_dict(), private_key, signer=signer), allow_nan=False)

    @property
    def signature(self) -> Any:
        """The :class:`~dpcert.signatures.SignatureInfo` this certificate was read with, or ``None``."""
        return self.__dict__.get("_signature")

    @property
    def authenticity(self) -> str:
        """ "unsigned", or who signed the document it was read from and whether that was checked."""
        info = self.signature
        return "unsigned" if info is None else info.describe()

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, verify: bool = True, public_key: Any | None = None
    ) -> Certificate:
        """Read a certificate; by default re-verify it.

        With ``public_key`` (an Ed25519 public key), the document must also carry a valid signature by
        that key (:class:`~dpcert.signatures.SignatureInvalid` otherwise).  A signature present without
        an expected key is recorded in :attr:`signature` as not checked.
        """
        signature = None
        if public_key is not None or (isinstance(data, Mapping) and "signature" in data):
            signature = read_signature(data, public_key)
        try:
            if data.get("format", FORMAT) != FORMAT:
                raise CertificateFormatError(f"unsupported certificate format {data.get('format')!r}")
            if set(data) - _DOCUMENT_KEYS:
                unknown = sorted(set(data) - _DOCUMENT_KEYS)[0]
                raise CertificateFormatError(f"certificate has unknown member {unknown!r}")
            if not isinstance(data["guarantee"], Mapping):
                raise CertificateFormatError("certificate member 'guarantee' must be an object")
            if set(data["guarantee"]) != _GUARANTEE_KEYS:
                odd = sorted(set(data["guarantee"]) ^ _GUARANTEE_KEYS)[0]
                raise CertificateFormatError(
                    f"certificate member 'guarantee' has {'unknown' if odd in data['guarantee'] else 'no'} "
                    f"key {odd!r}: it holds exactly 'epsilon' and 'delta'"
                )
            guarantee = Guarantee(data["guarantee"]["epsilon"], data["guarantee"]["delta"])
            if not isinstance(data.get("basis", ""), str):
                raise CertificateFormatError("certificate member 'basis' must be a string")
            notes = data.get("notes", [])
            if not isinstance(notes, (list, tuple)) or not all(isinstance(n, str) for n in notes):
                raise CertificateFormatError("certificate member 'notes' must be a list of strings")
            if not isinstance(data.get("parameters", {}), Mapping):
                raise CertificateFormatError("certificate member 'parameters' must be an object")
            certificate = cls(
                mechanism=data["mechanism"],
                guarantee=guarantee,
                trust_model=data["trust_model"],
                neighbouring=data["neighbouring"],
                parameters=data.get("parameters", {}),
                basis=data.get("basis", ""),
                notes=tuple(notes),
            )
        except CertificateFormatError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CertificateFormatError(f"malformed certificate: {exc}") from exc
        if signature is not None:
            object.__setattr__(certificate, "_signature", signature)
        return certificate.verify() if verify else certificate

    @classmethod
    def from_json(cls, text: str, *, verify: bool = True, public_key: Any | None = None) -> Certificate:
        """Parse a certificate; by default re-verify it (a tampered claim raises).

        A duplicate key at any depth, ``NaN`` or ``Infinity`` is refused
        (:class:`~dpcert._json.JSONFormatError`, a :class:`CertificateFormatError`, naming the key and
        where it is) before anything else, the signature included.  With ``public_key``, also require a
        valid Ed25519 signature by that key (see :meth:`from_dict`).
        """
        data = _json.loads(text, what="certificate")
        if not isinstance(data, dict):
            raise CertificateFormatError("certificate JSON must be an object")
        return cls.from_dict(data, verify=verify, public_key=public_key)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Certificate):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def _notebook_rows(self) -> list[tuple[str, Any]]:
        rows: list[tuple[str, Any]] = [
            ("guarantee", f"(ε = {self.epsilon:.6g}, δ = {self.delta:.3g})"),
            ("mechanism", self.mechanism),
            ("trust model", self.trust_model.value),
            ("neighbouring", self.neighbouring.value),
            ("basis", self.basis),
            ("authenticity", self.authenticity),
        ]
        rows += [
            ("parameter " + key, repr(value)) for key, value in self.parameters.items() if key != "components"
        ]
        if "components" in self.parameters:
            rows.append(("components", str(len(self.parameters["components"]))))
        return rows

    def _repr_markdown_(self) -> str:
        return markdown_table("Privacy certificate", self._notebook_rows(), self.notes)

    def _repr_html_(self) -> str:
        return html_table("Privacy certificate", self._notebook_rows(), self.notes)

    def summary(self) -> str:
        """One line for humans."""
        return (
            f"{self.mechanism}: (epsilon={self.epsilon:.6g}, delta={self.delta:.3g})-DP, "
            f"{self.trust_model.value}, {self.neighbouring.value}; basis: {self.basis}; {self.authenticity}"
        )


def point_on_profile(
    profile: PrivacyProfile,
    epsilon: float | None = None,
    delta: float | None = None,
    *,
    reachable_delta: str = "a delta this mechanism can reach (larger)",
) -> Guarantee:
    """The guarantee a certificate claims at a point of ``profile``.

    Give ``delta`` (the least ε is computed), ``epsilon`` (the least δ is computed) or both (taken as
    claimed; :meth:`Certificate.verify` then checks them).  ``reachable_delta`` describes the allowed
    deltas in the error raised when no finite ε reaches ``delta``.
    """
    if epsilon is None and delta is None:
        raise InvalidParameter("epsilon/delta", None, "at least one of epsilon, delta")
    if epsilon is None:
        delta = check.delta(delta)
        epsilon = profile.epsilon_for(delta)
        if not math.isfinite(epsilon):
            raise InvalidParameter("delta", delta, reachable_delta)
    elif delta is None:
        epsilon = check.nonnegative_finite("epsilon", epsilon)
        delta = profile.delta_for(epsilon)
        if delta >= 1.0:
            raise InvalidParameter("epsilon", epsilon, "a value at which delta < 1")
    return Guarantee(epsilon, delta)


# --------------------------------------------------------------------------- generic profile
@register_profile(
    "approximate-dp",
    parameters={
        "epsilon": ParameterSpec("number"),
        "delta": ParameterSpec("number", required=False),
        "name": ParameterSpec("string", required=False),
        "zero_loss_reason": ParameterSpec("string", required=False),
    },
    neighbourings=ALL_RELATIONS,  # a declaration: the declarer states the relation
)
class ApproximateDPProfile:
    """Tightest profile implied by an (ε, δ)-DP guarantee alone.

    Any (ε, δ)-DP mechanism is post-processing of the canonical pair (Kairouz, Oh & Viswanath 2015,
    Thm 2.1), whose hockey-stick divergence is, for ``0 <= e <= ε``,
    ``δ + (1 - δ) (e^ε - e^e) / (1 + e^ε)``, and ``δ`` for ``e >= ε``.

    Parameters: ``epsilon`` and ``delta`` (the declared guarantee), optionally ``name`` (what is
    declared) and ``zero_loss_reason``: a declared (0, 0) guarantee would let a ledger charge nothing,
    so it is refused unless this non-empty string says why the output does not depend on the data.
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.epsilon = check.nonnegative_finite("epsilon", parameters.get("epsilon"))
        self.delta = check.delta(parameters.get("delta", 0.0))
        if (
            self.epsilon == 0.0
            and self.delta == 0.0
            and not str(parameters.get("zero_loss_reason", "")).strip()
        ):
            raise CertificateFormatError(
                "a declared (0, 0) guarantee needs parameter 'zero_loss_reason' saying why the output does "
                "not depend on the data (it would otherwise let a ledger charge nothing)"
            )

    def delta_for(self, epsilon: float) -> float:
        if epsilon >= self.epsilon:
            return self.delta
        # t = e − ε carries one rounding (relative u = 2^-53), expm1 at most 2u of its value, the other
        # three operations u each: |computed − exact| <= 5u·excess + 2u|t|e^t, and the final sum u more.
        t = epsilon - self.epsilon
        excess = (1.0 - self.delta) * (-math.expm1(t)) / (1.0 + math.exp(-self.epsilon))
        allowance = 8.0 * UNIT_ROUNDOFF * excess + 2.0 * UNIT_ROUNDOFF * abs(t) * math.exp(t)
        return min(1.0, (self.delta + excess + allowance) * (1.0 + 2.0 * UNIT_ROUNDOFF))

    def epsilon_for(self, delta: float) -> float:
        if delta < self.delta:
            return math.inf
        if delta == self.delta:
            return self.epsilon
        remaining = math.exp(self.epsilon) - (delta - self.delta) * (1.0 + math.exp(self.epsilon)) / (
            1.0 - self.delta
        )
        if remaining <= 1.0:
            return 0.0
        candidate = nudge_up(lambda e: self.delta_for(e) <= delta, math.log(remaining), self.epsilon)
        return min(candidate, self.epsilon)

    def dp_event(self) -> Any:
        return None


def approximate_dp_certificate(
    epsilon: float,
    delta: float = 0.0,
    *,
    mechanism_name: str = "",
    trust_model: TrustModel | str = TrustModel.CENTRAL,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    basis: str = "declared (epsilon, delta)-DP",
    zero_loss_reason: str = "",
) -> Certificate:
    """A certificate for a mechanism known only to be (ε, δ)-DP (e.g. from a third-party library).

    ``zero_loss_reason`` is required to declare (0, 0): why the output does not depend on the data.
    """
    epsilon = check.nonnegative_finite("epsilon", epsilon)
    delta = check.delta(delta)
    parameters: dict[str, Any] = {"epsilon": epsilon, "delta": delta}
    if mechanism_name:
        parameters["name"] = mechanism_name
    if zero_loss_reason:
        parameters["zero_loss_reason"] = str(zero_loss_reason)
    return Certificate(
        "approximate-dp",
        Guarantee(epsilon, delta),
        _trust_model(trust_model),
        _neighbouring(neighbouring),
        parameters,
        basis,
    ).verify()
