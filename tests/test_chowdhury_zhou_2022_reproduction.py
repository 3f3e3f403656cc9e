"""``dpcert reproduce chowdhury-zhou-2022-fig1|2`` through the console script: figures per (ε, calibration)
panel, the table of final regret, every run's curves, and the claims table (Chowdhury & Zhou 2022)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from dpcert.cli import main  # noqa: E402


def test_figure1_writes_one_figure_per_panel_the_tables_and_every_run(tmp_path, capsys):
    out = tmp_path / "fig1"
    assert (
        main(["reproduce", "chowdhury-zhou-2022-fig1", "--runs", "2", "--horizon", "120", "--out", str(out)])
        == 0
    )
    captured = capsys.readouterr()
    summary = json.loads((out / "chowdhury-zhou-2022-fig1.json").read_text())
    # six panels (three target epsilons x two calibrations), five curves each, one PNG per panel
    assert len(summary["figures"]) == 6 and all(Path(path).exists() for path in summary["figures"])
    assert {p.rsplit("_", 3)[-3] for p in summary["figures"]} >= {"0.2", "1", "10"}
    # progress on stderr names the panel and the curves being run
    assert "target ε = 10, paper calibration: running linucb-sdp-amp, linucb-sdp-vec" in captured.err
    # the printed table is the file's table; each row's mean and s.d. are those of the saved runs
    table = (out / "chowdhury-zhou-2022-fig1.md").read_text()
    assert summary["table"] in captured.out and summary["table"] in table
    curves = np.load(out / "chowdhury-zhou-2022-fig1_curves.npz")
    labels, panels = list(curves["labels"]), list(curves["panels"])
    assert len(labels) == 30 and curves["0_regret"].shape == (2, curves["0_rounds"].size)
    assert curves["0_rounds"][0] == 1 and curves["0_rounds"][-1] == 120
    rows = [line.strip("|").split("|") for line in summary["table"].splitlines()[2:]]
    for index, row in enumerate(rows):
        cells = [cell.strip() for cell in row]
        assert (cells[0], cells[1]) == (panels[index], labels[index])
        finals = curves[f"{index}_regret"][:, -1]
        assert float(cells[4].replace(",", "")) == pytest.approx(finals.mean(), abs=0.051)
        assert float(cells[5].replace(",", "")) == pytest.approx(statistics.stdev(finals), abs=0.051)
    # the legend states what each curve certifies: the paper's P_Amp noise at target 10 certifies 11.68
    row = next(r for r in rows if "target ε = 10, paper" in r[0] and "SDP-Amp" in r[1])
    assert row[2].strip() == "(11.68, 0.1)"
    # the claims table sits next to the outputs, with the command that regenerates it
    claims = (out / "chowdhury-zhou-2022-fig1_claims.md").read_text()
    assert "| claim | holds? | numbers | command |" in claims
    assert "`dpcert reproduce chowdhury-zhou-2022-fig1 --runs 2 --horizon 120`" in claims

    # the verdicts use paired differences over the same instances, recomputed here from the saved runs
    def finals(panel, label):
        index = next(i for i in range(30) if panels[i] == panel and labels[i].startswith(label + " "))
        return curves[f"{index}_regret"][:, -1]

    panel = "d = 5, target ε = 1, tight calibration"
    difference = finals(panel, "LinUCB-SDP-Vec") - finals(panel, "LinUCB-LDP")
    stderr = statistics.stdev(difference) / np.sqrt(difference.size)
    vec_line = next(
        line for line in claims.splitlines() if line.startswith(f"| {panel}: LinUCB-SDP-Vec lies")
    )
    assert f"LinUCB-SDP-Vec − LDP = {difference.mean():+,.0f} ± {stderr:,.0f}" in vec_line
    jdp_line = next(
        line for line in claims.splitlines() if "target ε = 1, paper calibration: LinUCB-SDP-Amp lies" in line
    )
    upper = finals("d = 5, target ε = 1, paper calibration", "LinUCB-JDP") - finals(
        "d = 5, target ε = 1, paper calibration", "LinUCB-SDP-Amp"
    )
    upper_se = statistics.stdev(upper) / np.sqrt(upper.size)
    if upper.mean() > 2 * upper_se:  # JDP above SDP-Amp beyond 2 s.e.: the claim cannot hold
        assert "| no |" in jdp_line
    amp_line = next(
        line for line in claims.splitlines() if "target ε = 1, tight" in line and "SDP-Amp ≈ LDP" in line
    )
    sigmas = summary["panels"][1]["amplification"]["tight"]
    assert sigmas["sigma_amp"] == sigmas["sigma_ldp"] < sigmas["sigma_amplification_needs"]
    assert "| yes |" in amp_line and f"{sigmas['sigma_amplification_needs']:.3g}" in amp_line
    assert "ε = 11.68" in next(
        line for line in claims.splitlines() if "target ε = 10, paper" in line and "meets" in line
    )


def test_reproduce_horizon_is_refused_for_other_reproductions(capsys):
    assert main(["reproduce", "li-zhou-ji-2022-fig2a", "--horizon", "100"]) == 2
    assert "--horizon" in capsys.readouterr().err
    assert main(["reproduce", "chowdhury-zhou-2022-fig2", "--horizon", "20001"]) == 2
