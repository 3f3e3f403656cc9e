"""Experiment runner: accountant, repetitions, combination, files and plots."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest

from dpcert.accounting.calibration import calibrate_gaussian
from dpcert.bandits.experiment import (
    UserAccountant,
    combine_runs,
    curve_rounds,
    plot_regret,
    run_repetitions,
    save_results,
    summary,
)
from dpcert.certificates import Certificate, Guarantee
from dpcert.errors import InvalidParameter


class RecordingLedger:
    def __init__(self):
        self.calls = []

    def charge(self, user_ids, certificate, run_id=None):
        self.calls.append((list(user_ids), certificate, run_id))


def test_accountant_forwards_with_offset_and_refuses_repeats():
    ledger = RecordingLedger()
    accountant = UserAccountant(forward_to=ledger, id_offset=1000)
    certificate = calibrate_gaussian(1.0, 1e-5).certificate
    accountant.charge(np.array([0, 1, 2]), certificate, run_id="r")
    assert ledger.calls == [([1000, 1001, 1002], certificate, "r")]  # ids offset, passed as an array
    with pytest.raises(InvalidParameter):
        accountant.charge(np.array([4, 4]), certificate)
    with pytest.raises(InvalidParameter):
        accountant.charge(np.array([5]), "not a certificate")
    ids, counts = accountant.charges_per_user()
    assert ids.tolist() == [0, 1, 2] and counts.tolist() == [1, 1, 1]


def test_worst_user_for_unique_users_is_the_largest_epsilon():
    accountant = UserAccountant()
    weak = calibrate_gaussian(2.0, 1e-5).certificate
    strong = calibrate_gaussian(0.5, 1e-5).certificate
    accountant.charge([0, 1], strong)
    accountant.charge([2], weak)
    worst = accountant.worst_user_certificate(1e-5)
    assert worst == weak
    assert UserAccountant().worst_user_certificate(1e-5) is None


def test_worst_user_composition_equals_single_gaussian_of_sqrt_k():
    # user 0 charged three times with the same Gaussian: equivalent to sensitivity √3 (exact)
    accountant = UserAccountant()
    one = calibrate_gaussian(1.0, 1e-6).certificate
    for _ in range(3):
        accountant.charge([0, 7], one)
    accountant.charge([0], one)
    worst = accountant.worst_user_certificate(1e-6)
    reference = calibrate_gaussian(1.0, 1e-6, compositions=4)  # σ for 4-fold composition at ε = 1
    sigma = one.parameters["sigma"]
    # our composed ε at δ is that of four releases with this σ; the reference σ gives exactly ε = 1
    assert sigma < reference.sigma
    assert worst.epsilon > 1.0
    four = Certificate(
        "gaussian", Guarantee(worst.epsilon, 1e-6), parameters={"sigma": sigma, "compositions": 4}
    )
    assert four.delta_for(worst.epsilon) <= 1e-6 * (1 + 1e-9)
    assert four.delta_for(worst.epsilon * 0.999) > 1e-6


def test_accountant_survives_pickling():
    accountant = UserAccountant(id_offset=5)
    accountant.charge([1, 2], calibrate_gaussian(1.0, 1e-5).certificate)
    copy = pickle.loads(pickle.dumps(accountant))
    assert copy.certificates == accountant.certificates and copy.id_offset == 5
    assert copy.user_ids[0].tolist() == [1, 2]


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
    accountants = []
    for _ in range(4):
        accountant = UserAccountant()
        accountant.charge([0, 1], calibrate_gaussian(1.0, 1e-5).certificate)
        accountants.append(accountant)
    return curves, combine_runs(
        "toy", curves, accountants, [2, 2, 2, 2], seconds=0.5, target=target, extras={"x": np.ones(3)}
    )


def test_combine_runs_statistics_and_target():
    curves, run = _combined(Guarantee(1.0, 1e-5))
    finals = np.array([c[-1] for c in curves])
    mean, stderr = run.final_regret()
    assert math.isclose(mean, finals.mean()) and math.isclose(stderr, finals.std(ddof=1) / 2)
    assert run.extras["meets_target"] is True and run.max_user_epsilon <= 1.0 + 1e-9
    _, run = _combined(Guarantee(0.5, 1e-5))
    assert run.extras["meets_target"] is False


def test_save_results_and_summary(tmp_path):
    curves, run = _combined(Guarantee(1.0, 1e-5))
    paths = save_results(run, tmp_path, "toy")
    data = json.loads(paths["json"].read_text())
    assert data["algorithm"] == "toy" and data["regret"]["mean"] == run.final_regret()[0]
    Certificate.from_dict(data["certificate"])  # re-verified on read
    arrays = np.load(paths["npz"])
    assert arrays["rounds"][-1] == 1000 and arrays["rounds"][0] == 1
    assert np.allclose(arrays["cumulative_regret"][:, -1], [c[-1] for c in curves])
    assert set(summary(run)) >= {"algorithm", "regret", "certificate", "users", "max_user_epsilon", "seconds"}


def test_curve_rounds_cover_the_horizon():
    rounds = curve_rounds(10**6)
    assert rounds[0] == 1 and rounds[-1] == 10**6 and np.all(np.diff(rounds) > 0)


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    _, run = _combined()
    path = plot_regret({"toy": run}, tmp_path / "p.png")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
