"""The estimator / in-range adversary switches of robust elimination (Charisopoulos et al. 2023) and the
online-learner switch of the LDP linear bandit (Improved-rate LDP linear bandits paper), through ``dpcert
bandit run ... --option`` and the Python API.

Every run is seeded and small (a few hundred to a few thousand rounds); no statistical assertion is made.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpcert.bandits import registry
from dpcert.bandits.algorithms import ldp_linear, maler
from dpcert.bandits.algorithms import robust_elimination as engine
from dpcert.bandits.algorithms.robust_elimination import (
    Adversary,
    LaplaceClients,
    LinearArms,
    robust_elimination,
)
from dpcert.bandits.algorithms.spectral_filter import least_squares
from dpcert.cli import main

ROBUST = ["bandit", "run", "robust-elimination", "--horizon", "3000", "--runs", "2", "--seed", "1"]
SMALL = ["--option", "arms=8", "--option", "dimension=3"]
LDP = ["bandit", "run", "ldp-linear", "--privacy", "local", "--epsilon", "1", "--delta", "1e-5"]


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def exit_code(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main([*argv, "--json"])
    return code, capsys.readouterr().err


# --------------------------------------------------------------- Charisopoulos et al. 2023 estimator switch
@pytest.mark.parametrize(
    ("estimator", "strategy"),
    [("filter", "in-range-coordinated"), ("clip-only", "in-range-targeted"), ("least-squares", "targeted")],
)
def test_robust_estimator_and_strategy_run_through_the_cli(capsys, estimator, strategy):
    """Each estimator runs under each kind of attack (ε = 1, M1).  The in-range adversary's recorded magnitude
    is the engine's clean range for one report, Ȳ(1) = c_r + (2c_r/ε)·log(2/δ) with δ = δ'/(K T²)
    (PN-CEM-2)), recomputed here from its definition."""
    out = run_json(
        capsys,
        *ROBUST,
        "--privacy",
        "local",
        "--epsilon",
        "1",
        *SMALL,
        "--option",
        f"estimator={estimator}",
        "--option",
        f"strategy={strategy}",
        "--option",
        "alpha=0.05",
    )
    assert out["estimator"] == estimator and out["strategy"] == strategy
    assert out["variance"] == "arm-moment"  # the M1 default
    assert out["certificate"]["guarantee"] == {"epsilon": 1.0, "delta": 0.0}
    if strategy.startswith("in-range"):
        delta = 0.05 / (8 * 3000**2)
        assert out["magnitude"] == pytest.approx(1.0 + 2.0 * math.log(2.0 / delta), rel=1e-12)
    else:
        assert out["magnitude"] == 1e6


def test_robust_m2_defaults_to_the_trimmed_variance(capsys):
    out = run_json(capsys, *ROBUST, "--privacy", "local", "--epsilon", "1", *SMALL, "--option", "model=M2")
    assert out["variance"] == "trimmed" and out["estimator"] == "filter"


@pytest.mark.parametrize(
    ("options", "word"),
    [
        (["estimator=median"], "estimator"),
        (["strategy=in-range-random"], "strategy"),
        (["strategy=targeted", "scale=0.5"], "scale"),
        (["strategy=in-range-targeted", "scale=1.5"], "scale"),
        (["strategy=in-range-targeted", "magnitude=5"], "magnitude"),
        (["strategy=in-range-coordinated", "model=M2"], "strategy"),
        (["variance=arm-moment", "model=M2"], "variance"),
        (["variance=untrimmed"], "variance"),
    ],
)
def test_robust_refuses_unknown_or_inconsistent_values(capsys, options, word):
    argv = [*ROBUST, "--option", "alpha=0.05"]
    for option in options:
        argv += ["--option", option]
    code, err = exit_code(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and word in err


def test_least_squares_estimates_are_plain_least_squares_of_the_received_values(monkeypatch):
    """The least-squares path computes, in every phase, ``least_squares(rows, values)`` of the received
    values (the estimate used before the switch existed), and the engine's elimination uses it."""
    calls = []
    original = engine.robust_estimate

    def recording(design, values, rng, **kwargs):
        fit = original(design, values, rng, **kwargs)
        calls.append((fit.theta, least_squares(design, values), kwargs["estimator"]))
        return fit

    monkeypatch.setattr(engine, "robust_estimate", recording)
    instance = LinearArms.random_sphere(10, 3, np.random.default_rng(0))
    common = dict(clients=LaplaceClients("M1", 1.0), adversary=Adversary(0.05, "targeted", 50.0), runs=2)
    robust_elimination(instance, 5000, np.random.default_rng(2), estimator="least-squares", **common)
    assert calls and all(estimator == "least-squares" for *_, estimator in calls)
    for theta, reference, _ in calls:
        np.testing.assert_array_equal(theta, reference)


def test_estimators_agree_without_corruption_or_privacy():
    """Without privacy the clean range is Ȳ = c_r = 1 and the ±1 rewards are never clipped, so clip-only
    equals least squares exactly; ``"robust"`` is the earlier name of ``"filter"`` (same numbers)."""
    instance = LinearArms.random_sphere(10, 3, np.random.default_rng(0))
    clients = LaplaceClients("M1", None)
    runs = {
        name: robust_elimination(
            instance,
            5000,
            np.random.default_rng(3),
            clients=clients,
            estimator=name,
            width_scale=0.05,
            runs=2,
        )
        for name in ("least-squares", "clip-only", "filter", "robust")
    }
    np.testing.assert_array_equal(runs["least-squares"].regret_curve, runs["clip-only"].regret_curve)
    np.testing.assert_array_equal(runs["filter"].regret_curve, runs["robust"].regret_curve)
    assert runs["robust"].parameters["estimator"] == "filter"


# ---------------------------------------------------------- Improved-rate LDP linear bandits learner switch
def test_ldp_learner_ogd_is_the_default_and_maler_keeps_the_certificate(capsys):
    """learner=ogd gives the default run's numbers exactly; Maler and its anytime variant run, their regret is
    finite and at most T·max gap (means in [−1, 1]), and the certificate is the same object: the learner only
    post-processes the releases."""
    common = [*LDP, "--horizon", "300", "--runs", "2", "--seed", "5"]
    default = run_json(capsys, *common)
    ogd = run_json(capsys, *common, "--option", "learner=ogd")
    assert ogd["regret"] == default["regret"] and ogd["learner"] == "ogd"
    for name in ("maler", "anytime-maler"):
        other = run_json(capsys, *common, "--option", f"learner={name}")
        assert other["learner"] == name
        assert math.isfinite(other["regret"]["mean"])
        assert 0.0 <= other["regret"]["mean"] <= 2.0 * 300
        assert other["regret"]["mean"] != default["regret"]["mean"]
        assert other["certificate"] == default["certificate"]
        assert other["max_user_epsilon"] == default["max_user_epsilon"]


def test_ldp_learner_unknown_value_is_refused(capsys):
    code, err = exit_code(capsys, *LDP, "--horizon", "50", "--option", "learner=adagrad")
    assert code == 2 and "learner" in err and len(err.strip().splitlines()) == 1


def test_learner_object_path_equals_the_inline_ogd(monkeypatch):
    """The engine's learner-object path (per base learner, updated only in the runs that chose it) fed
    :class:`~dpcert.bandits.algorithms.maler.OnlineGradientDescent` with each base learner's step rule
    reproduces the inline OGD of the default path, with the combiner's several base learners (Alg. 2)."""
    config = registry.RunConfig("ldp-linear-combiner", "local", 1.0, 1e-5, horizon=300, runs=3, seed=6)
    grid = ldp_linear.default_learner_grid(config.horizon)
    assert len(grid) >= 2
    inline = registry.algorithm("ldp-linear-combiner").run(config)
    moduli = iter([lr.modulus for lr in grid])

    def as_ogd(name, dimension, horizon, radius, gradient_bound, runs):
        return maler.OnlineGradientDescent(
            dimension, radius=radius, gradient_bound=gradient_bound, modulus=next(moduli), runs=runs
        )

    monkeypatch.setattr(ldp_linear, "_online_learner", as_ogd)
    objects = registry.algorithm("ldp-linear-combiner").run(
        registry.RunConfig(
            "ldp-linear-combiner",
            "local",
            1.0,
            1e-5,
            horizon=300,
            runs=3,
            seed=6,
            options={"learner": "maler"},
        )
    )
    np.testing.assert_allclose(objects.cumulative_regret, inline.cumulative_regret, rtol=0, atol=1e-9)
    assert objects.extras["plays_per_learner"] == inline.extras["plays_per_learner"]
