"""DP-SGD calibration: the least noise multiplier for (ε, δ), Python and command line.

References are computed independently in the tests: the least σ by bisecting dp_accounting's own
pessimistic PLD accountant (Poisson sampling), dp_accounting's RDP accountant evaluated at z and
0.999 z (batches sampled without replacement), and the exact Gaussian mechanism (full batches, Balle &
Wang 2018); minimality is also shown by the certificate of a 0.2 % smaller σ.
"""

from __future__ import annotations

import functools
import json
import math

import pytest

from dpcert import Certificate
from dpcert.accounting.dp_sgd import (
    MAX_NOISE_MULTIPLIER,
    MAX_STEPS,
    calibrate_dp_sgd,
    dp_sgd_certificate,
    dp_sgd_schedule,
)
from dpcert.cli import main
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.subsampled_gaussian import poisson_sampled_gaussian_certificate
from dpcert.theory.gaussian import analytic_gaussian_sigma

EPSILON, DELTA = 1.0, 1e-5
Q, STEPS = 0.01, 1000  # 10 epochs of ceil(1/q) = 100 steps
SHUFFLE = {"batch_size": 100, "dataset_size": 10_000, "epochs": 5}  # 5 x 100 = 500 steps
SHUFFLE_EPSILON = 2.0


def least_valid(epsilon_of, target: float, low: float, high: float) -> float:
    """Least σ in [low, high] with epsilon_of(σ) <= target (a safeguarded bisection, scipy's brentq).

    The bracket is checked first; the root is located to a relative 1e-4 and the valid end returned.
    """
    from scipy.optimize import brentq

    epsilon_of = functools.lru_cache(maxsize=None)(epsilon_of)
    assert epsilon_of(low) > target >= epsilon_of(high), "the bracket must straddle the least valid sigma"
    root = brentq(lambda s: epsilon_of(s) - target, low, high, xtol=1e-4 * high)
    return root if epsilon_of(root) <= target else root + 1e-4 * high


@pytest.fixture(scope="module")
def poisson():
    return calibrate_dp_sgd(epsilon=EPSILON, delta=DELTA, sampling_probability=Q, epochs=10)


@pytest.fixture(scope="module")
def shuffle():
    return calibrate_dp_sgd(epsilon=SHUFFLE_EPSILON, delta=DELTA, sampling="shuffle", **SHUFFLE)


def test_poisson_within_a_tenth_of_a_percent_of_dp_accounting_pld(poisson):
    from dp_accounting import dp_event
    from dp_accounting.pld import PLDAccountant

    def epsilon_of(sigma: float) -> float:  # dp_accounting's pessimistic PLD, discretisation 1e-4
        accountant = PLDAccountant(value_discretization_interval=1e-4)
        step = dp_event.PoissonSampledDpEvent(Q, dp_event.GaussianDpEvent(sigma))
        accountant.compose(dp_event.SelfComposedDpEvent(step, STEPS))
        return accountant.get_epsilon(DELTA)

    reference = least_valid(epsilon_of, EPSILON, 1.41, 1.42)
    assert poisson.steps == STEPS and poisson.sampling_probability == Q
    assert abs(poisson.noise_multiplier / reference - 1.0) < 1e-3, (poisson.noise_multiplier, reference)


def test_poisson_certificate_meets_the_target_and_a_smaller_sigma_does_not(poisson):
    certificate = Certificate.from_json(poisson.certificate.to_json())  # re-derived from its parameters
    assert (certificate.epsilon, certificate.delta) == (EPSILON, DELTA)
    assert certificate.delta_for(EPSILON) <= DELTA
    assert certificate.parameters["sigma"] == poisson.sigma == poisson.noise_multiplier
    assert certificate.neighbouring.value == "add/remove"
    smaller = poisson_sampled_gaussian_certificate(
        poisson.noise_multiplier * (1 - 0.002), Q, STEPS, epsilon=EPSILON
    )
    assert smaller.delta > DELTA
    # the search's own record: an evaluated z just below the answer misses the target
    assert poisson.search.largest_failing is not None
    assert 1.0 - 1e-3 < poisson.search.largest_failing / poisson.noise_multiplier < 1.0


def test_poisson_beats_the_rdp_calibration(poisson):
    """The RDP accountant (Mironov 2017, the accounting of Opacus's default) needs more noise here."""
    from dp_accounting import dp_event
    from dp_accounting.rdp import RdpAccountant

    def epsilon_of(sigma: float) -> float:
        accountant = RdpAccountant()
        step = dp_event.PoissonSampledDpEvent(Q, dp_event.GaussianDpEvent(sigma))
        accountant.compose(dp_event.SelfComposedDpEvent(step, STEPS))
        return accountant.get_epsilon(DELTA)

    rdp = least_valid(epsilon_of, EPSILON, 1.5, 1.6)
    assert poisson.noise_multiplier < rdp * 0.97, (poisson.noise_multiplier, rdp)


@pytest.mark.parametrize("steps", [1, 4])
def test_full_batch_is_the_gaussian_mechanism(steps):
    """q = 1: T full-batch steps are the T-fold Gaussian mechanism, whose least σ is exact (Balle &
    Wang 2018; T releases of sensitivity 1 are one of sensitivity √T).  The certificate may only be
    more conservative, by the PLD discretisation."""
    exact = analytic_gaussian_sigma(EPSILON, DELTA, compositions=steps)
    result = calibrate_dp_sgd(epsilon=EPSILON, delta=DELTA, sampling_probability=1.0, steps=steps)
    assert exact <= result.noise_multiplier < exact * (1 + 1e-3), (result.noise_multiplier, exact)


def test_shuffle_within_a_tenth_of_a_percent_of_dp_accounting_rdp(shuffle):
    """dp_accounting's RDP accountant for sampling without replacement (Wang, Balle & Kasiviswanathan
    2019), replace-one, evaluated directly: its least valid σ is within 0.1 % below the calibrated z."""
    from dp_accounting import NeighboringRelation, dp_event
    from dp_accounting.rdp import RdpAccountant

    batch, size = SHUFFLE["batch_size"], SHUFFLE["dataset_size"]
    steps = SHUFFLE["epochs"] * math.ceil(size / batch)

    def epsilon_of(sigma: float) -> float:
        accountant = RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE)
        step = dp_event.SampledWithoutReplacementDpEvent(size, batch, dp_event.GaussianDpEvent(sigma))
        accountant.compose(dp_event.SelfComposedDpEvent(step, steps))
        return accountant.get_epsilon(DELTA)

    # dp_accounting's least valid σ lies in (0.999 z, z]: z meets the target, 0.999 z does not
    assert shuffle.steps == steps == 500
    assert epsilon_of(shuffle.noise_multiplier) <= SHUFFLE_EPSILON
    assert epsilon_of(shuffle.noise_multiplier * (1 - 1e-3)) > SHUFFLE_EPSILON
    certificate = Certificate.from_json(shuffle.certificate.to_json())
    assert certificate.neighbouring.value == "replace-one"
    assert certificate.delta_for(SHUFFLE_EPSILON) <= DELTA


def test_epochs_and_steps_give_the_same_schedule_and_certificate(shuffle):
    assert dp_sgd_schedule(sampling_probability=Q, epochs=10) == dp_sgd_schedule(
        sampling_probability=Q, steps=1000
    )
    assert dp_sgd_schedule(sampling_probability=0.3, epochs=2).steps == 2 * 4  # ceil(1/0.3) = 4
    assert dp_sgd_schedule(batch_size=3, dataset_size=10, epochs=3).steps == 3 * 4  # ceil(10/3) = 4
    assert dp_sgd_schedule(batch_size=5, dataset_size=10, epochs=3).steps == 3 * 2
    by_steps = dp_sgd_certificate(
        shuffle.noise_multiplier,
        epsilon=SHUFFLE_EPSILON,
        sampling="shuffle",
        batch_size=SHUFFLE["batch_size"],
        dataset_size=SHUFFLE["dataset_size"],
        steps=500,
    )
    assert by_steps.to_dict() == shuffle.certificate.with_guarantee(by_steps.guarantee).to_dict()
    assert by_steps.delta <= DELTA


def test_sensitivity_scales_sigma_not_the_noise_multiplier(poisson):
    certificate = dp_sgd_certificate(
        poisson.noise_multiplier, epsilon=EPSILON, sampling_probability=Q, steps=STEPS, sensitivity=4.0
    )
    assert certificate.parameters["sigma"] == 4.0 * poisson.noise_multiplier
    assert certificate.delta == pytest.approx(poisson.certificate.delta_for(EPSILON), rel=1e-12)


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"sampling": "uniform"}, "sampling"),
        ({"batch_size": 10, "dataset_size": 100}, "sampling_probability"),
        ({"sampling_probability": None}, "sampling_probability"),
        ({"sampling_probability": 0.0}, "sampling_probability"),
        ({"sampling_probability": 1.5}, "sampling_probability"),
        ({"sampling_probability": None, "batch_size": 10}, "dataset_size"),
        ({"sampling_probability": None, "dataset_size": 10}, "batch_size"),
        ({"sampling_probability": None, "batch_size": 11, "dataset_size": 10}, "batch_size"),
        ({"sampling_probability": None, "batch_size": 2.5, "dataset_size": 10}, "batch_size"),
        ({"sampling": "shuffle"}, "sampling_probability"),
        ({"steps": None}, "steps"),
        ({"epochs": 2}, "steps"),
        ({"steps": 0}, "steps"),
        ({"steps": MAX_STEPS + 1}, "steps"),
        ({"steps": None, "epochs": 1.5}, "epochs"),
        ({"steps": None, "epochs": MAX_STEPS}, "epochs"),
        ({"sensitivity": -1.0}, "sensitivity"),
        ({"sensitivity": 1e305}, "sensitivity"),
    ],
)
def test_validation_names_the_parameter(arguments, name):
    call = {"epsilon": 1.0, "delta": 1e-5, "sampling_probability": 0.01, "steps": 100, **arguments}
    with pytest.raises(InvalidParameter) as error:
        calibrate_dp_sgd(**call)
    assert error.value.name == name


def test_a_target_no_noise_multiplier_in_range_meets_is_refused():
    """q = 1 for 10^7 steps at ε = 1e-3, δ = 1e-10 needs z = √T σ(ε, δ) far above 1e6 (closed form)."""
    needed = analytic_gaussian_sigma(1e-3, 1e-10, compositions=10**7)
    assert needed > MAX_NOISE_MULTIPLIER
    with pytest.raises(InvalidParameter) as error:
        calibrate_dp_sgd(epsilon=1e-3, delta=1e-10, sampling_probability=1.0, steps=10**7)
    assert error.value.name == "epsilon" and "1e+06" in str(error.value)


def test_account_validation_names_the_parameter():
    with pytest.raises(InvalidParameter) as error:
        dp_sgd_certificate(0.0, delta=1e-5, sampling_probability=0.01, steps=10)
    assert error.value.name == "noise_multiplier"
    with pytest.raises(InvalidParameter) as error:
        dp_sgd_certificate(1.0, sampling_probability=0.01, steps=10)
    assert error.value.name == "delta"


# ------------------------------------------------------------------------------------------ CLI
def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


FULL_BATCH = ["--sampling-probability", "1", "--steps", "4"]


def test_cli_calibrate_json_round_trip(capsys):
    python = calibrate_dp_sgd(epsilon=EPSILON, delta=DELTA, sampling_probability=1.0, steps=4)
    argv = ["calibrate", "dp-sgd", "--epsilon", "1", "--delta", "1e-5", "--json"]
    code, out, err = run(argv + FULL_BATCH, capsys)
    assert code == 0, err
    payload = json.loads(out)
    assert payload["noise_multiplier"] == python.noise_multiplier  # same inputs, same bits
    assert payload["steps"] == 4 and payload["sampling"] == "poisson"
    assert payload["search"]["evaluations"] == python.search.evaluations
    certificate = Certificate.from_dict(payload["certificate"])  # re-derived and verified
    assert (certificate.epsilon, certificate.delta) == (EPSILON, DELTA)
    assert certificate == python.certificate


def test_cli_account_gives_epsilon_at_delta_and_delta_at_epsilon(capsys):
    z = analytic_gaussian_sigma(EPSILON, DELTA, compositions=4) * (1 + 1e-3)  # meets (1, 1e-5) exactly
    argv = ["account", "dp-sgd", "--noise-multiplier", repr(z)] + FULL_BATCH
    code, out, err = run(argv + ["--delta", "1e-5", "--json"], capsys)
    assert code == 0, err
    payload = json.loads(out)
    assert payload["delta"] == DELTA and payload["epsilon"] <= EPSILON
    assert payload["epsilon"] == pytest.approx(EPSILON, rel=1e-2)  # the bound is tight for q = 1
    Certificate.from_dict(payload["certificate"])
    code, out, err = run(argv + ["--epsilon", "1"], capsys)
    assert code == 0 and out.startswith("noise multiplier") and err == ""
    rows = dict(line.split(None, 1) for line in out.splitlines() if line.startswith(("delta", "epsilon")))
    assert float(rows["delta"]) <= DELTA and float(rows["epsilon"]) == EPSILON


CALIBRATE = "calibrate dp-sgd --epsilon 1 --delta 1e-5 "
ACCOUNT = "account dp-sgd --noise-multiplier 1 "


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (CALIBRATE + "--steps 10", "sampling_probability"),
        ("calibrate dp-sgd --epsilon 0 --delta 1e-5 --sampling-probability 0.1 --steps 1", "--epsilon"),
        ("calibrate dp-sgd --epsilon 1 --delta 0 --sampling-probability 0.1 --steps 1", "delta"),
        ("calibrate dp-sgd --epsilon 1 --sampling-probability 0.1 --steps 1", "--delta"),
        (CALIBRATE + "--sampling-probability 0.1", "--steps"),
        (CALIBRATE + "--sampling-probability 0.1 --steps 3 --epochs 1", "--epochs"),
        (CALIBRATE + "--sampling-probability 0.1 --steps 2.5", "--steps"),
        (CALIBRATE + "--sampling-probability 1.5 --steps 3", "sampling_probability"),
        (CALIBRATE + "--sampling-probability 0.1 --batch-size 5 --steps 3", "sampling_probability"),
        (CALIBRATE + "--batch-size 20 --dataset-size 10 --steps 3", "batch_size"),
        (CALIBRATE + "--batch-size 20 --steps 3", "dataset_size"),
        (CALIBRATE + "--sampling x --sampling-probability 0.1 --steps 3", "--sampling"),
        (CALIBRATE + "--sampling shuffle --sampling-probability 0.1 --steps 3", "sampling_probability"),
        (CALIBRATE + "--sampling-probability 0.1 --steps 3 --sensitivity 0", "--sensitivity"),
        (
            ACCOUNT.replace("1", "0") + "--delta 1e-5 --sampling-probability 0.1 --steps 3",
            "--noise-multiplier",
        ),
        (ACCOUNT + "--sampling-probability 0.1 --steps 3", "--delta"),
        (ACCOUNT + "--delta 1e-5 --epsilon 1 --sampling-probability 0.1 --steps 3", "--epsilon"),
        (ACCOUNT + "--epsilon -1 --sampling-probability 0.1 --steps 3", "epsilon"),
        (ACCOUNT + "--delta 1e-5 --epochs 0 --sampling-probability 0.1", "epochs"),
    ],
)
def test_cli_bad_input_exits_two_with_one_line(command, name, capsys):
    code, out, err = run(command.split(), capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and name in err, err


def test_cli_internal_error_exits_three_with_one_line(monkeypatch, capsys):
    import dpcert.cli.noise as noise_cli

    def broken(**_: object) -> None:
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(noise_cli, "calibrate_dp_sgd", broken)
    argv = ["calibrate", "dp-sgd", "--epsilon", "1", "--delta", "1e-5", "--sampling-probability", "0.1"]
    code, out, err = run(argv + ["--steps", "3"], capsys)
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and "simulated failure" in err
