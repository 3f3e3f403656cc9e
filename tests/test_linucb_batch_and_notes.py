"""Chowdhury & Zhou 2022 LinUCB: ``batch_size=auto`` (the paper's batch-size corollaries), the local
guarantee stated in P_Vec's certificate notes, and the calibration cache key."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

import dpcert.bandits.calibration.linucb as calibration_module
from dpcert.bandits.calibration.linucb import (
    CACHE_ENV,
    _bit_sum_calibration,
    _cache_path,
    calibrate,
    corollary_batch_size,
)
from dpcert.cli import main
from dpcert.errors import InvalidParameter


def _expected_value(algorithm: str, t: float, d: float, eps: float, delta: float, returning: bool) -> float:
    """The corollaries' B with hidden constants 1, written out from the paper's statements."""
    ln = math.log
    if algorithm == "linucb-sdp-amp" and not returning:  # Cor. B.2
        return (
            (d ** (-1 / 5)) * (eps ** (-2 / 5)) * (t ** (3 / 5)) * (ln(t / delta) * ln(2 / delta)) ** (1 / 5)
        )
    if algorithm == "linucb-sdp-amp":  # Cor. E.4
        return (d ** (-1 / 6)) * (eps ** (-1 / 3)) * (t ** (2 / 3)) * math.sqrt(ln(t / delta))
    if algorithm == "linucb-sdp-vec" and not returning:  # Cor. C.2
        return (d ** (-1 / 5)) * (eps ** (-2 / 5)) * (t ** (3 / 5)) * ln(d * d / delta) ** (2 / 5)
    if algorithm == "linucb-sdp-vec":  # Cor. E.6
        return (d ** (-1 / 6)) * (eps ** (-1 / 3)) * (t ** (2 / 3)) * math.sqrt(ln(t * d * d / delta))
    if (
        algorithm == "linucb-ldp"
    ):  # Cor. B.3 (Prop. F.1 noise): dB = d^(3/4) T^(3/4) ln^(1/4)(1/delta) / sqrt(eps)
        return (d ** (3 / 4) * t ** (3 / 4) * ln(1 / delta) ** (1 / 4) / math.sqrt(eps)) / d
    # linucb-jdp, Prop. F.3 balanced: dB = sqrt(T) d^(3/4) ln^(1/4)(1/delta) / sqrt(eps)
    return (math.sqrt(t) * d ** (3 / 4) * ln(1 / delta) ** (1 / 4) / math.sqrt(eps)) / d


@pytest.mark.parametrize("returning", [False, True])
@pytest.mark.parametrize("algorithm", ["linucb-sdp-amp", "linucb-sdp-vec", "linucb-ldp", "linucb-jdp"])
@pytest.mark.parametrize(
    ("horizon", "dimension", "epsilon", "delta"), [(20_000, 5, 1.0, 0.1), (6_000, 10, 0.2, 1e-4)]
)
def test_auto_batch_size_follows_the_corollary(algorithm, returning, horizon, dimension, epsilon, delta):
    choice = corollary_batch_size(
        algorithm, horizon=horizon, dimension=dimension, epsilon=epsilon, delta=delta,
        participations=4 if returning else 1,
    )  # fmt: skip
    expected = _expected_value(algorithm, horizon, dimension, epsilon, delta, returning)
    assert choice.value == pytest.approx(expected, rel=1e-12)
    if algorithm.startswith("linucb-sdp"):  # full batches: the divisor of T nearest the value
        divisors = [k for k in range(1, horizon + 1) if horizon % k == 0]
        assert horizon % choice.batch_size == 0
        assert abs(choice.batch_size - expected) == min(abs(k - expected) for k in divisors)
    else:
        assert choice.batch_size == min(horizon, max(1, round(expected)))
    tag = {"linucb-sdp-amp": "E.4" if returning else "B.2", "linucb-sdp-vec": "E.6" if returning else "C.2"}
    assert tag.get(algorithm, "F." if algorithm == "linucb-jdp" else "B.3") in choice.rule


def test_auto_batch_size_is_refused_for_the_non_private_algorithm():
    with pytest.raises(InvalidParameter, match="batch_size"):
        corollary_batch_size("linucb", horizon=100, dimension=5, epsilon=1.0, delta=0.1)


def test_console_reports_the_chosen_batch_size_in_json_and_certificate(capsys):
    argv = ["bandit", "run", "linucb-sdp-amp", "--privacy", "shuffle", "--epsilon", "1", "--delta", "0.1"]
    assert main([*argv, "--horizon", "2000", "--runs", "2", "--option", "batch_size=auto", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected = _expected_value("linucb-sdp-amp", 2000, 5, 1.0, 0.1, False)  # 136.5
    assert payload["batch_size"] == 125 == payload["batch_size_rule"]["batch_size"]  # 2000 = 125 * 16
    assert payload["batch_size_rule"]["value"] == pytest.approx(expected)
    assert any(
        "B = 125 chosen by Chowdhury & Zhou 2022, Cor. B.2" in n for n in payload["certificate"]["notes"]
    )
    assert payload["updates"] == 2000 // 125


def _exact_local_delta(epsilon: float, b: int, g: int, coordinates: int) -> float:
    """δ(ε) of one user's counts x̂ + Bin(b, 1/2) per coordinate, every coordinate at 0 vs at g."""
    k = np.arange(b + 1)
    pmf = stats.binom.pmf(k, b, 0.5)
    # outcome c in 0..b+g: P(c) = pmf[c] (x̂ = 0), Q(c) = pmf[c - g] (x̂ = g); loss = ln P/Q
    p = np.concatenate([pmf, np.zeros(g)])
    q = np.concatenate([np.zeros(g), pmf])
    support = p > 0  # outcomes impossible under P carry no mass in delta
    with np.errstate(divide="ignore"):
        single = np.log(p[support]) - np.log(q[support])  # +inf where Q(c) = 0
    mass, loss = np.array([1.0]), np.array([0.0])
    for _ in range(coordinates):  # independent coordinates: losses add, probabilities multiply under P
        mass = np.outer(mass, p[support]).ravel()
        loss = np.add.outer(loss, single).ravel()
    return float(np.sum(mass * np.clip(1.0 - np.exp(epsilon - loss), 0.0, None)))


def test_pvec_notes_state_the_local_guarantee_of_one_users_messages():
    # d = 1: the statistic has 2 entries (phi*y and phi^2), entry bounds, p = 1/2 chosen by hand
    c = calibrate(
        "linucb-sdp-vec", epsilon=1.0, delta=0.1, horizon=40, batch_size=20, dimension=1,
        bit_sum={"g": 4, "b": 24, "p": 0.5},
    )  # fmt: skip
    (note,) = [n for n in c.certificate.notes if n.startswith("implied local guarantee")]
    assert "n = 1" in note and "epsilon sqrt(B) = 4.472" in note
    eps0 = c.local_epsilon
    assert eps0 is not None and f"({eps0:.4g}, 0.1)-LDP" in note
    # the stated epsilon0 holds exactly and is within 1% of the least one (exact PMFs above)
    assert _exact_local_delta(eps0, 24, 4, 2) <= 0.1
    assert _exact_local_delta(0.99 * eps0, 24, 4, 2) > 0.1


def test_pvec_notes_say_when_a_users_messages_alone_guarantee_nothing():
    c = calibrate(
        "linucb-sdp-vec", epsilon=10.0, delta=0.1, horizon=40, batch_size=20, dimension=1,
        bit_sum={"g": 8, "b": 5, "p": 0.5},
    )  # fmt: skip
    (note,) = [n for n in c.certificate.notes if n.startswith("implied local guarantee")]
    assert c.local_epsilon is None and "b = 5 noise bits < g = 8" in note and "delta = 1" in note


def test_cache_key_holds_the_certificate_texts_so_stale_entries_are_not_served(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    _bit_sum_calibration.cache_clear()
    fresh = _bit_sum_calibration(2.0, 0.1, 4, 2, "tight")
    (path,) = tmp_path.glob("calibration-*.json")
    entry = json.loads(path.read_text())
    assert entry["key"]["basis"]["format"] == calibration_module.CACHE_FORMAT
    assert fresh.certificate.basis in entry["key"]["basis"]["bases"]
    # an entry written before the basis field existed (same arguments and version) is never looked up
    old_key = {k: v for k, v in entry["key"].items() if k != "basis"}
    stale = _cache_path(tmp_path, old_key)
    stale.write_text(json.dumps({**entry, "key": old_key}))
    assert stale != path
    # a changed basis text (e.g. a citation rewritten) is another key: recomputed, not served
    _bit_sum_calibration.cache_clear()
    monkeypatch.setattr(calibration_module.binomial_sum, "EXACT_L2_BASIS", "another basis text")
    calls = []
    original = calibration_module.calibrate_binomial_sum
    monkeypatch.setattr(
        calibration_module, "calibrate_binomial_sum", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    _bit_sum_calibration(2.0, 0.1, 4, 2, "tight")
    assert calls == [1] and len(list(tmp_path.glob("calibration-*.json"))) == 3
    # the same texts again: served from disk
    _bit_sum_calibration.cache_clear()
    _bit_sum_calibration(2.0, 0.1, 4, 2, "tight")
    assert calls == [1]
    _bit_sum_calibration.cache_clear()
