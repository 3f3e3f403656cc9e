"""Privacy profiles: the protocol a mechanism's profile implements, and the registry of profiles.

A certificate names its mechanism and carries the parameters of its claim; the *profile* registered for
that name re-derives the hockey-stick privacy profile ``delta_for(epsilon)`` / ``epsilon_for(delta)`` from
the parameters (see :class:`PrivacyProfile`).  Profiles are registered with :func:`register_profile` by
the module defining the mechanism, and are found in any process through the entry-point group
``dpcert.profiles`` (:data:`ENTRY_POINT_GROUP`): its entry *name* is a mechanism name, its *value* the
module registering that profile (``module`` or ``module:attribute``).  dpcert declares its own profiles
in that group, so a built-in mechanism and one defined by another installed package are loaded the
same way: on the first certificate of that name.  A name dpcert declares cannot be taken by another
package's entry point, and a registered name is not replaced unless ``register_profile(..., force=True)``.

Optional capabilities a profile may have are declared as the runtime-checkable protocols
:class:`LabelRules`, :class:`PrivacyLossParts`, :class:`ReferenceBounds` and
:class:`FormerBounds`; callers test them with ``isinstance(profile, ...)``.  See ``docs/plugins.md``
for writing a mechanism of one's own.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from dpcert.errors import CertificateFormatError, InvalidParameter, UnknownMechanism

if TYPE_CHECKING:
    import importlib.metadata

ENTRY_POINT_GROUP = "dpcert.profiles"
_DISTRIBUTION = "dpcert"


class TrustModel(str, enum.Enum):
    """Whom the guarantee protects against."""

    CENTRAL = "central"
    LOCAL = "local"
    SHUFFLE = "shuffle"


class Neighbouring(str, enum.Enum):
    """The neighbouring relation the guarantee refers to."""

    ADD_REMOVE = "add/remove"
    REPLACE_ONE = "replace-one"
    USER_LEVEL = "user-level"


@runtime_checkable
class PrivacyProfile(Protocol):
    """The hockey-stick privacy profile of a mechanism, from its parameters.

    The proof obligation: for every ``epsilon >= 0``, ``delta_for(epsilon)`` is at least the true
    ``sup_{neighbours} H_{e^epsilon}(M(x) || M(x'))`` of the mechanism under the certificate's
    neighbouring relation (exact, or an upper bound whose numerical error is bounded and added), and
    ``epsilon_for(delta)`` is an ε at which ``delta_for(ε) <= delta`` (``inf`` if none).  A certificate
    is verified by this profile alone, so a profile that under-states δ makes false certificates.
    """

    def delta_for(self, epsilon: float) -> float:
        """Smallest δ such that the mechanism is (ε, δ)-DP (an upper bound if not exact)."""
        ...

    def epsilon_for(self, delta: float) -> float:
        """Smallest ε such that the mechanism is (ε, δ)-DP (an upper bound; ``inf`` if none)."""
        ...

    def dp_event(self) -> Any:
        """The matching ``dp_accounting.DpEvent``, or ``None``."""
        ...


@runtime_checkable
class LabelRules(Protocol):
    """A profile whose allowed trust models or neighbouring relations depend on its parameters.

    ``check_labels`` raises :class:`~dpcert.errors.CertificateFormatError` for labels the parameters
    cannot support (e.g. a composition cannot claim a stronger trust model than its weakest
    component).  It is called after the registration's own label check, whenever a certificate's
    profile is built or verified.
    """

    def check_labels(self, trust_model: TrustModel, neighbouring: Neighbouring) -> None: ...


@runtime_checkable
class PrivacyLossParts(Protocol):
    """A profile that gives its own privacy loss distribution to the ``"pld"`` composition.

    ``privacy_loss_parts(interval)`` returns ``(single, count)`` pairs: the mechanism the profile
    describes is the adaptive composition of ``count`` runs of each ``single``, a single-run PLD on
    the loss grid ``interval`` (the composition's ``value_discretization_interval``) given as

    * a :class:`~dpcert.theory.pld.LossPmf`: a symmetric pair, both directions have this
      law of the loss;
    * a pair ``(remove, add)`` of ``LossPmf`` (a 2-tuple or a :class:`~dpcert.theory.pld.LossPmfPair`):
      ``remove`` is the law of ``ln(P/Q)`` under ``P`` and ``add`` that of ``ln(Q/P)`` under ``Q``
      for the mechanism's dominating pair ``(P, Q)``;
    * a ``dp_accounting`` ``PrivacyLossDistribution`` built with ``pessimistic_estimate=True``.

    Each ``LossPmf`` must be *pessimistic*: every finite loss rounded up to the grid, every mass an
    upper bound on the exact one (the allowances for the floating-point evaluation of the masses
    stated in the implementing module), the mass of losses left out moved to ``infinity_mass``.
    Then the composition's δ(ε) is an upper bound on the true one (pessimistic discretisation only
    moves mass toward larger losses, Koskela et al. 2021; Doroshenko et al. 2022), and
    :mod:`dpcert.theory.pld` bounds the round-off of composing them.  Composition calls
    the method for any profile that has it (never by profile type), before falling back on the
    profile's Gaussian event or its claimed (ε, δ).
    """

    def privacy_loss_parts(self, interval: float) -> Sequence[tuple[Any, int]]: ...


@runtime_checkable
class ReferenceBounds(Protocol):
    """A profile that names other published bounds on itself, drawn beside it by the plots.

    ``reference_bounds()`` maps a label (with its source) to an object with ``delta_for(epsilon)``;
    these curves are for comparison only and never verify a certificate.
    """

    def reference_bounds(self) -> dict[str, Any]: ...


@runtime_checkable
class FormerBounds(Protocol):
    """A profile whose earlier releases computed another proven upper bound from the same parameters.

    ``former_delta_for(epsilon)`` is that bound, under the same proof obligation as
    :meth:`PrivacyProfile.delta_for`.  :meth:`Certificate.verify` consults it only for a claim the
    current bound does not support, so that a certificate issued at the least ε of an earlier release
    still verifies (each bound is at least the true δ, so a claim either supports holds).
    """

    def former_delta_for(self, epsilon: float) -> float: ...


ProfileFactory = Callable[[Mapping[str, Any]], PrivacyProfile]

ALL_TRUST_MODELS: frozenset[TrustModel] = frozenset(TrustModel)
# A shuffle protocol's guarantee needs the shuffler: what one user sends is not private on its own.
SHUFFLE_OR_CENTRAL: frozenset[TrustModel] = frozenset({TrustModel.SHUFFLE, TrustModel.CENTRAL})
# Relations about one record or event.  A user-level guarantee must state the user's participations,
# so only profiles built from them (compositions) or declared by the user accept ``user-level``.
EVENT_LEVEL: frozenset[Neighbouring] = frozenset({Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE})
ALL_RELATIONS: frozenset[Neighbouring] = frozenset(Neighbouring)
# The parameter every registration admits: the probability that release times depend on the values
# or the input (see dpcert.certificates.ReleaseTimeProfile).
RELEASE_TIME_FAILURE = "release_time_failure"

_KIND_CHECKS: dict[str, Callable[[Any], bool]] = {
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    ),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "list": lambda v: isinstance(v, (tuple, list)),
    "object": lambda v: isinstance(v, Mapping),
}


@dataclass(frozen=True)
class ParameterSpec:
    """The JSON type of one certificate parameter, whether it must be present and its allowed values.

    ``kind`` is one of ``"number"`` (int or float, not bool), ``"integer"`` (an int, or a float with an
    integral value), ``"string"``, ``"boolean"``, ``"list"`` or ``"object"``.  ``choices`` lists the only
    values a *label* parameter may take (e.g. ``"sampler"``: ``("float",)`` for a profile of
    continuous noise, which only a floating-point sampler draws); a certificate with another value is
    refused naming the label.  Other ranges are checked by the profile itself when it is built.
    """

    kind: str
    required: bool = True
    choices: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KIND_CHECKS:
            raise InvalidParameter("kind", self.kind, "one of " + ", ".join(_KIND_CHECKS))
        if self.choices is not None:
            if isinstance(self.choices, (str, bytes)) or not isinstance(self.choices, Iterable):
                raise InvalidParameter("choices", self.choices, f"a tuple of {self.kind} values")
            choices = tuple(self.choices)
            if not choices or not all(_KIND_CHECKS[self.kind](c) for c in choices):
                raise InvalidParameter("choices", self.choices, f"a non-empty tuple of {self.kind} values")
            object.__setattr__(self, "choices", choices)

    def allows(self, value: Any) -> bool:
        """True if ``value`` has this parameter's type and is one of its ``choices`` (if any)."""
        if not _KIND_CHECKS[self.kind](value):
            return False
        if self.choices is None:
            return True
        # ``in`` alone would let True stand for 1 and 1.0 for 1: compare types as well
        return any(type(value) is type(c) and value == c for c in self.choices)


@dataclass(frozen=True)
class ProfileRegistration:
    """What a registered mechanism accepts: its profile, parameter schema and allowed labels."""

    factory: ProfileFactory
    parameters: Mapping[str, ParameterSpec]
    trust_models: frozenset[TrustModel]
    neighbourings: frozenset[Neighbouring]

    @property
    def origin(self) -> str:
        """``module.qualname`` of the registered factory: who registered the profile."""
        return _origin(self.factory)

    def check(
        self,
        mechanism: str,
        parameters: Mapping[str, Any],
        trust_model: TrustModel,
        neighbouring: Neighbouring,
    ) -> None:
        """Raise :class:`CertificateFormatError` naming the first parameter or label not accepted."""
        _check_release_time_failure(mechanism, parameters)
        unknown = sorted(set(parameters) - set(self.parameters) - {RELEASE_TIME_FAILURE})
        if unknown:
            raise CertificateFormatError(
                f"{mechanism} certificate has unknown parameter {unknown[0]!r}: "
                f"allowed parameters are {', '.join(sorted(self.parameters))}"
            )
        for key, spec in self.parameters.items():
            if key not in parameters:
                if spec.required:
                    raise CertificateFormatError(f"{mechanism} certificate lacks required parameter {key!r}")
                continue
            if not _KIND_CHECKS[spec.kind](parameters[key]):
                raise CertificateFormatError(
                    f"{mechanism} certificate parameter {key!r} must be of type {spec.kind}, "
                    f"got {parameters[key]!r}"
                )
            if not spec.allows(parameters[key]):
                assert spec.choices is not None
                raise CertificateFormatError(
                    f"{mechanism} certificate label {key!r} is {parameters[key]!r}, which its profile "
                    f"cannot support: allowed {', '.join(repr(c) for c in spec.choices)}"
                )
        if trust_model not in self.trust_models:
            raise CertificateFormatError(
                f"a {mechanism} certificate cannot claim the {trust_model.value} trust model: its "
                f"parameters support {', '.join(sorted(t.value for t in self.trust_models))}"
            )
        if neighbouring not in self.neighbourings:
            raise CertificateFormatError(
                f"a {mechanism} certificate cannot claim the {neighbouring.value} relation: its "
                f"parameters support {', '.join(sorted(n.value for n in self.neighbourings))}"
            )


def _check_release_time_failure(mechanism: str, parameters: Mapping[str, Any]) -> None:
    """The parameter every profile admits (see :mod:`dpcert.certificates`): a number in [0, 1]."""
    if RELEASE_TIME_FAILURE not in parameters:
        return
    value = parameters[RELEASE_TIME_FAILURE]
    if not _KIND_CHECKS["number"](value) or not 0.0 <= value <= 1.0:
        raise CertificateFormatError(
            f"{mechanism} certificate parameter {RELEASE_TIME_FAILURE!r} must be a number in [0, 1], "
            f"got {value!r}"
        )


def _origin(factory: Any) -> str:
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', repr(factory))}"


_PROFILES: dict[str, ProfileRegistration] = {}


def _declared(mechanism: str | None = None) -> list[importlib.metadata.EntryPoint]:
    """Entry points of :data:`ENTRY_POINT_GROUP` (only those named ``mechanism`` if given)."""
    import importlib.metadata  # about 0.1 s to import: only when entry points are read

    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return [ep for ep in found if mechanism is None or ep.name == mechanism]


def _is_builtin(entry_point: importlib.metadata.EntryPoint) -> bool:
    dist = entry_point.dist
    return dist is not None and dist.name.replace("_", "-").lower() == _DISTRIBUTION


@lru_cache(maxsize=1)
def builtin_profile_modules() -> Mapping[str, str]:
    """Mechanism name → module registering its profile, as dpcert's own entry points declare them.

    Empty if dpcert's distribution metadata is not installed (a source tree imported without
    ``pip install -e .``): then only profiles already imported are found.
    """
    return MappingProxyType({ep.name: ep.module for ep in _declared() if _is_builtin(ep)})


def _load(mechanism: str) -> None:
    """Import the module the entry-point group declares for ``mechanism`` (dpcert's own first).

    Another package's entry point under a name dpcert declares is never loaded: a plugin cannot
    shadow a built-in profile.
    """
    candidates = _declared(mechanism)
    builtin = [ep for ep in candidates if _is_builtin(ep)]
    chosen = builtin or candidates
    if not chosen:
        return
    entry_point = chosen[0]
    try:
        entry_point.load()
    except Exception as exc:  # noqa: BLE001 - reported with the entry point that failed
        raise CertificateFormatError(
            f"the profile of mechanism {mechanism!r}, declared in entry-point group {ENTRY_POINT_GROUP!r} "
            f"as {entry_point.value!r}, failed to load: {type(exc).__name__}: {exc}"
        ) from exc


def register_profile(
    mechanism: str,
    *,
    parameters: Mapping[str, ParameterSpec],
    trust_models: Iterable[TrustModel] = ALL_TRUST_MODELS,
    neighbourings: Iterable[Neighbouring] = EVENT_LEVEL,
    force: bool = False,
) -> Callable[[ProfileFactory], ProfileFactory]:
    """Class/function decorator registering the privacy profile of a mechanism name.

    A name is registered once: registering another factory under a registered name (a built-in one
    included) raises :class:`~dpcert.errors.InvalidParameter` naming the mechanism, unless
    ``force=True``, since every certificate of that name would from then on be verified by the new
    profile.  The same factory registered again (same ``__module__`` and ``__qualname__``, e.g. when its
    module is re-imported with :func:`importlib.reload`) replaces the old registration silently.  A
    built-in name's module is imported first, so that a replacement is compared with the built-in
    profile and a later import of that module does not meet a foreign registration.

    To make the profile readable in any process (a certificate read back by the CLI, a ledger
    verified elsewhere), declare the registering module in the ``dpcert.profiles`` entry-point group
    of its package, under the mechanism name (see :data:`ENTRY_POINT_GROUP`).

    Parameters
    ----------
    mechanism
        The name certificates of this mechanism carry.
    parameters
        The typed parameter schema: every key a certificate may carry, with its JSON type and whether it
        is required.  Unknown, missing and wrongly typed keys are refused by name.
    trust_models, neighbourings
        The labels the parameters can support.  A profile may also implement :class:`LabelRules`
        for rules that depend on its parameters.
    force
        Replace a registration of ``mechanism`` by another factory (Opacus's
        ``register_accountant(force=...)`` convention).
    """
    if not isinstance(mechanism, str) or not mechanism:
        raise InvalidParameter("mechanism", mechanism, "a non-empty string")
    if not isinstance(force, bool):
        raise InvalidParameter("force", force, "True or False")
    registration_parameters = MappingProxyType(dict(parameters))
    for key, spec in registration_parameters.items():
        if not isinstance(spec, ParameterSpec):
            raise InvalidParameter(f"parameters[{key!r}]", spec, "a dpcert.profiles.ParameterSpec")
    allowed_trust = frozenset(TrustModel(t) for t in trust_models)
    allowed_relations = frozenset(Neighbouring(n) for n in neighbourings)
    if not allowed_trust or not allowed_relations:
        raise InvalidParameter("trust_models/neighbourings", mechanism, "at least one label each")

    def decorate(factory: ProfileFactory) -> ProfileFactory:
        origin = _origin(factory)
        # dpcert's own modules register the names they declare (tests/test_plugin_package.py checks
        # this statically), so only another package's factory is compared with the entry points
        own = str(getattr(factory, "__module__", "")).startswith("dpcert.")
        if mechanism not in _PROFILES and not own and mechanism in builtin_profile_modules():
            if getattr(factory, "__module__", None) != builtin_profile_modules()[mechanism]:
                _load(mechanism)
        registered = _PROFILES.get(mechanism)
        if registered is not None and registered.origin != origin and not force:
            raise InvalidParameter(
                "mechanism",
                mechanism,
                f"a name not registered yet: {mechanism!r} is the profile of {registered.origin}; "
                "pass force=True to replace it (every certificate of that name would then be verified "
                f"by {origin})",
            )
        _PROFILES[mechanism] = ProfileRegistration(
            factory, registration_parameters, allowed_trust, allowed_relations
        )
        return factory

    return decorate


def registered_mechanisms() -> tuple[str, ...]:
    """Names of the mechanisms whose profile dpcert can re-derive (registered or declared)."""
    return tuple(sorted(set(_PROFILES) | {ep.name for ep in _declared()}))


def registration_for(mechanism: str) -> ProfileRegistration:
    """The registration of ``mechanism``; its declared module is imported on first use."""
    if mechanism not in _PROFILES:
        _load(mechanism)
    try:
        return _PROFILES[mechanism]
    except KeyError:
        raise UnknownMechanism(
            f"unknown mechanism {mechanism!r}: no profile is registered under that name nor declared "
            f"in entry-point group {ENTRY_POINT_GROUP!r} (install the package defining it{_hint()}); "
            f"dpcert can re-derive {', '.join(registered_mechanisms())}"
        ) from None


def _hint() -> str:
    if builtin_profile_modules():
        return ""
    return ", and install dpcert itself, whose profiles are declared there"


def profile_for(mechanism: str, parameters: Mapping[str, Any]) -> PrivacyProfile:
    """Build the registered profile of ``mechanism`` from ``parameters`` (no label checks)."""
    return registration_for(mechanism).factory(parameters)
