"""The random-number paths of the LinUCB engine: the normal pool, the compiled argmax and P_Vec's streams.

Every check compares against an independent computation (one direct draw from a generator of the same
seed, ``np.argmax``, the NumPy path); none is statistical.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from dpcert.bandits.algorithms import linucb_kernel, linucb_privatizers
from dpcert.bandits.algorithms.linucb import ALGORITHMS, run_batched_linucb
from dpcert.bandits.algorithms.linucb_privatizers import LocalGaussianRandomizer, NoPrivacy, NormalPool
from dpcert.bandits.calibration.linucb import calibrate
from dpcert.bandits.environments.contextual import vaswani_instance
from dpcert.errors import InvalidParameter
from dpcert.mechanisms.shuffle.binomial_sum import (
    BinomialSumMechanism,
    BitSumParameters,
    analyze_count,
    encode_values,
)


def test_pool_fill_and_shapes_give_one_direct_draw_across_odd_sizes():
    # requests smaller than, straddling and much larger than the 7-value block, in both forms
    pool = NormalPool(np.random.default_rng(5), block=7)
    sizes = [3, 1, 9, 7, 30, 2, 5, 64, 1, 13]
    handed = []
    for index, size in enumerate(sizes):
        if index % 2:
            handed.append(pool.standard_normal((size,)))
        else:
            out = np.full(size, np.nan)
            assert pool.fill(out) is out
            handed.append(out)
    direct = np.random.default_rng(5).standard_normal(sum(sizes))
    np.testing.assert_array_equal(np.concatenate(handed), direct)


def test_pool_fills_multidimensional_arrays_and_refuses_other_layouts():
    pool = NormalPool(np.random.default_rng(8), block=16)
    out = np.empty((3, 4, 5))
    pool.fill(out)
    np.testing.assert_array_equal(out.ravel(), np.random.default_rng(8).standard_normal(60))
    with pytest.raises(InvalidParameter, match="out"):
        pool.fill(np.empty((4, 6))[:, ::2])  # not contiguous: a copy would be filled, not the array
    with pytest.raises(InvalidParameter, match="out"):
        pool.fill(np.empty(5, dtype=np.float32))


@pytest.mark.parametrize("arms", [1, 7, 8, 9, 16, 100, 203])
def test_compiled_argmax_is_numpys_on_ties_signed_zeros_and_nans(arms):
    rng = np.random.default_rng(arms)
    zero = np.float32(0)
    index = np.empty(arms)
    for case in range(40):
        # few distinct values, so that exact ties between arms (and ±0) are frequent
        means = rng.choice(np.array([-1.0, -0.0, 0.0, 0.5, 1.0], dtype=np.float32), arms)
        widths = rng.choice(np.array([-0.25, 0.0, 0.25, 1.0], dtype=np.float32), arms)
        if case % 5 == 4:
            means[rng.integers(arms, size=2)] = np.nan
        beta = float(rng.choice([0.0, 0.5, 2.0]))
        expected = np.argmax(
            means.astype(np.float64) + beta * np.sqrt(np.maximum(widths, zero)).astype(np.float64)
        )
        assert linucb_kernel._ucb_arm(means, widths, beta, zero, index) == expected


def test_equal_runs_of_batch_sizes():
    runs = linucb_kernel._equal_runs(np.array([20, 20, 20, 7]))
    assert runs == [(0, 3), (3, 1)]
    assert linucb_kernel._equal_runs(np.array([5])) == [(0, 1)]


def test_bit_sum_simulation_with_a_separate_noise_stream():
    """``simulate(data, rng, noise_rng)``: the rounding bits from ``rng``, the binomial counts from
    ``noise_rng``; without ``noise_rng`` both from ``rng``, rounding bits first (as before)."""
    q = BitSumParameters(users=6, dimension=3, g=4, b=10, p=0.5, shape="vector", norm="entry")
    mechanism = BinomialSumMechanism(q, certificate=None)  # type: ignore[arg-type]
    data = np.random.default_rng(0).uniform(-1, 1, (2, 6, 3))

    def by_hand(rounding: np.random.Generator, noise: np.random.Generator) -> np.ndarray:
        encoded = encode_values(data, q.g, q.bound, rounding).astype(np.int64).sum(axis=-2)
        counts = encoded + noise.binomial(q.noise_trials, q.p, size=(2, 3))
        return analyze_count(counts.astype(float), q.g, q.noise_trials, q.p, q.users, q.bound)

    one = np.random.default_rng(3)
    np.testing.assert_array_equal(mechanism.simulate(data, np.random.default_rng(3)), by_hand(one, one))
    two = mechanism.simulate(data, np.random.default_rng(3), noise_rng=np.random.default_rng(4))
    np.testing.assert_array_equal(two, by_hand(np.random.default_rng(3), np.random.default_rng(4)))


def _state(rng: np.random.Generator) -> str:
    return json.dumps(rng.bit_generator.state)


@pytest.mark.parametrize("horizon", [200, 207])
def test_compiled_bit_sums_over_several_chunks_and_a_partial_batch_match_the_numpy_path(monkeypatch, horizon):
    pytest.importorskip("numba")
    # chunks of 2 batches (P_Vec draws one uniform per user and entry), a partial last batch of 7 users
    monkeypatch.setattr(linucb_kernel, "CHUNK_VALUES", 2 * 2 * 3 * 20 * 20)
    env = vaswani_instance(3, 5, 30, np.random.default_rng(12))
    # calibrated for whole batches; the engine itself also takes a partial last batch
    common = {"epsilon": 1.0, "delta": 0.1, "horizon": 200, "dimension": 5, "batch_size": 20}
    privatizers = [calibrate(name, **common).privatizer for name in ALGORITHMS[3:]]
    results = []
    for engine in ("numpy", "numba"):
        rng = np.random.default_rng(13)
        result = run_batched_linucb(
            env, privatizers, horizon=horizon, batch_size=20, rng=rng, engine=engine,
            radius="experiment",
        )  # fmt: skip
        results.append((result, _state(rng)))
    (a, state_a), (b, state_b) = results
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_array_equal(a.cumulative_regret, b.cumulative_regret)
    assert state_a == state_b
    assert len(set(a.actions[:, -1].tolist())) > 1


class _OwnLocalSum(linucb_privatizers.LocalGaussianSum):
    """An aggregator type the compiled rounds do not know: released by its own ``add_batch``."""


@dataclass(frozen=True)
class _OwnLocal(LocalGaussianRandomizer):
    def start(self, runs: int, size: int) -> linucb_privatizers.Aggregator:
        return _OwnLocalSum(self.sigma, np.zeros((runs, size)))


def test_an_aggregator_of_another_type_runs_between_the_compiled_steps_with_the_same_values():
    pytest.importorskip("numba")
    env = vaswani_instance(3, 5, 30, np.random.default_rng(14))
    privatizers = [_OwnLocal(0.3), NoPrivacy()]
    results = []
    for engine in ("numpy", "numba"):
        rng = np.random.default_rng(15)
        result = run_batched_linucb(
            env, privatizers, horizon=60, batch_size=3, rng=rng, engine=engine, radius="experiment"
        )
        results.append((result, _state(rng)))
    (a, state_a), (b, state_b) = results
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_array_equal(a.cumulative_regret, b.cumulative_regret)
    assert state_a == state_b
