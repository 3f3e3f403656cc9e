"""Generated command lines over every sub-command: bad input is one line naming the parameter.

Each example takes a valid command line of one sub-command and replaces the value of one of its
options (or its positional argument) by a boundary number (0, -1, NaN, inf, 1e308, 10**400, ...), a
value of the wrong type, a malformed, deeply nested, wrongly typed or oversized JSON file (a sparse
file one byte above :data:`dpcert.cli._common.MAX_INPUT_BYTES`), an unwritable path or a size that
does not fit, or drops the option.  Every run must end with exit 0, 1 or 2, never a traceback or an
internal error; exit 2 must be exactly one line on stderr that names the option replaced; a JSON
output must hold no NaN or infinity.  Runs go through :func:`dpcert.cli.main` in this process
(derandomized hypothesis, a bounded number of examples per sub-command).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import RanTooLong, time_limit
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import dpcert
from dpcert.cli import build_parser, main
from dpcert.cli._common import MAX_INPUT_BYTES
from dpcert.ledger.api import Ledger
from dpcert.mechanisms.laplace import laplace_certificate
from dpcert.signatures import generate_private_key, private_key_pem, public_key_pem, sign_document

EXAMPLE_SECONDS = 30
"""An example still running after this long is a failure (inputs must be refused before the work)."""

NUMBERS = [
    "0", "-0", "-1", "1e-320", "4.9e-324", "1e-300", "1e308", "-1e308", "1e309", "nan", "NaN", "-nan",
    "inf", "-inf", "Infinity", str(10**400), str(-(10**400)), "9" * 40, "1e12", "1e9", "2.5", "0.5",
    "1e-51", "1e51", "",
]  # fmt: skip
NEAR_LIMITS = [
    "5e-324", "-5e-324", "1e-310", "2.225073858507201e-308", "2.2250738585072014e-308", "1e-160", "1e-154",
    "1.7976931348623157e308", "-1.7976931348623157e308", "1.7976931348623158e308", "1e300", "1e160",
    "1e154", "0x1p-1074", "1e-400",
]  # fmt: skip
"""Subnormals, the smallest normal float, the largest floats (and just beyond), squares at the limits."""
WRONG_TYPES = [" ", "abc", "1,5", "0x10", "1_000", "[]", "{}", "true", "null", "\x00", "--", "1 2", "é"]
NESTED = "[" * 100_000 + "]" * 100_000


@dataclass
class Files:
    """Files the command lines refer to (made once per module)."""

    root: Path
    names: dict[str, Path] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Path:
        return self.names[key]


def _bad_files(root: Path) -> dict[str, Path]:
    bad = root / "bad"
    bad.mkdir()
    contents = {
        "empty.json": b"",
        "not-utf8.json": b'{"a": "\xff\xfe"}',
        "malformed.json": b'{"format": "dpcert.certificate/1", ',
        "nested.json": NESTED.encode(),
        "nested-object.json": ('{"a": ' * 50_000 + "1" + "}" * 50_000).encode(),
        "number.json": b"42",
        "null.json": b"null",
        "list.json": b"[1, 2, 3]",
        "nan.json": b'{"epsilon": NaN}',
        "wrong-fields.json": b'{"format": 7, "mechanism": [], "guarantee": "x"}',
        "duplicate-keys.json": b'{"a": 1, "a": 2}',
        "big-number.json": ("1" * 5000).encode(),
        "key.pem": b"-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n",
    }
    paths = {}
    for name, data in contents.items():
        (bad / name).write_bytes(data)
        paths[name] = bad / name
    huge = bad / "huge.json"  # one byte above the read limit, sparse: no disk space used
    with open(huge, "wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)
    paths["huge.json"] = huge
    paths["directory"] = bad
    paths["missing"] = bad / "missing.json"
    paths["under-a-file"] = bad / "number.json" / "x.json"
    locked = root / "locked"
    locked.mkdir()
    (locked / "inside.json").write_bytes(b"{}")
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    paths["locked-dir"] = locked
    paths["unreadable"] = locked / "inside.json"
    return paths


@pytest.fixture(scope="module")
def files() -> Iterator[Files]:
    root = Path(tempfile.mkdtemp(prefix="dpcert-fuzz-cli-"))
    found = Files(root)
    certificate = dpcert.calibrate_gaussian(1.0, 1e-5).certificate
    found.names["cert"] = root / "certificate.json"
    found.names["cert"].write_text(certificate.to_json(), encoding="utf-8")
    key = generate_private_key()
    found.names["key"] = root / "key.pem"
    found.names["key"].write_bytes(private_key_pem(key))
    found.names["pub"] = root / "key.pub.pem"
    found.names["pub"].write_bytes(public_key_pem(key.public_key()))
    found.names["signed"] = root / "signed.json"
    signed = sign_document(json.loads(certificate.to_json()), key, signer="fuzz")
    found.names["signed"].write_text(json.dumps(signed), encoding="utf-8")
    found.names["matrix"] = root / "matrix.json"
    found.names["matrix"].write_text("[[0.75, 0.25], [0.25, 0.75]]", encoding="utf-8")
    found.names["pairs"] = root / "pairs.json"
    found.names["pairs"].write_text("[[0, 1], [1, 2]]", encoding="utf-8")
    found.names["ledger"] = root / "ledger.db"
    with Ledger(found.names["ledger"]) as ledger:
        ledger.set_budget(None, dpcert.Guarantee(1.0, 0.0))
        ledger.charge(["ann", 7], laplace_certificate(4.0), run_id="r1")
    found.names.update(_bad_files(root))
    try:
        yield found
    finally:
        found.names["locked-dir"].chmod(stat.S_IRWXU)
        shutil.rmtree(root, ignore_errors=True)


def file_values(files: Files, *, writing: bool) -> list[str]:
    """Bad paths: for reading, files that are missing, directories, unreadable or of bad content; for
    writing, places that cannot be written."""
    if writing:
        values = [
            str(files["directory"]),
            str(files["under-a-file"]),
            "/proc/dpcert-no-such-directory/out.json",
            str(files["directory"] / ("n" * 300 + ".json")),
            "",
        ]
        if not os.access(files["locked-dir"], os.W_OK):  # root writes anywhere: no such case then
            values.append(str(files["locked-dir"] / "out.json"))
        return values
    names = [
        "empty.json", "not-utf8.json", "malformed.json", "nested.json", "nested-object.json",
        "number.json", "null.json", "list.json", "nan.json", "wrong-fields.json", "duplicate-keys.json",
        "big-number.json", "huge.json", "directory", "missing", "under-a-file", "key.pem",
    ]  # fmt: skip
    values = [str(files[name]) for name in names] + ["", "/proc/dpcert-no-such-file.json"]
    if not os.access(files["unreadable"], os.R_OK):
        values.append(str(files["unreadable"]))
    if os.path.exists("/dev/zero"):
        values.append("/dev/zero")  # endless: refused after the read limit
    return values


# --------------------------------------------------------------------------- the sub-commands
NUMBER, FILE_IN, FILE_OUT, TEXT, JSON_TEXT = "number", "file-in", "file-out", "text", "json"


@dataclass(frozen=True)
class Command:
    """A valid command line (``{name}`` placeholders are files) and the kinds of its values."""

    argv: tuple[str, ...]
    options: dict[str, str]
    examples: int
    names: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Other words that name an option in an error (a positional's metavar, a library parameter)."""
    fresh: bool = False
    """The command writes its files: each example works on a copy in a fresh directory."""
    only_bad: bool = False
    """A valid value would start minutes of work: only values that must be refused are drawn."""


COMMANDS: dict[str, Command] = {
    "calibrate gaussian": Command(
        ("calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1",
         "--compositions", "1", "--method", "analytic", "--json"),
        {"--epsilon": NUMBER, "--delta": NUMBER, "--sensitivity": NUMBER, "--compositions": NUMBER,
         "--method": TEXT},
        24,
    ),
    "calibrate gaussian --secure": Command(
        ("calibrate", "gaussian", "--secure", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1",
         "--granularity", "0.0625", "--json"),
        {"--epsilon": NUMBER, "--delta": NUMBER, "--sensitivity": NUMBER, "--granularity": NUMBER},
        18,
    ),
    "calibrate laplace": Command(
        ("calibrate", "laplace", "--epsilon", "1", "--sensitivity", "2", "--research", "--json"),
        {"--epsilon": NUMBER, "--sensitivity": NUMBER},
        12,
    ),
    "calibrate laplace --secure": Command(
        ("calibrate", "laplace", "--secure", "--epsilon", "1", "--granularity", "0.25", "--json"),
        {"--epsilon": NUMBER, "--granularity": NUMBER},
        12,
    ),
    "calibrate discrete-gaussian": Command(
        ("calibrate", "discrete-gaussian", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1",
         "--compositions", "1", "--json"),
        {"--epsilon": NUMBER, "--delta": NUMBER, "--sensitivity": NUMBER, "--compositions": NUMBER},
        15,
    ),
    "calibrate dp-sgd": Command(
        ("calibrate", "dp-sgd", "--epsilon", "8", "--delta", "1e-5", "--sampling-probability", "0.01",
         "--steps", "10", "--json"),
        {"--epsilon": NUMBER, "--delta": NUMBER, "--sampling-probability": NUMBER, "--steps": NUMBER,
         "--sensitivity": NUMBER},
        8,
        only_bad=True,
    ),
    "calibrate binomial-sum": Command(
        ("calibrate", "binomial-sum", "--epsilon", "1", "--delta", "1e-5", "--users", "100",
         "--dimension", "1", "--bound", "1", "--method", "paper", "--json"),
        {"--epsilon": NUMBER, "--delta": NUMBER, "--users": NUMBER, "--dimension": NUMBER,
         "--bound": NUMBER, "--shape": TEXT, "--norm": TEXT},
        15,
    ),
    "calibrate shuffle": Command(
        ("calibrate", "shuffle", "--epsilon", "1", "--delta", "1e-6", "--users", "1000",
         "--method", "closed-form", "--json"),
        {"--epsilon": NUMBER, "--delta": NUMBER, "--users": NUMBER, "--randomizer": TEXT,
         "--categories": NUMBER, "--matrix": FILE_IN},
        15,
    ),
    "account gaussian": Command(
        ("account", "gaussian", "--sigma", "3", "--delta", "1e-6", "--sensitivity", "1",
         "--compositions", "2", "--json"),
        {"--sigma": NUMBER, "--delta": NUMBER, "--sensitivity": NUMBER, "--compositions": NUMBER,
         "--plot": FILE_OUT},
        18,
    ),
    "account dp-sgd": Command(
        ("account", "dp-sgd", "--noise-multiplier", "1", "--delta", "1e-5", "--sampling-probability",
         "0.01", "--steps", "10", "--json"),
        {"--noise-multiplier": NUMBER, "--delta": NUMBER, "--sampling-probability": NUMBER,
         "--steps": NUMBER, "--epsilon": NUMBER, "--sensitivity": NUMBER},
        12,
    ),
    "account laplace": Command(
        ("account", "laplace", "--scale", "2", "--sensitivity", "1", "--delta", "0", "--json"),
        {"--scale": NUMBER, "--sensitivity": NUMBER, "--delta": NUMBER, "--plot": FILE_OUT},
        12,
    ),
    "account compose": Command(
        ("account", "compose", "--certificate", "{cert}", "--count", "3", "--delta", "1e-5", "--json"),
        {"--certificate": FILE_IN, "--count": NUMBER, "--delta": NUMBER, "--method": TEXT},
        24,
    ),
    "account binomial-sum": Command(
        ("account", "binomial-sum", "--g", "10", "--b", "100", "--p", "0.5", "--users", "100",
         "--delta", "1e-5", "--json"),
        {"--g": NUMBER, "--b": NUMBER, "--p": NUMBER, "--users": NUMBER, "--delta": NUMBER,
         "--dimension": NUMBER, "--bound": NUMBER, "--shape": TEXT, "--norm": TEXT},
        18,
    ),
    "account shuffle": Command(
        ("account", "shuffle", "--epsilon0", "1", "--users", "1000", "--delta", "1e-6",
         "--method", "closed-form", "--json"),
        {"--epsilon0": NUMBER, "--users": NUMBER, "--delta": NUMBER, "--categories": NUMBER,
         "--randomizer": TEXT, "--matrix": FILE_IN},
        15,
    ),
    "ledger show": Command(
        ("ledger", "show", "{ledger}", "--json"),
        {"path": FILE_IN, "--user": TEXT, "--delta": NUMBER, "--plot": FILE_OUT},
        15,
        names={"path": ("LEDGER", "ledger")},
    ),
    "ledger export": Command(
        ("ledger", "export", "{ledger}", "--format", "json"),
        {"path": FILE_IN, "--format": TEXT},
        9,
        names={"path": ("LEDGER", "ledger")},
    ),
    "ledger budget": Command(
        ("ledger", "budget", "{ledger}", "--epsilon", "2", "--delta", "0", "--user", "7", "--json"),
        {"path": FILE_OUT, "--epsilon": NUMBER, "--delta": NUMBER, "--user": TEXT,
         "--signing-key": FILE_IN},
        18,
        names={"path": ("LEDGER", "ledger")},
        fresh=True,
    ),
    "ledger verify": Command(
        ("ledger", "verify", "{ledger}", "--json"),
        {"path": FILE_IN, "--head": TEXT, "--public-key": FILE_IN},
        12,
        names={"path": ("LEDGER", "ledger")},
    ),
    "ledger migrate": Command(
        ("ledger", "migrate", "{ledger}", "--json"),
        {"path": FILE_IN, "--signing-key": FILE_IN},
        9,
        names={"path": ("LEDGER", "ledger")},
        fresh=True,
    ),
    "keygen": Command(
        ("keygen", "--out", "{scratch}/new.pem", "--json"),
        {"--out": FILE_OUT},
        8,
        fresh=True,
    ),
    "sign": Command(
        ("sign", "{cert}", "--key", "{key}", "--out", "{scratch}/signed.json", "--json"),
        {"path": FILE_IN, "--key": FILE_IN, "--out": FILE_OUT, "--signer": TEXT},
        18,
        names={"path": ("FILE.json",)},
        fresh=True,
    ),
    "verify": Command(
        ("verify", "{signed}", "--public-key", "{pub}", "--json"),
        {"path": FILE_IN, "--public-key": FILE_IN},
        15,
        names={"path": ("FILE.json",)},
    ),
    "audit": Command(
        ("audit", "builtin:laplace", "--input", "0", "--neighbour", "1", "--epsilon", "1",
         "--samples", "2000", "--seed", "1", "--json"),
        {"--input": JSON_TEXT, "--neighbour": JSON_TEXT, "--epsilon": NUMBER, "--delta": NUMBER,
         "--samples": NUMBER, "--confidence": NUMBER, "--seed": NUMBER, "--scale": NUMBER,
         "--max-cells": NUMBER, "--save": FILE_OUT, "--plot": FILE_OUT, "--relation": TEXT},
        24,
        names={"--input": ("INPUT", "input"), "--neighbour": ("NEIGHBOUR", "neighbour")},
    ),
    "audit --search": Command(
        ("audit", "builtin:laplace", "--search", "pairs", "--pairs", "{pairs}", "--epsilon", "1",
         "--samples", "1000", "--seed", "1", "--json"),
        {"--pairs": FILE_IN, "--epsilon": NUMBER, "--samples": NUMBER},
        9,
    ),
    "bandit run": Command(
        ("bandit", "run", "mab-se", "--privacy", "local", "--epsilon", "1", "--horizon", "200",
         "--runs", "1", "--seed", "1", "--json"),
        {"--privacy": TEXT, "--epsilon": NUMBER, "--delta": NUMBER, "--horizon": NUMBER,
         "--runs": NUMBER, "--seed": NUMBER, "--option": TEXT, "--scheduler": TEXT, "--out": FILE_OUT,
         "--plot": FILE_OUT, "--ledger": FILE_OUT, "--calibration": TEXT},
        24,
        fresh=True,
    ),
    "reproduce": Command(
        ("reproduce", "--list"),
        {"--runs": NUMBER, "--horizon": NUMBER, "--seed": NUMBER, "--option": TEXT, "--out": FILE_OUT,
         "--scheduler": TEXT, "name": TEXT},
        12,
        names={"name": ("NAME", "name", "reproduction")},
        only_bad=True,
    ),
    "demo": Command(
        ("demo",),
        {"--out": FILE_OUT, "--seed": NUMBER},
        8,
        only_bad=True,
    ),
}  # fmt: skip

TEXTS = {
    "--option": ["arms=1e9", "arms=-1", "arms=nan", "=1", "noequals", "arms=", f"arms={NESTED}",
                 "arms=" + "9" * 400, "horizon=unknown", "dimension=1e6", "secure=maybe", "é=1"],
    "--scheduler": ["", "nonsense", "tcp://", "tcp://127.0.0.1:99999", "tcp://127.0.0.1:0",
                    "tcp://[::1", "dask://x", "local:1"],
    "--user": ["", "0", "-1", "1e400", "nobody", "7", "\x00", "x" * 10_000],
    "--head": ["", "0" * 64, "z" * 64, "abc", "0" * 10_000],
    "--signer": ["", "\x00", "x" * 100_000, "é"],
    "name": ["", "no-such-figure", "charisopoulos", "--list", "../../etc/passwd"],
}  # fmt: skip
"""Bad values of free-text options (besides the wrong types and numbers every option gets)."""

REPRODUCE_NAME = "li-zhou-ji-2022-fig2a"
BANNED_VALUES = {"dask", "tcp://127.0.0.1:1"}
"""Never generated: these start a cluster or wait for one (their faults are tested elsewhere)."""


REFUSED = {
    "--runs": ["0", "-1", "nan", "inf", "1e308", str(10**400), "", "abc", "2.5", "1e12"],
    "--horizon": ["0", "-1", "nan", "1e308", str(10**400), "", "abc", "2.5", "1e9"],
    "--seed": ["-1", "nan", "inf", str(2**128), str(10**400), "", "abc", "2.5", "[]"],
    "--option": ["=1", "noequals", "", f"x={NESTED}"],
    "--epsilon": ["0", "-1", "nan", "inf", "1e308", "1e51", "", "abc", "1e-320"],
    "--delta": ["-1", "1", "nan", "2", "1e-320", "", "x"],
    "--sampling-probability": ["0", "-0.5", "1.5", "nan", "inf", "", "[]"],
    "--steps": ["0", "-1", "2.5", "nan", "1e400", "", str(10**400)],
    "--sensitivity": ["0", "-1", "nan", "inf", "", "1e400"],
}
"""Values that must be refused, for the commands whose valid values start long work."""


def _values(kind: str, option: str, files: Files, only_bad: bool = False) -> st.SearchStrategy[str]:
    if only_bad and option in REFUSED:
        return st.sampled_from(REFUSED[option])
    if kind == FILE_IN:
        return st.sampled_from(file_values(files, writing=False) + NUMBERS[:3] + ["-"])
    if kind == FILE_OUT:
        values = file_values(files, writing=True)
        if only_bad:  # an existing directory or "" (the working directory) would be a valid --out DIR
            return st.sampled_from(
                [v for v in values if v and v != str(files["directory"])] + [str(files["cert"])]
            )
        return st.sampled_from([*values, "x.txt", str(files["cert"])])
    pool = NUMBERS + WRONG_TYPES
    if kind == JSON_TEXT:
        pool = [*pool, NESTED, "[" * 50, "{'a': 1}", "[1, NaN]", "1e400", "[[0, 1], [2]]", '"x"' * 3]
    if kind == TEXT:
        pool = [*TEXTS.get(option, []), *WRONG_TYPES, "", "NONE", "tight ", "x" * 300]
    pool = [value for value in pool if value not in BANNED_VALUES]
    floats = st.floats(allow_nan=True, allow_infinity=True).map(repr)
    subnormals = st.floats(min_value=5e-324, max_value=2.2250738585072014e-308, exclude_max=True).map(repr)
    huge = st.floats(min_value=1e250, max_value=1.7976931348623157e308).map(repr)
    integers = st.integers(min_value=-(10**30), max_value=10**30).map(str)
    if kind != NUMBER:
        return st.sampled_from(pool)
    return st.one_of(st.sampled_from(pool), st.sampled_from(NEAR_LIMITS), floats, subnormals, huge, integers)


@st.composite
def _mutation(draw: st.DrawFn, command: Command, files: Files) -> tuple[str, str | None]:
    """(option, value): the option whose value is replaced (``None``: the option is dropped)."""
    option = draw(st.sampled_from(sorted(command.options)))
    if option in command.argv and draw(st.integers(0, 9)) == 0:
        return option, None
    return option, draw(_values(command.options[option], option, files, command.only_bad))


def _build(command: Command, option: str, value: str | None, files: Files, scratch: Path) -> list[str]:
    def fill(word: str) -> str:
        if word.startswith("{") and word.endswith("}"):
            return str(files[word[1:-1]])
        return word.replace("{scratch}", str(scratch))

    argv = [fill(word) for word in command.argv]
    if command.fresh and "{ledger}" in command.argv:
        copy = scratch / "ledger.db"
        shutil.copyfile(files["ledger"], copy)
        argv = [str(copy) if word == str(files["ledger"]) else word for word in argv]
    if option not in command.options:
        return argv
    if option in ("path", "name"):
        if option == "name":
            return ["reproduce", *(["--", value] if value is not None else [])]
        index = 2 if argv[0] == "ledger" else 1
        if value is None:
            del argv[index]
        else:
            argv[index] = value
        return argv
    if argv[0] == "reproduce":  # the option on an existing reproduction; every value given is bad
        argv = (
            ["reproduce", REPRODUCE_NAME, "--runs", "1"]
            if option != "--runs"
            else ["reproduce", REPRODUCE_NAME]
        )
    if argv[0] == "demo" and option != "--out":
        argv = ["demo", "--out", str(scratch / "demo")]
    if option in argv:
        where = argv.index(option)
        if value is None:
            del argv[where : where + 2]
        else:
            argv[where + 1] = value
    elif value is not None:
        argv += [f"{option}={value}"] if value.startswith("-") else [option, value]
    return argv


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), time_limit(EXAMPLE_SECONDS):
            code = main(argv)
    except RanTooLong as exc:
        raise AssertionError(f"{exc}: {' '.join(repr(word[:80]) for word in argv)}") from None
    return code, out.getvalue(), err.getvalue()


def _no_nan(text: str) -> None:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in a JSON output")

    json.loads(text, parse_constant=refuse)


def check(argv: list[str], option: str, command: Command) -> tuple[int, str]:
    code, out, err = run(argv)
    shown = " ".join(repr(word[:80]) for word in argv)
    assert code in (0, 1, 2), f"exit {code} for {shown}: {err[-500:]}"
    assert "Traceback" not in err and "internal error" not in err, f"{shown}: {err[-500:]}"
    if code == 2:
        assert err.count("\n") == 1 and err.endswith("\n"), f"{shown}: more than one line: {err[-500:]}"
        names = {
            option,
            option.lstrip("-"),
            option.lstrip("-").replace("-", "_"),
            *command.names.get(option, ()),
        }
        assert any(name in err for name in names), f"{shown}: the error does not name {option}: {err}"
    elif "--json" in argv and out.strip() and not ("--format" in argv and "csv" in argv):
        for line in out.strip().splitlines() if argv[:2] == ["ledger", "export"] else [out]:
            _no_nan(line)
    if code == 0:
        assert not re.search(r"\bnan\b", out, re.IGNORECASE), f"{shown}: NaN in the output: {out[:500]}"
    return code, err


def test_every_sub_command_is_driven() -> None:
    """The table covers every command ``dpcert --help`` lists, and every sub-command of its groups."""
    parser = build_parser()
    listed: set[str] = set()
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        for name, sub in action.choices.items():
            nested = [a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction"]
            if nested:
                listed.update(f"{name} {child}" for child in nested[0].choices)
            else:
                listed.add(name)
    driven = {name.split(" --")[0] for name in COMMANDS}
    assert listed - {"bandit list"} <= driven, listed - driven


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_bad_values_get_one_line_naming_the_option(name: str, files: Files) -> None:
    command = COMMANDS[name]
    scratch_root = files.root / "scratch"
    scratch_root.mkdir(exist_ok=True)

    @settings(
        max_examples=command.examples,
        derandomize=True,
        deadline=None,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    @given(_mutation(command, files))
    def one(mutation: tuple[str, str | None]) -> None:
        option, value = mutation
        scratch = Path(tempfile.mkdtemp(dir=scratch_root))
        try:
            with contextlib.chdir(scratch):  # relative paths ("", "x.txt") land in the scratch directory
                check(_build(command, option, value, files, scratch), option, command)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    one()


def test_the_valid_command_lines_succeed(files: Files, tmp_path: Path) -> None:
    """The base command lines are valid (so an exit 2 of a mutation is the mutated option's)."""
    for name, command in COMMANDS.items():
        if command.only_bad:
            continue  # a minute of work (demo) or seconds per calibration (dp-sgd): refusals only
        code, out, err = run(_build(command, "--unchanged", None, files, tmp_path))
        assert code == 0, (name, err)


@pytest.mark.parametrize("target", ["builtin:laplace", "builtin:gaussian"])
@pytest.mark.parametrize("flag", ["--input", "--neighbour"])
def test_audit_names_an_input_the_built_in_target_cannot_take(target: str, flag: str) -> None:
    inputs = {"--input": "0", "--neighbour": "1", flag: "null"}
    argv = ["audit", target, *(word for pair in inputs.items() for word in pair), "--epsilon", "1"]
    code, out, err = run([*argv, "--delta", "1e-5", "--samples", "2000", "--seed", "1"])
    assert code == 2 and f"invalid {flag}=None" in err and "TARGET" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_dp_sgd_calibration_where_no_noise_is_needed_is_refused_naming_the_sampling_probability() -> None:
    """q = 1e-6 over 10 steps at δ = 1e-5: an example enters some batch with probability at most 10 q =
    1e-5 = δ, so every run, even without noise, is (0, 1e-5)-DP and there is no least noise multiplier (the
    search used to evaluate ever smaller ones: over 40 s and 2.3 GiB)."""
    argv = ["calibrate", "dp-sgd", "--epsilon", "8", "--delta", "1e-5", "--sampling-probability", "1e-6"]
    with time_limit(8):  # a refusal before any evaluation takes milliseconds
        code, out, err = run([*argv, "--steps", "10"])
    assert code == 2 and err.count("\n") == 1 and "sampling_probability" in err and "q > 1e-06" in err, err


def test_dp_sgd_calibration_at_a_tiny_sampling_probability_ends_promptly() -> None:
    argv = ["calibrate", "dp-sgd", "--epsilon", "8", "--delta", "1e-5", "--sampling-probability", "2e-6"]
    try:
        with time_limit(8):
            code = main([*argv, "--steps", "10"])
    except RanTooLong:
        pytest.fail("still running after 8 s")
    assert code in (0, 2)
