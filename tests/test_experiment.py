"""Experiment runner: accountant, repetitions, combination, files and plots."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpcert.bandits.experiment import (
    combine_runs,
    curve_rounds,
    plot_regret,
    run_repetitions,
    save_results,
    summary,
)
from dpcert.certificates import Certificate, Guarantee
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.gaussian import calibrate_gaussian
from dpcert.session import PrivacySession


def _square(index: int) -> int:
    return index * index


def test_run_repetitions_in_order_with_and_without_workers():
    assert run_repetitions(_square, 5, progress=False) == [0, 1, 4, 9, 16]
    assert run_repetitions(lambda i: np.random.default_rng(i).random(), 4, workers=2, progress=False) == [
        np.random.default_rng(i).random() for i in range(4)
    ]
    with pytest.raises(InvalidParameter):
        run_repetitions(_square, 0)


def _combined(target=None):
    rng = np.random.default_rng(0)
    curves = [np.cumsum(rng.random(1000)) for _ in range(4)]
    sessions = []
    for index in range(4):
        session = PrivacySession(f"toy/r{index}")
        session.charge([0, 1], calibrate_gaussian(1.0, 1e-5).certificate)
        sessions.append(session)
    return curves, combine_runs(
        "toy", curves, sessions, [2, 2, 2, 2], seconds=0.5, target=target, privacy="central", extras={"x": 1}
    )


def test_combine_runs_statistics_and_target():
    curves, run = _combined(Guarantee(1.0, 1e-5))
    finals = np.array([c[-1] for c in curves])
    mean, stderr = run.final_regret()
    assert math.isclose(mean, finals.mean()) and math.isclose(stderr, finals.std(ddof=1) / 2)
    assert run.target_met is True and run.max_user_epsilon <= 1.0 + 1e-9
    _, run = _combined(Guarantee(0.5, 1e-5))
    assert run.target_met is False


def test_save_results_and_summary(tmp_path):
    curves, run = _combined(Guarantee(1.0, 1e-5))
    paths = save_results(run, tmp_path, "toy")
    data = json.loads(paths["json"].read_text())
    assert data["algorithm"] == "toy" and data["regret"]["mean"] == run.final_regret()[0]
    Certificate.from_dict(data["certificate"])  # re-verified on read
    arrays = np.load(paths["npz"])
    assert arrays["rounds"][-1] == 1000 and arrays["rounds"][0] == 1
    assert np.allclose(arrays["cumulative_regret"][:, -1], [c[-1] for c in curves])
    payload = summary(run)
    assert set(payload) >= {
        "algorithm", "privacy", "target", "target_met", "certificate", "max_user_epsilon", "users", "regret",
        "seconds",
    }  # fmt: skip
    assert payload["target"] == {"epsilon": 1.0, "delta": 1e-5} and payload["target_met"] is True
    assert payload["privacy"] == "central" and payload["x"] == 1


def test_curve_rounds_cover_the_horizon():
    rounds = curve_rounds(10**6)
    assert rounds[0] == 1 and rounds[-1] == 10**6 and np.all(np.diff(rounds) > 0)


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    _, run = _combined()
    path = plot_regret({"toy": run}, tmp_path / "p.png")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
