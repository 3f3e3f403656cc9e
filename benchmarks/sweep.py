"""Sweeps on Dask: ``chowdhury-zhou-2022-fig1`` on the local scheduler and on a Dask LocalCluster, side by
side.

Records the wall time of each, checks that both give the same summary (every number but ``seconds``),
and measures the scheduling overhead per task: the mean round trip of a no-op task on the same cluster
against the mean compute time of a figure task (read from Dask's task stream).

    python benchmarks/sweep.py [--runs 50] [--horizon 20000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import distributed

from dpcert.reproductions.sweep import reproduce


def _without_seconds(value):
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def _noop(index: int) -> int:
    return index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--horizon", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; load: {os.getloadavg()}")
    horizon = None if args.horizon == 20_000 else args.horizon

    start = time.perf_counter()
    local = reproduce("chowdhury-zhou-2022-fig1", runs=args.runs, seed=0, horizon=horizon)
    local_wall = time.perf_counter() - start
    print(f"local scheduler (registered reproduction, one process): {local_wall:.2f} s")

    start = time.perf_counter()
    with (
        distributed.LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        startup = time.perf_counter() - start
        client.run(lambda: __import__("dpcert.bandits"))  # import cost paid once per worker, as in use
        with distributed.get_task_stream(client) as stream:
            start = time.perf_counter()
            remote = reproduce(
                "chowdhury-zhou-2022-fig1", runs=args.runs, seed=0, scheduler=client, horizon=horizon
            )
            dask_wall = time.perf_counter() - start
        computes = [
            part["stop"] - part["start"]
            for task in stream.data
            for part in task["startstops"]
            if part["action"] == "compute"
        ]
        trips = []
        for index in range(30):
            begin = time.perf_counter()
            client.submit(_noop, index, pure=False).result()
            trips.append(time.perf_counter() - begin)
    same = _without_seconds(local) == _without_seconds(remote)
    work = sum(computes)
    round_trip = sorted(trips)[len(trips) // 2]
    mean_task = work / len(computes)
    print(
        f"dask LocalCluster ({args.workers} worker processes): {dask_wall:.2f} s (+{startup:.2f} s start-up)"
    )
    print(f"tasks: {len(computes)}, mean compute {mean_task:.2f} s, total compute {work:.2f} s")
    print(f"wall ratio dask/local: {dask_wall / local_wall:.3f}")
    print(f"no-op task round trip (median of 30): {1000 * round_trip:.2f} ms")
    print(f"per-task overhead / mean task compute: {round_trip / mean_task:.2e}")
    share = dask_wall * args.workers / work - 1
    print(f"wall x workers / total compute - 1 (idle + overhead share): {share:.3f}")
    print(f"identical summaries (all numbers but seconds): {same}")
    print(json.dumps({"local_wall": local_wall, "dask_wall": dask_wall, "startup": startup, "same": same}))


if __name__ == "__main__":
    main()
