"""Where the repetitions of a sweep run: this process (``local``) or a Dask cluster.

* ``"local"``: the caller's own loop or process pool (unchanged behaviour).
* ``"dask"``: a :class:`distributed.LocalCluster` on this machine, closed when the sweep ends.
* ``"tcp://HOST:PORT"``: an existing Dask scheduler.

Dask (``pip install "dpcert[distributed]"``) is optional.  Work items are grouped into chunks so
that the per-task scheduling cost (a few milliseconds) stays small next to the work; every item is
seeded by its index, never by the worker that runs it, so the numbers do not depend on the scheduler.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from dpcert.errors import InvalidParameter, SchedulerUnavailable

T = TypeVar("T")
EXTRA_HINT = "pip install 'dpcert[distributed]'"
CHUNKS_PER_WORKER = 2
"""Chunks per worker thread: enough to balance uneven runs, few enough to keep overhead small."""


CONNECT_TIMEOUT = 20.0
"""Seconds to reach a ``tcp://`` scheduler before giving up (exit 3 on the command line)."""
WORKERLESS_TIMEOUT = 60.0
"""Seconds a cluster may have no worker while work is pending before the run is abandoned."""


def check_scheduler(scheduler: Any, name: str = "scheduler") -> Any:
    """``"local"``, ``"dask"``, ``"tcp://HOST:PORT"`` (a host and a port in 1..65535) or a
    ``distributed.Client``; others refused naming ``name``."""
    if isinstance(scheduler, str):
        if scheduler in ("local", "dask"):
            return scheduler
        if scheduler.startswith("tcp://"):
            host, _, port = scheduler[len("tcp://") :].rpartition(":")
            if host and port.isdigit() and 1 <= int(port) <= 65535:
                return scheduler
    elif type(scheduler).__name__ == "Client" and hasattr(scheduler, "submit"):
        return scheduler
    raise InvalidParameter(name, scheduler, "'local', 'dask' or 'tcp://HOST:PORT' with a port in 1..65535")


def require_distributed(scheduler: Any = "dask") -> Any:
    """The ``distributed`` module, or :class:`InvalidParameter` naming the extra to install."""
    try:
        import distributed
    except ImportError:
        raise InvalidParameter(
            "scheduler", scheduler, f"'local' unless Dask is installed ({EXTRA_HINT})"
        ) from None
    return distributed


@contextlib.contextmanager
def dask_client(scheduler: Any) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler``; a LocalCluster it starts is closed on exit."""
    scheduler = check_scheduler(scheduler)
    if not isinstance(scheduler, str):
        yield scheduler
        return
    distributed = require_distributed(scheduler)
    if scheduler == "dask":
        workers = max(1, min(4, os.cpu_count() or 1))
        with (
            distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            yield client
    else:
        try:
            client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise SchedulerUnavailable(
                f"the Dask scheduler {scheduler} could not be reached within {CONNECT_TIMEOUT:g} s "
                f"({type(exc).__name__}); nothing was run"
            ) from None
        with client:
            yield client


def worker_threads(client: Any) -> int:
    """Worker threads of the cluster behind ``client`` (at least 1)."""
    info = client.scheduler_info()
    return max(1, sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values()))


def chunk_bounds(count: int, chunks: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of ``chunks`` contiguous, nearly equal slices of ``range(count)`` (none empty)."""
    chunks = max(1, min(chunks, count))
    size = count / chunks
    bounds = [(round(i * size), round((i + 1) * size)) for i in range(chunks)]
    return [(a, b) for a, b in bounds if b > a]


def _run_chunk(function: Callable[[int], Any], start: int, stop: int) -> list[Any]:
    return [function(index) for index in range(start, stop)]


def map_on_dask(
    function: Callable[[int], T],
    count: int,
    scheduler: Any,
    *,
    chunks: int | None = None,
    on_done: Callable[[int], None] | None = None,
) -> list[T]:
    """``[function(0), …, function(count − 1)]`` computed on Dask, in index order.

    Indices are grouped into ``chunks`` contiguous tasks (default: :data:`CHUNKS_PER_WORKER` per worker
    thread).  ``on_done(n)`` is called as each task finishes with the number of items it held.
    ``function`` is shipped with cloudpickle, so closures work; its results must be picklable.
    """
    with dask_client(scheduler) as client:
        distributed = require_distributed()
        parts = chunks if chunks is not None else CHUNKS_PER_WORKER * worker_threads(client)
        bounds = chunk_bounds(count, parts)
        token = uuid.uuid4().hex
        futures = [
            client.submit(_run_chunk, function, a, b, pure=False, key=f"dpcert-chunk-{a}-{b}-{token}")
            for a, b in bounds
        ]
        position = {future.key: i for i, future in enumerate(futures)}
        gathered: list[list[T] | None] = [None] * len(futures)
        pending = set(futures)
        workerless_since: float | None = None
        while pending:
            try:
                done, pending = distributed.wait(pending, timeout=2.0, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            for future in done:
                i = position[future.key]
                gathered[i] = future.result()
                if on_done is not None:
                    on_done(bounds[i][1] - bounds[i][0])
            if done or not pending:
                workerless_since = None
                continue
            if client.scheduler_info().get("workers"):
                workerless_since = None
            elif workerless_since is None:
                workerless_since = time.monotonic()
            elif time.monotonic() - workerless_since > WORKERLESS_TIMEOUT:
                client.cancel(list(pending))
                finished = sum(
                    b - a for (a, b), part in zip(bounds, gathered, strict=True) if part is not None
                )
                raise SchedulerUnavailable(
                    f"the Dask cluster has had no worker for {WORKERLESS_TIMEOUT:g} s; {finished} of "
                    f"{count} items were done and are not returned"
                )
    return [item for part in gathered for item in part]  # type: ignore[union-attr]


def map_items(
    function: Callable[[Any], T],
    items: Sequence[Any],
    scheduler: Any,
    *,
    on_done: Callable[[int], None] | None = None,
) -> list[T]:
    """``[function(item) for item in items]`` here (``"local"``) or on Dask, one task per item."""
    scheduler = check_scheduler(scheduler)
    if scheduler == "local":
        results = []
        for item in items:
            results.append(function(item))
            if on_done is not None:
                on_done(1)
        return results
    items = list(items)
    return map_on_dask(
        lambda i: function(items[i]), len(items), scheduler, chunks=len(items), on_done=on_done
    )
