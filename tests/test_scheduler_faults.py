"""A Dask scheduler out of reach or a cluster that loses every worker ends the run in bounded time."""

from __future__ import annotations

import threading
import time

import pytest

from dpcert.bandits import scheduler
from dpcert.bandits.scheduler import check_scheduler, map_on_dask
from dpcert.cli import main
from dpcert.errors import InvalidParameter, SchedulerUnavailable

distributed = pytest.importorskip("distributed", reason="needs the distributed extra")


@pytest.mark.parametrize(
    "value", ["tcp://", "tcp://host", "tcp://host:0", "tcp://host:99999", "tcp://:80", "x"]
)
def test_a_scheduler_address_without_a_valid_port_is_refused(value: str) -> None:
    with pytest.raises(InvalidParameter, match="scheduler"):
        check_scheduler(value)
    assert check_scheduler("tcp://127.0.0.1:8786") == "tcp://127.0.0.1:8786"


def test_an_unreachable_scheduler_is_exit_3_in_one_line(capsys, monkeypatch) -> None:
    monkeypatch.setattr(scheduler, "CONNECT_TIMEOUT", 2.0)
    argv = ["bandit", "run", "dp-dpe", "--privacy", "central", "--epsilon", "1", "--delta", "1e-5"]
    start = time.monotonic()
    assert main([*argv, "--horizon", "200", "--runs", "2", "--scheduler", "tcp://127.0.0.1:1"]) == 3
    assert time.monotonic() - start < 30.0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not be reached" in err[0] and "nothing was run" in err[0], err


def _slow(index: int) -> int:
    time.sleep(4.0)
    return index


def test_a_cluster_that_loses_every_worker_is_abandoned_saying_so(monkeypatch) -> None:
    monkeypatch.setattr(scheduler, "WORKERLESS_TIMEOUT", 2.0)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address=":0"
    ) as cluster:

        def lose_workers() -> None:
            time.sleep(1.0)
            cluster.scale(0)

        threading.Thread(target=lose_workers, daemon=True).start()
        start = time.monotonic()
        with pytest.raises(SchedulerUnavailable, match="no worker for 2 s; 0 of 2 items were done"):
            map_on_dask(_slow, 2, cluster.scheduler_address, chunks=2)
        assert time.monotonic() - start < 30.0
