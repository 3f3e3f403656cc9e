"""Pictures of what a certificate says: the privacy profile δ(ε) on a log scale.

:func:`plot_profile` draws a certificate's profile (the least δ at each ε, from its parameters), the
claimed point, and optionally the profiles of other certificates for comparison (e.g. the same
mechanism accounted by RDP, or the paper's bound).  Needs matplotlib (the ``plot`` extra).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpcert.errors import DPCertError, InvalidParameter

# Styles cycled for compared curves: distinct colours and line styles that survive greyscale printing.
_STYLES = (("tab:orange", "--"), ("tab:green", ":"), ("tab:red", "-."), ("tab:purple", (0, (5, 1))))


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DPCertError('plots need matplotlib: pip install "dpcert[plot]"') from exc
    return plt


def profile_curve(certificate: Any, epsilons: np.ndarray) -> np.ndarray:
    """δ(ε) of ``certificate`` at each ε (values of 0 become NaN so that a log axis skips them)."""
    values = np.array([certificate.delta_for(float(e)) for e in epsilons], dtype=float)
    return np.where(values > 0.0, values, np.nan)


def plot_profile(
    certificate: Any,
    path: str | Path | None = None,
    *,
    compare: Mapping[str, Any] | None = None,
    epsilon_max: float | None = None,
    delta_floor: float = 1e-15,
    title: str | None = None,
    points: int = 200,
) -> Any:
    """Draw the privacy profile of ``certificate``; save to ``path`` if given; return the figure.

    Parameters
    ----------
    certificate
        The certificate whose profile is drawn (its claimed (ε, δ) is marked).
    compare
        ``{label: certificate}`` of other accountings of the same release, drawn dashed.
    epsilon_max
        Right end of the ε axis (default: 2.5 × the claimed ε, at least 1).
    delta_floor
        Bottom of the log δ axis.
    """
    plt = _pyplot()
    if points < 10:
        raise InvalidParameter("points", points, "at least 10")
    upper = epsilon_max if epsilon_max is not None else max(1.0, 2.5 * certificate.epsilon)
    if not (math.isfinite(upper) and upper > 0):
        raise InvalidParameter("epsilon_max", epsilon_max, "0 < epsilon_max < inf")
    epsilons = np.linspace(0.0, upper, points)
    figure, axis = plt.subplots(figsize=(7.0, 4.2), layout="constrained")
    axis.plot(
        epsilons, profile_curve(certificate, epsilons), color="tab:blue", lw=2.2, label="this certificate"
    )
    curves: Sequence[tuple[str, Any]] = list((compare or {}).items())
    for (label, other), (colour, style) in zip(
        curves, _STYLES * (1 + len(curves) // len(_STYLES)), strict=False
    ):
        axis.plot(epsilons, profile_curve(other, epsilons), color=colour, ls=style, lw=1.8, label=label)
    claimed_delta = max(certificate.delta, delta_floor)
    axis.plot(
        [certificate.epsilon],
        [claimed_delta],
        "o",
        color="black",
        ms=7,
        label=f"claim (ε = {certificate.epsilon:.4g}, δ = {certificate.delta:.3g})",
        zorder=5,
    )
    axis.set_yscale("log")
    axis.set_ylim(delta_floor, 1.5)
    axis.set_xlim(0.0, upper)
    axis.set_xlabel("ε")
    axis.set_ylabel("least δ such that the release is (ε, δ)-DP")
    axis.grid(True, which="major", alpha=0.3)
    axis.set_title(
        title
        or f"{certificate.mechanism}: privacy profile ({certificate.trust_model.value}, "
        f"{certificate.neighbouring.value})",
        fontsize=11,
    )
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    if path is not None:
        path = Path(path)
        if not path.parent.is_dir():
            raise InvalidParameter("path", str(path), "a file in an existing directory")
        figure.savefig(path, dpi=130)
        plt.close(figure)
    return figure
