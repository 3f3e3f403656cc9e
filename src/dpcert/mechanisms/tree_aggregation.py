"""Gaussian tree aggregation over one epoch (DP-FTRL's prefix sums), as an exact Gaussian.

The online tree-aggregation mechanism (Dwork, Naor, Pitassi & Rothblum 2010; Chan, Shi & Song 2011)
releases, for a stream of T steps, the noisy sum of every dyadic block of steps
``[k 2^j + 1, (k + 1) 2^j]`` completed by step T, each with independent N(0, σ² C²) noise, where C
bounds the ℓ2 norm of one record's contribution to a step.  In one epoch every record contributes to
a single step (Kairouz, McMahan, Song, Thakkar, Thakurta & Xu 2021, *Practical and private (deep)
learning without sampling or shuffling*, App. D; dp_accounting's ``SingleEpochTreeAggregationDpEvent``,
whose ``noise_multiplier`` is σ), and the step t lies in exactly one block of each length
2^j <= T that contains it and is completed: at most ``h = floor(log2 T) + 1`` blocks, attained at t = 1.
With several trees (restarts) and each record in at most one of them, h is that of the longest tree.

Replacing a record by the zero record changes those h block sums by at most C each, so the release
is the Gaussian mechanism with ℓ2 sensitivity ``C sqrt(h)`` (dp_accounting's ``REPLACE_SPECIAL``
accounting, whose RDP ``α h / (2 σ²)`` is that Gaussian's).  dpcert's ``replace-one`` relation
replaces a record by *any* record, changing each block by up to 2C: the certificate is the exact
Gaussian with ``μ = 2 sqrt(h · epochs) / σ`` (Balle & Wang 2018, Thm 8; ``epochs`` independent
trees-per-epoch compose as Gaussians, Dong, Roth & Su 2019, Cor. 3.3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dpcert import _validation as check
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.gaussian import ClassicalGaussianBound
from dpcert.profiles import ParameterSpec, register_profile
from dpcert.theory.gaussian import gaussian_delta, gaussian_epsilon

TREE_AGGREGATION_BASIS = (
    "single-epoch Gaussian tree aggregation (Kairouz et al. 2021, App. D) as one Gaussian of l2 "
    "sensitivity 2 sqrt(h) under replace-one, exact profile (Balle & Wang 2018, Thm 8)"
)
MAX_STEPS = 2**62


def tree_depth(step_counts: int | Sequence[int]) -> int:
    """Most released blocks one step lies in: ``floor(log2 T) + 1`` for the longest tree of T steps."""
    counts = [step_counts] if isinstance(step_counts, int) else list(step_counts)
    if not counts:
        raise InvalidParameter("step_counts", step_counts, "at least one tree")
    values = [check.positive_int("step_counts", count, minimum=0) for count in counts]
    longest = max(values)
    if longest < 1 or longest > MAX_STEPS:
        raise InvalidParameter("step_counts", step_counts, f"a tree of 1 to {MAX_STEPS} steps")
    return longest.bit_length()


@register_profile(
    "tree-aggregation",
    parameters={
        "noise_multiplier": ParameterSpec("number"),
        "step_counts": ParameterSpec("list"),
        "epochs": ParameterSpec("integer", required=False),
    },
    trust_models=(TrustModel.CENTRAL,),
    neighbourings=(Neighbouring.REPLACE_ONE,),
)
class TreeAggregationProfile:
    """Exact profile of ``epochs`` single-epoch Gaussian tree aggregations.

    Parameters: ``noise_multiplier`` σ (per-block noise over the per-record contribution bound C),
    ``step_counts`` (steps of each tree in the epoch, list of non-negative integers) and ``epochs``
    (independent repetitions, each record once per epoch; default 1).
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.noise_multiplier = check.positive_finite("noise_multiplier", parameters.get("noise_multiplier"))
        counts = parameters.get("step_counts")
        if not isinstance(counts, (list, tuple)) or not all(
            isinstance(c, int) and not isinstance(c, bool) for c in counts
        ):
            raise InvalidParameter("step_counts", counts, "a list of non-negative integers")
        self.step_counts = tuple(counts)
        self.depth = tree_depth(self.step_counts)
        self.epochs = check.positive_int("epochs", parameters.get("epochs", 1))
        mu = 2.0 * math.sqrt(self.depth * self.epochs) / self.noise_multiplier
        for _ in range(4):  # a few ulp upward: more privacy loss, never less
            mu = math.nextafter(mu, math.inf)
        self.mu = mu

    def delta_for(self, epsilon: float) -> float:
        return gaussian_delta(epsilon, self.mu)

    def epsilon_for(self, delta: float) -> float:
        return gaussian_epsilon(delta, self.mu)

    def reference_bounds(self) -> dict[str, Any]:
        """The classical Gaussian bound of the same μ, for comparison curves."""
        bound = ClassicalGaussianBound(self.mu)
        return {bound.label: bound}

    def dp_event(self) -> Any:
        """The dominating Gaussian event (the tree event itself is only accounted under zero-out)."""
        from dp_accounting import dp_event

        event = dp_event.GaussianDpEvent(self.noise_multiplier / (2.0 * math.sqrt(self.depth)))
        return event if self.epochs == 1 else dp_event.SelfComposedDpEvent(event, self.epochs)


def tree_aggregation_certificate(
    noise_multiplier: float,
    step_counts: int | Sequence[int],
    *,
    epochs: int = 1,
    delta: float | None = None,
    epsilon: float | None = None,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
) -> Certificate:
    """Certificate of ``epochs`` single-epoch Gaussian tree aggregations under ``replace-one``."""
    counts = [step_counts] if isinstance(step_counts, int) else list(step_counts)
    parameters: dict[str, Any] = {
        "noise_multiplier": check.positive_finite("noise_multiplier", noise_multiplier),
        "step_counts": counts,
        "epochs": check.positive_int("epochs", epochs),
    }
    profile = TreeAggregationProfile(parameters)
    certificate = Certificate(
        "tree-aggregation",
        point_on_profile(profile, epsilon, delta),
        trust_model,
        Neighbouring.REPLACE_ONE,
        parameters,
        TREE_AGGREGATION_BASIS,
        (
            f"tree depth h = {profile.depth} (floor(log2 T) + 1 for the longest tree, T = {max(counts)})",
            "replace-one doubles the zero-out sensitivity of dp_accounting's noise multiplier",
        ),
    )
    certificate.__dict__["profile"] = profile
    return certificate.verify()
