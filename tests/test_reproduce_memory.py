"""``dpcert reproduce NAME --runs R`` refuses, before any work, runs whose peak memory cannot fit.

The estimate is ``1.5 GiB + 8 x (values one run works on) + R x (rounds of curves held per run) x 128
bytes`` (16 float64 values per run, round and curve held).  The peaks it must bound were measured with GNU
``/usr/bin/time -v`` ("Maximum resident set size", KiB) of ``dpcert reproduce NAME --runs R [...] --out
DIR`` on the development machine (:data:`MEASURED`), plus the 4.47 GiB reported for
li-zhou-ji-2022-fig2b at R = 20.  The arrays fig2b certainly holds at its peak give an independent lower
bound: DPE's curve and realised regret and the private run's two, four (R, T) float64 arrays, T = 10^6.
"""

from __future__ import annotations

import contextlib
import io
from itertools import pairwise
from pathlib import Path

import pytest

from dpcert.bandits import registry
from dpcert.cli import bandit as cli_bandit
from dpcert.cli import main
from dpcert.errors import InvalidParameter

GIB = 2**30
FIG2B = "li-zhou-ji-2022-fig2b"
MEASURED = [  # (name, runs, --horizon, --option settings, maximum resident set size in KiB)
    (FIG2B, 1, None, {}, 1_037_464),
    (FIG2B, 3, None, {}, 1_256_352),
    (FIG2B, 8, None, {}, 3_274_200),
    (FIG2B, 16, None, {}, 4_621_916),  # 10 min 53 s
    ("chowdhury-zhou-2022-fig1", 20, 2000, {}, 648_132),
    ("chowdhury-zhou-2022-fig1", 200, 2000, {}, 741_204),
    ("improved-ldp-linear-fig1", 20, None, {"horizon": 2000}, 570_376),
    ("improved-ldp-linear-fig1", 200, None, {"horizon": 2000}, 628_192),
    ("tenenbaum-2021-mab", 5, None, {"horizon": 100_000}, 148_248),
    ("tenenbaum-2021-mab", 40, None, {"horizon": 100_000}, 150_080),
    ("charisopoulos-2023-e1", 5, None, {"horizons": [100_000]}, 92_540),
    ("charisopoulos-2023-e1", 40, None, {"horizons": [100_000]}, 92_872),
    ("charisopoulos-2023-e2", 4, None, {"horizon": 50_000}, 187_932),
    ("charisopoulos-2023-e2", 32, None, {"horizon": 50_000}, 191_748),
    ("charisopoulos-2023-e3", 4, None, {"horizon": 50_000}, 89_180),
    ("charisopoulos-2023-e3", 32, None, {"horizon": 50_000}, 147_152),
    ("charisopoulos-2023-e4", 4, None, {"horizons": [50_000]}, 94_324),
    ("charisopoulos-2023-e4", 32, None, {"horizons": [50_000]}, 153_520),
]
REPORTED_FIG2B_20_RUNS = 4.47 * GIB


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def peak(name: str, runs: int, horizon: int | None = None, options: dict[str, object] | None = None) -> float:
    _, rounds, working = cli_bandit.reproduction_memory(name, horizon, dict(options or {}))
    return cli_bandit.reproduction_peak_bytes(runs, rounds, working)


@pytest.mark.parametrize(("name", "runs", "horizon", "options", "kib"), MEASURED)
def test_the_estimate_bounds_the_measured_peaks(
    name: str, runs: int, horizon: int | None, options: dict[str, object], kib: int
) -> None:
    assert peak(name, runs, horizon, options) >= kib * 1024


def test_the_measured_growth_with_the_runs_is_within_the_estimate_of_the_added_runs() -> None:
    """Between two measured sizes of one reproduction the peak grew by at most the estimate's per-run
    term for the added runs, plus its working arrays (which the larger size may have reached first)."""
    pairs = 0
    for (name, runs, horizon, options, kib), (other, more, _, _, more_kib) in pairwise(MEASURED):
        if other != name:
            continue
        _, rounds, working = cli_bandit.reproduction_memory(name, horizon, dict(options))
        allowed = (more - runs) * rounds * cli_bandit.REPRODUCE_BYTES_PER_ROUND + 8 * working
        assert (more_kib - kib) * 1024 <= allowed, (name, runs, more)
        pairs += 1
    assert pairs == 10


def test_the_estimate_bounds_the_peak_reported_for_fig2b_and_the_arrays_it_holds() -> None:
    assert peak(FIG2B, 20) >= REPORTED_FIG2B_20_RUNS
    # four (R, T) float64 arrays with T = 10^6 are held at once: the estimate exceeds them and the base
    for runs in (1, 20, 1000):
        assert peak(FIG2B, runs) > 4 * runs * 1_000_000 * 8 + GIB


def test_every_registered_reproduction_has_an_estimate_growing_with_its_runs() -> None:
    for name in registry.reproductions():
        default_runs, rounds, working = cli_bandit.reproduction_memory(name, None, {})
        assert default_runs >= 1 and rounds >= 1 and working >= 0, name
        assert peak(name, 10) < peak(name, 11), name


def test_the_estimate_follows_the_horizon_given() -> None:
    # Chowdhury & Zhou 2022: five curves per panel of T rounds, plus K d = 100 x 5 arm features
    assert cli_bandit.reproduction_memory("chowdhury-zhou-2022-fig1", 2000, {}) == (50, 5 * 2000 + 500, 0)
    longest = cli_bandit.reproduction_memory("charisopoulos-2023-e1", None, {"horizons": [100_000, 300]})
    assert longest == cli_bandit.reproduction_memory("charisopoulos-2023-e1", None, {"horizons": [100_000]})
    # Li, Zhou & Ji 2022: eight (users, d) arrays of a phase of up to T = 10^6 users, d = 20
    assert cli_bandit.reproduction_memory(FIG2B, None, {}) == (20, 2 * 10**6, 8 * 10**6 * 20)
    assert peak("tenenbaum-2021-mab", 20, None, {"horizon": 1000}) < peak("tenenbaum-2021-mab", 20)
    with pytest.raises(InvalidParameter, match="horizon"):
        cli_bandit.reproduction_memory("improved-ldp-linear-fig1", None, {"horizon": "abc"})


def test_too_many_runs_are_refused_in_one_line_stating_the_largest_that_fits(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli_bandit, "available_memory", lambda: 16 * GIB)
    # half of 16 GiB may be used: (8 GiB − 1.5 GiB − 8 bytes x 8 x 10^6 x 20) / (2 x 10^6 rounds x 128 bytes)
    largest = int((8 * GIB - 1.5 * GIB - 8 * 8 * 10**6 * 20) // (2 * 1_000_000 * 128))
    assert largest == 22
    out = tmp_path / "out"
    code, stdout, err = run(["reproduce", FIG2B, "--runs", "1000", "--out", str(out)])
    assert code == 2 and not stdout, err
    assert err.count("\n") == 1 and err.startswith("dpcert: error: invalid --runs=1000")
    assert f"runs <= {largest} for {FIG2B} on this machine" in err
    assert not out.exists()  # refused before the work: nothing written
    cli_bandit.check_reproduce_memory(FIG2B, largest, None, {})  # the largest stated fits
    with pytest.raises(InvalidParameter, match="--runs"):
        cli_bandit.check_reproduce_memory(FIG2B, largest + 1, None, {})


def test_the_default_runs_are_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_bandit, "available_memory", lambda: 8 * GIB)  # 4 GiB usable: 5 runs of fig2b
    with pytest.raises(InvalidParameter, match=r"--runs.*runs <= 5 for"):
        cli_bandit.check_reproduce_memory(FIG2B, None, None, {})


def test_a_horizon_too_long_for_one_run_is_named_instead_of_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_bandit, "available_memory", lambda: 16 * GIB)
    code, _, err = run(["reproduce", "improved-ldp-linear-fig1", "--option", "horizon=100000000000"])
    assert code == 2 and err.count("\n") == 1 and "--option" in err and "horizon=" in err, err
