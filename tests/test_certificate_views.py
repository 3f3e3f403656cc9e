"""What people see of a certificate: the profile plot is written and notebook representations exist."""

from __future__ import annotations

import pytest

from dpcert.accounting.composition import compose
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.viz.plots import plot_profile, profile_curve


def test_profile_plot_is_written_with_comparisons(tmp_path):
    pytest.importorskip("matplotlib")
    certificate = gaussian_certificate(3.0, delta=1e-5, compositions=10)
    rdp = compose([gaussian_certificate(3.0, delta=1e-6)] * 10, method="rdp", delta=1e-5)
    path = tmp_path / "profile.png"
    plot_profile(certificate, path, compare={"RDP": rdp})
    assert path.stat().st_size > 10_000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InvalidParameter):
        plot_profile(certificate, tmp_path / "missing" / "p.png")


def test_profile_curve_is_the_profile_with_zeros_left_out():
    import numpy as np

    from dpcert.mechanisms.laplace import laplace_certificate

    certificate = laplace_certificate(1.0)
    curve = profile_curve(certificate, np.array([0.0, 0.5, 1.0, 2.0]))
    assert curve[0] == certificate.delta_for(0.0) and curve[1] == certificate.delta_for(0.5)
    assert np.isnan(curve[2]) and np.isnan(curve[3])  # delta = 0 from epsilon0 = 1 on: off a log axis


def test_notebook_representations_state_the_guarantee_and_authenticity():
    certificate = gaussian_certificate(3.0, delta=1e-5)
    markdown, html = certificate._repr_markdown_(), certificate._repr_html_()
    for text in (markdown, html):
        assert f"{certificate.epsilon:.6g}" in text and "unsigned" in text and "Balle" in text
    assert "<table>" in html and "| guarantee |" in markdown


def _dpcert(*args, cwd):
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    environment = dict(os.environ)
    environment["PATH"] = str(Path(sys.executable).parent) + os.pathsep + environment.get("PATH", "")
    if shutil.which("dpcert", path=environment["PATH"]) is None:
        pytest.skip("the dpcert console script is not installed beside this interpreter")
    return subprocess.run(
        ["dpcert", *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


def _is_png(path) -> bool:
    return path.exists() and path.stat().st_size > 5_000 and path.read_bytes()[:4] == b"\x89PNG"


def test_console_plots_are_written(tmp_path):
    pytest.importorskip("matplotlib")
    import numpy as np

    from dpcert import Guarantee
    from dpcert.ledger.api import Ledger
    from dpcert.mechanisms.laplace import laplace_certificate

    assert (
        _dpcert(
            "account", "gaussian", "--sigma", "3", "--delta", "1e-6", "--plot", "g/profile.png", cwd=tmp_path
        ).returncode
        == 0
    )
    assert _is_png(tmp_path / "g" / "profile.png")
    audit = _dpcert(
        "audit",
        "builtin:laplace",
        "--input",
        "0",
        "--neighbour",
        "1",
        "--epsilon",
        "1",
        "--samples",
        "2e4",
        "--seed",
        "1",
        "--plot",
        "audit.png",
        "--json",
        cwd=tmp_path,
    )
    assert audit.returncode in (0, 1) and _is_png(tmp_path / "audit.png")
    with Ledger(tmp_path / "ledger.db") as ledger:
        ledger.set_budget(None, Guarantee(2.0, 0.0))
        ledger.charge(np.arange(50), laplace_certificate(1.0), run_id="a")
        ledger.charge(np.arange(20), laplace_certificate(2.0), run_id="b")
    shown = _dpcert("ledger", "show", "ledger.db", "--plot", "spent.png", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert _is_png(tmp_path / "spent.png")


def test_audit_report_and_ledger_summary_render_in_notebooks(tmp_path):
    import numpy as np

    from dpcert import Guarantee
    from dpcert.audits import audit
    from dpcert.ledger.api import Ledger
    from dpcert.mechanisms.laplace import laplace_certificate

    report = audit(lambda v, rng, size: v + rng.laplace(0, 1.0, size), 0.0, 1.0, 1.0, samples=20_000, seed=3)
    for text in (report._repr_markdown_(), report._repr_html_()):
        assert report.verdict in text and f"{report.epsilon_lower_bound:.4f}" in text
    with Ledger(tmp_path / "l.db") as ledger:
        ledger.set_budget(None, Guarantee(3.0, 0.0))
        ledger.charge(np.arange(5), laplace_certificate(1.0), run_id="a")
        summary = ledger.spent_summary()
    for text in (summary._repr_markdown_(), summary._repr_html_()):
        assert "5" in text and f"{summary.max_epsilon:.6g}" in text
