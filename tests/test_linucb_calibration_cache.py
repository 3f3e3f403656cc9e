"""The P_Vec calibrations read from the disk cache: served only after a check at the certified point.

A hit must give exactly the calibration that :func:`calibrate_binomial_sum` computes (compared with a
direct call, not with the cache's own output), after one evaluation of the exact profile at the
stored (ε, δ) and no search; a tampered entry must be a miss, recomputed and written again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import dpcert.bandits.calibration.linucb as calibration_module
from dpcert.bandits.calibration.linucb import CACHE_ENV, _bit_sum_calibration
from dpcert.mechanisms.shuffle.binomial_sum import BinomialSumProfile, calibrate_binomial_sum

# small enough for a test: B = 4 users, d = 2 (5 coordinates, l2 patterns as for the Figure 1 panel)
ARGUMENTS = (2.0, 0.1, 4, 2)


def _fresh(calibration: str) -> Any:
    """The calibration computed directly, as :func:`_bit_sum_calibration` computes it on a miss."""
    epsilon, delta, users, dimension = ARGUMENTS
    return calibrate_binomial_sum(
        epsilon,
        delta,
        users=users,
        dimension=dimension,
        bound=1.0,
        shape="vector+matrix",
        method="paper" if calibration == "paper" else "exact",
        norm="entry" if calibration == "paper" else "l2",
    )


def _same(result: Any, fresh: Any) -> bool:
    return (
        result.parameters == fresh.parameters
        and result.method == fresh.method
        and result.certificate.to_json() == fresh.certificate.to_json()
    )


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache directory, the in-memory cache cleared before and after, and a counter of the
    calibration searches run (``calls``)."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    calls: list[int] = []
    original = calibration_module.calibrate_binomial_sum
    monkeypatch.setattr(
        calibration_module, "calibrate_binomial_sum", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    _bit_sum_calibration.cache_clear()
    yield tmp_path, calls
    _bit_sum_calibration.cache_clear()


def _counting_profile(monkeypatch) -> dict[str, int]:
    """Counts of the bit-sum profile's evaluations (``delta_for``), decisions of a claim (``meets``,
    with the number of them that held) and searches (``epsilon_for``)."""
    counts = {"delta_for": 0, "epsilon_for": 0, "meets": 0, "met": 0}
    for name in ("delta_for", "epsilon_for", "meets"):
        original = getattr(BinomialSumProfile, name)

        def counted(self, *values, _original=original, _name=name):
            counts[_name] += 1
            result = _original(self, *values)
            if _name == "meets":
                counts["met"] += bool(result)
            return result

        monkeypatch.setattr(BinomialSumProfile, name, counted)
    return counts


@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_a_hit_is_the_fresh_calibration_after_one_evaluation_and_no_search(cache, monkeypatch, calibration):
    directory, calls = cache
    fresh = _fresh(calibration)
    first = _bit_sum_calibration(*ARGUMENTS, calibration)  # a miss: computed and written
    assert calls == [1] and _same(first, fresh)
    (path,) = directory.glob("calibration-*.json")
    _bit_sum_calibration.cache_clear()  # as a new process
    counts = _counting_profile(monkeypatch)
    cached = _bit_sum_calibration(*ARGUMENTS, calibration)
    assert calls == [1], "a hit must not run the calibration search"
    assert _same(cached, fresh)
    # the certified point, and for the least-noise calibration the claim with one bit fewer (which fails)
    fewer = 0 if calibration == "paper" else 1
    assert counts == {"delta_for": 1, "epsilon_for": 0, "meets": fewer, "met": 0}
    assert json.loads(path.read_text())["certificate"] == fresh.certificate.to_json()


def _edit_certificate(edit: Callable[[dict], None]) -> Callable[[dict], None]:
    def tamper(entry: dict) -> None:
        certificate = json.loads(entry["certificate"])
        edit(certificate)
        entry["certificate"] = json.dumps(certificate)

    return tamper


def _both(name: str, value: Any) -> Callable[[dict], None]:
    """Change a parameter in the entry and in its certificate alike (a consistent edit)."""

    def tamper(entry: dict) -> None:
        entry["parameters"][name] = value
        _edit_certificate(lambda c: c["parameters"].__setitem__(name, value))(entry)

    return tamper


TAMPERS: dict[str, Callable[[dict], None]] = {
    "claim: smaller epsilon": _edit_certificate(lambda c: c["guarantee"].__setitem__("epsilon", 1.0)),
    "claim: smaller delta": _edit_certificate(lambda c: c["guarantee"].__setitem__("delta", 1e-3)),
    "fewer noise bits": _both("b", 1),
    "other precision g": _both("g", 3),
    "other bit probability p": _both("p", 0.25),
    "entry bounds instead of l2": _both("norm", "entry"),
    "more users": _both("users", 5),
    "certificate of other parameters": _edit_certificate(
        lambda c: c["parameters"].__setitem__("b", c["parameters"]["b"] + 1)
    ),
    "a note rewritten": _edit_certificate(lambda c: c["notes"].__setitem__(0, "no caveat")),
    "another basis": _edit_certificate(lambda c: c.__setitem__("basis", "trust me")),
    "another method": lambda entry: entry.__setitem__("method", "paper"),
    "another key": lambda entry: entry["key"].__setitem__("epsilon", 1.0),
}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_a_tampered_entry_is_a_miss_recomputed_and_written_again(cache, tamper):
    directory, calls = cache
    fresh = _fresh("tight")
    _bit_sum_calibration(*ARGUMENTS, "tight")
    (path,) = directory.glob("calibration-*.json")
    entry = json.loads(path.read_text())
    TAMPERS[tamper](entry)
    path.write_text(json.dumps(entry))
    _bit_sum_calibration.cache_clear()
    recomputed = _bit_sum_calibration(*ARGUMENTS, "tight")
    assert calls == [1, 1], f"{tamper}: the tampered entry was served"
    assert _same(recomputed, fresh)
    # the entry is written again and served from then on
    _bit_sum_calibration.cache_clear()
    assert _same(_bit_sum_calibration(*ARGUMENTS, "tight"), fresh) and calls == [1, 1]


@pytest.mark.parametrize("text", ["", "{", "[]", '{"key": 1}', "null"])
def test_a_corrupt_entry_is_a_miss(cache, text):
    directory, calls = cache
    _bit_sum_calibration(*ARGUMENTS, "tight")
    (path,) = directory.glob("calibration-*.json")
    path.write_text(text)
    _bit_sum_calibration.cache_clear()
    assert _same(_bit_sum_calibration(*ARGUMENTS, "tight"), _fresh("tight")) and calls == [1, 1]


def test_a_raised_noise_count_is_a_miss(cache):
    """More noise bits than the least: the claim still holds, but the run would differ from one that
    calibrated afresh, so the entry is refused (the claim fails with one bit fewer than it states)."""
    directory, calls = cache
    fresh = _fresh("tight")
    _bit_sum_calibration(*ARGUMENTS, "tight")
    (path,) = directory.glob("calibration-*.json")
    entry = json.loads(path.read_text())
    _both("b", fresh.parameters.b + 3)(entry)
    path.write_text(json.dumps(entry))
    _bit_sum_calibration.cache_clear()
    served = _bit_sum_calibration(*ARGUMENTS, "tight")
    assert calls == [1, 1] and _same(served, fresh)
    # independently of the cache: the fresh b is the least, so b + 3 could only come from an edit
    epsilon, delta = ARGUMENTS[:2]
    fewer = BinomialSumProfile({**fresh.parameters.to_dict(), "b": fresh.parameters.b - 1})
    assert fresh.parameters.b == 1 or fewer.delta_for(epsilon) > delta
