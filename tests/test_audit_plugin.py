"""The pytest plugin and ``dpcert.testing.assert_dp`` in a user's own test file."""

from __future__ import annotations

import json
from importlib.metadata import entry_points

import numpy as np
import pytest
import scipy.special  # noqa: F401
import statsmodels.stats.proportion  # noqa: F401

from dpcert.testing import assert_dp

pytest_plugins = ["pytester"]
# The audits import scipy.special and statsmodels on first use.  pytester's in-process runs drop the
# modules a run imported, and numpy's C extensions cannot be loaded twice in one process: they are
# imported here, once, so that a second in-process run finds them.

USER_TESTS = """
import numpy as np
from dpcert.testing import assert_dp


def correct_laplace(value, rng, size):
    return value + rng.laplace(0.0, 1.0, size)


def broken_laplace(value, rng, size):
    return value + rng.laplace(0.0, 0.25, size)


def test_fixture_passes_a_correct_mechanism(audit):
    report = audit.assert_dp(correct_laplace, 0.0, 1.0, epsilon=1.0)
    assert report.samples == 20000


def test_fixture_catches_a_broken_mechanism(audit):
    audit.assert_dp(broken_laplace, 0.0, 1.0, epsilon=1.0)


def test_function_catches_a_broken_mechanism():
    assert_dp(broken_laplace, 0.0, 1.0, epsilon=1.0, samples=20000, seed=1)


def test_fixture_seeds_are_reproducible(audit):
    first = audit(correct_laplace, 0.0, 1.0, 1.0)
    second = audit(correct_laplace, 0.0, 1.0, 1.0)
    assert first.counts != second.counts  # two calls, two seeds
"""


def test_plugin_is_registered_under_pytest11():
    names = {entry.name: entry.value for entry in entry_points(group="pytest11")}
    assert names.get("dpcert") == "dpcert.audits.pytest_plugin"


def test_plugin_works_in_a_sample_test_file(pytester):
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest("--dpcert-samples=20000", "--junitxml=report.xml", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*privacy claim refuted: violated*"])
    xml = (pytester.path / "report.xml").read_text()
    assert "dpcert_audit_0" in xml  # reports attached to user_properties


def test_fixture_seed_is_derived_from_the_test_name(pytester):
    pytester.makepyfile(
        test_seed="""
def mechanism(value, rng, size):
    return value + rng.laplace(0.0, 1.0, size)

def test_one(audit):
    report = audit(mechanism, 0.0, 1.0, 1.0, samples=2000)
    with open("counts.txt", "a") as out:
        out.write(report.to_json() + "\\n")
"""
    )
    for _ in range(2):
        pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    first, second = (pytester.path / "counts.txt").read_text().splitlines()
    assert json.loads(first)["counts"] == json.loads(second)["counts"]


def test_assert_dp_returns_the_report_and_raises_on_violation():
    def rr(bit, rng, size):
        return np.where(rng.random(size) < 0.9, bit, 1 - bit)  # true ε = ln 9 ≈ 2.2

    report = assert_dp(rr, 0, 1, epsilon=2.5, samples=20_000)
    assert json.loads(report.to_json())["verdict"] == "consistent"
    with pytest.raises(AssertionError, match="refuted"):
        assert_dp(rr, 0, 1, epsilon=1.0, samples=20_000)
