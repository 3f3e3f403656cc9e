"""The certificate of shuffled local reports: amplification by shuffling as a registered profile.

The bounds themselves (Feldman, McMillan & Talwar 2020 and 2023; the exact shuffled binary randomized
response; a stated randomizer matrix's clone pair) are evaluated in :mod:`dpcert.theory.amplification`;
this module registers them as the ``"shuffle-amplification"`` profile and issues its certificates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpcert import _validation as check
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.profiles import EVENT_LEVEL, SHUFFLE_OR_CENTRAL, ParameterSpec, register_profile
from dpcert.theory.amplification import (
    certificate_basis,
    check_matrix,
    check_method,
    check_randomizer,
    closed_form_delta,
    shuffled_delta,
    shuffled_epsilon,
)

AMPLIFICATION_PARAMETERS = {
    "epsilon0": ParameterSpec("number"),
    "delta0": ParameterSpec("number", required=False),
    "users": ParameterSpec("integer"),
    "method": ParameterSpec("string", required=False),
    "local_mechanism": ParameterSpec("string", required=False),
    "randomizer": ParameterSpec("string", required=False),
    "categories": ParameterSpec("integer", required=False),
    "matrix": ParameterSpec("list", required=False),
}


@register_profile(
    "shuffle-amplification",
    parameters=AMPLIFICATION_PARAMETERS,
    trust_models=SHUFFLE_OR_CENTRAL,
    neighbourings=EVENT_LEVEL,
)
class AmplificationProfile:
    """Profile of ``users`` shuffled (ε0, δ0)-LDP reports by the bound named in ``method``.

    Parameters: ``epsilon0`` (number >= 0), ``delta0`` (number in [0, 1), default 0), ``users``
    (integer >= 1), ``method`` (``"closed-form"`` or ``"numeric"``, default ``"numeric"``),
    ``randomizer`` (``"generic"``, ``"binary-rr"``, ``"k-rr"`` or ``"matrix"``, default ``"generic"``),
    ``categories`` (integer >= 2, the k of ``"k-rr"``; default 2) and ``matrix`` (the randomizer's rows,
    with ``"matrix"``: its clone probability is recomputed from them, never read from the certificate).
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.epsilon0 = check.nonnegative_finite("epsilon0", parameters.get("epsilon0"))
        self.delta0 = check.delta(parameters.get("delta0", 0.0), "delta0")
        self.users = check.positive_int("users", parameters.get("users"))
        self.method = check_method(parameters.get("method", "numeric"))
        self.randomizer, self.categories = check_randomizer(
            parameters.get("randomizer", "generic"), parameters.get("categories", 2), self.method, self.delta0
        )
        self.matrix = check_matrix(
            self.randomizer, parameters.get("matrix"), self.epsilon0, self.method, self.delta0
        )

    def delta_for(self, epsilon: float) -> float:
        return shuffled_delta(
            epsilon,
            self.epsilon0,
            self.users,
            self.delta0,
            self.method,
            randomizer=self.randomizer,
            categories=self.categories,
            matrix=None if self.matrix is None else self.matrix.rows,
        )

    def epsilon_for(self, delta: float) -> float:
        return shuffled_epsilon(
            delta,
            self.epsilon0,
            self.users,
            self.delta0,
            self.method,
            randomizer=self.randomizer,
            categories=self.categories,
            matrix=None if self.matrix is None else self.matrix.rows,
        )

    def reference_bounds(self) -> dict[str, Any]:
        """The closed form (Chowdhury & Zhou 2022, Lemma B.4) for comparison, unless it is this profile."""
        if self.method == "closed-form" or self.randomizer != "generic":
            return {}
        return {"closed form (Feldman, McMillan & Talwar 2020, Thm 3.1)": ClosedFormCurve(self)}

    def dp_event(self) -> Any:
        return None


class ClosedFormCurve:
    """δ(ε) of the closed-form amplification bound; NaN where it gives no δ below 1 (nothing is said)."""

    def __init__(self, profile: AmplificationProfile) -> None:
        self.profile = profile

    def delta_for(self, epsilon: float) -> float:
        value = closed_form_delta(epsilon, self.profile.epsilon0, self.profile.users, self.profile.delta0)
        return value if value < 1.0 else math.nan


def amplification_certificate(
    epsilon0: float,
    users: int,
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    delta0: float = 0.0,
    method: str = "numeric",
    extra_parameters: Mapping[str, Any] | None = None,
    mechanism: str = "shuffle-amplification",
    notes: tuple[str, ...] = (),
    randomizer: str = "generic",
    categories: int | None = None,
    matrix: object = None,
) -> Certificate:
    """Certificate of ``users`` shuffled (ε0, δ0)-LDP reports at ``delta`` (least ε) or ``epsilon``.

    ``randomizer``/``categories``/``matrix`` as in :func:`shuffled_delta`; recorded in the parameters
    only when the randomizer is not generic (a matrix as its normalised rows).
    """
    check_method(method)
    delta0 = check.delta(delta0, "delta0")
    randomizer, categories = check_randomizer(randomizer, categories, method, delta0)
    stated = check_matrix(randomizer, matrix, check.nonnegative_finite("epsilon0", epsilon0), method, delta0)
    parameters: dict[str, Any] = {
        "epsilon0": check.nonnegative_finite("epsilon0", epsilon0),
        "delta0": delta0,
        "users": check.positive_int("users", users),
        "method": method,
    }
    if stated is not None:
        parameters["randomizer"] = randomizer
        parameters["matrix"] = stated.as_list()
    elif randomizer != "generic":
        parameters["randomizer"] = randomizer
        parameters["categories"] = categories
    parameters.update(dict(extra_parameters or {}))
    guarantee = point_on_profile(
        AmplificationProfile(parameters),
        epsilon,
        delta,
        reachable_delta="a delta this protocol can reach (larger)",
    )
    if randomizer == "generic":
        randomizer_note = (
            "numeric bound: tail of C ~ Bin(n-1, e^-eps0) outside a Chernoff window counted in full"
            if method == "numeric"
            else "closed form used only where its precondition holds (checked)"
        )
    elif stated is not None:
        randomizer_note = (
            f"each user runs the stated {len(stated.rows)}-input randomizer matrix: clone probability "
            f"c = {stated.clone_probability:.6g} (FMT 2020's generic e^-eps0 = {math.exp(-epsilon0):.6g}, "
            f"randomized response's 2/(e^eps0+1) = {2.0 / (math.exp(epsilon0) + 1.0):.6g}); binomial "
            "tails outside a Chernoff window counted in full"
        )
    else:
        randomizer_note = (
            f"each user runs {randomizer} with {categories} values (clone condition holds); binomial "
            "tails outside a Chernoff window counted in full"
        )
    notes = tuple(notes) + (
        "shuffle model, replace-one neighbours among a fixed number of users, each running an "
        "(epsilon0, delta0)-LDP randomizer with independent randomness; the shuffler hides the order",
        randomizer_note,
    )
    return Certificate(
        mechanism,
        guarantee,
        TrustModel.SHUFFLE,
        Neighbouring.REPLACE_ONE,
        parameters,
        certificate_basis(method, randomizer, parameters["users"]),
        notes,
    ).verify()
