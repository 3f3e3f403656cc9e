"""A bandit algorithm defined in another installed package runs through ``dpcert bandit run``.

The package under ``tests/plugin_example`` declares ``example-rr-etc`` (explore-then-commit with binary
randomized-response rewards) in the ``dpcert.algorithms`` entry-point group.  Installed into a temporary
directory, it is listed by ``dpcert bandit list``, run with ``--ledger`` in a fresh process, and its
users' charges are shown and verified by ``dpcert ledger``.  A package whose entry point is broken, or
whose algorithm returns an unverifiable run, is refused with one line and exit 3.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import plugin_environment, run_command

from dpcert.bandits.registry import ALGORITHM_ENTRY_POINTS

SCRIPT = Path(sys.executable).with_name("dpcert")


@pytest.fixture(scope="module")
def installed(plugin_example_install: Path) -> Path:
    if not SCRIPT.exists():
        pytest.skip("the dpcert console script is not installed")
    return plugin_example_install


def test_a_plugin_algorithm_is_listed_run_charged_and_verified(installed, tmp_path):
    env = plugin_environment(installed)
    listed = run_command([str(SCRIPT), "bandit", "list", "--json"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    names = {entry["name"]: entry for entry in json.loads(listed.stdout)["algorithms"]}
    assert names["example-rr-etc"]["privacy"] == ["local"]
    assert "sdp-ae" in names  # dpcert's own algorithms are still there

    horizon, runs, explore, epsilon = 300, 2, 30, 1.0
    ran = run_command(
        [str(SCRIPT), "bandit", "run", "example-rr-etc", "--privacy", "local", "--epsilon", str(epsilon),
         "--horizon", str(horizon), "--runs", str(runs), "--option", f"explore={explore}",
         "--ledger", "ledger.db", "--json"],
        env, tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    # each exploring user sent one report of binary randomized response: (epsilon0, 0) with
    # epsilon0 = ln(p / (1 - p)) <= epsilon (Warner 1965), charged once
    assert result["max_user_epsilon"] <= epsilon
    assert result["max_user_epsilon"] == pytest.approx(epsilon, rel=1e-9)
    assert result["certificate"]["mechanism"] == "example-k-rr"

    shown = run_command([str(SCRIPT), "ledger", "show", "--json", "--delta", "0", "ledger.db"], env, tmp_path)
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert summary["charges"] == runs * explore  # one charge per exploring user, none for the others
    assert summary["max_user_epsilon"] == pytest.approx(result["max_user_epsilon"], rel=1e-12)
    verified = run_command([str(SCRIPT), "ledger", "verify", "ledger.db"], env, tmp_path)
    assert verified.returncode == 0, verified.stderr

    # without the package the algorithm is unknown: one line, exit 2, naming the parameter
    args = [str(SCRIPT), "bandit", "run", "example-rr-etc", "--privacy", "local", "--epsilon", "1"]
    missing = run_command(args, plugin_environment(), tmp_path)
    assert missing.returncode == 2 and len(missing.stderr.splitlines()) == 1, missing.stderr
    assert "algorithm" in missing.stderr and "example-rr-etc" in missing.stderr


def _fake_distribution(where: Path, entry_points: str, module: str, code: str) -> None:
    dist = where / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{ALGORITHM_ENTRY_POINTS}]\n{entry_points}\n")
    (where / f"{module}.py").write_text(textwrap.dedent(code))


BROKEN_RESULT = """
    import numpy as np
    from dpcert.bandits.registry import AlgorithmSpec, BanditRun
    from dpcert.mechanisms.gaussian import gaussian_certificate

    def run(config):
        # claims a worst user's epsilon of 0.01 with a certificate stating about 4.8
        certificate = gaussian_certificate(1.0, delta=1e-5)
        return BanditRun("liar", np.zeros((config.runs, config.horizon)), certificate, 1, 0.01, 0.0,
                         privacy="central")

    SPEC = AlgorithmSpec("liar", "understates its privacy loss", ("central",), run)
    WRONG = AlgorithmSpec("other-name", "named differently", ("central",), run)
"""


@pytest.mark.parametrize(
    "entry, expected",
    [
        ("liar = liar_pkg:SPEC", "reports a worst user's epsilon of 0.01, below its certificate's"),
        ("liar = liar_pkg:WRONG", "must name an AlgorithmSpec 'liar'"),
        ("liar = liar_pkg:MISSING", "failed to load: AttributeError"),
    ],
)
def test_a_plugin_that_breaks_its_contract_is_refused_in_one_line(tmp_path, entry, expected):
    if not SCRIPT.exists():
        pytest.skip("the dpcert console script is not installed")
    _fake_distribution(tmp_path, entry, "liar_pkg", BROKEN_RESULT)
    done = run_command(
        [str(SCRIPT), "bandit", "run", "liar", "--privacy", "central", "--epsilon", "1", "--delta", "1e-5",
         "--horizon", "10"],
        plugin_environment(tmp_path), tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert expected in lines[0], lines[0]


def test_a_plugin_cannot_take_a_builtin_name(tmp_path):
    # a distribution declaring dpcert's own "sdp-ae": dpcert's algorithm runs, the package is not imported
    _fake_distribution(
        tmp_path, "sdp-ae = shadow_algorithm:SPEC", "shadow_algorithm", "raise RuntimeError('imported')"
    )
    check = textwrap.dedent(
        """
        import sys
        from dpcert.bandits import registry
        spec = registry.algorithm("sdp-ae")
        print(spec.run.__module__, "shadow_algorithm" in sys.modules, len(registry.algorithms()) > 5)
        """
    )
    done = run_command([sys.executable, "-c", check], plugin_environment(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["dpcert.bandits.runner", "False", "True"]
