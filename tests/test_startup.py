"""Start-up of the ``dpcert`` command: light commands do not load the heavy scientific libraries.

``dpcert --version``, ``dpcert --help`` and ``dpcert calibrate gaussian`` are run in a fresh
interpreter and the modules loaded by the end are read from ``sys.modules`` (a property of the
import graph, not a timing; the times are in ``benchmarks/startup.py``).  The root finder that lets
calibrations run without ``scipy.optimize`` is checked bit for bit against ``scipy.optimize.brentq``.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import log_ndtr

from dpcert import _numerics
from dpcert.mechanisms.gaussian import calibrate_gaussian

# Loaded by none of the commands below (each costs from 0.3 s to several seconds of start-up).
HEAVY = (
    "scipy.optimize",
    "scipy.stats",
    "statsmodels",
    "pandas",
    "dp_accounting",
    "matplotlib",
    "torch",
    "dask",
    "psycopg",
    "cryptography",
    "numba",  # imported by the LinUCB kernel on its first compiled run only
)
# Not needed to print the version or the help either.
NOT_FOR_HELP = (*HEAVY, "scipy.special", "scipy.fft")

_PROBE = """
import contextlib, io, json, sys
from dpcert.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "stdout": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _run(*argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout)


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def test_probe_sees_a_heavy_import() -> None:
    """The probe is able to fail: a command that does load scipy.stats shows it."""
    done = subprocess.run(
        [sys.executable, "-c", "import json, sys, scipy.stats; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert _loaded(json.loads(done.stdout), HEAVY)


def test_package_face_loads_no_heavy_library() -> None:
    """``import dpcert`` (all 34 public names) loads neither SciPy, numba nor the optional libraries."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, dpcert; print(json.dumps([sorted(sys.modules), dpcert.__all__]))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    modules, names = json.loads(done.stdout)
    assert len(names) == 34
    assert _loaded(modules, (*NOT_FOR_HELP, "scipy", "numba")) == []


@pytest.mark.parametrize("argv", [("--version",), ("--help",)])
def test_version_and_help_load_no_heavy_library(argv: tuple[str, ...]) -> None:
    result = _run(*argv)
    assert result["code"] == 0
    assert result["stdout"]
    assert _loaded(result["modules"], NOT_FOR_HELP) == []


def test_calibrate_gaussian_loads_no_heavy_library_and_prints_the_calibration() -> None:
    result = _run("calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--research", "--json")
    assert result["code"] == 0
    assert _loaded(result["modules"], HEAVY) == []
    printed = json.loads(result["stdout"])
    assert printed["sigma"] == calibrate_gaussian(1.0, 1e-5).sigma


def _family(seed: int) -> list[tuple[object, float, float]]:
    """Monotone and oscillating functions with a sign change on their interval."""
    rng = np.random.default_rng(seed)
    functions: list[tuple[object, float, float]] = []
    for _ in range(100):
        c, s, p = float(rng.uniform(-3, 3)), float(rng.uniform(0.1, 10)), int(rng.integers(1, 6))
        functions.append(
            (lambda x, c=c, s=s, p=p: s * (x - c) * abs(x - c) ** (p - 1) + 1e-3 * math.sin(x), -5.0, 5.0)
        )
        functions.append((lambda x, c=c: float(log_ndtr(x)) - math.log(0.5 + c / 7), -9.0, 9.0))
        functions.append((lambda x, c=c, s=s: math.exp(-x * s) - 1e-3 * (c + 3.5), 0.0, 50.0))
    return functions


def test_brent_root_is_scipy_brentq_bit_for_bit() -> None:
    """Same root (the same float, sign included) or the same error as scipy.optimize.brentq."""
    compared = 0
    for function, low, high in _family(2026):
        for xtol, rtol in ((2e-12, 8.9e-16), (1e-300, 8.9e-16), (1e-3, 1e-3), (1e-9, 1e-6)):
            try:
                expected: object = brentq(function, low, high, xtol=xtol, rtol=rtol, maxiter=500)
            except (ValueError, RuntimeError) as error:
                expected = type(error)
            try:
                got: object = _numerics.brent_root(function, low, high, xtol=xtol, rtol=rtol, maxiter=500)
            except (ValueError, RuntimeError) as error:
                got = type(error)
            assert got == expected, (low, high, xtol, rtol)
            if isinstance(got, float):
                assert math.copysign(1.0, got) == math.copysign(1.0, float(expected))  # type: ignore[arg-type]
            compared += 1
    assert compared == 1200


def test_brent_root_is_scipy_brentq_where_products_underflow_and_steps_divide_by_zero() -> None:
    """Values near the smallest floats (their products underflow to 0) and flat stretches (secant
    steps divide by 0): still the same float as scipy.optimize.brentq."""
    rng = np.random.default_rng(2027)
    compared = 0
    for _ in range(200):
        c, scale = float(rng.uniform(-3, 3)), 10.0 ** float(rng.uniform(-320, -150))
        for function in (
            lambda x, c=c, s=scale: s * (x - c),
            lambda x, c=c, s=scale: s * math.tanh(x - c),
            lambda x, c=c: 0.0 if abs(x - c) < 0.5 else x - c,
            lambda x, c=c: max(-1.0, min(1.0, 1e3 * (x - c))),
        ):
            expected = brentq(function, -5.0, 5.0, xtol=1e-300, rtol=8.9e-16, maxiter=500)
            got = _numerics.brent_root(function, -5.0, 5.0, xtol=1e-300, rtol=8.9e-16, maxiter=500)
            assert got == expected
            compared += 1
    assert compared == 800


def test_brent_root_refuses_like_brentq() -> None:
    with pytest.raises(ValueError, match="different signs"):
        _numerics.brent_root(lambda x: x * x + 1.0, -1.0, 1.0, xtol=1e-12, rtol=1e-15, maxiter=100)
    with pytest.raises(ValueError, match="NaN"):
        _numerics.brent_root(
            lambda x: math.nan if x > 0 else -1.0, -1.0, 1.0, xtol=1e-12, rtol=1e-15, maxiter=100
        )
    for search in (brentq, _numerics.brent_root):
        with pytest.raises(RuntimeError, match="converge"):
            search(lambda x: math.exp(x) - 2.0, -3.0, 5.0, xtol=1e-300, rtol=8.9e-16, maxiter=3)


def test_calibrations_equal_those_searched_with_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gaussian calibrations are the same floats when the search calls scipy.optimize.brentq."""
    cases = [(e, d, k) for e in (0.01, 0.5, 1.0, 3.0) for d in (1e-9, 1e-5, 1e-2) for k in (1, 100)]
    ours = [calibrate_gaussian(e, d, compositions=k).sigma for e, d, k in cases]

    def scipy_search(function, a, b, *, xtol, rtol, maxiter):  # type: ignore[no-untyped-def]
        return brentq(function, a, b, xtol=xtol, rtol=rtol, maxiter=maxiter)

    monkeypatch.setattr(_numerics, "brent_root", scipy_search)
    assert [calibrate_gaussian(e, d, compositions=k).sigma for e, d, k in cases] == ours


def test_python_dash_m_dpcert_is_the_dpcert_command() -> None:
    ran = subprocess.run([sys.executable, "-m", "dpcert", "--version"], capture_output=True, text=True)
    script = subprocess.run([sys.executable, "-m", "dpcert.cli", "--version"], capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.strip() and ran.stdout == script.stdout
