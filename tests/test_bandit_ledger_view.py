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


@pytest.mark.parametrize("scope", ["client", "report"])
def test_the_two_meanings_of_epsilon_for_m2_clients_are_explicit(tmp_path, scope):
    if not SCRIPT.exists():
        pytest.skip("the dpcert console script is not installed")
    ran = subprocess.run(
        [str(SCRIPT), "bandit", "run", "robust-elimination", "--privacy", "local", "--epsilon", "1",
         "--horizon", "2000", "--option", "model=M2", "--option", f"epsilon_per={scope}", "--json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["epsilon_per"] == scope
    # pure-DP Laplace reports compose by summation (Dwork & Roth 2014, Thm 3.16): a client's total is
    # her per-report epsilon times her reports, and the run's certificate states the worst client's
    assert out["max_user_epsilon"] == pytest.approx(out["client_level_epsilon"], rel=1e-12)
    reports = out["client_level_epsilon"] / out["epsilon_per_report"]
    assert reports == pytest.approx(round(reports)) and reports > 1
    if scope == "client":  # --epsilon is the client's total: split over the planned reports
        assert out["target_met"] and out["max_user_epsilon"] <= 1.0
    else:  # --epsilon is each report's: the client-level total is larger, and the run says so
        assert out["epsilon_per_report"] == 1.0 and not out["target_met"]
        assert "does not meet the requested epsilon=1" in ran.stderr


def test_an_unknown_epsilon_scope_is_refused_naming_it(tmp_path):
    if not SCRIPT.exists():
        pytest.skip("the dpcert console script is not installed")
    ran = subprocess.run(
        [str(SCRIPT), "bandit", "run", "robust-elimination", "--privacy", "local", "--epsilon", "1",
         "--horizon", "200", "--option", "epsilon_per=batch"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 2 and "epsilon_per" in ran.stderr and len(ran.stderr.splitlines()) == 1
