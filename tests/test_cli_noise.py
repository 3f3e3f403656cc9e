"""The console script: `dpcert calibrate|account gaussian|laplace`, exit codes and --json shapes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from dpcert import Certificate
from dpcert.cli import main


def run(*args: str) -> subprocess.CompletedProcess:
    """Run the installed console script (falls back to ``python -m dpcert.cli``)."""
    executable = shutil.which("dpcert")
    command = [executable] if executable else [sys.executable, "-m", "dpcert.cli"]
    return subprocess.run(command + list(args), capture_output=True, text=True, timeout=120)


def test_console_script_calibrates_gaussian():
    result = run("calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert abs(payload["sigma"] - 3.7306) < 5e-4
    certificate = Certificate.from_dict(payload["certificate"])
    assert certificate.guarantee.epsilon == 1.0 and certificate.guarantee.delta == 1e-5


def test_console_script_bad_input_exit_code_two():
    result = run("calibrate", "gaussian", "--epsilon", "-1", "--delta", "1e-5")
    assert result.returncode == 2
    assert "epsilon" in result.stderr and "allowed" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["calibrate", "gaussian", "--epsilon", "1", "--delta", "1"],
        ["calibrate", "gaussian", "--epsilon", "nan", "--delta", "1e-5"],
        ["calibrate", "gaussian", "--epsilon", "1"],
        ["calibrate", "gaussian", "--epsilon", "2", "--delta", "1e-5", "--method", "classical"],
        ["calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--compositions", "0"],
        ["calibrate", "laplace", "--epsilon", "0"],
        ["calibrate", "laplace", "--epsilon", "abc"],
        ["account", "gaussian", "--sigma", "0", "--delta", "1e-5"],
        ["account", "laplace", "--scale", "-1"],
        ["calibrate"],
        ["nonsense"],
    ],
)
def test_bad_inputs_exit_two(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        code = main(argv)
        raise SystemExit(code)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.strip()
    assert captured.out == ""


def test_json_shapes(capsys):
    assert main(["calibrate", "laplace", "--epsilon", "0.5", "--sensitivity", "2", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["scale"] == pytest.approx(4.0) and "certificate" in payload

    assert (
        main(["account", "gaussian", "--sigma", "10", "--delta", "1e-5", "--compositions", "100", "--json"])
        == 0
    )
    composed = json.loads(capsys.readouterr().out)
    assert main(["account", "gaussian", "--sigma", "1", "--delta", "1e-5", "--json"]) == 0
    single = json.loads(capsys.readouterr().out)
    assert composed["epsilon"] == pytest.approx(single["epsilon"], rel=1e-12)

    assert main(["account", "laplace", "--scale", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["epsilon"] == pytest.approx(0.5)


def test_human_table(capsys):
    assert main(["calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert "sigma" in out and "3.7306" in out
