"""Reproductions are named by paper and figure; the previous release's names still resolve, with a notice.

Nothing here runs a reproduction: each old name is resolved through ``dpcert reproduce`` up to the check
of its ``--option`` keys, which refuses an unknown key (exit 2) before any work starts.
"""

from __future__ import annotations

import io
import json
import re

import pytest

from dpcert.bandits import registry
from dpcert.cli import main
from dpcert.reproductions import RENAMED, current_name

NEW_NAMES = {
    "li-zhou-ji-2022-fig2a",
    "li-zhou-ji-2022-fig2b",
    "li-zhou-ji-2022-fig2c",
    "tenenbaum-2021-mab",
    "chowdhury-zhou-2022-fig1",
    "chowdhury-zhou-2022-fig2",
    "charisopoulos-2023-e1",
    "charisopoulos-2023-e2",
    "charisopoulos-2023-e3",
    "charisopoulos-2023-e4",
    "improved-ldp-linear-fig1",
    "improved-ldp-linear-radius-study",
}
OLD_NAME = re.compile(r"seed\d|cz2022|dpdpe")


def test_registered_names_are_the_paper_and_figure_names():
    assert set(registry.reproductions()) == NEW_NAMES
    assert set(RENAMED.values()) == NEW_NAMES  # every reproduction had a previous name
    for name in NEW_NAMES:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*(-\d{4})?-[a-z0-9]+(-[a-z]+)*", name), name


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_old_name_resolves_to_the_new_one_with_one_notice(old):
    notices = io.StringIO()
    assert current_name(old, notices) == RENAMED[old]
    assert notices.getvalue() == (
        f"dpcert: '{old}' is now '{RENAMED[old]}'; the old name will be removed in the next release\n"
    )
    unchanged = io.StringIO()
    assert current_name(RENAMED[old], unchanged) == RENAMED[old] and unchanged.getvalue() == ""


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_old_name_reaches_the_new_reproduction_through_the_cli(old, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    code = main(["reproduce", old, "--out", str(tmp_path), "--option", "no_such_setting=1"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    notice = f"dpcert: '{old}' is now '{RENAMED[old]}'; the old name will be removed in the next release"
    assert err[0] == notice
    assert len(err) == 2 and "--option" in err[1] and f"a key {RENAMED[old]} reads" in err[1]
    assert list(tmp_path.iterdir()) == []  # refused before any work


def test_list_and_help_show_only_the_new_names(capsys):
    assert main(["reproduce", "--list", "--json"]) == 0
    listed = {entry["name"] for entry in json.loads(capsys.readouterr().out)["reproductions"]}
    assert listed == NEW_NAMES
    assert main(["reproduce", "--list"]) == 0
    table = capsys.readouterr().out
    assert {line.split()[0] for line in table.splitlines() if line.strip()} == NEW_NAMES
    assert main(["reproduce", "--help"]) == 0
    text = re.sub(r"-\n\s+", "-", capsys.readouterr().out)  # argparse wraps lines at hyphens
    assert "chowdhury-zhou-2022-fig1" in text  # the --horizon help names the figures it applies to
    for output in (table, text):
        assert not OLD_NAME.search(output)
