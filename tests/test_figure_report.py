"""The report every reproduction writes: table numbers, per-run curves and figures split into panels."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from dpcert.reproductions.report import MAX_CURVES, Curve, markdown_table, write_report  # noqa: E402


def _curves(count: int, runs: int = 5, panel: str = "eps = 1") -> list[Curve]:
    rng = np.random.default_rng(0)
    rounds = np.array([1, 10, 100, 1000])
    return [
        Curve(f"algo {i}", rounds, np.cumsum(rng.uniform(0, 1, (runs, 4)), axis=1), (1.0 + i, 1e-5), panel)
        for i in range(count)
    ]


def test_table_states_mean_sd_and_se_of_the_final_regret():
    curve = _curves(1, runs=7)[0]
    finals = curve.regret[:, -1].tolist()
    row = markdown_table([curve]).splitlines()[2]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "algo 0" and cells[2] == "(1, 1e-05)" and cells[3] == "7"
    sd = statistics.stdev(finals)
    assert float(cells[4].replace(",", "")) == pytest.approx(statistics.mean(finals), abs=0.051)
    assert float(cells[5].replace(",", "")) == pytest.approx(sd, abs=0.051)
    assert float(cells[6].replace(",", "")) == pytest.approx(sd / 7**0.5, abs=0.051)
    assert "none (non-private)" in markdown_table([Curve("plain", [1.0], [[2.0]])])


def test_report_writes_table_curves_and_one_figure_per_panel_of_at_most_eight_curves(tmp_path):
    curves = _curves(MAX_CURVES + 2) + _curves(2, panel="eps = 10")
    report = write_report(curves, tmp_path, "figure", "Test figure")
    assert len(report["figures"]) == 3  # 10 curves -> 2 panels of <= 8, plus the second setting
    for path in report["figures"]:
        assert path.endswith(".png") and (tmp_path / path.split("/")[-1]).stat().st_size > 1000
    assert (tmp_path / "figure.md").read_text().count("| algo") == len(curves)
    saved = np.load(report["curves_file"])
    assert list(saved["labels"]) == [c.label for c in curves]
    np.testing.assert_array_equal(saved["11_regret"], curves[11].regret)
    with pytest.raises(ValueError, match="shape"):
        Curve("bad", [1, 2], np.zeros((3, 5)))
