"""The one strict JSON reader for every document dpcert reads.

RFC 8259 (§4) only says the names within an object *should* be unique, and parsers disagree on a
duplicate: Python's ``json`` keeps the last copy, others keep the first or refuse.  A signed or
re-verified document with ``"sigma": 0.5, "sigma": 3.73`` would then mean one thing to dpcert and
another to the next reader, so dpcert refuses it.  The constants ``NaN``, ``Infinity`` and
``-Infinity`` are not JSON at all (RFC 8259 §6); Python accepts them by default, dpcert refuses them
unless a caller's format allows them.

:func:`loads` refuses both with :class:`JSONFormatError` naming the key (or constant) and where it is in
the document, e.g. ``parameters.components[0].certificate.parameters.sigma``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from dpcert.errors import CertificateFormatError

__all__ = ["JSONFormatError", "loads"]


class JSONFormatError(CertificateFormatError, ValueError):
    """A JSON document that is not valid, or that readers could disagree on.

    ``path`` locates the offending member (``""`` for the whole document) and ``key`` names the
    duplicated key or the refused constant (``None`` for a syntax error).
    """

    def __init__(self, message: str, *, key: str | None = None, path: str = "") -> None:
        super().__init__(message)
        self.key = key
        self.path = path


class _DuplicatedObject(dict[str, Any]):
    """An object that had a duplicate key (the first one met); kept to locate it after parsing."""

    duplicate: str = ""


class _Constant:
    """A refused ``NaN`` / ``Infinity`` / ``-Infinity`` or overflowing number, kept to locate it."""

    def __init__(self, name: str) -> None:
        self.name = name


def _member_path(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _problems(value: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(path, kind, detail) of every duplicate key and refused constant, in document order."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, _Constant):
            yield where, "number" if item.name[-1].isdigit() else "constant", item.name
        elif isinstance(item, dict):
            if isinstance(item, _DuplicatedObject):
                yield _member_path(where, item.duplicate), "duplicate", item.duplicate
            stack.extend((v, _member_path(where, k)) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))


def loads(text: str | bytes | bytearray, *, what: str = "JSON document", allow_nan: bool = False) -> Any:
    """Parse ``text`` as JSON, refusing duplicate keys at any depth and (unless ``allow_nan``) the
    non-standard constants ``NaN``, ``Infinity`` and ``-Infinity`` and numbers too large for a float
    (``1e999``, which Python would read as infinity).

    ``what`` names the document in error messages (``"certificate"``, ``"--matrix"``, …).  Raises
    :class:`JSONFormatError` (a :class:`~dpcert.errors.CertificateFormatError` and a ``ValueError``).
    """
    flagged = False

    def object_from_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal flagged
        result = dict(pairs)
        if len(result) == len(pairs):
            return result
        flagged = True
        marked = _DuplicatedObject(result)
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                marked.duplicate = key
                break
            seen.add(key)
        return marked

    def number(literal: str) -> Any:
        nonlocal flagged
        value = float(literal)
        if allow_nan or math.isfinite(value):
            return value
        flagged = True
        return _Constant(literal)

    def constant(name: str) -> Any:
        nonlocal flagged
        if allow_nan:
            return float(name)
        flagged = True
        return _Constant(name)

    if not isinstance(text, (str, bytes, bytearray)):
        raise JSONFormatError(f"{what} is not valid JSON: expected text, got {type(text).__name__}")
    try:
        value = json.loads(
            text, object_pairs_hook=object_from_pairs, parse_float=number, parse_constant=constant
        )
    except json.JSONDecodeError as exc:
        raise JSONFormatError(f"{what} is not valid JSON: {exc}") from exc
    except (ValueError, RecursionError) as exc:  # bad encoding, an integer too long, nesting too deep
        raise JSONFormatError(f"{what} is not valid JSON: {exc}") from exc
    if not flagged:
        return value
    where, kind, detail = next(_problems(value, ""))
    if kind == "duplicate":
        raise JSONFormatError(
            f"{what} has a duplicate key {detail!r} at {where} (JSON readers disagree on which copy "
            "counts, so the document is refused)",
            key=detail,
            path=where,
        )
    reason = "is not JSON (RFC 8259)" if kind == "constant" else "overflows to infinity"
    raise JSONFormatError(
        f"{what} holds {detail} at {where or 'the top level'}, which {reason}", key=detail, path=where
    )
