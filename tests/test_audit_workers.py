"""The classifier search's screening in several processes: the same report as in one, whatever the
number of workers (every draw is made in the parent, in the same order; learning uses no randomness)."""

from __future__ import annotations

import json
import multiprocessing
import time
import warnings

import pytest

from dpcert.audits import CandidatePairs, ClassifierSearch, audit
from dpcert.audits.benchmark_mechanisms import benchmark_mechanism
from dpcert.audits.classifier_search import _map_forked
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
