"""The classifier search in several processes: the same report as in one, whatever the number of
workers (every block of draws has its own generator, whichever process draws it; learning uses no
randomness)."""

from __future__ import annotations

import json
import multiprocessing
import time
import warnings

import numpy as np
import pytest

from dpcert.audits import CandidatePairs, ClassifierSearch, audit
from dpcert.audits.benchmark_mechanisms import benchmark_mechanism
from dpcert.audits.classifier_search import _map_forked, learn_event, spawned_draws
from dpcert.audits.sampling import draw
from dpcert.cli import main
from dpcert.errors import InvalidParameter


def _without_times(value):
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if "seconds" not in k}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


@pytest.mark.parametrize("name", ["NoisyMaxValue-Laplace", "iSVT2"])
def test_the_report_does_not_depend_on_the_workers(name):
    entry = benchmark_mechanism(name)
    reports = []
    for workers in (1, 2, 3):
        search = ClassifierSearch(CandidatePairs(entry.pairs(), relation=entry.relation), workers=workers)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = audit(
                entry.mechanism, epsilon=entry.claimed_epsilon, search=search, samples=30_000, seed=4
            )
        reports.append(json.dumps(_without_times(report.to_dict()), sort_keys=True, default=str))
    assert reports[0] == reports[1] == reports[2]
    assert json.loads(reports[0])["search"]["candidates"] > 2  # several pairs were screened in parallel


def _square_or_refuse(x: int) -> int:
    if x == 5:
        raise InvalidParameter("x", x, "not 5")
    return x * x


def test_forked_map_keeps_the_order_and_raises_a_childs_error():
    assert _map_forked(lambda x: x * x, list(range(7)), 3) == [x * x for x in range(7)]
    assert _map_forked(lambda x: x + 1, [1], 4) == [2]
    with pytest.raises(InvalidParameter, match="x"):
        _map_forked(_square_or_refuse, list(range(7)), 2)


def test_workers_are_validated():
    pairs = CandidatePairs([([0.0], [1.0])])
    with pytest.raises(InvalidParameter, match="workers"):
        ClassifierSearch(pairs, workers=0)
    argv = ["audit", "builtin:laplace", "--epsilon", "1", "--seed", "1"]
    assert main([*argv, "--input", "0", "--neighbour", "1", "--workers", "2"]) == 2  # not a classifier search
    assert main([*argv, "--search", "classifier", "--length", "2", "--workers", "0"]) == 2


def _fail_first_or_wait(x: int) -> int:
    if x == 0:
        raise InvalidParameter("x", x, "not 0")
    time.sleep(30)  # still running when the first item's error arrives
    return x


def test_an_error_stops_the_other_workers():
    start = time.perf_counter()
    with pytest.raises(InvalidParameter):
        _map_forked(_fail_first_or_wait, [0, 1, 2], 3)
    assert multiprocessing.active_children() == []  # the sleeping workers were stopped
    assert time.perf_counter() - start < 20  # not waited for


def _shifted_normals(value, rng, size):
    return value + rng.standard_normal((size, 3))


def _integers_on_two(value, rng, size):
    """Floats, except integer outputs on the input 2 (a type the probe does not announce)."""
    out = value + rng.standard_normal((size, 3))
    return np.floor(out).astype(np.int64) if value == 2 else out


def _words(value, rng, size):
    return np.array([f"w{int(v)}" for v in rng.integers(0, 5, size=size) + value])


def test_spawned_draws_are_one_generator_per_block_for_every_number_of_workers():
    values, samples, chunk = [0.0, 10.0, 20.0], 1000, 300
    probe = np.asarray(draw(_shifted_normals, 0.0, 1, np.random.default_rng(0)))
    drawn = {
        workers: spawned_draws(
            _shifted_normals, values, samples, np.random.default_rng(5), chunk, workers, probe
        )
        for workers in (1, 2, 3, 5)
    }
    # the replay: block i of value v from the (4 v + i)-th child of the seed sequence, in order
    entropy = [int(v) for v in np.random.default_rng(5).integers(0, 2**63, size=4)]
    seeds = np.random.SeedSequence(entropy).spawn(len(values) * 4)
    expected = [
        np.concatenate(
            [
                values[v] + np.random.Generator(np.random.PCG64(seeds[4 * v + i])).standard_normal((size, 3))
                for i, size in enumerate((300, 300, 300, 100))
            ]
        )
        for v in range(len(values))
    ]
    for workers, outputs in drawn.items():
        assert len(outputs) == len(values)
        for got, want in zip(outputs, expected, strict=True):
            assert got.shape == (samples, 3) and got.dtype == np.float64
            np.testing.assert_array_equal(got, want, err_msg=f"workers={workers}")
    assert np.abs(drawn[2][1].mean() - 10.0) < 0.2  # the blocks are filled in, not left at zero


@pytest.mark.parametrize("mechanism", [_integers_on_two, _words])
def test_spawned_draws_of_unannounced_types_are_drawn_here_with_the_same_outputs(mechanism):
    values = [0, 1, 2]
    probe = np.asarray(draw(mechanism, 0, 1, np.random.default_rng(0)))
    one = spawned_draws(mechanism, values, 500, np.random.default_rng(9), 128, 1, probe)
    two = spawned_draws(mechanism, values, 500, np.random.default_rng(9), 128, 2, probe)
    for got, want in zip(two, one, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert one[2].dtype.kind == ("i" if mechanism is _integers_on_two else "U")


@pytest.mark.parametrize(
    "name",
    [
        "iSVT4",  # sparse-vector outputs: binned cells, row summaries, logistic regression
        "DPSniper-NumericalSVT",
        "DPSniper-Laplace",  # one coordinate: binned cells and logistic regression
        "DPSniper-SVT34Parallel",  # independent blocks, learned side by side
    ],
)
def test_learning_in_forked_groups_gives_the_event_of_one_process(name):
    """Without a marginal score every scorer is judged, and the groups are judged side by side; the
    blocks of outputs made of independent blocks are learned side by side."""
    entry = benchmark_mechanism(name)
    pairs = CandidatePairs(entry.pairs(), relation=entry.relation)
    candidate = pairs.candidates(np.random.default_rng(0))[0]
    rng = np.random.default_rng(3)
    on_a = draw(entry.mechanism, candidate.a, 30_000, rng)
    on_b = draw(entry.mechanism, candidate.b, 30_000, rng)
    one, forecast_one = learn_event(on_a, on_b, 200_000, 0.0, 0.95)
    for workers in (2, 3):
        event, forecast = learn_event(on_a, on_b, 200_000, 0.0, 0.95, workers=workers)
        assert forecast == forecast_one
        assert (event.numerator, event.threshold, event.tie, event.weights) == (
            one.numerator,
            one.threshold,
            one.tie,
            one.weights,
        )
        assert type(event.marginals) is type(one.marginals) and type(event.summary) is type(one.summary)
        probe = draw(entry.mechanism, candidate.a, 2_000, np.random.default_rng(11))
        np.testing.assert_array_equal(event.scores(probe), one.scores(probe))
