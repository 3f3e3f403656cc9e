"""The type hints are checked: mypy (configured in pyproject.toml) reports no error on src/dpcert,
and the package ships its ``py.typed`` marker so that users' type checkers read them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_py_typed_marker_ships_with_the_package():
    assert (ROOT / "src" / "dpcert" / "py.typed").is_file()
    assert 'dpcert = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()


def test_mypy_reports_no_error_on_the_package(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert result.stdout.startswith("Success: no issues found"), result.stdout
