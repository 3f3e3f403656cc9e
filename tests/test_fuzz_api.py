"""Generated calls of the public functions the README shows, with one bad argument each.

Each example takes a valid call of one function and replaces one argument by a boundary number (0,
-1, NaN, inf, 1e308, 10**400, subnormals, numpy scalars), a value of the wrong type or a size that
does not fit.  The call must either return a result without NaN, or raise a :mod:`dpcert.errors`
exception that names the replaced parameter (its ``name`` attribute or its message); never an
``OverflowError``, ``ZeroDivisionError``, ``TypeError`` or ``ValueError`` from Python, NumPy or SciPy.
The functions are those the README imports (checked against README.md's code blocks) and those its
former version showed.
"""

from __future__ import annotations

import contextlib
import math
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, is_dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import RanTooLong, time_limit
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import dpcert
from dpcert.accounting.returning_users import split_budget
from dpcert.audits.unbiased import check_variance
from dpcert.errors import DPCertError
from dpcert.mechanisms.discrete_gaussian import discrete_gaussian_delta
from dpcert.mechanisms.gaussian import gaussian_certificate

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_SECONDS = 30

TINIEST, SMALLEST_NORMAL, LARGEST = 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308
NUMBERS: list[Any] = [
    0, -1, -0.0, 0.5, 2, float("nan"), float("inf"), -float("inf"), 1e308, -1e308, 5e-324, 1e-310,
    10**400, -(10**400), 2**64, np.float32("nan"), np.float64(np.inf), np.float32(4.0), np.int64(-1),
    np.int64(2**62), np.uint8(0), Fraction(1, 3), 1e12, 10**12,
]  # fmt: skip
NEAR_LIMITS: list[Any] = [
    TINIEST, -TINIEST, 2 * TINIEST, math.nextafter(SMALLEST_NORMAL, 0.0), SMALLEST_NORMAL, 1e-300, 1e-160,
    1e-154, LARGEST, -LARGEST, math.nextafter(LARGEST, 0.0), 1e300, 1e160, 1e154, np.float64(TINIEST),
    np.float64(LARGEST), np.float32(1e-45), np.float32(3.4028235e38), Fraction(1, 10**400), 2**1023,
]  # fmt: skip
"""Subnormals, the smallest normal float, the largest floats and squares or reciprocals at the limits."""
WRONG_TYPES: list[Any] = [
    None,
    True,
    "1",
    "",
    b"1",
    [],
    [1.0],
    {},
    complex(1, 1),
    object(),
    np.array([1.0, 2.0]),
]


def release(value: Any, rng: np.random.Generator, size: Any = None) -> Any:
    return value + rng.laplace(0.0, 0.5, size=size)


def certificate() -> dpcert.Certificate:
    return dpcert.calibrate_gaussian(1.0, 1e-5).certificate


def _with_ledger(call: Callable[[dpcert.Ledger, dict[str, Any]], Any]) -> Callable[..., Any]:
    def run(**arguments: Any) -> Any:
        with tempfile.TemporaryDirectory() as directory, dpcert.Ledger(Path(directory) / "l.db") as ledger:
            ledger.set_budget(None, dpcert.Guarantee(1.0, 1e-5))
            ledger.charge([7], certificate(), run_id="first")
            return call(ledger, arguments)

    return run


@dataclass(frozen=True)
class Function:
    call: Callable[..., Any]
    valid: dict[str, Any]
    examples: int
    extra: dict[str, list[Any]] | None = None
    """Bad values of the function's own, by parameter."""


FUNCTIONS: dict[str, Function] = {
    "calibrate_gaussian": Function(
        dpcert.calibrate_gaussian,
        {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0, "compositions": 2, "method": "analytic"},
        60,
        {"method": ["", "exact", 1], "compositions": [10**9, 10**15]},
    ),
    "compose": Function(
        lambda **a: dpcert.compose(**a),
        {"certificates": [certificate()] * 3, "method": "best", "delta": 1e-4},
        40,
        {"certificates": [[], [None], "abc", 5, [certificate(), 1]], "method": ["", "fastest", 3]},
    ),
    "Guarantee": Function(dpcert.Guarantee, {"epsilon": 1.0, "delta": 1e-5}, 30),
    "Certificate.from_json": Function(
        lambda text: dpcert.Certificate.from_json(text),
        {"text": certificate().to_json()},
        25,
        {
            "text": [
                "", "{", "[" * 100_000 + "]" * 100_000, '{"a": ' * 50_000 + "1" + "}" * 50_000,
                "null", "[]", '{"format": "dpcert.certificate/1"}', "1" * 5000,
                certificate().to_json().replace('"epsilon": 1.0', '"epsilon": NaN'),
                certificate().to_json().replace('"epsilon": 1.0', '"epsilon": 1e400'),
                certificate().to_json().replace('"sigma": ', '"sigma": -'),
                certificate().to_json().replace('"delta": 1e-05', '"delta": 2'),
                certificate().to_json().replace('"compositions": 1', '"compositions": 1e400'),
            ]
        },  # fmt: skip
    ),
    "Ledger": Function(
        lambda path: dpcert.Ledger(path).close(),
        {"path": "ledger.db"},
        15,
        {"path": ["", "/proc/dpcert-no-such/l.db", "/", "/dev/null", "x" * 300 + ".db", "a\x00b"]},
    ),
    "Ledger.set_budget": Function(
        _with_ledger(lambda ledger, a: ledger.set_budget(a["user_id"], a["budget"])),
        {"user_id": 8, "budget": dpcert.Guarantee(2.0, 1e-5)},
        20,
        {"budget": [(1.0, 0.0), 1.0], "user_id": [[1], {}, 1.5, float("nan"), "x" * 100_000]},
    ),
    "Ledger.charge": Function(
        _with_ledger(lambda ledger, a: ledger.charge(a["user_ids"], a["certificate"], run_id=a["run_id"])),
        {"user_ids": [1, 2, 3], "certificate": certificate(), "run_id": "second"},
        30,
        {
            "user_ids": [[], [[1]], [1.5], [float("nan")], np.array([1.0, np.nan]), [None], [{}], "x" * 99],
            "certificate": [dpcert.Guarantee(0.1, 0.0)],
            "run_id": ["", "x" * 100_000],
        },  # fmt: skip
    ),
    "Ledger.remaining": Function(
        _with_ledger(lambda ledger, a: ledger.remaining(a["user_id"])), {"user_id": 7}, 15
    ),
    "audit": Function(
        lambda **a: dpcert.audit(release, **a),
        {"a": 0, "b": 1, "epsilon": 1.0, "delta": 0.0, "samples": 2000, "seed": 1, "confidence": 0.95},
        40,
        {"samples": [10**15, 2**63, 1e9 + 0.5], "seed": [-1, 2**200, 1.5]},
    ),
    "calibrate_laplace": Function(dpcert.calibrate_laplace, {"epsilon": 1.0, "sensitivity": 1.0}, 20),
    "calibrate_discrete_gaussian": Function(
        dpcert.calibrate_discrete_gaussian,
        {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1, "compositions": 1},
        25,
        {"compositions": [20_000, 10**9], "sensitivity": [10**9, 2**62]},
    ),
    "discrete_gaussian_delta": Function(
        discrete_gaussian_delta, {"epsilon": 1.0, "sigma": 4.0, "sensitivity": 1}, 30
    ),
    "secure_gaussian": Function(
        dpcert.secure_gaussian,
        {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0, "dimension": 1, "granularity": 2.0**-10},
        30,
        {"dimension": [10**12], "granularity": [0.3, 2.0**-1074, 2.0**1000]},
    ),
    "secure_laplace": Function(
        dpcert.secure_laplace,
        {"epsilon": 1.0, "sensitivity": 1.0, "dimension": 1, "granularity": 2.0**-10},
        25,
        {"dimension": [10**12], "granularity": [0.3, 2.0**-1074, 2.0**1000]},
    ),
    "calibrate_binomial_sum": Function(
        dpcert.calibrate_binomial_sum,
        {"epsilon": 1.0, "delta": 1e-5, "users": 100, "dimension": 1, "bound": 1.0, "method": "paper"},
        25,
        {"users": [10**13], "dimension": [10**10], "shape": ["", "matrix"]},
    ),
    "calibrate_pamp": Function(
        dpcert.calibrate_pamp, {"epsilon": 1.0, "delta": 1e-5, "users": 1000, "dimension": 2}, 25,
        {"users": [10**12, 10**20], "method": ["", "exact"]},
    ),  # fmt: skip
    "check_unbiased": Function(
        dpcert.check_unbiased, {"samples": np.linspace(-1.0, 1.0, 100), "truth": 0.0, "alpha": 0.05}, 20,
        {"samples": [[], np.array([1e308, -1e308] * 50), np.full((3, 0), 1.0), [[1.0], [1.0, 2.0]]]},
    ),  # fmt: skip
    "check_variance": Function(
        check_variance, {"samples": np.linspace(-1.0, 1.0, 100), "claimed_variance": 0.34, "alpha": 0.05}, 20,
        {"samples": [[], np.array([1e308, -1e308] * 50), np.array([1e200, -1e200] * 50)]},
    ),  # fmt: skip
    "split_budget": Function(
        lambda **a: split_budget(**a),
        {"total": dpcert.Guarantee(1.0, 1e-5), "participations": 10, "mechanism": "generic"},
        20,
        {"participations": [10**9, 10**400], "mechanism": ["", "laplace?"], "total": [(1.0, 0.0), 1.0]},
    ),
    "gaussian_certificate": Function(
        lambda **a: gaussian_certificate(**a), {"sigma": 4.0, "delta": 1e-5, "compositions": 1}, 25
    ),
}  # fmt: skip

ACCEPTED = {"Certificate.from_json": ("text", "certificate", "JSON", "json"), "Ledger.remaining": ("user",)}
"""Names that stand for a parameter in errors (a document's own field names its content)."""


def readme_imports() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    names: set[str] = set()
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        for match in re.finditer(r"^from dpcert(?:\.[\w.]+)? import ([^\n(]+)", block, re.M):
            names.update(name.strip() for name in match.group(1).split(","))
    return names


def test_the_table_covers_every_name_the_readme_imports() -> None:
    imported = readme_imports()
    assert imported, "README.md shows no 'from dpcert import ...'"
    covered = {name.split(".")[0] for name in FUNCTIONS}
    assert imported <= covered, imported - covered


def _numbers_in(value: Any, depth: int = 0) -> Iterator[float]:
    """The floats a result holds (attributes of dataclasses, certificates' guarantees, arrays)."""
    if depth > 4:
        return
    if isinstance(value, (float, np.floating)):
        yield float(value)
    elif isinstance(value, np.ndarray) and value.dtype.kind == "f":
        yield from (float(x) for x in value.ravel()[:1000])
    elif isinstance(value, (list, tuple)):
        for item in value[:100]:
            yield from _numbers_in(item, depth + 1)
    elif is_dataclass(value) and not isinstance(value, type):
        for item in fields(value):
            yield from _numbers_in(getattr(value, item.name, None), depth + 1)


def _names(error: DPCertError, parameter: str, function: str) -> bool:
    named = {parameter, *ACCEPTED.get(function, ())}
    given = getattr(error, "name", None)
    if isinstance(given, str) and any(word in given.split("/") or word == given for word in named):
        return True
    return any(re.search(rf"\b{re.escape(word)}\b", str(error)) for word in named)


@st.composite
def _argument(draw: st.DrawFn, function: Function) -> tuple[str, Any]:
    parameter = draw(st.sampled_from(sorted(function.valid)))
    pool = NUMBERS + WRONG_TYPES + list((function.extra or {}).get(parameter, []))
    value = draw(
        st.one_of(
            st.sampled_from(pool),
            st.sampled_from(NEAR_LIMITS),
            st.floats(allow_nan=True, allow_infinity=True),
            st.floats(min_value=TINIEST, max_value=SMALLEST_NORMAL, exclude_max=True),  # subnormal
            st.floats(min_value=1e250, max_value=LARGEST),
            st.integers(min_value=-(10**30), max_value=10**30),
        )
    )
    return parameter, value


def call(function: Function, parameter: str, value: Any) -> tuple[Any, BaseException | None]:
    arguments = {**function.valid, parameter: value}
    try:  # in a fresh working directory: relative paths land there
        with tempfile.TemporaryDirectory() as directory, contextlib.chdir(directory):
            with time_limit(EXAMPLE_SECONDS):
                return function.call(**arguments), None
    except RanTooLong:
        raise AssertionError(f"{parameter}={value!r:.200}: still running after {EXAMPLE_SECONDS} s") from None
    except Exception as exc:  # noqa: BLE001 - judged by the caller
        return None, exc


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_bad_arguments_raise_dpcert_errors_naming_the_parameter(name: str) -> None:
    function = FUNCTIONS[name]

    @settings(
        max_examples=function.examples,
        derandomize=True,
        deadline=None,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    @given(_argument(function))
    def one(argument: tuple[str, Any]) -> None:
        parameter, value = argument
        shown = f"{name}({parameter}={value!r:.200})"
        result, error = call(function, parameter, value)
        if error is None:
            bad = [x for x in _numbers_in(result) if math.isnan(x)]
            assert not bad, f"{shown} returned NaN: {result!r:.300}"
            return
        assert isinstance(error, DPCertError), f"{shown} raised {type(error).__name__}: {error!s:.300}"
        assert _names(error, parameter, name), f"{shown}: the error does not name {parameter}: {error!s:.300}"

    one()


# --------------------------------------------------------------------------- subnormals and float limits
@pytest.mark.parametrize(
    ("name", "parameter", "value"),
    [
        ("calibrate_binomial_sum", "epsilon", 1e-310),
        ("calibrate_binomial_sum", "epsilon", 1e-160),
        ("calibrate_binomial_sum", "bound", 1e308),
        ("discrete_gaussian_delta", "sigma", 5e-324),
        ("discrete_gaussian_delta", "sigma", 1e-141),
        ("discrete_gaussian_delta", "epsilon", 1e308),
        ("gaussian_certificate", "sigma", 5e-324),
        ("gaussian_certificate", "sigma", 1e-160),
    ],
)
def test_a_parameter_beyond_the_float_range_of_the_numerics_is_refused_naming_it(
    name: str, parameter: str, value: float
) -> None:
    """Each was a ZeroDivisionError, an OverflowError or a root search ending on NaN."""
    result, error = call(FUNCTIONS[name], parameter, value)
    if name == "discrete_gaussian_delta" and parameter == "epsilon":
        # a valid call: the loss boundary c = Δ/2 − σ²ε/Δ = −1.6e309 leaves no mass (δ <= P(Y <= c) = 0 in
        # floats), so δ is the least positive float
        assert error is None and result == math.ulp(0.0), (result, error)
        return
    assert isinstance(error, DPCertError) and _names(error, parameter, name), repr(error)


# --------------------------------------------------------------------------- regressions
def test_audit_refuses_more_draws_than_fit_before_any_work() -> None:
    function = FUNCTIONS["audit"]
    arguments = {**function.valid, "samples": 10**16}
    with time_limit(3):  # a refusal takes milliseconds
        try:
            function.call(**arguments)
        except DPCertError as error:
            assert _names(error, "samples", "audit")
            stated = re.search(r"samples <= ([0-9.e+]+) on this machine", str(error))
            assert stated is not None, f"the limit is not stated: {error}"
            assert 2 <= float(stated.group(1)) < 10**16, error
            return
        except RanTooLong:
            pytest.fail("audit(samples=10**16) still running after 3 s")
    pytest.fail("audit(samples=10**16) was accepted")


def test_check_variance_names_a_claimed_variance_beyond_float_range() -> None:
    result, error = call(FUNCTIONS["check_variance"], "claimed_variance", -(10**400))
    assert isinstance(error, DPCertError) and _names(error, "claimed_variance", "check_variance"), error


def test_audit_names_an_input_the_mechanism_cannot_take() -> None:
    result, error = call(FUNCTIONS["audit"], "b", "1")
    assert isinstance(error, DPCertError) and _names(error, "b", "audit"), repr(error)
