"""Certificates of Opacus training runs.

:func:`certificate_from_opacus_history` composes an Opacus accountant's ``history`` of
``(noise_multiplier, sample_rate, steps)`` entries: Poisson-subsampled Gaussian steps under
add/remove, noise ``noise_multiplier × max_grad_norm`` for gradients clipped to ``max_grad_norm``
(Opacus's meaning).  No torch or Opacus import is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dpcert import _validation as check
from dpcert.accounting.composition import compose
from dpcert.certificates import Certificate, TrustModel
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.subsampled_gaussian import poisson_sampled_gaussian_certificate


def certificate_from_opacus_history(
    history: Iterable[Any], *, delta: float, trust_model: TrustModel | str = TrustModel.CENTRAL
) -> Certificate:
    """One certificate of the DP-SGD run an Opacus accountant recorded.

    Parameters
    ----------
    history
        Opacus 1.x ``RDPAccountant.history`` / ``PRVAccountant.history``: ``(noise_multiplier,
        sample_rate, steps)`` entries, each ``steps`` Poisson-subsampled Gaussian steps with sampling
        probability ``sample_rate`` and noise ``noise_multiplier × max_grad_norm`` on gradients
        clipped to ``max_grad_norm`` (sensitivity ``max_grad_norm``, add/remove: Opacus's meaning).
    delta
        The δ of the claimed point (``0 < delta < 1``).
    trust_model
        The trust model of the claim (central for DP-SGD on a trusted server).

    Notes
    -----
    Entries with the same noise multiplier and sample rate are merged (their steps added); each
    distinct one is :func:`~dpcert.mechanisms.subsampled_gaussian.poisson_sampled_gaussian_certificate`
    and several are composed by :func:`~dpcert.accounting.composition.compose`.  No torch or Opacus
    import is needed.
    """
    delta = check.positive_delta(delta)
    trust_model = TrustModel(trust_model)
    if isinstance(history, (str, bytes)) or not isinstance(history, Iterable):
        raise InvalidParameter(
            "history", type(history).__name__, "a list of (noise_multiplier, sample_rate, steps)"
        )
    steps_of: dict[tuple[float, float], int] = {}
    for index, entry in enumerate(history):
        name = f"history[{index}]"
        try:
            if isinstance(entry, (str, bytes, Mapping)) or len(entry) != 3:
                raise TypeError
            values = (entry[0], entry[1], entry[2])
        except (TypeError, IndexError, KeyError):
            raise InvalidParameter(name, entry, "a (noise_multiplier, sample_rate, steps) triple") from None
        sigma = check.positive_finite(f"{name}.noise_multiplier", values[0])
        rate = check.probability(f"{name}.sample_rate", values[1], open_low=True)
        steps = check.positive_int(f"{name}.steps", values[2])
        steps_of[(sigma, rate)] = steps_of.get((sigma, rate), 0) + steps
    if not steps_of:
        raise InvalidParameter("history", [], "at least one (noise_multiplier, sample_rate, steps) entry")
    if len(steps_of) == 1:
        (((sigma, rate), steps),) = steps_of.items()
        return poisson_sampled_gaussian_certificate(sigma, rate, steps, delta=delta, trust_model=trust_model)
    share = delta / (2 * len(steps_of))
    parts = [
        poisson_sampled_gaussian_certificate(sigma, rate, steps, delta=share, trust_model=trust_model)
        for (sigma, rate), steps in steps_of.items()
    ]
    return compose(parts, delta=delta)


__all__ = ["certificate_from_opacus_history"]
