"""The command line's written contract (docs/cli.md): every ``--json`` output validates against its
JSON Schema (docs/schemas/, draft 2020-12), every ``--json`` command has a schema, the schemas' label
enums are the code's own choices, and each top-level command answers one bad input with exit status 2
and one line on stderr naming the parameter.

The outputs come from the console script run as a user runs it (``python -m dpcert.cli`` in a
subprocess, one run per schema, small parameters); other shapes of the same schema (``--secure``,
``--user``, ``--format csv``, a failed verification, ...) come from :func:`dpcert.cli.main` in this
process, which is the function the console script calls.  Every validation is shown to be able to fail:
each output is also mutated (a negative epsilon, a delta of 1, a missing required member, an unknown
label) and the mutated object must be rejected.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from dpcert import Guarantee, provenance
from dpcert.audits.report import VERDICTS
from dpcert.certificates import Neighbouring, TrustModel
from dpcert.cli import build_parser, main
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.gaussian import gaussian_certificate
from dpcert.mechanisms.laplace import laplace_certificate
from dpcert.signatures import generate_private_key, private_key_pem, public_key_pem, sign_document

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_DIR = ROOT / "docs" / "schemas"
PAGE = ROOT / "docs" / "cli.md"
VERSION = 1
BASE = f"https://dpcert.invalid/schemas/{VERSION}/"
SHARED = "common"
"""The file of shared definitions (``$defs`` only: no command prints it)."""

MISSING = object()
"""A mutation value: delete the member."""


# --------------------------------------------------------------------------- schemas
def _schema_files() -> dict[str, Path]:
    return {path.name.removesuffix(".schema.json"): path for path in sorted(SCHEMA_DIR.glob("*.schema.json"))}


def _load() -> dict[str, dict[str, Any]]:
    return {name: json.loads(path.read_text(encoding="utf-8")) for name, path in _schema_files().items()}


SCHEMAS = _load()
REGISTRY: Registry = Registry().with_resources(
    (schema["$id"], Resource.from_contents(schema)) for schema in SCHEMAS.values()
)


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(SCHEMAS[name], registry=REGISTRY)


def definition(name: str) -> dict[str, Any]:
    return SCHEMAS[SHARED]["$defs"][name]


# --------------------------------------------------------------------------- the parser's commands
def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def parser_commands() -> dict[str, argparse.ArgumentParser]:
    """Every command of ``dpcert`` (words joined by '-') that accepts ``--json``, with its parser."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        if words and any("--json" in action.option_strings for action in parser._actions):
            found["-".join(words)] = parser
        for name, sub in _subcommands(parser).items():
            walk(sub, (*words, name))

    walk(build_parser(), ())
    return found


COMMANDS = parser_commands()


def choices(command: str, option: str) -> list[Any]:
    for action in COMMANDS[command]._actions:
        if option in action.option_strings:
            return list(action.choices)
    raise AssertionError(f"{command} has no option {option}")


# --------------------------------------------------------------------------- running the CLI
def console(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dpcert.cli", *argv], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def in_process(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_object(stdout: str) -> dict[str, Any]:
    """``--json`` prints exactly one JSON object on one line."""
    lines = stdout.splitlines()
    assert len(lines) == 1, stdout[:2000]
    payload = json.loads(lines[0])
    assert isinstance(payload, dict)
    return payload


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A certificate file, a ledger with charges and budgets, a key pair and a signed certificate."""
    path = tmp_path_factory.mktemp("cli-contract")
    (path / "gaussian.json").write_text(gaussian_certificate(2.0, delta=1e-5).to_json())
    with Ledger(path / "ledger.db") as ledger:
        ledger.set_budget(None, Guarantee(1.0, 1e-6))
        ledger.set_budget("carol", Guarantee(0.5, 0.0))
        ledger.charge(np.arange(4), laplace_certificate(4.0), run_id="r1")
        ledger.charge([1, "carol"], laplace_certificate(8.0), run_id="r2")
    key = generate_private_key()
    (path / "key.pem").write_bytes(private_key_pem(key))
    (path / "key.pub.pem").write_bytes(public_key_pem(key))
    signed = sign_document(laplace_certificate(2.0).to_dict(), key, signer="contract")
    (path / "signed.json").write_text(json.dumps(signed))
    forged = copy.deepcopy(signed)
    forged["guarantee"]["epsilon"] = 0.25  # a claim the signature does not cover
    (path / "forged.json").write_text(json.dumps(forged))
    return path


# --------------------------------------------------------------------------- mutations
def mutated(payload: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``payload`` with the member at dotted ``path`` set to ``value`` (or deleted)."""
    copy_ = copy.deepcopy(payload)
    *parents, last = path.split(".")
    target: Any = copy_
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    assert isinstance(target, dict) and last in target, (path, "is not in the output")
    if value is MISSING:
        del target[last]
    else:
        target[last] = value
    return copy_


def certificate_paths(payload: Any, prefix: str = "") -> Iterator[str]:
    """Dotted paths of every certificate object inside ``payload``."""
    if isinstance(payload, dict):
        if payload.get("format") == "dpcert.certificate/1":
            yield prefix.rstrip(".")
            return
        for key, value in payload.items():
            yield from certificate_paths(value, f"{prefix}{key}.")
    elif isinstance(payload, list):
        for index, value in enumerate(payload):
            yield from certificate_paths(value, f"{prefix}{index}.")


def standard_mutations(payload: dict[str, Any]) -> list[tuple[str, Any]]:
    """Mutations every schema must reject: broken certificates wherever one is printed."""
    found: list[tuple[str, Any]] = []
    placed = [where for where in certificate_paths(payload) if not where.startswith("steps.")]
    for where in placed[:2]:  # (the demo's steps are free-form: their certificates are not in its schema)
        base = f"{where}." if where else ""
        found += [
            (f"{base}guarantee.epsilon", -0.5),
            (f"{base}guarantee.delta", 1.0),
            (f"{base}trust_model", "cloud"),
            (f"{base}neighbouring", "add-or-remove"),
            (f"{base}basis", MISSING),
            (f"{base}guarantee", {"epsilon": 1.0, "delta": 0.0, "gamma": 0.0}),
        ]
    return found


def check(name: str, payload: dict[str, Any], mutations: list[tuple[str, Any]]) -> None:
    """``payload`` validates against schema ``name``; every mutation of it is rejected; a new member is
    accepted at the top level (additive evolution)."""
    checker = validator(name)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in checker.iter_errors(payload)]
    assert not errors, errors[:5]
    everything = mutations + standard_mutations(payload)
    assert everything, f"{name}: no mutation shows this validation can fail"
    for path, value in everything:
        assert not checker.is_valid(mutated(payload, path, value)), (name, path, value)
    assert checker.is_valid(payload | {"a_member_added_later": [1, "x"]})


# --------------------------------------------------------------------------- the cases
NEGATIVE = -1.0


def argv(text: str) -> list[str]:
    """The words of a command line; ``{dir}`` stands for the test's working directory."""
    return text.split()


def in_dir(words: list[str], directory: Path) -> list[str]:
    return [word.format(dir=directory) for word in words]


CASES: dict[str, tuple[list[str], int, list[tuple[str, Any]]]] = {
    "calibrate-gaussian": (
        argv("calibrate gaussian --epsilon 1 --delta 1e-5 --research"),
        0,
        [("sigma", NEGATIVE), ("sigma", 0.0), ("method", "fast"), ("method", MISSING), ("sigma", "3.7")],
    ),
    "calibrate-laplace": (
        argv("calibrate laplace --epsilon 0.5 --research"),
        0,
        [("scale", NEGATIVE), ("certificate", MISSING)],
    ),
    "calibrate-discrete-gaussian": (
        argv("calibrate discrete-gaussian --epsilon 1 --delta 1e-5"),
        0,
        [("sigma", 0.0), ("sampler", "float")],
    ),
    "calibrate-dp-sgd": (
        argv("calibrate dp-sgd --epsilon 2 --delta 1e-5 --sampling-probability 1 --steps 1"),
        0,
        [
            ("noise_multiplier", NEGATIVE),
            ("sampling", "bernoulli"),
            ("steps", 0),
            ("sampling_probability", 1.5),
            ("batch_size", MISSING),
        ],
    ),
    "calibrate-binomial-sum": (
        argv("calibrate binomial-sum --epsilon 1 --delta 1e-5 --users 100"),
        0,
        [("p", 1.0), ("epsilon", NEGATIVE), ("delta", 1.0), ("method", "guess"), ("g", 2.5)],
    ),
    "calibrate-shuffle": (
        argv("calibrate shuffle --epsilon 1 --delta 1e-5 --users 1000"),
        0,
        [("epsilon0", 0.0), ("method", "closed form")],
    ),
    "account-gaussian": (
        argv("account gaussian --sigma 2 --delta 1e-5"),
        0,
        [("epsilon", NEGATIVE), ("delta", -1e-9), ("delta", 1.0), ("epsilon", MISSING)],
    ),
    "account-laplace": (
        argv("account laplace --scale 2"),
        0,
        [("epsilon", NEGATIVE), ("delta", MISSING)],
    ),
    "account-dp-sgd": (
        argv("account dp-sgd --noise-multiplier 1 --delta 1e-5 --sampling-probability 0.01 --steps 20"),
        0,
        [("epsilon", NEGATIVE), ("noise_multiplier", 0.0), ("steps", MISSING)],
    ),
    "account-compose": (
        argv("account compose --certificate {dir}/gaussian.json --count 3 --delta 1e-4"),
        0,
        [("mechanisms", 0), ("epsilon", NEGATIVE), ("method", "")],
    ),
    "account-binomial-sum": (
        argv("account binomial-sum --g 10 --b 20 --p 0.5 --users 100 --delta 1e-5"),
        0,
        [("noise_std", NEGATIVE), ("delta", 2.0)],
    ),
    "account-shuffle": (
        argv("account shuffle --epsilon0 1 --users 1000 --delta 1e-5 --method closed-form"),
        0,
        [("closed_form_precondition", MISSING), ("closed_form_precondition", "yes"), ("epsilon", NEGATIVE)],
    ),
    "audit": (
        argv("audit builtin:laplace --input 0 --neighbour 1 --epsilon 1 --scale 0.3 --samples 2000 --seed 1"),
        1,
        [
            ("verdict", "inconclusive"),
            ("epsilon_lower_bound", NEGATIVE),
            ("claimed_delta", 1.0),
            ("counts.in_set_numerator", -1),
            ("run", MISSING),
            ("run.claim.epsilon", NEGATIVE),
            ("run.options.timing", "gpu"),
            ("seed", NEGATIVE),
            ("confidence", 1.0),
        ],
    ),
    "bandit-run": (
        argv("bandit run mab-se --privacy central --epsilon 1 --horizon 200 --runs 2"),
        0,
        [
            ("privacy", "federated"),
            ("max_user_epsilon", NEGATIVE),
            ("regret.stderr", NEGATIVE),
            ("provenance.format", "dpcert.reproduction/1"),
            ("target.epsilon", NEGATIVE),
            ("runs", 0),
        ],
    ),
    "bandit-list": (
        argv("bandit list"),
        0,
        [("algorithms.0.privacy", ["centralised"]), ("algorithms.0.name", MISSING)],
    ),
    "reproduce": (
        argv("reproduce --list"),
        0,
        [("reproductions.0.name", MISSING), ("reproductions", {"name": "x"})],
    ),
    "ledger-show": (
        argv("ledger show {dir}/ledger.db"),
        0,
        [("max_user_epsilon", NEGATIVE), ("users", -1), ("default_budget.delta", 1.0), ("chain_head", 0)],
    ),
    "ledger-export": (
        argv("ledger export {dir}/ledger.db"),
        0,
        [
            ("format", "dpcert.ledger-export/2"),
            ("charges.0.certificate", "not-a-sha256"),
            ("users.0.delta", 1.5),
            ("budgets.0.epsilon", NEGATIVE),
        ],
    ),
    "ledger-budget": (
        argv("ledger budget {dir}/budget.db --epsilon 2 --delta 1e-7 --user dave"),
        0,
        [("epsilon", NEGATIVE), ("delta", 1.0), ("user", MISSING)],
    ),
    "ledger-verify": (
        argv("ledger verify {dir}/ledger.db"),
        0,
        [("ok", "yes"), ("problem", "a problem while ok is true"), ("charges", -1)],
    ),
    "ledger-migrate": (
        argv("ledger migrate {dir}/migrate.db"),
        0,
        [("from_version", 0), ("ok", MISSING)],
    ),
    "keygen": (
        argv("keygen --out {dir}/new-key.pem"),
        0,
        [("public_key", MISSING), ("private_key", 1)],
    ),
    "sign": (
        argv("sign {dir}/gaussian.json --key {dir}/key.pem --signer me --out {dir}/gaussian.signed.json"),
        0,
        [("fingerprint", ""), ("signed", MISSING)],
    ),
    "verify": (
        argv("verify {dir}/signed.json --public-key {dir}/key.pub.pem"),
        0,
        [("valid", False), ("kind", "ledger"), ("summary", MISSING)],
    ),
    "demo": (
        argv("demo --out {dir}/demo"),
        0,
        [
            ("seconds", NEGATIVE),
            ("steps", {}),
            ("provenance.format", provenance.BANDIT_RUN),
            ("provenance.seeds", MISSING),
        ],
    ),
}


CASE_NAMES = sorted(name for name in SCHEMAS if name != SHARED)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_console_script_output_validates_against_its_schema(name: str, workdir: Path) -> None:
    if name == "ledger-migrate":  # a ledger of its own: migrate writes
        (workdir / "migrate.db").write_bytes((workdir / "ledger.db").read_bytes())
    words, status, mutations = CASES[name]
    result = console(*in_dir(words, workdir), "--json", cwd=workdir)
    assert result.returncode == status, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    payload = one_object(result.stdout)
    check(name, payload, mutations)
    if name == "audit":  # exit status 1 exactly for a "violated" verdict
        assert payload["verdict"] == "violated"


# --------------------------------------------------------------------------- other shapes, in process
SHAPE_CASES: list[tuple[str, list[str], int, list[tuple[str, Any]]]] = [
    (
        "calibrate-gaussian",
        argv("calibrate gaussian --epsilon 1 --delta 1e-5 --secure"),
        0,
        [("granularity", 0.0), ("sampler", "float"), ("sampler", MISSING)],
    ),
    (
        "calibrate-laplace",
        argv("calibrate laplace --epsilon 1 --secure"),
        0,
        [("sampler", MISSING), ("granularity", NEGATIVE)],
    ),
    (
        "account-shuffle",
        argv("account shuffle --epsilon0 1 --users 1000 --delta 1e-5"),
        0,
        [("method", "closed-form")],
    ),
    (
        "audit",
        argv("audit builtin:laplace --epsilon 1 --search scalar --samples 2000 --seed 1"),
        0,
        [("search", None), ("search.kind", "tree"), ("input", MISSING)],
    ),
    (
        "ledger-show",
        argv("ledger show {dir}/ledger.db --user carol"),
        0,
        [("certificate", MISSING), ("epsilon", NEGATIVE), ("user", None), ("budget.epsilon", NEGATIVE)],
    ),
    (
        "ledger-export",
        argv("ledger export {dir}/ledger.db --format csv"),
        0,
        [("text", MISSING), ("format", "tsv")],
    ),
    (
        "ledger-verify",
        argv("ledger verify {dir}/ledger.db --head " + "ab" * 32),
        1,
        [("problem", None), ("ok", True)],
    ),
    (
        "verify",
        argv("verify {dir}/forged.json --public-key {dir}/key.pub.pem"),
        1,
        [("valid", True), ("reason", MISSING)],
    ),
]


SHAPE_IDS = [
    "calibrate-gaussian --secure",
    "calibrate-laplace --secure",
    "account-shuffle numeric",
    "audit --search",
    "ledger-show --user",
    "ledger-export csv",
    "ledger-verify failed",
    "verify forged",
]


@pytest.mark.parametrize("case", SHAPE_CASES, ids=SHAPE_IDS)
def test_other_output_shapes_validate(
    case: tuple[str, list[str], int, list[tuple[str, Any]]], workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, words, status, mutations = case
    code, out, err = in_process([*in_dir(words, workdir), "--json"], capsys)
    assert code == status, err
    check(name, one_object(out), mutations)


# --------------------------------------------------------------------------- the schemas themselves
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_each_schema_is_a_valid_versioned_draft_2020_12_schema(name: str) -> None:
    schema = SCHEMAS[name]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] == f"{BASE}{name}.schema.json"  # the contract version is part of the $id


def test_every_json_command_has_a_schema_a_run_and_a_place_in_the_page() -> None:
    commands = set(COMMANDS)
    assert {"calibrate-gaussian", "ledger-show", "audit", "demo"} <= commands  # the walk found the parser
    assert commands == set(CASE_NAMES), (
        f"--json commands without a schema: {sorted(commands - set(CASE_NAMES))}; "
        f"schemas without a command: {sorted(set(CASE_NAMES) - commands)}"
    )
    assert set(CASES) == commands  # each schema is checked against a real run
    page = PAGE.read_text(encoding="utf-8")
    for name in SCHEMAS:
        assert f"schemas/{name}.schema.json" in page, f"docs/cli.md does not link {name}"


def _enum(schema: dict[str, Any], *path: str) -> list[Any]:
    node: Any = schema
    for key in path:
        node = node[key]
    return node["enum"]


def test_label_enums_are_the_codes_own_choices() -> None:
    assert _enum(definition("trust_model")) == [model.value for model in TrustModel]
    assert _enum(definition("neighbouring")) == [relation.value for relation in Neighbouring]
    assert _enum(definition("audit_report"), "properties", "verdict") == list(VERDICTS)
    assert _enum(definition("provenance"), "properties", "format") == list(provenance.FORMATS)
    for name, option, path in [
        ("calibrate-gaussian", "--method", ("properties", "method")),
        ("calibrate-binomial-sum", "--method", ("properties", "method")),
        ("calibrate-shuffle", "--method", ("properties", "method")),
        ("account-shuffle", "--method", ("properties", "method")),
        ("calibrate-dp-sgd", "--sampling", ("properties", "sampling")),
        ("account-dp-sgd", "--sampling", ("properties", "sampling")),
        ("bandit-run", "--privacy", ("properties", "privacy")),
        ("audit", "--timing", ("properties", "run", "properties", "options", "properties", "timing")),
    ]:
        allowed = [value for value in _enum(SCHEMAS[name], *path) if value is not None]
        assert allowed == choices(name, option), (name, option)
    search = SCHEMAS["audit"]["oneOf"][1]["properties"]["search"]["properties"]["kind"]["enum"]
    assert search == choices("audit", "--search")


# --------------------------------------------------------------------------- exit status 2
BAD_INPUTS: dict[str, tuple[list[str], str]] = {
    "calibrate": (argv("calibrate gaussian --epsilon -1 --delta 1e-5"), "--epsilon"),
    "account": (argv("account laplace --scale 0"), "--scale"),
    "audit": (argv("audit builtin:laplace --input 0 --neighbour 1 --epsilon 1 --samples 1"), "--samples"),
    "bandit": (argv("bandit run mab-se --horizon 0"), "--horizon"),
    "ledger": (argv("ledger budget {dir}/new.db --epsilon 1 --delta 1"), "delta"),
    "reproduce": (argv("reproduce --runs 0"), "--runs"),
    "keygen": (argv("keygen --out {dir}/no-such-directory/key.pem"), "--out"),
    "sign": (argv("sign {dir}/absent.json --key {dir}/key.pem"), "path"),
    "verify": (argv("verify {dir}/absent.json --public-key {dir}/key.pub.pem"), "path"),
    "demo": (argv("demo --seed -1"), "--seed"),
}


def test_every_top_level_command_has_a_bad_input_case() -> None:
    assert set(BAD_INPUTS) == set(_subcommands(build_parser()))


@pytest.mark.parametrize("command", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line_naming_the_parameter(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words, parameter = BAD_INPUTS[command]
    code, out, err = in_process([*in_dir(words, tmp_path), "--json"], capsys)
    assert code == 2, err
    assert out == ""  # nothing on stdout, not even with --json
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("dpcert: error:") and parameter in lines[0], lines[0]
    assert not (tmp_path / "new.db").exists()  # refused before any work
