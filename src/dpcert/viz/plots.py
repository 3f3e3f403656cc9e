"""Pictures of what a certificate says: the privacy profile δ(ε) on a log scale.

:func:`plot_profile` draws a certificate's profile (the least δ at each ε, from its parameters), the
claimed point, the reference curves the certificate supports (:func:`reference_curves`: the RDP
conversion of its dp_accounting event, the paper's bound), and optionally the profiles of other
certificates for comparison.  Needs matplotlib (the ``plot`` extra).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpcert.errors import DPCertError, InvalidParameter
from dpcert.profiles import ReferenceBounds
from dpcert.theory.rdp import rdp_profile_of

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


def reference_curves(certificate: Any) -> dict[str, Any]:
    """Other accountings of the same release, as ``{label: object with delta_for}``.

    * ``RDP conversion``: dp_accounting's RDP accountant on the certificate's event, when it supports
      the event under the certificate's relation and the certificate is not itself accounted by RDP;
    * what the certificate's profile offers in ``reference_bounds()``: e.g. the classical Gaussian
      bound (Dwork & Roth 2014, Thm A.1) of a Gaussian certificate, or a lower bound on the truth.
    """
    curves: dict[str, Any] = {}
    accounted_by_rdp = certificate.mechanism == "sampled-without-replacement-gaussian" or (
        certificate.mechanism == "composition" and certificate.parameters.get("method") == "rdp"
    )
    if not accounted_by_rdp:
        rdp = rdp_profile_of(certificate)
        if rdp is not None:
            curves["RDP conversion (Mironov 2017; dp_accounting)"] = rdp
    if isinstance(certificate.profile, ReferenceBounds):
        curves.update(certificate.profile.reference_bounds())
    return curves


def plot_profile(
    certificate: Any,
    path: str | Path | None = None,
    *,
    compare: Mapping[str, Any] | None = None,
    references: bool = True,
    epsilon_max: float | None = None,
    delta_floor: float = 1e-15,
    title: str | None = None,
    points: int = 200,
    reference_points: int = 50,
) -> Any:
    """Draw the privacy profile of ``certificate``; save to ``path`` if given; return the figure.

    Parameters
    ----------
    certificate
        The certificate whose profile is drawn (its claimed (ε, δ) is marked).
    compare
        ``{label: certificate}`` of other accountings of the same release, drawn dashed.
    references
        Also draw :func:`reference_curves` (the RDP conversion, the paper's bound) where they exist,
        on ``reference_points`` values of ε.
    epsilon_max
        Right end of the ε axis (default: 2.5 × the claimed ε, at least 1).
    delta_floor
        Bottom of the log δ axis.
    """
    plt = _pyplot()
    if points < 10 or reference_points < 10:
        raise InvalidParameter("points", min(points, reference_points), "at least 10")
    upper = epsilon_max if epsilon_max is not None else max(1.0, 2.5 * certificate.epsilon)
    if not (math.isfinite(upper) and upper > 0):
        raise InvalidParameter("epsilon_max", epsilon_max, "0 < epsilon_max < inf")
    epsilons = np.linspace(0.0, upper, points)
    figure, axis = plt.subplots(figsize=(7.6, 5.2), layout="constrained")
    axis.plot(
        epsilons, profile_curve(certificate, epsilons), color="tab:blue", lw=2.2, label="this certificate"
    )
    curves: list[tuple[str, Any, np.ndarray]] = [
        (label, other, epsilons) for label, other in (compare or {}).items()
    ]
    if references:
        coarse = np.linspace(0.0, upper, reference_points)
        curves += [(label, other, coarse) for label, other in reference_curves(certificate).items()]
    styles: Sequence[tuple[str, Any]] = _STYLES * (1 + len(curves) // len(_STYLES))
    for (label, other, grid), (colour, style) in zip(curves, styles, strict=False):
        axis.plot(grid, profile_curve(other, grid), color=colour, ls=style, lw=1.8, label=label)
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
    axis.annotate(
        f"  ε = {certificate.epsilon:.4g}",
        (certificate.epsilon, claimed_delta),
        xytext=(6, 6),
        textcoords="offset points",
        fontsize=9,
    )
    axis.set_yscale("log")
    axis.set_ylim(delta_floor, 1.5)
    axis.set_xlim(0.0, upper)
    axis.set_xlabel("ε")
    axis.set_ylabel("least δ such that the release is (ε, δ)-DP")
    axis.grid(True, which="major", alpha=0.3)
    axis.set_title(
        title
        or f"{certificate.mechanism}: certified (ε = {certificate.epsilon:.4g}, δ = {certificate.delta:.3g})"
        f"\n{certificate.trust_model.value}, {certificate.neighbouring.value}",
        fontsize=11,
    )
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=9, frameon=False, ncol=2)
    if path is not None:
        path = Path(path)
        if not path.parent.is_dir():
            raise InvalidParameter("path", str(path), "a file in an existing directory")
        figure.savefig(path, dpi=130)
        plt.close(figure)
    return figure


def plot_spent(epsilons: Sequence[float], budget: float | None, path: str | Path, *, title: str = "") -> Path:
    """Histogram of the spent ε over a ledger's users, with the budget marked; saved to ``path``."""
    plt = _pyplot()
    values = np.asarray(list(epsilons), dtype=float)
    if values.size == 0:
        raise InvalidParameter("ledger", "empty", "a ledger with at least one charged user")
    figure, axis = plt.subplots(figsize=(7.0, 4.0), layout="constrained")
    top = max(float(values.max()), budget or 0.0) * 1.08 or 1.0
    axis.hist(
        values,
        bins=min(60, max(10, int(np.sqrt(values.size)))),
        range=(0.0, top),
        color="tab:blue",
        alpha=0.85,
        label=f"{values.size} users",
    )
    if budget is not None:
        axis.axvline(budget, color="tab:red", lw=2, ls="--", label=f"budget ε = {budget:.4g}")
    axis.axvline(values.max(), color="black", lw=1.2, ls=":", label=f"worst user ε = {values.max():.4g}")
    axis.set_xlabel("spent ε (each user's charges composed)")
    axis.set_ylabel("users")
    axis.grid(True, alpha=0.3)
    axis.set_title(title or "Privacy spent per user", fontsize=11)
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    path = Path(path)
    figure.savefig(path, dpi=130)
    plt.close(figure)
    return path


def plot_audit(report: Any, first: np.ndarray, second: np.ndarray, path: str | Path) -> Path:
    """The two output distributions of an audit, its rejection set, and the bound against the claim.

    ``first`` and ``second`` are fresh draws on the two inputs (scalar or discrete outputs); the bound
    shown is the report's, computed from its own held-out counts.
    """
    plt = _pyplot()
    first, second = np.asarray(first), np.asarray(second)
    figure, (left, right) = plt.subplots(
        1, 2, figsize=(10.0, 4.0), layout="constrained", gridspec_kw={"width_ratios": [3, 1]}
    )
    inputs = report.inputs if report.inputs and report.inputs[0] is not None else ("input", "neighbour")
    labels = (f"M({_short(inputs[0])})", f"M({_short(inputs[1])})")
    if first.ndim == 1 and np.issubdtype(first.dtype, np.number):
        distinct = np.unique(np.concatenate([first, second]))
        if distinct.size <= 40:  # discrete outputs: bar charts of the two laws
            p = np.array([(first == v).mean() for v in distinct])
            q = np.array([(second == v).mean() for v in distinct])
            width = 0.4
            positions = np.arange(distinct.size)
            inside = report.rejection_set.contains(distinct.astype(first.dtype))
            left.bar(positions - width / 2, p, width, color="tab:blue", label=labels[0])
            left.bar(positions + width / 2, q, width, color="tab:orange", label=labels[1])
            for index, position in enumerate(positions[inside]):
                label = "rejection set S" if index == 0 else None
                left.axvspan(position - 0.5, position + 0.5, color="tab:green", alpha=0.15, label=label)
            left.set_xticks(positions, [f"{v:g}" for v in distinct], fontsize=8)
            left.set_ylabel("probability")
        else:
            low, high = np.quantile(np.concatenate([first, second]), [0.001, 0.999])
            bins = np.linspace(low, high, 80)
            left.hist(
                first, bins=bins, density=True, histtype="step", lw=1.8, color="tab:blue", label=labels[0]
            )
            left.hist(
                second, bins=bins, density=True, histtype="step", lw=1.8, color="tab:orange", label=labels[1]
            )
            grid = np.linspace(low, high, 400)
            inside = report.rejection_set.contains(grid)
            left.fill_between(
                grid,
                0,
                1,
                where=inside,
                color="tab:green",
                alpha=0.15,
                transform=left.get_xaxis_transform(),
                label="rejection set S",
            )
            left.set_ylabel("density")
        left.set_xlabel("mechanism output")
    else:
        left.text(
            0.5,
            0.5,
            "vector outputs: see the report's rejection set",
            ha="center",
            va="center",
            transform=left.transAxes,
        )
    left.set_title(f"outputs on the two inputs; S = {report.rejection_set.describe()}"[:90], fontsize=10)
    left.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3)
    colour = "tab:red" if report.verdict == "violated" else "tab:green"
    right.bar([0], [report.epsilon_lower_bound], color=colour, width=0.5, label="ε lower bound")
    right.axhline(
        report.claim.epsilon, color="black", ls="--", lw=1.5, label=f"claim ε = {report.claim.epsilon:g}"
    )
    right.set_xticks([])
    right.set_ylabel("ε")
    right.set_ylim(0, max(report.epsilon_lower_bound, report.claim.epsilon) * 1.3 + 1e-9)
    right.set_title(f"{report.verdict} (confidence {report.confidence:g})", fontsize=10)
    right.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.04))
    path = Path(path)
    figure.savefig(path, dpi=130)
    plt.close(figure)
    return path


def _short(value: Any) -> str:
    text = str(np.asarray(value).tolist()) if not isinstance(value, str) else value
    return text if len(text) <= 24 else text[:21] + "..."
