"""Test-suite settings: property tests are derandomized, so every run checks the same examples.

Set ``HYPOTHESIS_PROFILE=explore`` to let hypothesis draw fresh examples (e.g. when hunting for bugs).
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from test_ledger_postgres import PostgresServer

settings.register_profile("default-derandomized", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default-derandomized"))


class RanTooLong(BaseException):
    """Raised by :func:`time_limit`'s alarm: not an ``Exception``, so no error mapping can hide it."""


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise :class:`RanTooLong` in the main thread if the block still runs after ``seconds``."""

    def expire(signum: int, frame: object) -> None:
        raise RanTooLong(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


PLUGIN_EXAMPLE = Path(__file__).resolve().parent / "plugin_example"


def plugin_environment(*paths: Path) -> dict[str, str]:
    """This process's environment with ``PYTHONPATH`` set to ``paths`` (removed without them)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    return env


def run_command(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


@pytest.fixture(scope="session")
def plugin_example_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package of ``tests/plugin_example`` installed with pip into a directory of its own (no
    build isolation; the test extra's setuptools >= 70.1 builds wheels without the wheel package)."""
    work = tmp_path_factory.mktemp("plugin")
    source = work / "source"
    shutil.copytree(
        PLUGIN_EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    target = work / "target"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"pip could not build the example package: {done.stderr.strip()[-2000:]}"
    return target


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    """A throw-away PostgreSQL server of the requesting module's own, which its tests may stop and start
    to make outages without disturbing other modules (skipped without the server binaries)."""
    server = PostgresServer()
    try:
        yield server
    finally:
        server.remove()
