"""Figure reproductions behind ``dpcert reproduce``, one module per paper.

:mod:`.li_zhou_ji_2022` (Li, Zhou & Ji 2022), :mod:`.tenenbaum_2021` (Tenenbaum et al. 2021),
:mod:`.chowdhury_zhou_2022` (Chowdhury & Zhou 2022), :mod:`.charisopoulos_2023` (Charisopoulos,
Esfandiari & Mirrokni 2023) and :mod:`.improved_ldp_linear` (Improved-rate LDP linear bandits).

A reproduction is named by its paper and figure: the first author(s)' surnames, the year and the figure
or experiment, lower case and joined by hyphens (``li-zhou-ji-2022-fig2a``, ``charisopoulos-2023-e2``);
the files it writes are named after it.  :data:`RENAMED` maps the names of the previous release to
these; they are accepted, with a one-line notice, for one more release.
"""

from __future__ import annotations

import sys
from typing import TextIO

# each paper's module registers its reproductions in dpcert.bandits.registry when imported
from dpcert.reproductions import (
    charisopoulos_2023,
    chowdhury_zhou_2022,
    improved_ldp_linear,
    li_zhou_ji_2022,
    tenenbaum_2021,
)

RENAMED: dict[str, str] = {
    "dpdpe-fig2a": "li-zhou-ji-2022-fig2a",
    "dpdpe-fig2b": "li-zhou-ji-2022-fig2b",
    "dpdpe-fig2c": "li-zhou-ji-2022-fig2c",
    "seed001-shuffle-mab": "tenenbaum-2021-mab",
    "cz2022-figure1": "chowdhury-zhou-2022-fig1",
    "cz2022-figure2": "chowdhury-zhou-2022-fig2",
    "seed003-e1-sanity": "charisopoulos-2023-e1",
    "seed003-e2-robustness": "charisopoulos-2023-e2",
    "seed003-e3-privacy": "charisopoulos-2023-e3",
    "seed003-e4-m1-vs-m2": "charisopoulos-2023-e4",
    "seed004-figure1": "improved-ldp-linear-fig1",
    "seed004-radius-study": "improved-ldp-linear-radius-study",
}
"""Reproduction names of the previous release -> their names by paper and figure (removed in the next)."""


def renamed_notice(old: str) -> str:
    """The one line printed when a reproduction is asked for by its previous name."""
    return f"dpcert: '{old}' is now '{RENAMED[old]}'; the old name will be removed in the next release"


def current_name(name: str, notices: TextIO | None = None) -> str:
    """``name``, or the name a renamed reproduction now has (its notice written to ``notices``, stderr
    by default)."""
    if name not in RENAMED:
        return name
    (sys.stderr if notices is None else notices).write(renamed_notice(name) + "\n")
    return RENAMED[name]


__all__ = [
    "RENAMED",
    "charisopoulos_2023",
    "chowdhury_zhou_2022",
    "current_name",
    "improved_ldp_linear",
    "li_zhou_ji_2022",
    "renamed_notice",
    "tenenbaum_2021",
]
