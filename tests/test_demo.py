"""`dpcert demo` runs end to end and its files hold re-verifiable certificates."""

from __future__ import annotations

import json

from dpcert import Certificate
from dpcert.cli import main


def test_demo_runs_and_writes_verifiable_certificate(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["steps"], "the demo ran no step"
    certificate = Certificate.from_json((tmp_path / "gaussian_certificate.json").read_text())
    assert certificate.guarantee.epsilon == 1.0
    written = json.loads((tmp_path / "provenance.json").read_text())
    record = written["provenance"]
    assert record == payload["provenance"] and record["format"] == "dpcert.reproductions.demo/1"
    assert record["command"] == {"argv": ["dpcert", "demo", "--out", str(tmp_path), "--json"]}
    assert record["seeds"]["seed"] == 2026 and "gaussian_certificate.json" in written["files"]
    bandit = json.loads((tmp_path / "bandit" / "dp-dpe-central.json").read_text())["provenance"]
    assert bandit["format"] == "dpcert.bandit-run/1" and bandit["command"] == record["command"]
