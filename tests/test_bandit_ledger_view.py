"""``dpcert bandit run`` and ``dpcert ledger show`` state the worst user's ε at the same δ."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("dpcert")


def test_the_run_names_the_ledger_view_that_states_its_epsilon(tmp_path):
    # an M2 run: each client's epsilon is split over the batches she reports in, composed by the ledger
    if not SCRIPT.exists():
        pytest.skip("the dpcert console script is not installed")
    ran = subprocess.run(
        [str(SCRIPT), "bandit", "run", "robust-elimination", "--privacy", "local", "--epsilon", "1",
         "--delta", "1e-5", "--horizon", "2000", "--option", "model=M2", "--ledger", "l.db"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    epsilon = float(re.search(r"^max user epsilon\s+(\S+)$", ran.stdout, re.M).group(1))
    assert re.search(r"^at delta\s+1e-05$", ran.stdout, re.M)
    view = re.search(r"^same view\s+(.+)$", ran.stdout, re.M).group(1).split()
    assert view == ["dpcert", "ledger", "show", "--delta", "1e-05", "l.db"]
    shown = subprocess.run([str(SCRIPT), *view[1:], "--json"], capture_output=True, text=True, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert summary["max_user_delta"] == pytest.approx(1e-5, rel=1e-12)
    # the run prints 6 significant digits
    assert summary["max_user_epsilon"] == pytest.approx(epsilon, rel=1e-5)
    # without --delta, ledger show states the charges' summed delta (0 here: pure-DP Laplace reports)
    default = subprocess.run(
        [str(SCRIPT), "ledger", "show", "--json", "l.db"], capture_output=True, text=True, cwd=tmp_path
    )
    assert json.loads(default.stdout)["max_user_epsilon"] >= summary["max_user_epsilon"]
