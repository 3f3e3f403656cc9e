"""The comparison curves drawn with a certificate's profile: which exist, and that they bound the truth."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event

from dpcert.accounting.composition import compose
from dpcert.interop.dp_accounting import certificate_from_dp_event
from dpcert.mechanisms.gaussian import classical_sigma, gaussian_certificate
from dpcert.mechanisms.tree_aggregation import tree_aggregation_certificate
from dpcert.viz.plots import plot_profile, reference_curves

RDP = "RDP conversion (Mironov 2017; dp_accounting)"
CLASSICAL = "classical bound (Dwork & Roth 2014, Thm A.1; ε < 1)"


def test_gaussian_references_are_valid_bounds_above_the_exact_profile():
    certificate = gaussian_certificate(3.0, delta=1e-6, compositions=4)
    curves = reference_curves(certificate)
    assert set(curves) == {RDP, CLASSICAL}
    for epsilon in (0.2, 0.5, 0.9, 2.0, 3.0):
        exact = certificate.delta_for(epsilon)
        assert curves[RDP].delta_for(epsilon) >= exact  # RDP's conversion is an upper bound
        classical = curves[CLASSICAL].delta_for(epsilon)
        if epsilon < 1:
            assert classical >= exact
            # it is the inverse of the classical calibration: sigma for (epsilon, classical delta)
            # with sensitivity sqrt(4) is the certificate's sigma (where the bound says anything)
            assert classical == 1.0 or classical_sigma(epsilon, classical, sensitivity=2.0) == pytest.approx(
                3.0, rel=1e-12
            )
        else:
            assert math.isnan(classical)  # the theorem says nothing at epsilon >= 1


def test_tree_certificates_draw_rdp_of_the_dominating_gaussian_and_the_classical_bound():
    certificate = tree_aggregation_certificate(8.0, 1000, delta=1e-5)
    curves = reference_curves(certificate)
    assert set(curves) == {RDP, CLASSICAL}
    assert curves[RDP].epsilon_for(1e-5) >= certificate.epsilon


def test_rdp_accounted_certificates_do_not_draw_themselves_twice():
    step = dp_event.SampledWithoutReplacementDpEvent(500, 100, dp_event.GaussianDpEvent(2.0))
    certificate = certificate_from_dp_event(dp_event.SelfComposedDpEvent(step, 50), delta=1e-5)
    curves = reference_curves(certificate)
    assert RDP not in curves and len(curves) == 1
    (lower,) = curves.values()
    for epsilon in (0.5, 2.0, 4.0):
        assert lower.delta_for(epsilon) <= certificate.delta_for(epsilon)
    by_rdp = compose([gaussian_certificate(20.0, delta=1e-8)] * 10, method="rdp", delta=1e-6)
    assert RDP not in reference_curves(by_rdp)


def test_profile_plot_with_references_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    certificate = tree_aggregation_certificate(8.0, [100, 50], delta=1e-5)
    figure = plot_profile(certificate, tmp_path / "tree.png")
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert labels[0] == "this certificate" and RDP in labels and CLASSICAL in labels
    assert f"ε = {certificate.epsilon:.4g}" in figure.axes[0].get_title()
    assert (tmp_path / "tree.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bare = plot_profile(certificate, references=False)
    assert len(bare.axes[0].get_lines()) == 2  # the profile and the claim only
    assert np.isfinite(certificate.epsilon)


def test_shuffle_certificates_draw_the_papers_closed_form_above_the_numeric_bound():
    from dpcert.mechanisms.shuffle.amplification import amplification_certificate
    from dpcert.theory.amplification import closed_form_epsilon

    certificate = amplification_certificate(2.0, 10_000, delta=1e-6)  # FMT Thm 3.2, evaluated exactly
    curves = reference_curves(certificate)
    (label,) = curves
    assert "closed form" in label and "Thm 3.1" in label
    closed = curves[label]
    # the closed form at delta' = 1e-6 gives epsilon~; its curve reaches delta <= 1e-6 there
    tilde = closed_form_epsilon(2.0, 10_000, 1e-6)
    assert closed.delta_for(tilde) <= 1e-6 * (1 + 1e-9)
    for epsilon in (0.2, tilde, 0.6):
        assert closed.delta_for(epsilon) >= certificate.delta_for(epsilon)  # the theorem it relaxes
    assert math.isnan(closed.delta_for(0.05))  # below its range the closed form says nothing
    by_closed_form = amplification_certificate(2.0, 10_000, delta=1e-6, method="closed-form")
    assert reference_curves(by_closed_form) == {}
