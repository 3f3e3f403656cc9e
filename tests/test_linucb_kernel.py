"""The compiled LinUCB rounds (:mod:`dpcert.bandits.algorithms.linucb_kernel`) against the NumPy path.

Each comparison runs one seeded instance through both engines with fresh generators of the same seed:
the compiled rounds must choose the same arms in every round, earn the same regret, clip the same
eigenvalues and leave the generator in the same state (the same random numbers were used).  No test
here is statistical.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from dpcert.bandits.algorithms import linucb_kernel, linucb_privatizers
from dpcert.bandits.algorithms.linucb import ALGORITHMS, run_batched_linucb
from dpcert.bandits.algorithms.linucb_privatizers import LocalGaussianRandomizer, NoPrivacy, TreeGaussian
from dpcert.bandits.calibration.linucb import calibrate
from dpcert.bandits.environments.contextual import ContextualLinearBandit, vaswani_instance
from dpcert.bandits.privatizers import Calibration
from dpcert.errors import BudgetExceeded, InvalidParameter

pytest.importorskip("numba")


def _both(env, privatizers, seed=11, **options):
    """(NumPy result, compiled result, generator states after each)."""
    out = []
    for engine in ("numpy", "numba"):
        rng = np.random.default_rng(seed)
        result = run_batched_linucb(env, privatizers, rng=rng, engine=engine, **options)
        out.append((result, json.dumps(rng.bit_generator.state)))
    (a, state_a), (b, state_b) = out
    return a, b, state_a == state_b


def _assert_same(a, b, same_state):
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_allclose(a.cumulative_regret, b.cumulative_regret, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(a.eigenvalue_clips, b.eigenvalue_clips)
    np.testing.assert_array_equal(a.final_beta, b.final_beta)
    np.testing.assert_array_equal(a.regulariser, b.regulariser)
    assert a.updates == b.updates and same_state


def _distinct_norms(
    env: ContextualLinearBandit, seed: int, reward: str = "bernoulli"
) -> ContextualLinearBandit:
    """The same instance with every arm shortened by its own factor in [0.6, 1]: no two arms tie in the
    first round (on the Chowdhury & Zhou 2022 instances every ‖φ‖ is 1 up to rounding, so the first round's
    argmax is a tie decided by the last bit of the scores)."""
    scale = np.random.default_rng(seed).uniform(0.6, 1.0, env.arms.shape[:2])
    return ContextualLinearBandit(env.theta, env.arms * scale[..., None], reward=reward)


@pytest.mark.parametrize("calibration", [Calibration.LEAST_NOISE, Calibration.PAPER])
def test_all_five_algorithms_choose_the_same_arms_as_the_numpy_path(calibration):
    # the Figure 1 setting on a small instance: the paper's experiment radius
    env = vaswani_instance(3, 5, 40, np.random.default_rng(1))
    common = {"epsilon": 1.0, "delta": 0.1, "horizon": 400, "dimension": 5, "calibration": calibration}
    per_round = [calibrate(name, batch_size=1, **common).privatizer for name in ALGORITHMS[:3]]
    shuffled = [calibrate(name, batch_size=20, **common).privatizer for name in ALGORITHMS[3:]]
    for privatizers, batch in ((per_round, 1), (shuffled, 20)):
        a, b, same_state = _both(env, privatizers, horizon=400, batch_size=batch, radius="experiment")
        _assert_same(a, b, same_state)
        assert len(set(a.actions[:, -1].tolist())) > 1  # the runs did not all collapse onto one arm


def test_theory_radius_and_gaussian_rewards_match():
    env = _distinct_norms(vaswani_instance(4, 5, 30, np.random.default_rng(2)), 3, reward="gaussian")
    privatizers = [NoPrivacy(), LocalGaussianRandomizer(0.5), TreeGaussian(0.4, 300)]
    a, b, same_state = _both(env, privatizers, horizon=300, batch_size=1, radius="theory")
    _assert_same(a, b, same_state)
    # batches with a partial last one, the tree's nodes refreshed per batch
    a, b, same_state = _both(env, privatizers, horizon=290, batch_size=7, radius="theory")
    _assert_same(a, b, same_state)


class _UnderstatedLocal(LocalGaussianRandomizer):
    """Local Gaussian noise whose λ is set for a tenth of it: the noisy V is often indefinite."""

    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        return 0.1 * super().cumulative_std(horizon, batch_size)


class _UnderstatedTree(TreeGaussian):
    def cumulative_std(self, horizon: int, batch_size: int) -> float:
        return 0.1 * super().cumulative_std(horizon, batch_size)


def test_eigenvalue_repairs_match_the_numpy_path():
    env = _distinct_norms(vaswani_instance(4, 5, 20, np.random.default_rng(4)), 5)
    privatizers = [_UnderstatedLocal(1.0), _UnderstatedTree(1.0, 100)]
    a, b, same_state = _both(env, privatizers, horizon=100, batch_size=1, radius="experiment")
    assert a.eigenvalue_clips.min() > 0  # the repair path ran in every run
    _assert_same(a, b, same_state)


def test_every_release_is_charged_before_its_noise_is_drawn(monkeypatch):
    events: list[tuple[str, int]] = []
    draw_noise = linucb_kernel._draw_noise

    def recording_draw(blocks, kinds, levels, bounds, *rest):
        events.extend(("noise", int(start)) for start in bounds[:-1])
        return draw_noise(blocks, kinds, levels, bounds, *rest)

    vec_add = linucb_privatizers.VecSum.add_batch

    def recording_vec(self, statistics, rounds_done, rng):
        events.append(("bit-sum", rounds_done - statistics.shape[1]))
        return vec_add(self, statistics, rounds_done, rng)

    monkeypatch.setattr(linucb_kernel, "_draw_noise", recording_draw)
    monkeypatch.setattr(linucb_privatizers.VecSum, "add_batch", recording_vec)
    monkeypatch.setattr(linucb_kernel, "CHUNK_VALUES", 2 * 3 * 20 * 16)  # chunks of 16 batches
    env = vaswani_instance(2, 5, 10, np.random.default_rng(6))
    common = {"epsilon": 1.0, "delta": 0.1, "horizon": 200, "dimension": 5}
    groups = (
        ([LocalGaussianRandomizer(1.0), TreeGaussian(1.0, 200), NoPrivacy()], 1),
        ([calibrate(name, batch_size=20, **common).privatizer for name in ALGORITHMS[3:]], 20),
    )
    for privatizers, batch in groups:
        for refuse_at in (None, 37 // batch):
            events.clear()

            def charge(j, users, refuse_at=refuse_at, batch=batch):
                if j == refuse_at:
                    raise BudgetExceeded("refused (test)")
                events.append(("charge", j * batch))

            options = {
                "horizon": 200,
                "batch_size": batch,
                "rng": np.random.default_rng(7),
                "engine": "numba",
            }
            if refuse_at is None:
                run_batched_linucb(env, privatizers, before_release=charge, **options)
            else:
                with pytest.raises(BudgetExceeded):
                    run_batched_linucb(env, privatizers, before_release=charge, **options)
            charged = set()
            for kind, start in events:
                if kind == "charge":
                    charged.add(start)
                else:
                    assert start in charged, (kind, start)  # no noise of an uncharged release
            drawn = {start for kind, start in events if kind != "charge"}
            if refuse_at is None:
                assert drawn == set(range(0, 200, batch)) == charged
            else:
                assert max(drawn) < refuse_at * batch  # nothing drawn from the refused release on


def test_engine_choice_is_validated_and_falls_back_without_numba(monkeypatch):
    env = vaswani_instance(2, 3, 5, np.random.default_rng(8))
    options = {"horizon": 20, "batch_size": 1, "rng": np.random.default_rng(9)}
    with pytest.raises(InvalidParameter, match="engine"):
        run_batched_linucb(env, NoPrivacy(), engine="fortran", **options)
    moving = ContextualLinearBandit(env.theta, env.arms, fixed_arms=False)
    with pytest.raises(InvalidParameter, match="engine"):
        run_batched_linucb(moving, NoPrivacy(), engine="numba", **options)
    with pytest.raises(InvalidParameter, match="engine"):
        run_batched_linucb(env, NoPrivacy(), engine="numba", on_batch=lambda *a: None, **options)
    monkeypatch.setattr(linucb_kernel, "AVAILABLE", False)
    with pytest.raises(InvalidParameter, match="numba is not installed"):
        run_batched_linucb(env, NoPrivacy(), engine="numba", **options)

    def compiled(*args, **kwargs):
        raise AssertionError("the compiled rounds ran without numba")

    monkeypatch.setattr(linucb_kernel, "run_fixed_arms", compiled)
    assert run_batched_linucb(env, NoPrivacy(), **options).actions.shape == (2, 20)


def test_without_numba_the_numpy_path_runs():
    script = (
        "import sys; sys.modules['numba'] = None\n"  # `import numba` now raises ImportError
        "import numpy as np\n"
        "from dpcert.bandits.algorithms import linucb_kernel\n"
        "from dpcert.reproductions.chowdhury_zhou_2022 import figure_runs\n"
        "assert not linucb_kernel.AVAILABLE\n"
        "runs = figure_runs(1.0, runs=2, horizon=40, dimension=3, arms=5, calibration='paper')\n"
        "print(sorted(runs))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(sorted(ALGORITHMS))


@pytest.mark.parametrize("batch_size", [7, 20])
def test_jdp_tree_over_batches_matches_the_numpy_path_and_has_fewer_levels(batch_size):
    """Chowdhury & Zhou 2022, Prop. F.3: the JDP tree's leaves are the ⌈T/B⌉ batches (a partial last batch
    a leaf of its own), so one batch's data enter ⌊log₂⌈T/B⌉⌋ + 1 nodes instead of ⌊log₂ T⌋ + 1."""
    horizon = 400
    env = vaswani_instance(3, 5, 40, np.random.default_rng(2))
    calibrated = calibrate(
        "linucb-jdp", epsilon=1.0, delta=0.1, horizon=horizon, dimension=5, batch_size=batch_size
    )
    batches = -(-horizon // batch_size)
    levels = len(bin(batches)) - 2  # ⌊log₂ m⌋ + 1 counted from the binary expansion of m
    assert calibrated.certificate.parameters["compositions"] == levels < len(bin(horizon)) - 2
    a, b, same_state = _both(
        env, [calibrated.privatizer], horizon=horizon, batch_size=batch_size, radius="experiment"
    )
    _assert_same(a, b, same_state)


def test_every_release_of_the_batch_tree_has_fresh_leaf_noise():
    """A partial last batch must not reuse the previous batch's leaf (its data would then be released
    with no noise of its own): with B = 3 and releases after rounds 3, 6 and 7, every prefix noise differs
    from the one before, and the tree has ⌊log₂ 3⌋ + 1 = 2 levels."""
    tree = TreeGaussian(1.0, 7, batch_size=3).start(runs=1, size=2)
    assert tree.levels == 2
    rng = np.random.default_rng(0)
    outputs = [tree.add_batch(np.zeros((1, 3, 2)), done, rng).copy() for done in (3, 6, 7)]
    for before, after in zip(outputs[:-1], outputs[1:], strict=True):
        assert not np.array_equal(before, after)


def test_the_first_compiled_run_says_so_on_stderr_and_later_runs_do_not(capsys, monkeypatch):
    pytest.importorskip("numba")
    env = vaswani_instance(2, 3, 10, np.random.default_rng(0))
    run = lambda: run_batched_linucb(  # noqa: E731
        env, NoPrivacy(), horizon=5, batch_size=1, rng=np.random.default_rng(1), engine="numba"
    )
    run()  # compiled (or loaded from the cache) now
    capsys.readouterr()
    assert not linucb_kernel.needs_compiling()
    run()
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(linucb_kernel, "needs_compiling", lambda: True)  # as in a fresh installation
    run()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "compiling the LinUCB rounds with numba" in err
