"""How a result was made: the provenance record every written result of dpcert carries.

One record (a JSON object) states

* ``format``: what kind of file or output it describes, with its version (:data:`FORMATS`);
* ``dpcert``: the version of dpcert that made it;
* ``command``: ``{"argv": [...]}``, the command line (``dpcert`` then its arguments as given), or
  ``{"python": "..."}``, the Python call with its arguments;
* ``seeds``: ``{"seed": S, "streams": {...}}``, the seed and how every random stream is derived from it;
* ``environment``: Python, numpy, scipy, dp_accounting and numba versions (``None`` when absent), the
  platform, the machine, the processor and the BLAS (library name and version, the CPU kernel OpenBLAS
  chose and the ``OPENBLAS_CORETYPE`` environment variable that can force it);
* ``timing``: when it started (UTC) and the wall-clock seconds it took.

Two records of the same run differ only in ``environment`` and ``timing``.  JSON outputs hold the record
under ``"provenance"``, NPZ files as a ``provenance`` entry (the JSON text) and Markdown files as a footer
(an HTML comment holding the JSON text): :func:`read_json`, :func:`read_npz` and :func:`read_markdown`
read it back.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import platform
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from dpcert import _json

BANDIT_RUN = "dpcert.bandit-run/1"
"""``dpcert bandit run --json`` and the JSON file ``--out`` writes."""
BANDIT_CURVES = "dpcert.bandit-curves/1"
"""The NPZ of regret curves ``dpcert bandit run --out`` writes."""
REPRODUCTION = "dpcert.reproduction/1"
"""The JSON summary of ``dpcert reproduce NAME`` (file and ``--json`` output)."""
REPRODUCTION_TABLE = "dpcert.reproduction-table/1"
"""The Markdown table of final regret of a reproduction."""
REPRODUCTION_CLAIMS = "dpcert.reproduction-claims/1"
"""The Markdown claims table of a reproduction."""
REPRODUCTION_CURVES = "dpcert.reproduction-curves/1"
"""The NPZ of every run's regret curve of a reproduction."""
DEMO = "dpcert.reproductions.demo/1"
"""``provenance.json`` of ``dpcert demo`` (and its ``--json`` output): every file it wrote."""
CALCULATION = "dpcert.calculation/1"
"""``dpcert calibrate|account ... --json``: a result computed from the command's inputs alone (no seeds)."""
FORMATS = (
    BANDIT_RUN, BANDIT_CURVES, REPRODUCTION, REPRODUCTION_TABLE, REPRODUCTION_CLAIMS, REPRODUCTION_CURVES,
    DEMO, CALCULATION,
)  # fmt: skip

KEY = "provenance"
"""The key (JSON) or entry name (NPZ) of the record."""
VOLATILE = ("environment", "timing")
"""The parts of a record that may differ between two records of the same run."""
_PACKAGES = {"numpy": "numpy", "scipy": "scipy", "dp_accounting": "dp-accounting", "numba": "numba"}
_CORENAME_SYMBOLS = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename")
_MARKDOWN = re.compile(r"<!-- dpcert provenance: (\{.*?\}) -->")

_ARGV: ContextVar[tuple[str, ...] | None] = ContextVar("dpcert_command_line", default=None)
"""The command line of the CLI call being run (set by :func:`command_line`, scoped to its block)."""


def openblas_core() -> str | None:
    """The kernel OpenBLAS chose in this process (None when numpy's BLAS is not a known OpenBLAS)."""
    try:
        folder = os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs")
        for path in sorted(glob.glob(os.path.join(folder, "libscipy_openblas*"))):
            library = ctypes.CDLL(path)
            for name in _CORENAME_SYMBOLS:
                function = getattr(library, name, None)
                if function is not None:
                    function.restype = ctypes.c_char_p
                    core = function()
                    return core.decode() if core else None
    except (OSError, AttributeError, UnicodeDecodeError, ValueError):
        return None
    return None


def blas() -> dict[str, Any]:
    """numpy's BLAS: ``name`` and ``version`` (``numpy.show_config``), the OpenBLAS ``core`` and the
    ``OPENBLAS_CORETYPE`` environment variable (``None`` when unset)."""
    info: dict[str, Any] = {"name": None, "version": None}
    try:
        build = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info = {"name": build.get("name"), "version": build.get("version")}
    except Exception:  # noqa: BLE001 - an older numpy or another layout: the library stays unknown
        pass
    info["core"] = openblas_core()
    info["OPENBLAS_CORETYPE"] = os.environ.get("OPENBLAS_CORETYPE")
    return info


def version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (``None`` when it is not installed)."""
    import importlib.metadata  # about 0.1 s to import: only when a record is made

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def processor() -> str | None:
    """``platform.processor()``, or where it is empty (Linux) the ``model name`` of ``/proc/cpuinfo``."""
    named = platform.processor()
    if named:
        return named
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip() or None
    except OSError:
        pass
    return None


@lru_cache(maxsize=1)
def _environment() -> str:
    environment: dict[str, Any] = {"python": platform.python_version()}
    environment.update({name: version(dist) for name, dist in _PACKAGES.items()})
    environment.update({"platform": platform.platform(), "machine": platform.machine()})
    environment.update({"processor": processor(), "blas": blas()})
    return json.dumps(environment)


def environment() -> dict[str, Any]:
    """Versions of Python, numpy, scipy, dp_accounting, numba; the platform, machine, processor and BLAS."""
    return json.loads(_environment())


@contextmanager
def command_line(argv: Sequence[str]) -> Iterator[None]:
    """Within this block, records name the command line ``argv`` (``["dpcert", ...]``) as their command."""
    token = _ARGV.set(tuple(str(word) for word in argv))
    try:
        yield
    finally:
        _ARGV.reset(token)


def python_call(function: str, *args: Any, **kwargs: Any) -> str:
    """``function(arg, ..., key=value, ...)`` with every value as its ``repr``, paths as strings and
    dataclass instances as calls of their class by its full name (``dpcert.module.Class(field=...)``), so
    the text runs again given the top-level package."""
    shown = [_shown(value) for value in args] + [f"{key}={_shown(value)}" for key, value in kwargs.items()]
    return f"{function}({', '.join(shown)})"


def _shown(value: Any) -> str:
    if isinstance(value, Path):
        return repr(str(value))
    if is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        given = ", ".join(f"{f.name}={_shown(getattr(value, f.name))}" for f in fields(value) if f.init)
        return f"{kind.__module__}.{kind.__qualname__}({given})"
    return repr(value)


def command(call: str | None) -> dict[str, Any]:
    """``{"argv": [...]}`` inside :func:`command_line`, else ``{"python": call}``."""
    argv = _ARGV.get()
    if argv is not None:
        return {"argv": list(argv)}
    return {"python": call}


@dataclass
class Clock:
    """When a result started being made (UTC and a monotonic clock)."""

    started: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    start: float = field(default_factory=time.perf_counter)

    def timing(self) -> dict[str, Any]:
        return {"started": self.started, "seconds": round(time.perf_counter() - self.start, 6)}


def seeds(seed: int | None, streams: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{"seed": seed, "streams": {what: how it is derived from seed}}``."""
    return {"seed": seed, "streams": dict(streams or {})}


def record(
    format: str,
    *,
    seeds: Mapping[str, Any],
    call: str | None = None,
    clock: Clock | None = None,
) -> dict[str, Any]:
    """The provenance record of one result (see the module's documentation)."""
    if format not in FORMATS:
        raise ValueError(f"unknown provenance format {format!r}: one of {', '.join(FORMATS)}")
    return {
        "format": format,
        "dpcert": version("dpcert"),
        "command": command(call),
        "seeds": json.loads(json.dumps(dict(seeds))),
        "environment": environment(),
        "timing": (clock or Clock()).timing(),
    }


@dataclass
class Recorder:
    """Records of one result written as several files: the same command, seeds and start, one format
    per file (``recorder(format)``), each timed when it is written."""

    seeds: Mapping[str, Any]
    call: str | None = None
    clock: Clock = field(default_factory=Clock)

    def __call__(self, format: str) -> dict[str, Any]:
        return record(format, seeds=self.seeds, call=self.call, clock=self.clock)


def reproduction(
    name: str, runs: int | None, out: Any, seed: int, streams: Mapping[str, str], **options: Any
) -> Recorder:
    """The :class:`Recorder` of ``dpcert reproduce NAME`` (its Python call:
    ``dpcert.bandits.registry.reproduction(NAME).run(runs, out, seed, **options)``)."""
    call = python_call(f"dpcert.bandits.registry.reproduction({name!r}).run", runs, out, seed, **options)
    return Recorder(seeds(seed, streams), call)


def as_format(base: Mapping[str, Any], format: str) -> dict[str, Any]:
    """The same record describing another kind of file."""
    if format not in FORMATS:
        raise ValueError(f"unknown provenance format {format!r}: one of {', '.join(FORMATS)}")
    return {**base, "format": format}


def stable(value: Mapping[str, Any]) -> dict[str, Any]:
    """A record without its :data:`VOLATILE` parts: equal for two records of the same run."""
    return {key: item for key, item in value.items() if key not in VOLATILE}


def markdown_footer(value: Mapping[str, Any]) -> str:
    """A short visible line and the record in an HTML comment, to end a Markdown file with."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False).replace("--", "-\\u002d")
    shown = value["command"].get("argv")
    how = " ".join(shown) if shown else value["command"].get("python")
    line = f"_Made by `{how}` with dpcert {value['dpcert']} (seed {value['seeds'].get('seed')})._"
    return f"\n{line}\n\n<!-- dpcert provenance: {text} -->\n"


def read_markdown(text: str) -> dict[str, Any] | None:
    """The record in a Markdown file's footer (the last one), or ``None``."""
    found = _MARKDOWN.findall(text)
    return _json.loads(found[-1], what="provenance record") if found else None


def npz_entry(value: Mapping[str, Any]) -> np.ndarray:
    """The record as an NPZ entry: its JSON text as a 0-d string array."""
    return np.array(json.dumps(value, allow_nan=False))


def read_npz(path: str | Path) -> dict[str, Any] | None:
    """The record of an NPZ file, or ``None``."""
    with np.load(path, allow_pickle=False) as data:
        return _json.loads(str(data[KEY]), what="provenance record") if KEY in data.files else None


def read_json(path: str | Path) -> dict[str, Any] | None:
    """The record of a JSON file, or ``None``."""
    data = _json.loads(Path(path).read_text(), what=str(path), allow_nan=True)  # results may hold NaN
    return data.get(KEY) if isinstance(data, dict) else None
