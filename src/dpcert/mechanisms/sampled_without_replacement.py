"""The Gaussian mechanism on fixed-size batches sampled without replacement, composed over steps.

Each step draws a uniformly random subset of ``sample_size`` = m of the ``dataset_size`` = n records
(no record twice) and releases a query of the batch with ℓ2 sensitivity Δ plus N(0, σ²) noise: the
DP-SGD step with shuffled fixed-size batches.  The dataset size is public and neighbours differ by
*replacing* one record (a removal would change n), so the guarantee is under ``replace-one`` and Δ
is the replace-one sensitivity of the batch query (2C for a sum of gradients clipped to norm C).

The profile is the Rényi-DP bound of Wang, Balle & Kasiviswanathan (2019, *Subsampled Rényi
differential privacy and analytical moments accountant*, Thm 27) for sampling ratio γ = m/n, summed
over the steps and converted to (ε, δ) by dp_accounting's RDP accountant
(:class:`~dpcert.theory.rdp.RdpEventProfile`).  dp_accounting has no privacy loss
distribution for this sampling scheme, so no tighter proven profile is used.

The bound is conservative: for the sum of per-record values in [−Δ/2, Δ/2] (a query of replace-one
sensitivity Δ), two neighbouring datasets (every value −Δ/2 except one, replaced by +Δ/2) realise
the pair (N(0, σ²), (1 − γ) N(0, σ²) + γ N(Δ, σ²)) at every step, whose
composed profile is the Poisson-subsampled Gaussian's (:mod:`dpcert.mechanisms.subsampled_gaussian`)
at q = γ.  The true profile lies between that and this certificate's.  That lower profile is not
an upper bound: under composition, sampling without replacement with replace-one neighbours can
lose far more than Poisson sampling at the same rate (Lebeda, Regehr, Kamath & Steinke 2024,
"Avoiding pitfalls for privacy accounting of subsampled mechanisms under composition", who
construct the dominating pairs a PLD bound for this scheme would need).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpcert import _validation as check
from dpcert.certificates import Certificate, Neighbouring, TrustModel, point_on_profile
from dpcert.errors import InvalidParameter
from dpcert.profiles import ParameterSpec, register_profile
from dpcert.theory.rdp import RDP_BASIS, RdpEventProfile

SAMPLED_WITHOUT_REPLACEMENT_BASIS = (
    "Gaussian on batches sampled without replacement, replace-one: subsampled RDP "
    "(Wang, Balle & Kasiviswanathan 2019, Thm 27); " + RDP_BASIS
)
MAX_STEPS = 10**7
ROUND_OFF_FLOOR = 1e-12  # below this, dp_accounting's composed estimate is dominated by round-off


@register_profile(
    "sampled-without-replacement-gaussian",
    parameters={
        "sigma": ParameterSpec("number"),
        "sample_size": ParameterSpec("integer"),
        "dataset_size": ParameterSpec("integer"),
        "steps": ParameterSpec("integer"),
        "sensitivity": ParameterSpec("number", required=False),
    },
    trust_models=(TrustModel.CENTRAL,),
    neighbourings=(Neighbouring.REPLACE_ONE,),  # the dataset size is public: neighbours replace a record
)
class SampledWithoutReplacementGaussianProfile:
    """Profile of ``steps`` Gaussian releases on batches of m of n records sampled without replacement.

    Parameters: ``sigma`` (noise standard deviation), ``sample_size`` m, ``dataset_size`` n
    (1 <= m <= n), ``steps`` and ``sensitivity`` (replace-one ℓ2 sensitivity of the batch query,
    default 1).
    """

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.sigma = check.positive_finite("sigma", parameters.get("sigma"))
        self.dataset_size = check.positive_int("dataset_size", parameters.get("dataset_size"))
        self.sample_size = check.positive_int("sample_size", parameters.get("sample_size"))
        if self.sample_size > self.dataset_size:
            raise InvalidParameter(
                "sample_size", self.sample_size, f"1 <= sample_size <= dataset_size = {self.dataset_size}"
            )
        self.steps = check.positive_int("steps", parameters.get("steps"))
        if self.steps > MAX_STEPS:
            raise InvalidParameter("steps", self.steps, f"at most {MAX_STEPS:.0e} steps")
        self.sensitivity = check.positive_finite("sensitivity", parameters.get("sensitivity", 1.0))
        self.noise_multiplier = self.sigma / self.sensitivity
        self._rdp = RdpEventProfile(self.dp_event(), Neighbouring.REPLACE_ONE)

    @property
    def sampling_ratio(self) -> float:
        return self.sample_size / self.dataset_size

    def delta_for(self, epsilon: float) -> float:
        return self._rdp.delta_for(epsilon)

    def epsilon_for(self, delta: float) -> float:
        if delta <= 0.0:
            return math.inf
        return self._rdp.epsilon_for(delta)

    def reference_bounds(self) -> dict[str, Any]:
        """For comparison: the realised pair of the module docstring, a lower bound on the truth."""
        return {"realised neighbouring pair (optimistic PLD: below the truth)": self.realised_pair()}

    def realised_pair(self, interval: float = 1e-4) -> RealisedPairEstimate:
        """dp_accounting's *optimistic* PLD of the realised pair composed ``steps`` times.

        Losses are rounded down by at most ``interval`` per step, so the estimate's ε may sit up to
        ``steps * interval`` below the pair's true ε: it stays a lower bound, only a looser one.
        """
        return RealisedPairEstimate(self.noise_multiplier, self.sampling_ratio, self.steps, interval)

    def dp_event(self) -> Any:
        from dp_accounting import dp_event

        step = dp_event.SampledWithoutReplacementDpEvent(
            self.dataset_size, self.sample_size, dp_event.GaussianDpEvent(self.noise_multiplier)
        )
        return step if self.steps == 1 else dp_event.SelfComposedDpEvent(step, self.steps)


class RealisedPairEstimate:
    """δ(ε) of the pair (N(0, σ²), (1 − γ) N(0, σ²) + γ N(1, σ²)) composed ``steps`` times, from below.

    dp_accounting's optimistic discretisation (losses rounded down, the truncated tail dropped) is a
    lower bound in exact arithmetic; its FFT round-off is not bounded (about 1e-14 measured), so this
    is an estimate meant for pictures and for tests at δ far above it, not for certificates: below
    ``ROUND_OFF_FLOOR`` it reports 0.
    """

    def __init__(self, noise_multiplier: float, sampling_ratio: float, steps: int, interval: float) -> None:
        from dp_accounting.pld import privacy_loss_distribution as pld

        single = pld.from_gaussian_mechanism(
            noise_multiplier,
            sampling_prob=sampling_ratio,
            pessimistic_estimate=False,
            value_discretization_interval=interval,
            use_connect_dots=False,
        )
        self.distribution = single.self_compose(steps) if steps > 1 else single

    def delta_for(self, epsilon: float) -> float:
        """The estimate, or 0 (the trivial lower bound) where it falls below the FFT round-off."""
        value = float(self.distribution.get_delta_for_epsilon(epsilon))
        return value if value >= ROUND_OFF_FLOOR else 0.0

    def epsilon_for(self, delta: float) -> float:
        return float(self.distribution.get_epsilon_for_delta(delta))


def sampled_without_replacement_certificate(
    sigma: float,
    sample_size: int,
    dataset_size: int,
    steps: int,
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    sensitivity: float = 1.0,
    trust_model: TrustModel | str = TrustModel.CENTRAL,
) -> Certificate:
    """Certificate of ``steps`` Gaussian releases on batches sampled without replacement, at a point.

    Give ``delta`` (the least ε is computed), ``epsilon`` or both (see
    :func:`~dpcert.certificates.point_on_profile`).
    """
    parameters: dict[str, Any] = {
        "sigma": check.positive_finite("sigma", sigma),
        "sample_size": check.positive_int("sample_size", sample_size),
        "dataset_size": check.positive_int("dataset_size", dataset_size),
        "steps": check.positive_int("steps", steps),
        "sensitivity": check.positive_finite("sensitivity", sensitivity),
    }
    profile = SampledWithoutReplacementGaussianProfile(parameters)
    certificate = Certificate(
        "sampled-without-replacement-gaussian",
        point_on_profile(profile, epsilon, delta),
        trust_model,
        Neighbouring.REPLACE_ONE,
        parameters,
        SAMPLED_WITHOUT_REPLACEMENT_BASIS,
        (
            "dp_accounting has no privacy loss distribution for sampling without replacement; "
            "its RDP bound is used (valid, not tight)",
        ),
    )
    certificate.__dict__["profile"] = profile
    return certificate.verify()
