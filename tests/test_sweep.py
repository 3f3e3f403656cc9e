"""Sweeps and repetitions on Dask give the numbers of the local run with the same seeds."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from dpcert.bandits import registry
from dpcert.bandits.experiment import run_repetitions
from dpcert.bandits.scheduler import chunk_bounds, map_on_dask
from dpcert.cli import main
from dpcert.reproductions.sweep import reproduce, sweep

distributed = pytest.importorskip("distributed", reason="needs the distributed extra")


@pytest.fixture(scope="module")
def address():
    """An in-process cluster (2 single-threaded workers) reached over TCP, as a remote one would be."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address=":0"
    ) as cluster:
        yield cluster.scheduler_address


def _draws(index: int) -> np.ndarray:
    return np.random.default_rng([11, index]).normal(size=3)


@pytest.mark.parametrize("count,chunks", [(1, 4), (7, 3), (10, 10), (5, 12)])
def test_chunks_cover_every_index_once(count, chunks):
    bounds = chunk_bounds(count, chunks)
    covered = [i for a, b in bounds for i in range(a, b)]
    assert covered == list(range(count))
    sizes = [b - a for a, b in bounds]
    assert max(sizes) - min(sizes) <= 1


def test_repetitions_on_dask_equal_local_and_forked(address):
    local = run_repetitions(_draws, 9, progress=False)
    forked = run_repetitions(_draws, 9, workers=2, progress=False)
    on_dask = run_repetitions(_draws, 9, progress=False, scheduler=address)
    expected = np.stack([np.random.default_rng([11, i]).normal(size=3) for i in range(9)])
    for result in (local, forked, on_dask):
        np.testing.assert_array_equal(np.stack(result), expected)


def test_map_on_dask_reports_every_item_in_chunks(address):
    done: list[int] = []
    results = map_on_dask(lambda i: i * i, 10, address, chunks=3, on_done=done.append)
    assert results == [i * i for i in range(10)]
    assert sorted(done) == [3, 3, 4]  # three tasks, progress counted in items


def _bandit_json(capsys, *scheduler):
    argv = [
        "bandit", "run", "dp-dpe", "--privacy", "central", "--epsilon", "1", "--delta", "1e-5",
        "--horizon", "3000", "--runs", "5", "--seed", "4", "--option", "dimension=5", "--option", "arms=20",
        "--json", *scheduler,
    ]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    data.pop("seconds")
    record = data.pop("provenance")  # the command line differs: the rest of the record is the same
    return {**data, "provenance": {k: v for k, v in record.items() if k not in ("command", "timing")}}


def test_cli_bandit_run_identical_on_local_and_dask(capsys, address):
    local = _bandit_json(capsys)
    remote = _bandit_json(capsys, "--scheduler", address)
    assert remote == local
    assert local["runs"] == 5 and local["regret"]["mean"] > 0


def test_cli_scheduler_dask_starts_a_local_cluster(capsys):
    local = _bandit_json(capsys, "--scheduler", "local")
    assert _bandit_json(capsys, "--scheduler", "dask") == local


def _without_seconds(value):
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def test_figure1_split_by_panel_equals_the_registered_reproduction(address, tmp_path):
    from dpcert.reproductions.chowdhury_zhou_2022 import reproduction

    original = reproduction("chowdhury-zhou-2022-fig1", (0.2, 1.0, 10.0), (5,), horizon=300)(
        runs=3, out=None, seed=5
    )
    split = reproduce(
        "chowdhury-zhou-2022-fig1", runs=3, out=tmp_path, seed=5, scheduler=address, horizon=300
    )
    written = {
        "table",
        "table_file",
        "curves_file",
        "figures",
        "claims_file",
        "provenance",
    }  # only with an output directory
    assert _without_seconds({k: v for k, v in split.items() if k not in written}) == _without_seconds(
        original
    )
    assert len(split["panels"]) == 3
    assert (tmp_path / "chowdhury-zhou-2022-fig1.json").exists()
    assert len(split["figures"]) == 3 * 2  # one figure per panel and calibration, five curves each


def test_sweep_points_equal_single_runs(address, capsys):
    kwargs = dict(horizon=400, runs=2, delta=0.1, options={"dp-dpe": {"dimension": 4, "arms": 10}})
    grid = ([("dp-dpe", "central"), "linucb-ldp"], [0.5, 4.0], [0, 9])
    local = sweep(*grid, **kwargs)
    remote = sweep(*grid, scheduler=address, progress=True, **kwargs)
    assert capsys.readouterr().err.strip().splitlines()[-1] == "sweep: 8/8 tasks"
    assert [(p.algorithm, p.epsilon, p.seed) for p in remote] == [
        (p.algorithm, p.epsilon, p.seed) for p in local
    ]
    for a, b in zip(local, remote, strict=True):
        np.testing.assert_array_equal(a.run.cumulative_regret, b.run.cumulative_regret)
        assert a.run.certificate.to_dict() == b.run.certificate.to_dict()
    # a sweep point is the single run with that seed
    single = registry.algorithm("linucb-ldp").run(
        registry.RunConfig("linucb-ldp", "local", 4.0, 0.1, 400, 2, 9)
    )
    point = next(p for p in local if (p.algorithm, p.epsilon, p.seed) == ("linucb-ldp", 4.0, 9))
    np.testing.assert_array_equal(point.run.cumulative_regret, single.cumulative_regret)
    # different seeds give different curves (the seed reaches the run)
    assert not np.array_equal(local[0].run.cumulative_regret, local[1].run.cumulative_regret)


def test_vectorised_algorithm_and_unsplit_reproduction_refuse_dask(capsys, address):
    assert main(["bandit", "run", "linucb", "--horizon", "50", "--scheduler", address]) == 2
    assert "--scheduler" in capsys.readouterr().err
    assert main(["reproduce", "li-zhou-ji-2022-fig2a", "--scheduler", address]) == 2
    assert "chowdhury-zhou-2022-fig1" in capsys.readouterr().err


def test_without_dask_the_cli_exits_2_naming_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    argv = ["bandit", "run", "dp-dpe", "--privacy", "central", "--epsilon", "1", "--delta", "1e-5"]
    assert main([*argv, "--horizon", "100", "--scheduler", "dask"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "dpcert[distributed]" in err
    assert main(["reproduce", "chowdhury-zhou-2022-fig1", "--scheduler", "dask"]) == 2
    assert "dpcert[distributed]" in capsys.readouterr().err
