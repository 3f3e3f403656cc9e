"""Notebook views (``_repr_markdown_`` / ``_repr_html_``) of dpcert's result values, as two-column tables."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

Rows = Sequence[tuple[str, Any]]


def markdown_table(title: str, rows: Rows, notes: Sequence[str] = ()) -> str:
    """``**title**``, a two-column Markdown table of ``rows``, then ``notes`` as a list."""
    table = "\n".join(f"| {label} | {value} |" for label, value in rows)
    listed = "".join(f"\n- {note}" for note in notes)
    return f"**{title}**\n\n| | |\n|---|---|\n{table}\n{listed}"


def html_table(title: str, rows: Rows, notes: Sequence[str] = ()) -> str:
    """The same as :func:`markdown_table` in HTML (every value escaped)."""
    cell = "<tr><th style='text-align:left'>{}</th><td>{}</td></tr>"
    body = "".join(cell.format(html.escape(str(label)), html.escape(str(value))) for label, value in rows)
    listed = "".join(f"<li>{html.escape(str(note))}</li>" for note in notes)
    return f"<b>{html.escape(title)}</b><table>{body}</table>" + (f"<ul>{listed}</ul>" if listed else "")
