"""``dpcert audit``: the CLI.md contract (keys, exit codes, targets)."""

from __future__ import annotations

import json

import pytest

from dpcert.audits import AuditReport
from dpcert.cli import main

REQUIRED_KEYS = {"verdict", "epsilon_lower_bound", "confidence", "samples", "method"}


def run_json(capsys, argv):
    status = main(argv + ["--json"])
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert len(lines) == 1  # exactly one JSON object on stdout
    return status, json.loads(lines[0])


def test_correct_builtin_laplace_is_consistent(capsys):
    status, payload = run_json(
        capsys,
        ["audit", "builtin:laplace", "--input", "0", "--neighbour", "1", "--epsilon", "1", "--seed", "1"],
    )
    assert status == 0 and payload["verdict"] == "consistent"
    assert REQUIRED_KEYS <= payload.keys()
    assert payload["samples"] == 100_000 and payload["confidence"] == 0.95


def test_broken_builtin_laplace_exits_one(capsys, tmp_path):
    saved = tmp_path / "report.json"
    argv = ["audit", "builtin:laplace", "--input", "0", "--neighbour", "1", "--epsilon", "1"]
    argv += ["--scale", "0.5", "--samples", "1e4", "--seed", "2", "--save", str(saved)]
    status, payload = run_json(capsys, argv)
    assert status == 1 and payload["verdict"] == "violated"
    report = AuditReport.from_json(saved.read_text())  # re-checked from its counts
    assert report.epsilon_lower_bound == payload["epsilon_lower_bound"]


def test_randomized_response_with_wrong_flip_probability(capsys):
    argv = ["audit", "builtin:randomized-response", "--input", "0", "--neighbour", "1", "--epsilon", "1"]
    status, payload = run_json(
        capsys, argv + ["--flip-probability", "0.1", "--samples", "20000", "--seed", "3"]
    )
    assert status == 1 and payload["rejection_set"]["kind"] == "cells"


def test_gaussian_defaults_to_calibrated_noise(capsys):
    argv = [
        "audit",
        "builtin:gaussian",
        "--input",
        "0",
        "--neighbour",
        "1",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
    ]
    status, payload = run_json(capsys, argv + ["--samples", "20000", "--seed", "4"])
    assert status == 0 and payload["parameters"]["sigma"] > 3.7


def test_file_function_target_with_vector_inputs(capsys, tmp_path):
    module = tmp_path / "my_mechanism.py"
    module.write_text(
        "import numpy as np\n"
        "def release(value, rng):\n"
        "    return np.asarray(value) + rng.laplace(0.0, 0.5, 2)\n"
    )
    argv = ["audit", f"{module}:release", "--input", "[0, 0]", "--neighbour", "[1, 0]", "--epsilon", "1"]
    status, payload = run_json(capsys, argv + ["--samples", "5000", "--seed", "5"])
    assert status == 1 and payload["inputs"] == [[0.0, 0.0], [1.0, 0.0]]


def test_floating_point_flag_flags_the_textbook_sampler(capsys):
    argv = [
        "audit",
        "builtin:laplace",
        "--input",
        "0",
        "--neighbour",
        "1",
        "--epsilon",
        "1",
        "--floating-point",
    ]
    status, payload = run_json(capsys, argv + ["--samples", "20000", "--seed", "6"])
    assert status == 1 and payload["floating_point"]["only_on_a"]


def test_table_output(capsys):
    status = main(
        ["audit", "builtin:laplace", "--input", "0", "--neighbour", "1", "--epsilon", "1", "--seed", "7"]
    )
    out = capsys.readouterr().out
    assert status == 0 and "verdict" in out and "consistent" in out


@pytest.mark.parametrize(
    "argv, parameter",
    [
        (["builtin:laplace", "--input", "0", "--neighbour", "1", "--epsilon", "-1"], "epsilon"),
        (["builtin:laplace", "--input", "zero", "--neighbour", "1", "--epsilon", "1"], "--input"),
        (["builtin:nothing", "--input", "0", "--neighbour", "1", "--epsilon", "1"], "TARGET"),
        (["missing.py:f", "--input", "0", "--neighbour", "1", "--epsilon", "1"], "TARGET"),
        (["builtin:randomized-response", "--input", "2", "--neighbour", "1", "--epsilon", "1"], "--input"),
        (["builtin:laplace", "--input", "0", "--neighbour", "1", "--epsilon", "1", "--delta", "2"], "delta"),
        (
            ["builtin:laplace", "--input", "0", "--neighbour", "1", "--epsilon", "1", "--samples", "1"],
            "samples",
        ),
    ],
)
def test_bad_input_exits_two_naming_the_parameter(capsys, argv, parameter):
    assert main(["audit", *argv]) == 2
    assert parameter in capsys.readouterr().err
