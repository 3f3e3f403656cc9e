"""Every result records how it was made (dpcert.provenance): re-running the recorded command gives the
same numbers, and JSON, Markdown and NPZ outputs carry the record."""

from __future__ import annotations

import importlib.metadata
import json

import pytest

import dpcert
from dpcert import provenance
from dpcert.bandits import registry
from dpcert.cli import main
from dpcert.reproductions import chowdhury_zhou_2022 as linucb
from dpcert.reproductions import li_zhou_ji_2022 as dpdpe

VERSION = importlib.metadata.version("dpcert")
ENVIRONMENT = {"python", "numpy", "scipy", "dp_accounting", "numba", "platform", "machine", "processor"}
ENVIRONMENT.add("blas")
BLAS = {"name", "version", "core", "OPENBLAS_CORETYPE"}

FAMILY_RUNS = {
    "linucb": [
        "linucb-jdp", "--privacy", "central", "--epsilon", "1", "--delta", "0.1", "--horizon", "300",
        "--seed", "7", "--option", "dimension=2", "--option", "arms=5", "--option", "fixed_arms=false",
    ],
    "dp-dpe": [
        "dp-dpe", "--privacy", "central", "--epsilon", "1", "--delta", "1e-5", "--horizon", "3000",
        "--seed", "3", "--option", "dimension=3", "--option", "arms=10",
    ],
    "mab-se": ["mab-se", "--privacy", "central", "--epsilon", "1", "--horizon", "3000", "--seed", "5"],
    "robust-elimination": [
        "robust-elimination", "--privacy", "local", "--epsilon", "1", "--horizon", "2000", "--seed", "2",
        "--option", "arms=10", "--option", "dimension=3",
    ],
    "ldp-linear": [
        "ldp-linear", "--privacy", "local", "--epsilon", "1", "--delta", "0.1", "--horizon", "300",
        "--seed", "1", "--option", "dimension=2", "--option", "arms=5",
    ],
}  # fmt: skip


def run_cli(capsys, argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def numbers(payload):
    """The run's results without its timing and its provenance record."""
    return {key: value for key, value in payload.items() if key not in ("seconds", provenance.KEY)}


def untimed(rows):
    """A reproduction's rows without their wall-clock seconds."""
    return {key: {k: v for k, v in row.items() if k != "seconds"} for key, row in rows.items()}


def check_record(record, format, seed):
    assert record["format"] == format and format in provenance.FORMATS
    assert record["dpcert"] == VERSION
    assert record["seeds"]["seed"] == seed and record["seeds"]["streams"]
    assert set(record["environment"]) == ENVIRONMENT
    assert set(record["environment"]["blas"]) == BLAS
    assert record["timing"]["seconds"] >= 0 and record["timing"]["started"]


@pytest.mark.parametrize("family", sorted(FAMILY_RUNS))
def test_bandit_run_rerun_from_its_record_gives_the_same_numbers(capsys, family):
    argv = ["bandit", "run", *FAMILY_RUNS[family], "--runs", "2", "--json"]
    first = run_cli(capsys, argv)
    record = first[provenance.KEY]
    seed = int(argv[argv.index("--seed") + 1])
    check_record(record, provenance.BANDIT_RUN, seed)
    assert record["command"] == {"argv": ["dpcert", *argv]}
    assert record["seeds"]["streams"] == dict(registry.algorithm(argv[2]).seeds)
    again = run_cli(capsys, record["command"]["argv"][1:])
    assert again["regret"] == first["regret"] and numbers(again) == numbers(first)
    assert provenance.stable(again[provenance.KEY]) == provenance.stable(record)


def test_bandit_run_out_files_carry_the_record(capsys, tmp_path):
    argv = ["bandit", "run", *FAMILY_RUNS["dp-dpe"], "--out", str(tmp_path), "--json"]
    printed = run_cli(capsys, argv)[provenance.KEY]
    stem = tmp_path / "dp-dpe-central-tight"
    saved = provenance.read_json(stem.with_suffix(".json"))
    curves = provenance.read_npz(stem.with_suffix(".npz"))
    check_record(saved, provenance.BANDIT_RUN, 3)
    check_record(curves, provenance.BANDIT_CURVES, 3)
    assert provenance.stable(saved) == provenance.stable(printed)
    assert provenance.stable(curves) == {**provenance.stable(printed), "format": provenance.BANDIT_CURVES}


def test_reproduction_writes_the_record_into_json_markdown_and_npz(capsys, tmp_path):
    argv = [
        "reproduce",
        "charisopoulos-2023-e1",
        "--runs",
        "2",
        "--seed",
        "4",
        "--option",
        "horizons=[500,1000]",
    ]
    argv += ["--out", str(tmp_path), "--json"]
    printed = run_cli(capsys, argv)
    record = printed[provenance.KEY]
    check_record(record, provenance.REPRODUCTION, 4)
    assert record["command"] == {"argv": ["dpcert", *argv]}
    check_written(tmp_path, "charisopoulos_2023_e1", record)
    again = run_cli(capsys, record["command"]["argv"][1:])
    assert untimed(again["rows"]) == untimed(printed["rows"])


def check_written(out, stem, record):
    """``STEM.json``, ``STEM.md``, ``STEM_claims.md`` and ``STEM_curves.npz`` under ``out`` carry
    ``record`` (a reproduction's JSON record), each with its own format tag."""
    found = {
        provenance.REPRODUCTION: provenance.read_json(out / f"{stem}.json"),
        provenance.REPRODUCTION_TABLE: provenance.read_markdown((out / f"{stem}.md").read_text()),
        provenance.REPRODUCTION_CLAIMS: provenance.read_markdown((out / f"{stem}_claims.md").read_text()),
        provenance.REPRODUCTION_CURVES: provenance.read_npz(out / f"{stem}_curves.npz"),
    }
    for format, written in found.items():
        check_record(written, format, record["seeds"]["seed"])
        assert provenance.stable(written) == {**provenance.stable(record), "format": format}
    for markdown in (f"{stem}.md", f"{stem}_claims.md"):
        assert (out / markdown).read_text().rstrip().endswith("-->")


def small_dpdpe(monkeypatch):
    monkeypatch.setattr(dpdpe, "HORIZON", 300)
    monkeypatch.setattr(dpdpe, "SETTING", {"dimension": 2, "arms": 5, "heterogeneity": 0.1, "alpha": 0.8})


WRITERS = {  # one quick reproduction per writer module: its options, then the stem of its files
    "tenenbaum-2021-mab": (["--option", "horizon=500", "--option", "epsilons=[1]"], "tenenbaum_2021_mab"),
    "improved-ldp-linear-radius-study": (
        ["--option", "horizon=160", "--option", "epsilons=[1]", "--option", "multipliers=[1]",
         "--option", "paper_noise_epsilon=null"],
        "improved_ldp_linear_radius_study",
    ),
    "li-zhou-ji-2022-fig2c": ([], "fig2c"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_every_reproduction_writer_records_json_markdown_and_npz(capsys, tmp_path, monkeypatch, name):
    small_dpdpe(monkeypatch)
    options, stem = WRITERS[name]
    argv = ["reproduce", name, "--runs", "2", "--seed", "6", *options, "--out", str(tmp_path), "--json"]
    record = run_cli(capsys, argv)[provenance.KEY]
    check_record(record, provenance.REPRODUCTION, 6)
    assert record["command"] == {"argv": ["dpcert", *argv]}
    check_written(tmp_path, stem, record)
    if name == "li-zhou-ji-2022-fig2c":  # its runs are also saved as bandit-run JSON and NPZ
        for run in ("fig2c-dpe", "fig2c-fixedu"):
            check_record(provenance.read_json(tmp_path / f"{run}.json"), provenance.BANDIT_RUN, 6)
            check_record(provenance.read_npz(tmp_path / f"{run}.npz"), provenance.BANDIT_CURVES, 6)
        api = registry.reproduction(name).run(2, str(tmp_path / "api"), 6)  # a string as the directory
        call = api[provenance.KEY]["command"]["python"]
        assert call.startswith("dpcert.bandits.registry.reproduction('li-zhou-ji-2022-fig2c').run(2, ")
        again = eval(call, {"dpcert": dpcert})  # noqa: S307 - the recorded call, re-run
        saved = json.loads((tmp_path / "fig2c.json").read_text())
        assert again["table"] == api["table"] == saved["table"]


def final_regrets(summary):
    """Every run's final regret of every algorithm, calibration and panel of a LinUCB reproduction."""
    return [
        {(name, calibration): row["final_regret"] for name, rows in panel["algorithms"].items()
         for calibration, row in rows.items()}
        for panel in summary["panels"]
    ]  # fmt: skip


def test_linucb_panels_record_a_python_call_that_runs_again(tmp_path):
    panels = linucb.FigurePanels((1.0,), (2,), horizon=200, arms=5)
    first = linucb.reproduce_panels("chowdhury-zhou-2022-fig1", panels, 2, tmp_path / "a", 0)
    record = first[provenance.KEY]
    check_record(record, provenance.REPRODUCTION, 0)
    check_written(tmp_path / "a", "chowdhury-zhou-2022-fig1", record)
    call = record["command"]["python"]
    assert "dpcert.reproductions.chowdhury_zhou_2022.FigurePanels(epsilons=(1.0,)" in call
    again = eval(call, {"dpcert": dpcert})  # noqa: S307 - the recorded call, re-run
    assert final_regrets(again) == final_regrets(first)


def test_python_call_is_recorded_and_runs_again(tmp_path):
    spec = registry.reproduction("charisopoulos-2023-e1")
    first = spec.run(2, tmp_path / "a", 1, horizons=[500])
    call = first[provenance.KEY]["command"]["python"]
    assert call.startswith("dpcert.bandits.registry.reproduction('charisopoulos-2023-e1').run(2, ")
    again = eval(call, {"dpcert": dpcert})  # noqa: S307 - the recorded call, re-run
    assert untimed(again["rows"]) == untimed(first["rows"])
    assert provenance.stable(again[provenance.KEY]) == provenance.stable(first[provenance.KEY])


def test_markdown_footer_round_trip_keeps_double_dashes():
    record = provenance.record(
        provenance.REPRODUCTION_TABLE, seeds=provenance.seeds(0, {"a": "b"}), call="f(x='--y')"
    )
    footer = provenance.markdown_footer(record)
    comment = footer[footer.index("<!--") + 4 : footer.rindex("-->")]
    assert "--" not in comment  # an HTML comment may not hold "--"
    assert provenance.read_markdown("# table\n" + footer) == record


def test_environment_and_blas_kernel():
    environment = provenance.environment()
    assert set(environment) == ENVIRONMENT and environment["numpy"]
    core = provenance.openblas_core()
    assert core is None or (isinstance(core, str) and core)
    with pytest.raises(ValueError, match="unknown provenance format"):
        provenance.record("dpcert.nothing/1", seeds={})
