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
