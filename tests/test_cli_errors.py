"""The exit-code contract of the ``dpcert`` console script (CLI.md), run as a user runs it.

0 success / "consistent"; 1 "violated" or a refused charge; 2 bad input or usage: one line on stderr
naming the parameter and what is allowed, before any work starts; 3 an internal error: one line, the
traceback only with ``--debug``.  Every test runs the installed console script in a subprocess; the
invocations below are a fixed list (no random fuzzing), most of them rejected at parse time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("dpcert")
pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="the dpcert console script is not installed")


def dpcert(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def assert_one_line(result: subprocess.CompletedProcess, code: int, *words: str) -> str:
    """Exit status ``code``, exactly one line on stderr containing ``words``, no traceback."""
    assert result.returncode == code, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "existing").write_text("a file, not a directory")
    (tmp_path / "latin1.json").write_bytes(b'{"caf\xe9": 1}')  # not UTF-8
    (tmp_path / "wrong_signature.py").write_text("def release(value):\n    return value\n")
    (tmp_path / "raises.py").write_text("def release(value, rng):\n    raise ValueError('nope')\n")
    return tmp_path


AUDIT = ["audit", "builtin:laplace", "--input", "0", "--neighbour", "1"]

# (argv, parameter named in the message); every one must exit 2 with one line on stderr.
BAD_INPUT = [
    (["calibrate", "gaussian", "--epsilon", "1e-308", "--delta", "1e-5"], "--epsilon"),
    (["calibrate", "gaussian", "--epsilon", "1", "--delta", "5e-324"], "--delta"),
    (["calibrate", "gaussian", "--epsilon", "-1", "--delta", "1e-5"], "--epsilon"),
    (["account", "gaussian", "--sigma", "1e-200", "--delta", "1e-5"], "--sigma"),
    (["calibrate", "laplace", "--epsilon", "1", "--sensitivity", "inf"], "--sensitivity"),
    (["calibrate", "shuffle", "--epsilon", "1000", "--delta", "1e-6", "--users", "100"], "--epsilon"),
    (["account", "shuffle", "--epsilon0", "1e-100", "--users", "100", "--delta", "1e-6"], "--epsilon0"),
    (["account", "shuffle", "--epsilon0", "1e-9", "--users", "100", "--delta", "1e-6"], "--epsilon0"),
    (["account", "shuffle", "--epsilon0", "1", "--users", "1e12", "--delta", "1e-6"], "--users"),
    (["account", "compose", "--certificate", "latin1.json", "--delta", "1e-5"], "--certificate"),
    (["account", "compose", "--certificate", "missing.json", "--delta", "1e-5"], "--certificate"),
    (["account", "compose", "--certificate", "latin1.json", "--count", "0", "--delta", "1e-5"], "--count"),
    ([*AUDIT, "--epsilon", "1", "--seed", "-1"], "--seed"),
    ([*AUDIT, "--epsilon", "1e-308"], "--epsilon"),
    ([*AUDIT, "--epsilon", "1", "--confidence", "1"], "--confidence"),
    ([*AUDIT, "--epsilon", "1", "--save", "nonexistent/dir/r.json"], "--save"),
    (["audit", "wrong_signature.py:release", "--input", "0", "--neighbour", "1", "--epsilon", "1"], "TARGET"),
    (["audit", "raises.py:release", "--input", "0", "--neighbour", "1", "--epsilon", "1"], "TARGET"),
    (["bandit", "run", "mab-se", "--horizon", "100", "--out", "existing"], "--out"),
    (["bandit", "run", "mab-se", "--horizon", "100", "--seed", "-1"], "--seed"),
    (["bandit", "run", "mab-se", "--horizon", "1e9", "--runs", "1000"], "--horizon"),
    (["bandit", "run", "mab-se", "--horizon", "100", "--option", "mean=[0.5,0.4]"], "'mean'"),
    (["bandit", "run", "robust-elimination", "--horizon", "100", "--option", "alpah=0.1"], "'alpah'"),
    (["bandit", "run", "dp-dpe", "--horizon", "100", "--option", "no_such_key=1"], "'no_such_key'"),
    (["bandit", "run", "mab-se", "--horizon", "100", "--ledger", "nonexistent/l.db"], "--ledger"),
    (["reproduce", "li-zhou-ji-2022-fig2b", "--out", "existing"], "--out"),
    (["demo", "--out", "existing"], "--out"),
    (["calibrate"], "calibrate"),
    (["no-such-command"], "no-such-command"),
    ([], "COMMAND"),
]


@pytest.mark.parametrize("argv, parameter", BAD_INPUT, ids=[" ".join(a)[:60] for a, _ in BAD_INPUT])
def test_bad_input_exits_2_with_one_line_naming_the_parameter(files, argv, parameter):
    result = dpcert(*argv, cwd=files)
    assert_one_line(result, 2, parameter)
    assert result.stdout == ""
    assert sorted(p.name for p in files.iterdir()) == sorted(
        ["existing", "latin1.json", "wrong_signature.py", "raises.py"]
    )  # nothing written: refused before any work


def test_resource_refusals_state_the_limit(files):
    line = assert_one_line(dpcert(*AUDIT, "--epsilon", "1", "--samples", "1e10", cwd=files), 2, "--samples")
    assert "samples <=" in line and "GiB" in line
    line = assert_one_line(dpcert("bandit", "run", "mab-se", "--runs", "1e9", cwd=files), 2, "--runs")
    assert "100000" in line


def test_a_file_target_is_imported_only_after_the_other_arguments_are_checked(tmp_path):
    (tmp_path / "marks.py").write_text(
        "from pathlib import Path\nPath('imported').write_text('yes')\n"
        "def release(value, rng):\n    return value + rng.laplace(0.0, 1.0)\n"
    )
    base = ["audit", "marks.py:release", "--input", "0", "--neighbour", "1"]
    for extra in (
        ["--epsilon", "0"],
        ["--epsilon", "1", "--samples", "1e10"],
        ["--epsilon", "1", "--seed", "-1"],
    ):
        assert_one_line(dpcert(*base, *extra, cwd=tmp_path), 2)
        assert not (tmp_path / "imported").exists()
    help_text = dpcert("audit", "--help").stdout
    assert "EXECUTES" in help_text and "trust" in help_text


def test_internal_error_exits_3_with_one_line_and_traceback_only_with_debug(tmp_path):
    # a sitecustomize module makes one library function fail as a bug would
    (tmp_path / "sitecustomize.py").write_text(
        "import dpcert.mechanisms.laplace as laplace\n"
        "def broken(*args, **kwargs):\n    raise ZeroDivisionError('injected failure')\n"
        "laplace.laplace_certificate = broken\n"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    result = dpcert("account", "laplace", "--scale", "1", env=env)
    line = assert_one_line(result, 3, "internal error", "ZeroDivisionError", "injected failure", "--debug")
    assert line.startswith("dpcert: internal error")
    debug = dpcert("--debug", "account", "laplace", "--scale", "1", env=env)
    assert debug.returncode == 3 and "Traceback" in debug.stderr and "injected failure" in debug.stderr
    debug = dpcert("account", "laplace", "--scale", "1", "--debug", env=env)  # after the command too
    assert debug.returncode == 3 and "Traceback" in debug.stderr


def test_success_violated_and_refused_statuses(tmp_path):
    assert dpcert("--version").returncode == 0
    assert dpcert("--help").returncode == 0
    consistent = dpcert(*AUDIT, "--epsilon", "1", "--samples", "4000", "--seed", "1", "--json")
    assert consistent.returncode == 0 and json.loads(consistent.stdout)["verdict"] == "consistent"
    # Laplace with scale 0.25 is 4-DP: the claim epsilon = 1 is violated (power: at n = 2e4 the
    # lower bound is near 3 in expectation, far above 1; the false-positive rate is at most 0.05)
    violated = dpcert(
        *AUDIT, "--epsilon", "1", "--scale", "0.25", "--samples", "2e4", "--seed", "2", "--json"
    )
    assert violated.returncode == 1 and json.loads(violated.stdout)["verdict"] == "violated"


def test_compose_count_equals_repeating_the_file(tmp_path):
    certificate = json.loads(
        dpcert("calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--json").stdout
    )
    (tmp_path / "g.json").write_text(json.dumps(certificate["certificate"]))
    counted = dpcert(
        "account",
        "compose",
        "--certificate",
        "g.json",
        "--count",
        "3",
        "--delta",
        "1e-5",
        "--json",
        cwd=tmp_path,
    )
    repeated = dpcert(
        "account",
        "compose",
        "--certificate",
        "g.json",
        "g.json",
        "g.json",
        "--delta",
        "1e-5",
        "--json",
        cwd=tmp_path,
    )
    assert counted.returncode == 0 and repeated.returncode == 0, counted.stderr
    a, b = json.loads(counted.stdout), json.loads(repeated.stdout)
    assert a["mechanisms"] == 3 and a["epsilon"] == b["epsilon"]
    # three Gaussians of sigma compose exactly to one of sigma / sqrt(3) (Dong, Roth & Su 2022, Cor. 3.3)
    sigma = certificate["sigma"]
    closed = dpcert(
        "account", "gaussian", "--sigma", repr(sigma), "--compositions", "3", "--delta", "1e-5", "--json"
    )
    assert abs(a["epsilon"] - json.loads(closed.stdout)["epsilon"]) <= 1e-6 * a["epsilon"]


def test_saved_report_names_target_claim_seed_samples_and_options(tmp_path):
    (tmp_path / "mine.py").write_text(
        "import numpy as np\n"
        "def follows(value, rng):\n    return value + rng.laplace(0.0, 1.0)\n"
        "def ignores(value, rng):\n    return value + np.random.default_rng().laplace(0.0, 1.0)\n"
    )
    args = ["--input", "0", "--neighbour", "1", "--epsilon", "1", "--samples", "3000", "--seed", "11"]
    result = dpcert("audit", "mine.py:follows", *args, "--save", "report.json", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    saved = json.loads((tmp_path / "report.json").read_text())
    run = saved["run"]
    assert run["target"] == "mine.py:follows" and run["seed"] == 11 and run["samples"] == 3000
    assert run["claim"] == {"epsilon": 1.0, "delta": 0.0} and run["confidence"] == 0.95
    assert run["input"] == "0" and run["neighbour"] == "1" and run["options"]["floating_point"] is False
    assert run["reproducible_from_seed"] is True and saved["samples"] == 3000
    again = dpcert("audit", "mine.py:follows", *args, "--json", cwd=tmp_path)
    assert (
        json.loads(again.stdout)["epsilon_lower_bound"] == saved["epsilon_lower_bound"]
    )  # re-run from the seed

    ignoring = dpcert("audit", "mine.py:ignores", *args, "--save", "other.json", cwd=tmp_path)
    assert ignoring.returncode == 0
    assert "warning" in ignoring.stderr and "not reproducible" in ignoring.stderr
    other = json.loads((tmp_path / "other.json").read_text())["run"]
    assert other["reproducible_from_seed"] is False and other["warnings"]


EDGES = [  # the ends of the allowed ranges run and give certificates that re-verify
    [
        "calibrate",
        "gaussian",
        "--epsilon",
        "1e-50",
        "--delta",
        "1e-300",
        "--sensitivity",
        "1e50",
        "--research",
    ],
    ["account", "gaussian", "--sigma", "1e-50", "--delta", "1e-300", "--sensitivity", "1e50"],
    ["account", "shuffle", "--epsilon0", "1e-6", "--users", "1000", "--delta", "1e-6"],
    ["account", "shuffle", "--epsilon0", "700", "--users", "100", "--delta", "1e-300"],
]


@pytest.mark.parametrize("argv", EDGES, ids=[" ".join(a)[:50] for a in EDGES])
def test_the_edges_of_the_allowed_ranges_run(argv):
    from dpcert import Certificate

    result = dpcert(*argv, "--json")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    payload = json.loads(result.stdout)
    certificate = Certificate.from_dict(payload["certificate"])  # re-derived from its parameters
    if argv[:2] == ["account", "shuffle"]:  # shuffling is post-processing: never worse than epsilon0
        assert 0.0 <= payload["epsilon"] <= float(argv[3]) and certificate.delta <= float(argv[-1])


def test_the_root_parser_has_every_group_and_the_top_level_commands():
    from dpcert.cli import build_parser
    from dpcert.cli._common import GROUPS

    top = {"audit", "demo", "reproduce", "keygen", "sign", "verify"}
    assert top | set(GROUPS) == set(build_parser()._subparsers._group_actions[0].choices)
